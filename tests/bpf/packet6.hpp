// IPv6 test frames, built byte by byte like packet.hpp's: every checksum is computed here from scratch over
// the pseudo-header of RFC 8200 8.1, so an expected frame states what the datapath must produce on its own.
#pragma once

#include "packet.hpp"

#include <optional>

namespace bpfnet::test {

inline constexpr uint8_t kIcmp6 = 58;
inline constexpr uint8_t kNeighbourSolicit = 135;
inline constexpr uint8_t kNeighbourAdvert = 136;
// Neighbour advertisement flags (RFC 4861 4.4), in the first byte of the message's flags word.
inline constexpr uint8_t kNaRouter = 0x80, kNaSolicited = 0x40, kNaOverride = 0x20;

// Offsets in a frame built without extension headers.
inline constexpr size_t kIp6Offset = 14;
inline constexpr size_t kL4Offset6 = 54;

// An Ethernet + IPv6 (+ extension headers) + (TCP | UDP | ICMPv6) frame.
class Packet6 {
public:
    static Packet6 tcp(const Endpoint &from, const Endpoint &to);
    static Packet6 udp(const Endpoint &from, const Endpoint &to);
    // An ICMPv6 message: type, code, checksum, then body.
    static Packet6 icmp(const std::string &from, const std::string &to, uint8_t type, uint8_t code, Bytes body);

    Packet6 &macs(const Mac &dst, const Mac &src);
    Packet6 &payload(const std::string &text);
    Packet6 &payload(const Bytes &bytes);
    Packet6 &hop_limit(uint8_t hops);
    // An extension header after those added before: `type` (0 hop-by-hop, 43 routing, 44 fragment, 51 AH,
    // 60 destination options...), 8 * (1 + units) bytes; a routing header with segments_left.
    Packet6 &extension(uint8_t type, uint8_t units = 0, uint8_t segments_left = 0);
    Packet6 &udp_checksum_zero();
    Bytes bytes() const;

private:
    Mac dst_mac_{}, src_mac_{};
    std::string saddr_, daddr_;
    uint16_t sport_ = 0, dport_ = 0;
    uint8_t proto_ = 0;
    uint8_t hop_limit_ = 64;
    std::vector<std::pair<uint8_t, Bytes>> extensions_; // type, header bytes (next header filled in later)
    bool udp_checksum_zero_ = false;
    uint8_t icmp_type_ = 0, icmp_code_ = 0;
    Bytes icmp_body_;
    std::string payload_ = "bpfnet";
};

// The 16 bytes of an IPv6 address.
std::array<uint8_t, 16> ip6(const std::string &text);
// The solicited-node multicast group of an address (ff02::1:ffXX:XXXX, RFC 4291 2.7.1) and a group's MAC
// (33:33 and its last 32 bits, RFC 2464 7).
std::string solicited_node(const std::string &address);
Mac multicast_mac(const std::string &group);
// Neighbour solicitation and advertisement bodies (after type, code and checksum), with an optional
// link-layer address option (source for a solicitation, target for an advertisement).
Bytes ns_body(const std::string &target, std::optional<Mac> source_lladdr);
Bytes na_body(const std::string &target, uint8_t flags, std::optional<Mac> target_lladdr);

} // namespace bpfnet::test
