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
#include <random>
#include <vector>

namespace bpfnet {

// RFC 4861 6.2.6: a solicitation from a host with an address is answered to that host alone (as a router may),
// `random_delay` (0 to MAX_RA_DELAY_TIME, 500 ms) after it arrived: hosts coming up in a row each get their
// answer at once. One from the unspecified address is answered to all nodes: at `now` + random_delay, or,
// when the last advertisement to all nodes was sent less than MIN_DELAY_BETWEEN_RAS (3 s) before, that long
// after it + random_delay: delayed into the next allowed slot, never dropped. This is the latter's time.
std::chrono::steady_clock::time_point ra_answer_time(std::chrono::steady_clock::time_point now,
                                                     std::chrono::steady_clock::time_point last_ra,
                                                     std::chrono::milliseconds random_delay);
inline constexpr std::chrono::milliseconds kMaxRaDelay{500};          // MAX_RA_DELAY_TIME
inline constexpr std::chrono::milliseconds kMinDelayBetweenRas{3000}; // MIN_DELAY_BETWEEN_RAS
inline constexpr size_t kMaxUnicastAnswers = 64; // hosts answered one by one at a time; more share one to all

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
    // To all nodes (the periodic one, and the answer to a solicitation from ::), or to one host.
    void advertise_router(const std::optional<RaDestination> &to = std::nullopt);
    void arm_answer_timer();         // for the earliest answer due
    void arm_ra_timer();             // every ra_interval while configured, else disarmed
    void listen_for_solicitations(); // opens (and adds to the loop) or closes the RS socket as configured
    void answer_solicitations();     // schedules each answer (see ra_answer_time)
    void send_due_answers();

    const NodeSettings &node_;
    MacAddress nic_mac_;
    std::function<bool()> live_, owning_;
    ArpSender arp_;
    NdpSender ndp_;
    UniqueFd announce_timer_, ra_timer_;
    UniqueFd ra_answer_timer_; // one-shot: the earliest answer due
    // The answer to all nodes that solicitations from :: wait for (any advertisement to all nodes answers it).
    std::optional<std::chrono::steady_clock::time_point> multicast_answer_at_;
    struct UnicastAnswer {
        std::chrono::steady_clock::time_point at;
        RaDestination to;
    };
    std::vector<UnicastAnswer> unicast_answers_; // one per soliciting host, in no order
    std::minstd_rand random_{std::random_device{}()};
    const UniqueFd *epoll_ = nullptr;                  // the runtime's, once start() ran
    std::optional<RouterSolicitations> solicitations_; // while routerAdvertisements is on
    std::chrono::steady_clock::time_point last_ra_{};  // RFC 4861 6.2.6: one RA to all nodes per 3 s at most
    bpfnet_ip nic_link_local_{};
    std::vector<bpfnet_ip> announcing_;
    uint32_t announcements_left_ = 0;
};

} // namespace bpfnet
