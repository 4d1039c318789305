#include "core/address_prober.hpp"

#include "core/addresses.hpp"
#include "core/event_loop.hpp"
#include "core/log.hpp"
#include "maps/system_error.hpp"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace bpfnet {

namespace {

using Mac = std::array<uint8_t, 6>;

constexpr size_t kEth = 14;

uint16_t be16(std::span<const uint8_t> f, size_t at) {
    return static_cast<uint16_t>(f[at] << 8 | f[at + 1]);
}

Mac mac_at(std::span<const uint8_t> f, size_t at) {
    Mac mac;
    std::copy_n(f.begin() + static_cast<std::ptrdiff_t>(at), 6, mac.begin());
    return mac;
}

bpfnet_ip ip6_at(std::span<const uint8_t> f, size_t at) {
    bpfnet_ip ip;
    std::memcpy(&ip, f.data() + at, sizeof(ip));
    return ip;
}

// An Ethernet/IPv4 ARP request or reply: from its sender address (a claim of it), or from address 0 (a probe for
// its target).
std::optional<AddressClaim> arp_claim(std::span<const uint8_t> f) {
    if (f.size() < kEth + 28 || be16(f, kEth) != 1 || be16(f, kEth + 2) != 0x0800 || f[kEth + 4] != 6 ||
        f[kEth + 5] != 4)
        return std::nullopt;
    const uint16_t op = be16(f, kEth + 6);
    if (op != 1 && op != 2)
        return std::nullopt;
    __be32 sender, target;
    std::memcpy(&sender, f.data() + kEth + 14, 4);
    std::memcpy(&target, f.data() + kEth + 24, 4);
    if (sender == 0 && op != 1)
        return std::nullopt;
    return AddressClaim{ip_from_v4(sender != 0 ? sender : target), mac_at(f, kEth + 8)};
}

// A neighbour advertisement of its target (at the target link-layer option's address, else the frame's source),
// or a solicitation from :: (another node's duplicate address probe) for it. Link-local scope: hop limit 255.
std::optional<AddressClaim> ndp_claim(std::span<const uint8_t> f) {
    constexpr size_t l4 = kEth + 40;
    if (f.size() < l4 + 24 || (f[kEth] >> 4) != 6 || f[kEth + 6] != IPPROTO_ICMPV6 || f[kEth + 7] != 255)
        return std::nullopt;
    const uint8_t type = f[l4];
    const bpfnet_ip target = ip6_at(f, l4 + 8);
    if (type == ND_NEIGHBOR_SOLICIT) {
        if (ip6_at(f, kEth + 8) != bpfnet_ip{})
            return std::nullopt;
        return AddressClaim{target, mac_at(f, 6)};
    }
    if (type != ND_NEIGHBOR_ADVERT)
        return std::nullopt;
    Mac mac = mac_at(f, 6);
    for (size_t at = l4 + 24; at + 8 <= f.size() && f[at + 1] != 0; at += f[at + 1] * size_t{8})
        if (f[at] == ND_OPT_TARGET_LINKADDR && f[at + 1] == 1)
            mac = mac_at(f, at + 2);
    return AddressClaim{target, mac};
}

// ARP, and ICMPv6 solicitations and advertisements; nothing else of the NIC's traffic is copied to the socket.
const sock_filter kFilter[] = {
    BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_ARP, 5, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IPV6, 0, 5),
    BPF_STMT(BPF_LD | BPF_B | BPF_ABS, kEth + 6),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_ICMPV6, 0, 3),
    BPF_STMT(BPF_LD | BPF_B | BPF_ABS, kEth + 40),
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, ND_NEIGHBOR_SOLICIT, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, 256),
    BPF_STMT(BPF_RET | BPF_K, 0),
};
// While no round runs: nothing of the NIC's traffic.
const sock_filter kNothing[] = {BPF_STMT(BPF_RET | BPF_K, 0)};

void attach_filter(int fd, std::span<const sock_filter> filter) {
    sock_fprog program{static_cast<unsigned short>(filter.size()), const_cast<sock_filter *>(filter.data())};
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof(program)) < 0)
        throw_errno("AddressProber: SO_ATTACH_FILTER");
}

// Bound to ETH_P_ALL only once the filter is on, so no other frame was queued before it.
UniqueFd listening_socket(int ifindex) {
    UniqueFd fd(socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid())
        throw_errno("AddressProber: socket(AF_PACKET)");
    attach_filter(fd.get(), kNothing);
    // This node's own probes are not read back (address_claim_in drops them by MAC on kernels before 4.20,
    // which lack the option).
    const int one = 1;
    setsockopt(fd.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
    sockaddr_ll address{};
    address.sll_family = AF_PACKET;
    address.sll_protocol = htons(ETH_P_ALL);
    address.sll_ifindex = ifindex;
    if (bind(fd.get(), reinterpret_cast<const sockaddr *>(&address), sizeof(address)) < 0)
        throw_errno("AddressProber: bind to ifindex " + std::to_string(ifindex));
    return fd;
}

} // namespace

