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
      ndp_(nic_ifindex), announce_timer_(loop::make_timer()), ra_timer_(loop::make_timer()),
      ra_answer_timer_(loop::make_timer()) {}

std::chrono::steady_clock::time_point ra_answer_time(std::chrono::steady_clock::time_point now,
                                                     std::chrono::steady_clock::time_point last_ra,
                                                     std::chrono::milliseconds random_delay) {
    return std::max(now, last_ra + kMinDelayBetweenRas) + random_delay;
}

void Announcer::start(const UniqueFd &epoll) {
    epoll_ = &epoll;
    if (announcements_left_ > 0)
        arm_timer(announce_timer_, node_.garp_interval, node_.garp_interval);
    arm_ra_timer();
    for (int fd : {announce_timer_.get(), ra_timer_.get(), ra_answer_timer_.get()})
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
    } else if (fd == ra_answer_timer_.get()) {
        drain(ra_answer_timer_);
        send_due_answers();
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
    const auto now = std::chrono::steady_clock::now();
    auto random_delay = [this] {
        return std::chrono::milliseconds(std::uniform_int_distribution<long>(0, kMaxRaDelay.count())(random_));
    };
    for (const RouterSolicitation &rs : solicitations_->drain()) {
        const bool to_host = rs.source != bpfnet_ip{} && rs.link_layer;
        if (to_host && std::any_of(unicast_answers_.begin(), unicast_answers_.end(),
                                   [&](const UnicastAnswer &a) { return a.to.ip == rs.source; }))
            continue; // its answer is pending
        if (to_host && unicast_answers_.size() < kMaxUnicastAnswers) {
            unicast_answers_.push_back({now + random_delay(), {rs.source, *rs.link_layer}});
            continue;
        }
        // From ::, or past the bound (any host may send any solicitation): one answer to all nodes answers them.
        if (!multicast_answer_at_)
            multicast_answer_at_ = ra_answer_time(now, last_ra_, random_delay());
    }
    arm_answer_timer();
}

void Announcer::arm_answer_timer() {
    std::optional<std::chrono::steady_clock::time_point> first = multicast_answer_at_;
    for (const UnicastAnswer &answer : unicast_answers_)
        if (!first || answer.at < *first)
            first = answer.at;
    if (!first) {
        arm_timer(ra_answer_timer_, std::chrono::milliseconds(0), std::chrono::milliseconds(0));
        return;
    }
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*first - std::chrono::steady_clock::now());
    arm_timer(ra_answer_timer_, std::max(wait, std::chrono::milliseconds(1)), std::chrono::milliseconds(0));
}

// Sends every answer due: each is sent once, or dropped when this node does not advertise now (the host
// solicits again).
void Announcer::send_due_answers() {
    const auto now = std::chrono::steady_clock::now();
    if (multicast_answer_at_ && *multicast_answer_at_ <= now) {
        multicast_answer_at_.reset();
        advertise_router();
    }
    std::vector<UnicastAnswer> later;
    for (const UnicastAnswer &answer : unicast_answers_) {
        if (answer.at <= now)
            advertise_router(answer.to);
        else
            later.push_back(answer);
    }
    unicast_answers_ = std::move(later);
    arm_answer_timer();
}

// RAs say "ask DHCPv6" and "this prefix is on-link" (dnsmasq's enable-ra in the host network does the same):
// hosts booting over IPv6 need both before DHCPv6 and before they reach the service address. Only the node
// that owns an IPv6 service address sends them, so the LAN hears one sender, which moves with the address.
void Announcer::advertise_router(const std::optional<RaDestination> &to) {
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
    ndp_.send_router_advertisement(nic_link_local_, nic_mac_, node_.subnet6, node_.prefix6_len, valid, to);
    if (to)
        return;
    // The rate limit is of advertisements to all nodes; one sent answers the solicitations from :: waiting.
    last_ra_ = std::chrono::steady_clock::now();
    if (multicast_answer_at_) {
        multicast_answer_at_.reset();
        arm_answer_timer();
    }
}

} // namespace bpfnet
