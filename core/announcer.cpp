#include "core/announcer.hpp"

#include "core/addresses.hpp"
#include "core/event_loop.hpp"
#include "core/log.hpp"
#include "core/netlink.hpp"

#include <algorithm>
#include <string>

namespace bpfnet {

using loop::arm_timer;
using loop::drain;

Announcer::Announcer(const NodeSettings &node, int nic_ifindex, MacAddress nic_mac, std::function<bool()> live,
                     std::function<bool()> owning)
    : node_(node), nic_mac_(nic_mac), live_(std::move(live)), owning_(std::move(owning)), arp_(nic_ifindex),
      ndp_(nic_ifindex), announce_timer_(loop::make_timer()), ra_timer_(loop::make_timer()) {}

void Announcer::start(const UniqueFd &epoll) {
    epoll_ = &epoll;
    if (announcements_left_ > 0)
        arm_timer(announce_timer_, node_.garp_interval, node_.garp_interval);
    arm_ra_timer();
    for (int fd : {announce_timer_.get(), ra_timer_.get()})
        loop::add(epoll, fd);
}

void Announcer::router_advertisements_changed() {
    if (epoll_)
        arm_ra_timer();
}

bool Announcer::handle(int fd) {
    if (fd == announce_timer_.get()) {
        drain(announce_timer_);
        if (announcements_left_ > 0)
            send_next_announcement();
    } else if (fd == ra_timer_.get()) {
        drain(ra_timer_);
        advertise_router();
    } else if (solicitations_ && fd == solicitations_->fd()) {
        answer_solicitations();
    } else {
        return false;
    }
    return true;
}

void Announcer::announce(const std::vector<bpfnet_ip> &service_ips) {
    if (service_ips.empty() || node_.garp_count == 0)
        return;
    for (const bpfnet_ip &ip : service_ips)
        if (std::find(announcing_.begin(), announcing_.end(), ip) == announcing_.end())
            announcing_.push_back(ip);
    announcements_left_ = node_.garp_count;
    send_next_announcement();
    if (announcements_left_ > 0)
        arm_timer(announce_timer_, node_.garp_interval, node_.garp_interval);
}

void Announcer::announce_once(const bpfnet_ip &service_ip) {
    if (is_v4(service_ip)) {
        arp_.send_gratuitous(v4_of(service_ip), nic_mac_);
        return;
    }
    ndp_.send_unsolicited_advertisement(service_ip, nic_mac_);
    advertise_router(); // hosts waiting for the prefix need not wait for the next interval
}

void Announcer::end(const bpfnet_ip &service_ip) {
    std::erase(announcing_, service_ip);
}

void Announcer::send_next_announcement() {
    for (const bpfnet_ip &ip : announcing_)
        announce_once(ip);
    log_debug("gratuitous ARP sent", {{"left", std::to_string(announcements_left_ - 1)}});
    if (--announcements_left_ == 0) {
        announcing_.clear();
        arm_timer(announce_timer_, std::chrono::milliseconds(0), std::chrono::milliseconds(0));
    }
}

void Announcer::resolve(const bpfnet_ip &host, const bpfnet_ip &service_ip) {
    if (is_v4(host))
        arp_.send_request(v4_of(service_ip), nic_mac_, v4_of(host));
    else
        ndp_.send_solicitation(service_ip, nic_mac_, host);
}

bpfnet_ip Announcer::refresh_link_local() {
    nic_link_local_ = link_local_address(node_.interface).value_or(bpfnet_ip{});
    return nic_link_local_;
}

void Announcer::arm_ra_timer() {
    if (node_.router_advertisements)
        arm_timer(ra_timer_, node_.ra_interval, node_.ra_interval);
    else
        arm_timer(ra_timer_, std::chrono::milliseconds(0), std::chrono::milliseconds(0));
    listen_for_solicitations();
}

// A booting host solicits a router and waits a few seconds for the answer; without one it waits for the next
// periodic advertisement. Not fatal: without the socket the periodic ones still go out.
void Announcer::listen_for_solicitations() {
    if (!node_.router_advertisements) {
        solicitations_.reset(); // closing the socket takes it out of the loop
        return;
    }
    if (solicitations_)
        return;
    try {
        solicitations_.emplace(node_.interface);
        loop::add(*epoll_, solicitations_->fd());
    } catch (const std::exception &e) {
        solicitations_.reset();
        log_warn("router solicitations are not answered (advertisements are still sent every interval)",
                 {{"iface", node_.interface}, {"error", e.what()}});
    }
}

void Announcer::answer_solicitations() {
    constexpr auto kMinDelayBetweenRas = std::chrono::seconds(3); // RFC 4861 10
    if (solicitations_->drain() && std::chrono::steady_clock::now() - last_ra_ >= kMinDelayBetweenRas)
        advertise_router();
}

// RAs say "ask DHCPv6" and "this prefix is on-link" (dnsmasq's enable-ra in the host network does the same):
// hosts booting over IPv6 need both before DHCPv6 and before they reach the service address. Only the node
// that owns an IPv6 service address sends them, so the LAN hears one sender, which moves with the address.
void Announcer::advertise_router() {
    if (!node_.router_advertisements || node_.prefix6_len == 0 || !live_())
        return;
    if (nic_link_local_ == bpfnet_ip{}) {
        log_warn("no router advertisement: the NIC has no IPv6 link-local address to send it from",
                 {{"iface", node_.interface}});
        return;
    }
    if (!owning_())
        return;
    // Valid three intervals: a prefix outlives a missed advertisement or two, not a node that stopped.
    const auto valid = static_cast<uint32_t>(3 * node_.ra_interval.count());
    ndp_.send_router_advertisement(nic_link_local_, nic_mac_, node_.subnet6, node_.prefix6_len, valid);
    last_ra_ = std::chrono::steady_clock::now();
}

} // namespace bpfnet