std::optional<AddressClaim> address_claim_in(std::span<const uint8_t> frame, const Mac &own) {
    if (frame.size() < kEth)
        return std::nullopt;
    const uint16_t type = be16(frame, 12);
    std::optional<AddressClaim> claim = type == ETH_P_ARP    ? arp_claim(frame)
                                        : type == ETH_P_IPV6 ? ndp_claim(frame)
                                                             : std::nullopt;
    if (!claim || claim->mac == own || mac_at(frame, 6) == own)
        return std::nullopt;
    return claim;
}

AddressProber::AddressProber(int ifindex, Mac nic_mac, Handlers handlers)
    : nic_mac_(nic_mac), handlers_(std::move(handlers)), arp_(ifindex), ndp_(ifindex),
      socket_(listening_socket(ifindex)), timer_(loop::make_timer()) {}

void AddressProber::start(const UniqueFd &epoll) {
    loop::add(epoll, socket_.get());
    loop::add(epoll, timer_.get());
}

void AddressProber::probe(const bpfnet_ip &ip, Clock::time_point first) {
    listen(true);
    rounds_[ip] = Round{.next = first, .sent = 0, .heard = {}, .reported = false, .send_failed = false};
    tick();
}

void AddressProber::stop(const bpfnet_ip &ip) {
    rounds_.erase(ip);
    arm();
}

void AddressProber::listen(bool on) {
    if (on == listening_)
        return;
    listening_ = on;
    try {
        if (on)
            attach_filter(socket_.get(), kFilter);
        else
            attach_filter(socket_.get(), kNothing);
    } catch (const std::exception &e) {
        log_error("probe not applied: the socket's filter could not be changed", {{"error", e.what()}});
    }
}

bool AddressProber::handle(int fd) {
    if (fd == timer_.get()) {
        loop::drain(timer_);
        tick();
        return true;
    }
    if (fd == socket_.get()) {
        receive();
        return true;
    }
    return false;
}

void AddressProber::send_probe(const bpfnet_ip &ip, Round &round) {
    try {
        if (is_v4(ip))
            arp_.send_request(0, nic_mac_, v4_of(ip));
        else
            ndp_.send_duplicate_address_probe(nic_mac_, ip);
    } catch (const std::exception &e) {
        if (!std::exchange(round.send_failed, true))
            log_warn("probe refused: the NIC did not take it; the round goes on without it",
                     {{"service_ip", format_ip(ip)}, {"error", e.what()}});
    }
}

void AddressProber::tick() {
    const auto now = Clock::now();
    std::vector<bpfnet_ip> unanswered;
    for (auto &[ip, round] : rounds_) {
        if (round.next > now)
            continue;
        if (round.sent < kProbeCount) {
            send_probe(ip, round);
            round.sent++;
            round.next = now + kProbeInterval;
            continue;
        }
        const bool answered = std::any_of(round.heard.begin(), round.heard.end(),
                                          [](const auto &heard) { return heard.second >= kAnswersThatCount; });
        if (!answered) {
            unanswered.push_back(ip);
            continue;
        }
        // Answered: the next round after a while, with the jitter that lets two probing nodes drift apart.
        const auto jitter = std::chrono::milliseconds(random_() % (kReprobeJitter.count() + 1));
        round = Round{.next = now + kReprobeInterval + jitter,
                      .sent = 0,
                      .heard = {},
                      .reported = true,
                      .send_failed = round.send_failed};
    }
    for (const bpfnet_ip &ip : unanswered)
        rounds_.erase(ip);
    arm(); // before the handlers, which may throw
    for (const bpfnet_ip &ip : unanswered)
        if (handlers_.unanswered)
            handlers_.unanswered(ip);
}

void AddressProber::receive() {
    std::array<uint8_t, 256> frame;
    for (int read = 0; read < kFramesPerRead; read++) {
        const ssize_t n = recv(socket_.get(), frame.data(), frame.size(), 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return; // EAGAIN: all read (or a transient error: the next frame comes)
        }
        if (rounds_.empty())
            continue; // queued before the filter said nothing
        const auto claim = address_claim_in(std::span(frame.data(), static_cast<size_t>(n)), nic_mac_);
        if (!claim)
            continue;
        auto round = rounds_.find(claim->ip);
        if (round == rounds_.end() || round->second.sent == 0)
            continue;
        const int heard = ++round->second.heard[claim->mac];
        if (heard == kAnswersThatCount && !round->second.reported) {
            round->second.reported = true;
            if (handlers_.answered)
                handlers_.answered(claim->ip, claim->mac);
        }
    }
}

void AddressProber::arm() {
    if (rounds_.empty()) {
        loop::arm_timer(timer_, std::chrono::milliseconds(0), std::chrono::milliseconds(0));
        listen(false);
        return;
    }
    auto next = std::min_element(rounds_.begin(), rounds_.end(), [](const auto &a, const auto &b) {
                    return a.second.next < b.second.next;
                })->second.next;
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now());
    loop::arm_timer(timer_, std::max(wait, std::chrono::milliseconds(1)), std::chrono::milliseconds(0));
}

} // namespace bpfnet
