// Everything this node sends on the provisioning LAN of its own accord: announcement rounds for the service IPs
// it starts answering (gratuitous ARP, unsolicited neighbour advertisements for IPv6), router advertisements
// for the IPv6 provisioning prefix (periodic, and answering router solicitations), and the neighbour
// resolutions the datapath asks for. DatapathRuntime decides what is said and when a round starts or ends
// (core/claim.hpp decides for the claims); its thread polls this class's timers and socket.
//
// Not thread-safe: the runtime calls it under its lock.
#pragma once

#include "core/arp_sender.hpp"
#include "core/ndp_sender.hpp"
#include "core/netlink.hpp"
#include "core/node.hpp"
#include "maps/layout.hpp"
#include "maps/unique_fd.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace bpfnet {

class Announcer {
public:
    // node: the runtime's settings, read at every call (apply() changes the timings; the interface is fixed).
    // Router advertisements go out only while `live` (the heartbeat runs) and `owning` (an IPv6 service
    // address is active here and not yielded) say so.
    Announcer(const NodeSettings &node, int nic_ifindex, MacAddress nic_mac, std::function<bool()> live,
              std::function<bool()> owning);

    // The timers and the solicitation socket join the runtime's loop; a round started before runs on.
    void start(const UniqueFd &epoll);
    // Called with the runtime's settings changed: the router advertisement interval, or on/off.
    void router_advertisements_changed();

    // A round of garp_count announcements garp_interval apart; a round already under way restarts with the new
    // IPs added, so each IP gets the full count.
    void announce(const std::vector<bpfnet_ip> &service_ips);
    // One announcement, now.
    void announce_once(const bpfnet_ip &service_ip);
    // The IP leaves the round under way: an announcement for an IP no longer answered here would pull the hosts
    // back to this node.
    void end(const bpfnet_ip &service_ip);
    // Asks host for its MAC on behalf of service_ip (an ARP request, a neighbour solicitation).
    void resolve(const bpfnet_ip &host, const bpfnet_ip &service_ip);
    // The NIC's IPv6 link-local address, read again (it appears after the NIC's DAD); zero: none.
    bpfnet_ip refresh_link_local();

    // A timer or the solicitation socket of this class was ready: handled. False for any other fd.
    bool handle(int fd);

private:
    void send_next_announcement();
    void advertise_router();
    void arm_ra_timer();             // every ra_interval while configured, else disarmed
    void listen_for_solicitations(); // opens (and adds to the loop) or closes the RS socket as configured
    void answer_solicitations();

    const NodeSettings &node_;
    MacAddress nic_mac_;
    std::function<bool()> live_, owning_;
    ArpSender arp_;
    NdpSender ndp_;
    UniqueFd announce_timer_, ra_timer_;
    const UniqueFd *epoll_ = nullptr;                  // the runtime's, once start() ran
    std::optional<RouterSolicitations> solicitations_; // while routerAdvertisements is on
    std::chrono::steady_clock::time_point last_ra_{};  // RFC 4861 6.2.6: one RA to all nodes per 3 s at most
    bpfnet_ip nic_link_local_{};
    std::vector<bpfnet_ip> announcing_;
    uint32_t announcements_left_ = 0;
};

} // namespace bpfnet
