// IPv6 for the fuzzer: a world (2001:2::/64, IPv6's benchmarking range), frames of every kind an IPv6
// provisioning LAN and the pod send (neighbour discovery, the listed ports with and without extension
// headers, DHCPv6 to ff02::1:2 and from relays, ICMPv6 errors, the pod's replies, calls, Relay-Replies and
// errors), often damaged, and the properties every result must have.
//
// The reference model is IPv4's; IPv6 frames are judged by properties that need no model of the walks
// (docs/design.md, "Trust model"): a frame either leaves untouched or is dropped, or what the datapath sends
// goes where the rules say (into the pod at a port the pod listens on or called from, to the LAN as the
// service address, at the MAC the neighbour table or the relay's Interface-ID names), with every checksum
// right and the pod's address in no header or quote; a batch of IPv6 frames changes no IPv4 state, and a
// known host's entry changes only through neighbour discovery about it.
#pragma once

#include "reference_model.hpp"

#include <functional>
#include <random>
#include <set>

namespace bpfnet::fuzz {

using Ip6 = std::array<uint8_t, 16>;
Ip6 ipv6(const char *text);

namespace world6 {
inline constexpr const char *subnet = "2001:2::";
inline constexpr uint8_t prefix_len = 64;
inline constexpr const char *service_ip = "2001:2::2";
inline constexpr const char *pod_ip = "2001:2:0:100::2";
inline constexpr const char *known_host_ip = "2001:2::10"; // known MAC; also a configured DHCPv6 relay
inline constexpr const char *nic_link_local = "fe80::1";
// Listed ports of the service address: (port, protocol, the pod's port, kind).
struct Listed {
    uint16_t port;
    uint8_t proto;
    uint16_t pod_port;
    uint8_t kind;
};
inline const std::vector<Listed> listed = {{6385, 6, 6385, BPFNET_KIND_PLAIN},
                                           {80, 6, 8080, BPFNET_KIND_PLAIN},
                                           {69, 17, 69, BPFNET_KIND_TFTP},
                                           {547, 17, 547, BPFNET_KIND_DHCP6}};
} // namespace world6

// One IPv6 frame and what the generator knows about it.
struct GeneratedFrame6 {
    Bytes bytes;
    bool from_pod = false;
    const char *kind = "";
    bool damaged = false;
    std::optional<Ip6> ndp_about; // neighbour discovery that may teach the datapath this address's MAC
};

class FrameGenerator6 {
public:
    explicit FrameGenerator6(uint64_t seed) : rng_(seed) {}
    GeneratedFrame6 next();
    // Every port the pod sent from in a call of its own: the hosts' answers may come back to it.
    const std::set<uint16_t> &pod_ports() const { return pod_ports_; }

private:
    std::mt19937_64 rng_;
    std::set<uint16_t> pod_ports_; // host byte order
    struct Call {
        Ip6 host;
        uint16_t host_port, pod_port;
        uint8_t proto;
    };
    std::vector<Call> calls_;

    uint64_t below(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
    bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
    template <typename T>
    const T &pick(const std::vector<T> &v) {
        return v[below(v.size())];
    }
    Ip6 lan_source();
    Mac lan_mac();
    uint16_t port(const std::vector<uint16_t> &pool);
    Bytes payload(size_t max);
    Bytes extensions(uint8_t &first);

    GeneratedFrame6 neighbour_discovery();
    GeneratedFrame6 lan_to_service();
    GeneratedFrame6 lan_dhcp6();
    GeneratedFrame6 lan_icmp6_error();
    GeneratedFrame6 pod_to_lan();
    GeneratedFrame6 pod_relay_reply();
    GeneratedFrame6 pod_icmp6_error();
    void damage(GeneratedFrame6 &g);
};

// What the checks need to know of the world at the time of a frame.
struct World6View {
    bool service_active = true;
    std::set<uint16_t> pod_ports;                                 // the pod's listed and calling ports
    std::function<std::optional<Mac>(const Ip6 &)> neighbour_mac; // the datapath's neighbour table
};

// The property a result breaks ("" when none), with a detail line.
struct Violation6 {
    std::string what, detail;
};
std::optional<Violation6> check_ipv6_result(Program program, const Bytes &in, int verdict, const Bytes &out,
                                            const World6View &world);

// Frame assembly for IPv6 (RFC 8200, 4443, 4861, 8415), correct lengths and checksums.
Bytes ipv6_packet(const Ip6 &saddr, const Ip6 &daddr, uint8_t nexthdr, const Bytes &payload, uint8_t hop_limit = 64);
Bytes l4_with_checksum(const Ip6 &saddr, const Ip6 &daddr, uint8_t proto, Bytes l4);

} // namespace bpfnet::fuzz
