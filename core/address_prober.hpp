// Asks the provisioning LAN whether another node answers for a service IP before this node claims it
// (Kubernetes mode, docs/kubernetes.md "Pivot"): rounds of probes as IPv4 address conflict detection (RFC 5227
// 2.1.1: an ARP request from sender address 0) and IPv6 duplicate address detection (RFC 4862 5.4.2: a neighbour
// solicitation from ::) send them, compressed from their seconds to kProbeInterval, since the node that answers
// is a loader on the same LAN that answers at once. A round is answered when one other MAC speaks for the address
// in two of its frames: an ARP frame from the address, an ARP probe or a solicitation from :: for it (a node
// probing at the same time), a neighbour advertisement of it. Two, so that a lost frame does not hide a node that
// answers and a node that stops answering at the first probe (it yielded) does not count.
//
// Not thread-safe: DatapathRuntime calls it on its thread, under its lock.
#pragma once

#include "core/arp_sender.hpp"
#include "core/ndp_sender.hpp"
#include "maps/layout.hpp"
#include "maps/unique_fd.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <span>

namespace bpfnet {

inline constexpr int kProbeCount = 3;                              // RFC 5227's PROBE_NUM
inline constexpr std::chrono::milliseconds kProbeInterval{100};    // between probes, and after the last
inline constexpr std::chrono::milliseconds kReprobeInterval{1000}; // a deferred claim's next round, plus
inline constexpr std::chrono::milliseconds kReprobeJitter{500};    // up to this (two probing nodes drift apart)
inline constexpr int kAnswersThatCount = 2;                        // frames of one MAC in one round

// What one frame received on the NIC says about an address: `mac` speaks for `ip`. None for every frame that
// says nothing of the kind, and for the ones from `own` (this node's NIC).
struct AddressClaim {
    bpfnet_ip ip{};
    std::array<uint8_t, 6> mac{};
};
std::optional<AddressClaim> address_claim_in(std::span<const uint8_t> frame, const std::array<uint8_t, 6> &own);

class AddressProber {
public:
    using Clock = std::chrono::steady_clock;
    struct Handlers {
        std::function<void(const bpfnet_ip &)> unanswered;                                  // a round went unanswered
        std::function<void(const bpfnet_ip &, const std::array<uint8_t, 6> &mac)> answered; // the first answered one
    };
    // Throws bpfnet::SystemError when a socket cannot be opened on ifindex.
    AddressProber(int ifindex, std::array<uint8_t, 6> nic_mac, Handlers handlers);

    // Its timer and socket join the runtime's loop.
    void start(const UniqueFd &epoll);
    // Probes ip in rounds, the first from `first` on (now by default), until one goes unanswered (reported, and
    // the probing ends) or stop(ip); an answered round is reported once, and the next one starts
    // kReprobeInterval (+ jitter) later. Never throws for a probe that cannot be sent: that probe is lost, as
    // a frame on the LAN can be, and the round goes on (logged once per call).
    void probe(const bpfnet_ip &ip, Clock::time_point first = Clock::now());
    void stop(const bpfnet_ip &ip);
    bool probing(const bpfnet_ip &ip) const { return rounds_.contains(ip); }
    // The timer or the socket was ready: handled (at most kFramesPerRead frames read, so that a storm of ARP on
    // the LAN cannot keep the runtime's thread from its heartbeat). False for any other fd.
    bool handle(int fd);
    static constexpr int kFramesPerRead = 64;

private:
    struct Round {
        Clock::time_point next{}; // the next probe, or the round's end once all were sent
        int sent = 0;
        std::map<std::array<uint8_t, 6>, int> heard; // frames per MAC in this round
        bool reported = false;                       // an answered round was reported (once per probe())
        bool send_failed = false;                    // a failed send was logged (once per probe())
    };
    void send_probe(const bpfnet_ip &ip, Round &round);
    void tick();    // sends what is due, ends what is over
    void receive(); // reads what the socket has
    void arm();
    void listen(bool on); // the socket's filter: ARP and neighbour discovery while a round runs, else nothing

    std::array<uint8_t, 6> nic_mac_;
    Handlers handlers_;
    ArpSender arp_;
    NdpSender ndp_;
    UniqueFd socket_, timer_;
    std::map<bpfnet_ip, Round> rounds_;
    bool listening_ = false; // the socket's filter passes ARP and neighbour discovery
    std::minstd_rand random_{std::random_device{}()};
};

} // namespace bpfnet
