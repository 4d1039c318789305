// Frames for the fuzzer: well-formed frames of every kind the provisioning LAN and the pod send (ARP, the
// listed ports, TFTP, DHCP with odd option lists, ICMP errors), built from small pools of addresses and
// ports so they hit the datapath's flows and neighbours, then often damaged (bit flips, truncation, lying
// length fields, fragments, VLAN tags, corrupt checksums). Deterministic for a seed.
#pragma once

#include "reference_model.hpp"

#include <random>

namespace bpfnet::fuzz {

// The world the fuzzer runs in (198.18.0.0/24, the benchmarking range), shared with the model.
namespace world {
inline constexpr const char *subnet = "198.18.0.0", *mask = "255.255.255.0";
inline constexpr const char *service_ip = "198.18.0.2";         // active, the DHCP service IP
inline constexpr const char *standby_service_ip = "198.18.0.3"; // listed, owned by another node
inline constexpr const char *pod_ip = "198.18.100.2";
inline constexpr const char *remote_pod_ip = "198.18.100.3"; // a pod on another node (the standby IP's backend)
inline constexpr const char *known_host_ip = "198.18.0.10";  // known MAC; also a configured DHCP relay
inline constexpr int nic_ifindex = 10, veth_ifindex = 20;
inline constexpr uint16_t pod_mtu = 1450;
} // namespace world

Ip ipv4(const char *dotted);
ModelConfig world_config();
ModelState world_state();

struct GeneratedFrame {
    Bytes bytes;
    bool from_pod = false; // the pod's veth (tc_pod_ingress); else the LAN (xdp_nic, tc_nic_ingress)
    const char *kind = "";
    bool damaged = false;
};

class FrameGenerator {
public:
    explicit FrameGenerator(uint64_t seed) : rng_(seed) {}
    GeneratedFrame next();

private:
    std::mt19937_64 rng_;
    // Conversations the pod started (host, host port, pod port, proto): the host's answers and ICMP errors
    // about them are what flows are for.
    struct Conversation {
        Ip host;
        Port host_port, pod_port;
        uint8_t proto;
    };
    std::vector<Conversation> conversations_;

    uint64_t below(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
    bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
    template <typename T>
    const T &pick(const std::vector<T> &v) {
        return v[below(v.size())];
    }

    Ip lan_source();
    Ip lan_destination();
    Mac lan_mac();
    Port pick_port(const std::vector<uint16_t> &ports);
    Bytes random_payload(size_t max);
    Bytes ip_packet(Ip saddr, Ip daddr, uint8_t proto, const Bytes &l4);
    Bytes tftp_request();
    Bytes dhcp_message(uint8_t op, Ip giaddr);
    Bytes dhcp_options();

    GeneratedFrame arp();
    GeneratedFrame lan_to_service();
    GeneratedFrame lan_dhcp();
    GeneratedFrame lan_icmp_error();
    GeneratedFrame pod_to_lan();
    GeneratedFrame pod_dhcp_reply();
    GeneratedFrame pod_icmp_error();
    GeneratedFrame garbage();
    void damage(GeneratedFrame &frame);
};

// Frame assembly with correct lengths and checksums (RFC 791, 768, 793, 792), for the generator and tests.
Bytes ethernet(const Mac &dst, const Mac &src, uint16_t type, const Bytes &payload);
Bytes ipv4_packet(Ip saddr, Ip daddr, uint8_t proto, const Bytes &l4, size_t option_words = 0);
Bytes udp_datagram(Ip saddr, Ip daddr, Port sport, Port dport, const Bytes &payload, bool no_checksum = false);
Bytes tcp_segment(Ip saddr, Ip daddr, Port sport, Port dport, const Bytes &payload, uint8_t flags);
Bytes icmp_message(uint8_t type, uint8_t code, uint32_t rest, const Bytes &data);
uint16_t internet_checksum(const uint8_t *data, size_t len, uint32_t initial = 0);

} // namespace bpfnet::fuzz
