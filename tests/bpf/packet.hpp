// Builds test frames byte by byte, with every checksum computed from scratch, so an expected output frame
// is an independent statement of what the datapath must produce (not a replay of its own arithmetic).
#pragma once

#include "maps/bpfnet_maps.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace bpfnet::test {

using Bytes = std::vector<uint8_t>;
using Mac = std::array<uint8_t, 6>;

uint32_t ip(const std::string &dotted); // network byte order
// An address of either family as the maps key it (IPv4 as ::ffff:a.b.c.d), worked out here on its own.
bpfnet_ip key_ip(const std::string &text);
Mac mac(const std::string &colon_hex);
// Writes a 16-bit value at `off` in network byte order (the frame builders of both families).
void put16(Bytes &b, size_t off, uint16_t host_value);

struct Endpoint {
    std::string ip;
    uint16_t port = 0;
};

inline constexpr uint8_t kTcp = 6;
inline constexpr uint8_t kUdp = 17;
inline constexpr uint8_t kIcmp = 1;

// An Ethernet + IPv4 + (TCP | UDP | ICMP echo) frame. Setters change the headers; bytes() assembles the frame
// with correct lengths and checksums; the raw_* mutators then damage it on purpose.
class Packet {
public:
    static Packet tcp(const Endpoint &from, const Endpoint &to);
    static Packet udp(const Endpoint &from, const Endpoint &to);
    static Packet icmp_echo(const std::string &from, const std::string &to);
    // An ICMP error (RFC 792) quoting `about`: its IP header and the first 8 bytes of its data. rest is
    // the header's last word (RFC 1191: the next-hop MTU in its low 16 bits for "fragmentation needed").
    static Packet icmp_error(const std::string &from, const std::string &to, uint8_t type, uint8_t code,
                             const Packet &about, uint32_t rest = 0);

    Packet &macs(const Mac &dst, const Mac &src);
    Packet &payload(const std::string &text);
    Packet &payload(const Bytes &bytes);
    Packet &ip_options(size_t words);                   // IHL = 5 + words, options filled with NOPs (type 1)
    Packet &more_fragments();                           // MF flag set
    Packet &fragment_offset(uint16_t eight_byte_units); // a later fragment (DF clear)
    Packet &ttl(uint8_t hops);                          // 64 unless set
    // The L4 checksum field as a sender with checksum offload leaves it (CHECKSUM_PARTIAL): the folded
    // pseudo-header sum only, for the NIC (or the receiving veth's peer) to complete.
    Packet &partial_checksum();
    Packet &udp_checksum_none(); // UDP checksum 0: "no checksum" (RFC 768)
    Packet &tcp_flags(uint8_t flags);

    Bytes bytes() const;

private:
    Mac dst_mac_{}, src_mac_{};
    uint32_t saddr_ = 0, daddr_ = 0;
    uint16_t sport_ = 0, dport_ = 0;
    uint8_t proto_ = 0;
    size_t option_words_ = 0;
    bool more_fragments_ = false;
    uint16_t fragment_offset_ = 0;
    uint8_t ttl_ = 64;
    bool partial_checksum_ = false;
    bool udp_no_checksum_ = false;
    uint8_t tcp_flags_ = 0x18; // PSH|ACK
    uint8_t icmp_type_ = 8;    // echo request
    uint8_t icmp_code_ = 0;
    uint32_t icmp_rest_ = 0x42420000; // echo: identifier 0x4242, sequence 0
    std::string payload_ = "bpfnet";
};

// A BOOTP/DHCP message (RFC 2131 section 2) for a UDP payload. Options are written in order, then END,
// then zero padding up to the BOOTP minimum of 300 bytes.
struct Dhcp {
    uint8_t op = 1; // 1 request, 2 reply
    uint8_t hops = 0;
    uint32_t xid = 0x5eed1234;
    uint16_t flags = 0; // 0x8000: broadcast
    std::string ciaddr = "0.0.0.0", yiaddr = "0.0.0.0", siaddr = "0.0.0.0", giaddr = "0.0.0.0";
    Mac chaddr{};
    std::vector<std::pair<uint8_t, Bytes>> options;
    bool end_option = true;

    Dhcp &option(uint8_t code, Bytes value);
    Dhcp &option(uint8_t code, const std::string &ipv4);
    Bytes bytes() const;
};

Bytes arp(uint16_t op, const Mac &eth_dst, const Mac &sender_mac, const std::string &sender_ip, const Mac &target_mac,
          const std::string &target_ip);

// The frame with an 802.1Q tag (TPID 0x8100, priority 0, VLAN vid) after its MAC addresses: as the parent
// device of a VLAN sub-interface receives it from a trunk.
Bytes vlan_tagged(Bytes frame, uint16_t vid);

// The frame with zero bytes appended up to length: Ethernet's padding of short frames to 60 bytes.
Bytes padded(Bytes frame, size_t length);

// Offsets in a frame built without IP options.
inline constexpr size_t kIpOffset = 14;
inline constexpr size_t kL4Offset = 34;

// Damage helpers: each returns a copy with one thing wrong.
Bytes truncated(Bytes frame, size_t length);
Bytes with_byte(Bytes frame, size_t offset, uint8_t value);
Bytes with_u16(Bytes frame, size_t offset, uint16_t host_order_value);

std::string hex(const Bytes &frame);
Bytes from_hex(const std::string &hex_digits); // a frame as a report quotes it
// First differing offset and both bytes, for a readable failure.
std::string describe_difference(const Bytes &got, const Bytes &want);

} // namespace bpfnet::test
