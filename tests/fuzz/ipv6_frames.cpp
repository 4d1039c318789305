#include "ipv6_frames.hpp"

#include "frame_generator.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace bpfnet::fuzz {

namespace {

constexpr uint8_t kTcp = 6, kUdp = 17, kIcmp6 = 58;
constexpr uint8_t kHopByHop = 0, kRouting = 43, kFragment = 44, kDestOptions = 60;
constexpr uint8_t kSolicit = 135, kAdvert = 136;
constexpr size_t kEth = 14, kIp6 = 40;

const Mac kNicMac = {0x02, 0, 0, 0, 0, 0x01};
const Mac kPodMac = {0x02, 0, 0, 0, 0x01, 0x02};
const Mac kVethMac = {0x02, 0, 0, 0, 0x01, 0x01};
const Mac kKnownHostMac = {0x02, 0, 0, 0, 0, 0x10};

void put16(Bytes &b, size_t off, uint16_t v) {
    b[off] = static_cast<uint8_t>(v >> 8);
    b[off + 1] = static_cast<uint8_t>(v);
}
uint16_t get16(const Bytes &b, size_t off) {
    return static_cast<uint16_t>(b[off] << 8 | b[off + 1]);
}
void append(Bytes &to, const Bytes &from) {
    to.insert(to.end(), from.begin(), from.end());
}
void append(Bytes &to, const Ip6 &ip) {
    to.insert(to.end(), ip.begin(), ip.end());
}
Ip6 ip_at(const Bytes &b, size_t off) {
    Ip6 ip{};
    std::copy(b.begin() + static_cast<std::ptrdiff_t>(off), b.begin() + static_cast<std::ptrdiff_t>(off + 16),
              ip.begin());
    return ip;
}
Mac mac_at(const Bytes &b, size_t off) {
    Mac m{};
    std::copy(b.begin() + static_cast<std::ptrdiff_t>(off), b.begin() + static_cast<std::ptrdiff_t>(off + 6),
              m.begin());
    return m;
}
std::string text(const Ip6 &ip) {
    char buf[INET6_ADDRSTRLEN];
    return inet_ntop(AF_INET6, ip.data(), buf, sizeof(buf)) ? buf : "?";
}

// The solicited-node group of an address (RFC 4291 2.7.1) and a group's MAC (RFC 2464 7).
Ip6 solicited_node(const Ip6 &a) {
    Ip6 g = ipv6("ff02::1:ff00:0");
    std::copy(a.begin() + 13, a.end(), g.begin() + 13);
    return g;
}
Mac group_mac(const Ip6 &g) {
    return {0x33, 0x33, g[12], g[13], g[14], g[15]};
}

uint16_t l4_checksum(const Ip6 &s, const Ip6 &d, uint8_t proto, const uint8_t *l4, size_t len) {
    Bytes pseudo;
    append(pseudo, s);
    append(pseudo, d);
    pseudo.resize(36);
    put16(pseudo, 32, static_cast<uint16_t>(len >> 16)); // the upper-layer length, 32 bits
    put16(pseudo, 34, static_cast<uint16_t>(len));
    pseudo.insert(pseudo.end(), {0, 0, 0, proto});
    uint32_t acc = 0;
    for (size_t i = 0; i < pseudo.size(); i += 2)
        acc += static_cast<uint32_t>(pseudo[i] << 8 | pseudo[i + 1]);
    return internet_checksum(l4, len, acc);
}

Bytes ethernet6(const Mac &dst, const Mac &src, const Bytes &packet) {
    return ethernet(dst, src, 0x86dd, packet);
}

// The upper-layer header of an IPv6 packet at l3 (hop-by-hop, routing and destination options walked):
// its protocol and offset; nullopt when the chain runs past the packet or has another header.
std::optional<std::pair<uint8_t, size_t>> upper_layer(const Bytes &f, size_t l3, size_t end) {
    uint8_t next = f[l3 + 6];
    size_t off = l3 + kIp6;
    for (int i = 0; i < 8 && (next == kHopByHop || next == kRouting || next == kDestOptions); i++) {
        if (off + 8 > end)
            return std::nullopt;
        next = f[off];
        off += (static_cast<size_t>(f[off + 1]) + 1) * 8;
    }
    if (off > end)
        return std::nullopt;
    return std::make_pair(next, off);
}

} // namespace

Ip6 ipv6(const char *t) {
    Ip6 ip{};
    if (inet_pton(AF_INET6, t, ip.data()) != 1)
        throw std::invalid_argument(std::string("bad IPv6 ") + t);
    return ip;
}

Bytes ipv6_packet(const Ip6 &saddr, const Ip6 &daddr, uint8_t nexthdr, const Bytes &payload, uint8_t hop_limit) {
    Bytes p(8);
    p[0] = 0x60;
    put16(p, 4, static_cast<uint16_t>(payload.size()));
    p[6] = nexthdr;
    p[7] = hop_limit;
    append(p, saddr);
    append(p, daddr);
    append(p, payload);
    return p;
}

Bytes l4_with_checksum(const Ip6 &saddr, const Ip6 &daddr, uint8_t proto, Bytes l4) {
    const size_t at = proto == kTcp ? 16 : proto == kUdp ? 6 : 2;
    if (l4.size() < at + 2)
        return l4;
    put16(l4, at, 0);
    uint16_t check = l4_checksum(saddr, daddr, proto, l4.data(), l4.size());
    put16(l4, at, proto == kUdp && check == 0 ? 0xffff : check);
    return l4;
}

namespace {

// A TCP segment (flags from the data byte) or UDP datagram with its checksum.
Bytes segment(const Ip6 &s, const Ip6 &d, uint16_t sport, uint16_t dport, uint8_t proto, const Bytes &data) {
    Bytes l4(proto == kTcp ? 20 : 8, 0);
    put16(l4, 0, sport);
    put16(l4, 2, dport);
    if (proto == kTcp) {
        l4[12] = 5 << 4;
        l4[13] = data.empty() ? 0x10 : static_cast<uint8_t>(data[0] & 0x3f);
    }
    append(l4, data);
    if (proto == kUdp)
        put16(l4, 4, static_cast<uint16_t>(l4.size()));
    return l4_with_checksum(s, d, proto, l4);
}

} // namespace

// ---- the generator

Ip6 FrameGenerator6::lan_source() {
    static const std::vector<const char *> pool = {"2001:2::10", "2001:2::11", "2001:2::12", "2001:2::50",
                                                   "fe80::10",   "fe80::11",   "2001:2::10", "2001:2::2",
                                                   "::",         "2001:3::1",  "ff02::1",    "2001:2:0:100::2"};
    return ipv6(pick(pool));
}

Mac FrameGenerator6::lan_mac() {
    static const std::vector<Mac> pool = {kKnownHostMac,
                                          {0x02, 0, 0, 0, 0, 0x11},
                                          {0x02, 0, 0, 0, 0, 0x12},
                                          {0x02, 0x66, 0x66, 0x66, 0x66, 0x66},
                                          {0x33, 0x33, 0, 0, 0, 1},
                                          {0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
                                          {0, 0, 0, 0, 0, 0},
                                          kNicMac};
    return pick(pool);
}

uint16_t FrameGenerator6::port(const std::vector<uint16_t> &pool) {
    return chance(0.05) ? static_cast<uint16_t>(below(65536)) : pick(pool);
}

Bytes FrameGenerator6::payload(size_t max) {
    Bytes b(below(max + 1));
    for (auto &x : b)
        x = static_cast<uint8_t>(below(256));
    return b;
}

// Extension headers a host may put before the upper-layer header (or may not: routing with segments left,
// fragments, chains too long); `first` is the type of the first, the chain's last names the upper layer 0xff
// (filled in by the caller).
Bytes FrameGenerator6::extensions(uint8_t &first) {
    static const std::vector<uint8_t> types = {kHopByHop, kDestOptions, kRouting, kFragment, 51};
    Bytes chain;
    size_t count = 1 + below(3);
    size_t last_next = 0;
    for (size_t i = 0; i < count; i++) {
        uint8_t type = pick(types);
        if (i == 0)
            first = type;
        else
            chain[last_next] = type;
        size_t units = type == kFragment ? 0 : below(2);
        Bytes h((units + 1) * 8, 0);
        h[1] = static_cast<uint8_t>(units);
        if (type == kHopByHop || type == kDestOptions) {
            h[2] = 1; // PadN over the rest
            h[3] = static_cast<uint8_t>(h.size() - 4);
        } else if (type == kRouting) {
            h[3] = chance(0.5) ? 0 : 1; // segments left
        }
        last_next = chain.size();
        append(chain, h);
    }
    chain[last_next] = 0xff;
    return chain;
}

GeneratedFrame6 FrameGenerator6::neighbour_discovery() {
    GeneratedFrame6 g;
    const Ip6 service = ipv6(world6::service_ip), known = ipv6(world6::known_host_ip);
    const std::vector<Ip6> targets = {service, service, known, ipv6("2001:2::11"), ipv6("2001:2::2:1")};
    Ip6 source = lan_source();
    Mac mac = lan_mac();
    Ip6 target = pick(targets);
    bool solicit = chance(0.6);
    Bytes body(24, 0); // type, code, checksum, reserved or flags, target
    body[0] = solicit ? kSolicit : kAdvert;
    if (!solicit)
        body[4] = static_cast<uint8_t>(below(8) << 5); // router, solicited, override
    std::copy(target.begin(), target.end(), body.begin() + 8);
    if (chance(0.75)) { // the sender's (solicitation) or target's (advertisement) link-layer address
        body.insert(body.end(), {static_cast<uint8_t>(solicit ? 1 : 2), 1});
        body.insert(body.end(), mac.begin(), mac.end());
    }
    Ip6 to = solicit ? (chance(0.8) ? solicited_node(target) : target) : (chance(0.7) ? ipv6("ff02::1") : service);
    uint8_t hops = chance(0.9) ? 255 : 64;
    Bytes l4 = l4_with_checksum(source, to, kIcmp6, body);
    Mac dst = to[0] == 0xff ? group_mac(to) : kNicMac;
    g.bytes = ethernet6(dst, mac, ipv6_packet(source, to, kIcmp6, l4, hops));
    g.kind = solicit ? "neighbour solicitation" : "neighbour advertisement";
    g.ndp_about = solicit ? source : target;
    return g;
}

GeneratedFrame6 FrameGenerator6::lan_to_service() {
    static const std::vector<uint16_t> service_ports = {6385, 80, 69, 547, 22, 8080, 443};
    static const std::vector<uint16_t> host_ports = {40000, 40001, 9999, 546, 69};
    GeneratedFrame6 g;
    Ip6 source = lan_source(), service = ipv6(world6::service_ip);
    bool tcp = chance(0.6);
    uint16_t sport = port(host_ports), dport = port(service_ports);
    // Now and then the answer to a call the pod made (a recorded flow).
    if (!calls_.empty() && chance(0.3)) {
        const Call &c = pick(calls_);
        source = c.host;
        sport = c.host_port;
        dport = c.pod_port;
        tcp = c.proto == kTcp;
    }
    Bytes l4 = segment(source, service, sport, dport, tcp ? kTcp : kUdp, payload(60));
    uint8_t next = tcp ? kTcp : kUdp;
    Bytes packet_payload = l4;
    if (chance(0.15)) {
        uint8_t first = 0;
        Bytes chain = extensions(first);
        std::replace(chain.begin(), chain.end(), static_cast<uint8_t>(0xff), next);
        packet_payload = chain;
        append(packet_payload, l4);
        next = first;
    }
    g.bytes = ethernet6(kNicMac, lan_mac(), ipv6_packet(source, service, next, packet_payload));
    g.kind = tcp ? "tcp to the service address" : "udp to the service address";
    return g;
}

GeneratedFrame6 FrameGenerator6::lan_dhcp6() {
    GeneratedFrame6 g;
    Ip6 service = ipv6(world6::service_ip);
    bool relay = chance(0.3);
    Ip6 source = relay ? pick(std::vector<Ip6>{ipv6(world6::known_host_ip), ipv6("2001:2::11")}) : lan_source();
    Ip6 to = relay || chance(0.1) ? service : ipv6("ff02::1:2");
    Bytes msg;
    if (relay) {
        msg = {12, static_cast<uint8_t>(below(40))}; // Relay-Forw, hop count
        append(msg, ipv6("2001:2::"));
        append(msg, ipv6("fe80::10"));
        Bytes inner = {1, 0x12, 0x34, 0x56};
        append(inner, payload(20));
        msg.insert(msg.end(), {0, 9, 0, static_cast<uint8_t>(inner.size())}); // Relay Message option
        append(msg, inner);
    } else {
        msg = {static_cast<uint8_t>(pick(std::vector<int>{1, 3, 5, 11, 12, 13})), 0xab, 0xcd, 0xef};
        msg.insert(msg.end(), {0, 1, 0, 10, 0, 3, 0, 1}); // client identifier, a DUID-LL
        Mac m = lan_mac();
        msg.insert(msg.end(), m.begin(), m.end());
        append(msg, payload(30));
    }
    Bytes l4(8, 0);
    put16(l4, 0, relay ? 547 : 546);
    put16(l4, 2, 547);
    append(l4, msg);
    put16(l4, 4, static_cast<uint16_t>(l4.size()));
    l4 = l4_with_checksum(source, to, kUdp, l4);
    Mac dst = to[0] == 0xff ? group_mac(to) : kNicMac;
    g.bytes = ethernet6(dst, lan_mac(), ipv6_packet(source, to, kUdp, l4, relay ? 64 : 1));
    g.kind = relay ? "dhcpv6 from a relay" : "dhcpv6 from a client";
    return g;
}

GeneratedFrame6 FrameGenerator6::lan_icmp6_error() {
    GeneratedFrame6 g;
    Ip6 service = ipv6(world6::service_ip), host = ipv6(world6::known_host_ip);
    uint16_t service_port = 6385, host_port = 40000;
    uint8_t proto = kTcp;
    if (!calls_.empty() && chance(0.6)) {
        const Call &c = pick(calls_);
        host = c.host;
        host_port = c.host_port;
        service_port = c.pod_port;
        proto = c.proto;
    }
    Bytes quoted = segment(service, host, service_port, host_port, proto, payload(40));
    Bytes inner = ipv6_packet(chance(0.9) ? service : host, host, proto, quoted);
    if (chance(0.2))
        inner.resize(below(inner.size() + 1)); // quotes cut anywhere
    uint8_t type = pick(std::vector<uint8_t>{1, 2, 3, 4, 128});
    Bytes body = {type, static_cast<uint8_t>(below(5)), 0, 0, 0, 0, 5, 0x00}; // MTU 1280 for packet too big
    append(body, inner);
    Ip6 from = chance(0.7) ? host : ipv6("2001:3::fe");
    body = l4_with_checksum(from, service, kIcmp6, body);
    g.bytes = ethernet6(kNicMac, lan_mac(), ipv6_packet(from, service, kIcmp6, body));
    g.kind = "icmpv6 to the service address";
    return g;
}

GeneratedFrame6 FrameGenerator6::pod_to_lan() {
    static const std::vector<uint16_t> listed_ports = {6385, 8080, 69, 547};
    static const std::vector<uint16_t> calling_ports = {33333, 33334, 45000, 45001};
    static const std::vector<uint16_t> host_ports = {9999, 40000, 40001, 546, 69};
    static const std::vector<const char *> hosts = {"2001:2::10", "2001:2::11", "2001:2::12",
                                                    "2001:2::2",  "2001:3::1",  "fe80::10"};
    GeneratedFrame6 g;
    Ip6 pod = ipv6(world6::pod_ip), host = ipv6(pick(hosts));
    bool tcp = chance(0.6), call = chance(0.5);
    uint16_t sport = call ? port(calling_ports) : pick(listed_ports), dport = port(host_ports);
    if (call) {
        pod_ports_.insert(sport);
        if (calls_.size() < 64)
            calls_.push_back({host, dport, sport, static_cast<uint8_t>(tcp ? kTcp : kUdp)});
    }
    Ip6 source = chance(0.95) ? pod : ipv6("2001:2:0:100::9");
    Bytes l4 = segment(source, host, sport, dport, tcp ? kTcp : kUdp, payload(60));
    g.bytes = ethernet6(kVethMac, kPodMac, ipv6_packet(source, host, tcp ? kTcp : kUdp, l4));
    g.from_pod = true;
    g.kind = call ? "the pod's call" : "the pod's answer";
    return g;
}

GeneratedFrame6 FrameGenerator6::pod_relay_reply() {
    GeneratedFrame6 g;
    Ip6 pod = ipv6(world6::pod_ip), service = ipv6(world6::service_ip);
    Bytes msg = {13, static_cast<uint8_t>(below(3))}; // Relay-Repl, hop count
    append(msg, chance(0.8) ? ipv6("2001:2::2") : ipv6("::"));
    append(msg, pick(std::vector<Ip6>{ipv6("fe80::10"), ipv6("fe80::11"), ipv6(world6::known_host_ip)}));
    Bytes interface_id;
    if (chance(0.9)) { // Interface-ID: the client's MAC, as the relay wrote it
        Mac m = lan_mac();
        uint8_t len = chance(0.9) ? 6 : static_cast<uint8_t>(below(10));
        interface_id = {0, 18, 0, len};
        for (uint8_t i = 0; i < len; i++)
            interface_id.push_back(i < 6 ? m[i] : 0);
    }
    // Servers may put the Interface-ID after the Relay Message (RFC 8415 sets no order): then bytes follow
    // the inner message, which the relay must leave out of its sum.
    bool interface_id_last = chance(0.3);
    if (!interface_id_last)
        append(msg, interface_id);
    // An option of the relay's echoed between them (a Remote-ID, RFC 4649): the Relay Message at an offset
    // that is no multiple of 4, or an odd one, where the relay's sum takes other ways.
    if (chance(0.2)) {
        uint8_t len = static_cast<uint8_t>(below(6));
        msg.insert(msg.end(), {0, 37, 0, len});
        for (uint8_t i = 0; i < len; i++)
            msg.push_back(static_cast<uint8_t>(below(256)));
    }
    Bytes inner = {static_cast<uint8_t>(pick(std::vector<int>{2, 7, 10, 13})), 0xab, 0xcd, 0xef};
    append(inner, payload(40));
    msg.insert(msg.end(), {0, 9, static_cast<uint8_t>(inner.size() >> 8), static_cast<uint8_t>(inner.size())});
    append(msg, inner);
    if (interface_id_last)
        append(msg, interface_id);
    Bytes l4(8, 0);
    put16(l4, 0, 547);
    put16(l4, 2, 547);
    append(l4, msg);
    put16(l4, 4, static_cast<uint16_t>(l4.size()));
    l4 = l4_with_checksum(pod, service, kUdp, l4);
    g.bytes = ethernet6(kVethMac, kPodMac, ipv6_packet(pod, service, kUdp, l4));
    g.from_pod = true;
    g.kind = "the pod's relay-reply";
    return g;
}

GeneratedFrame6 FrameGenerator6::pod_icmp6_error() {
    GeneratedFrame6 g;
    Ip6 pod = ipv6(world6::pod_ip), host = ipv6(world6::known_host_ip);
    uint16_t pod_port = pick(std::vector<uint16_t>{6385, 8080, 69, 7777}), host_port = 40000;
    uint8_t proto = chance(0.5) ? kTcp : kUdp;
    if (!calls_.empty() && chance(0.4)) {
        const Call &c = pick(calls_);
        host = c.host;
        host_port = c.host_port;
        pod_port = c.pod_port;
        proto = c.proto;
    }
    Bytes quoted = segment(host, pod, host_port, pod_port, proto, {});
    Bytes body = {static_cast<uint8_t>(pick(std::vector<int>{1, 2, 3, 4, 128})), 4, 0, 0, 0, 0, 0, 0};
    append(body, ipv6_packet(host, pod, proto, quoted));
    body = l4_with_checksum(pod, host, kIcmp6, body);
    g.bytes = ethernet6(kVethMac, kPodMac, ipv6_packet(pod, host, kIcmp6, body));
    g.from_pod = true;
    g.kind = "the pod's icmpv6";
    return g;
}

void FrameGenerator6::damage(GeneratedFrame6 &g) {
    Bytes &f = g.bytes;
    g.damaged = true;
    switch (below(6)) {
    case 0: // bit flips, mostly in the headers
        for (uint64_t i = 1 + below(3); i > 0; i--) {
            size_t at = chance(0.8) ? below(std::min<size_t>(f.size(), 80)) : below(f.size());
            f[at] ^= static_cast<uint8_t>(1u << below(8));
        }
        break;
    case 1: // truncation
        f.resize(below(f.size() + 1));
        break;
    case 2: // the payload length lies
        if (f.size() >= kEth + 6)
            put16(f, kEth + 4, static_cast<uint16_t>(chance(0.5) ? below(f.size()) : below(65536)));
        break;
    case 3: // the next header lies
        if (f.size() >= kEth + 7)
            f[kEth + 6] = pick(std::vector<uint8_t>{0, 6, 17, 43, 44, 50, 51, 58, 59, 60, 135, 255});
        break;
    case 4: // trailing bytes past the packet
        for (uint64_t i = 1 + below(40); i > 0; i--)
            f.push_back(static_cast<uint8_t>(below(256)));
        break;
    default: // a wrong checksum or length in the upper layer
        if (f.size() >= kEth + kIp6 + 8)
            f[kEth + kIp6 + 2 + below(6)] ^= 0x5a;
        break;
    }
}

GeneratedFrame6 FrameGenerator6::next() {
    GeneratedFrame6 g;
    uint64_t roll = below(100);
    if (roll < 20)
        g = neighbour_discovery();
    else if (roll < 40)
        g = lan_to_service();
    else if (roll < 52)
        g = lan_dhcp6();
    else if (roll < 60)
        g = lan_icmp6_error();
    else if (roll < 82)
        g = pod_to_lan();
    else if (roll < 92)
        g = pod_relay_reply();
    else
        g = pod_icmp6_error();
    if (chance(0.3) && !g.bytes.empty())
        damage(g);
    return g;
}

// ---- the properties

namespace {

// The length the upper-layer checksum covers (RFC 8200 section 8.1): UDP's own Length field, where it fits in
// the payload (the bytes after it are no part of the datagram: a receiver checks the datagram alone), else
// all that follows the headers.
size_t checksummed_length(const Bytes &f, uint8_t proto, size_t l4, size_t end) {
    if (proto == kUdp && end - l4 >= 8) {
        size_t udp_len = get16(f, l4 + 4);
        if (udp_len >= 8 && udp_len <= end - l4)
            return udp_len;
    }
    return end - l4;
}

// Whether the upper-layer checksum (TCP, UDP, ICMPv6) of the IPv6 packet in a frame is right; nullopt when the
// frame holds no such packet.
std::optional<bool> checksum_right(const Bytes &f) {
    if (f.size() < kEth + kIp6 || get16(f, 12) != 0x86dd)
        return std::nullopt;
    size_t end = kEth + kIp6 + get16(f, kEth + 4);
    if (end > f.size())
        return std::nullopt;
    auto upper = upper_layer(f, kEth, end);
    if (!upper || (upper->first != kTcp && upper->first != kUdp && upper->first != kIcmp6))
        return std::nullopt;
    return l4_checksum(ip_at(f, kEth + 8), ip_at(f, kEth + 24), upper->first, &f[upper->second],
                       checksummed_length(f, upper->first, upper->second, end)) == 0;
}

// Checks an IPv6 frame a program sent: a well-formed TCP, UDP or ICMPv6 packet whose checksum is right when
// the frame it came from had a right one (a rewrite keeps it as right or as wrong as it was: a host's
// damaged segment stays damaged), and in which `hidden` (the pod's address, towards the LAN) is neither the
// source nor in an ICMPv6 error's quote.
std::optional<Violation6> check_sent_packet(const Bytes &in, const Bytes &out, const std::optional<Ip6> &hidden) {
    if (out.size() < kEth + kIp6 || get16(out, 12) != 0x86dd || (out[kEth] >> 4) != 6)
        return Violation6{"sent frame not IPv6", ""};
    size_t end = kEth + kIp6 + get16(out, kEth + 4);
    if (end > out.size())
        return Violation6{"sent frame shorter than its payload length", ""};
    Ip6 s = ip_at(out, kEth + 8), d = ip_at(out, kEth + 24);
    if (hidden && s == *hidden)
        return Violation6{"the pod's address sent to the LAN", text(s) + " -> " + text(d)};
    auto upper = upper_layer(out, kEth, end);
    if (!upper)
        return Violation6{"sent frame's extension headers run past it", ""};
    auto [proto, l4] = *upper;
    if (proto != kTcp && proto != kUdp && proto != kIcmp6)
        return Violation6{"sent frame of another protocol", std::to_string(proto)};
    bool right = l4_checksum(s, d, proto, &out[l4], checksummed_length(out, proto, l4, end)) == 0;
    if (!right && checksum_right(in).value_or(true))
        return Violation6{"sent frame's checksum", text(s) + " -> " + text(d) + " proto " + std::to_string(proto)};
    if (proto == kIcmp6 && hidden && end - l4 >= 8 + kIp6 && out[l4] < 128) {
        Ip6 qs = ip_at(out, l4 + 8 + 8), qd = ip_at(out, l4 + 8 + 24);
        if (qs == *hidden || qd == *hidden)
            return Violation6{"the pod's address in an ICMPv6 error's quote", text(qs) + " -> " + text(qd)};
    }
    return std::nullopt;
}

// The MAC in the Interface-ID of the Relay-Reply in a frame the pod sent, where the relay must send its message:
// the Interface-ID the relay writes, 6 bytes (a client's message) or 18 (a relay's, the MAC first).
std::optional<Mac> interface_id(const Bytes &in) {
    size_t l4 = kEth + kIp6, end = std::min(in.size(), kEth + kIp6 + get16(in, kEth + 4));
    size_t off = l4 + 8 + 34;
    while (off + 4 <= end) {
        uint16_t code = get16(in, off), len = get16(in, off + 2);
        if (code == 18 && (len == 6 || len == 18) && off + 4 + len <= end)
            return mac_at(in, off + 4);
        off += 4 + len;
    }
    return std::nullopt;
}

std::optional<Violation6> check_into_pod(const Bytes &in, const Bytes &out, const World6View &w) {
    if (mac_at(out, 6) != kVethMac)
        return Violation6{"into the pod from another MAC", ""};
    if (auto v = check_sent_packet(in, out, std::nullopt))
        return v;
    Ip6 s = ip_at(out, kEth + 8), d = ip_at(out, kEth + 24);
    if (d != ipv6(world6::pod_ip))
        return Violation6{"into the pod for another address", text(d)};
    size_t end = kEth + kIp6 + get16(out, kEth + 4);
    auto [proto, l4] = *upper_layer(out, kEth, end);
    if (proto == kIcmp6) {
        // An error about what the pod sent: the quote is the pod's own packet again.
        if (end - l4 < 8 + kIp6 + 4 || ip_at(out, l4 + 8 + 8) != ipv6(world6::pod_ip) ||
            !w.pod_ports.contains(get16(out, l4 + 8 + kIp6)))
            return Violation6{"an ICMPv6 error into the pod that quotes no packet of the pod's", ""};
        return std::nullopt;
    }
    uint16_t dport = get16(out, l4 + 2);
    if (!w.pod_ports.contains(dport))
        return Violation6{"into the pod at a port it neither listens on nor called from", std::to_string(dport)};
    if (dport == 547 && proto == kUdp) {
        // The relay's Relay-Forward: from the service address's port 547.
        if (s != ipv6(world6::service_ip) || get16(out, l4) != 547 || out[l4 + 8] != 12)
            return Violation6{"into the pod's DHCPv6 server other than a Relay-Forward from the relay", text(s)};
        return std::nullopt;
    }
    if (s != ip_at(in, kEth + 8))
        return Violation6{"into the pod without the host's own address", text(s)};
    return std::nullopt;
}

std::optional<Violation6> check_answer_to_lan(const Bytes &out, const World6View &w) {
    if (mac_at(out, 6) != kNicMac)
        return Violation6{"to the LAN from another MAC than the NIC's", ""};
    // The advertisement is the datapath's own: always right, whatever the solicitation's checksum was.
    if (auto v = check_sent_packet(Bytes{}, out, ipv6(world6::pod_ip)))
        return v;
    Ip6 s = ip_at(out, kEth + 8);
    size_t end = kEth + kIp6 + get16(out, kEth + 4);
    auto [proto, l4] = *upper_layer(out, kEth, end);
    // The NDP responder: an advertisement for the service address, only while this node owns it.
    if (proto != kIcmp6 || out[l4] != kAdvert || end - l4 < 24 || ip_at(out, l4 + 8) != ipv6(world6::service_ip) ||
        s != ipv6(world6::service_ip))
        return Violation6{"the NIC program sent to the LAN something other than the service address's advertisement",
                          text(s)};
    if (!w.service_active)
        return Violation6{"advertised the service address while another node owns it", ""};
    if (end - l4 < 32 || out[l4 + 24] != 2 || mac_at(out, l4 + 26) != kNicMac)
        return Violation6{"an advertisement without the NIC's MAC as target link-layer address", ""};
    return std::nullopt;
}

std::optional<Violation6> check_pod_to_lan(const Bytes &in, const Bytes &out, const World6View &w) {
    if (mac_at(out, 6) != kNicMac)
        return Violation6{"to the LAN from another MAC than the NIC's", ""};
    if (auto v = check_sent_packet(in, out, ipv6(world6::pod_ip)))
        return v;
    Ip6 s = ip_at(out, kEth + 8), d = ip_at(out, kEth + 24);
    size_t end = kEth + kIp6 + get16(out, kEth + 4);
    auto [proto, l4] = *upper_layer(out, kEth, end);
    // The relay's answer: the pod's DHCPv6 server answered the service address's port 547 (a Relay-Reply).
    bool relayed = proto == kUdp && ip_at(in, kEth + 24) == ipv6(world6::service_ip) && in.size() >= kEth + kIp6 + 4 &&
                   get16(in, kEth + kIp6 + 2) == 547;
    if (s != ipv6(world6::service_ip) && !(relayed && s == ipv6(world6::nic_link_local)))
        return Violation6{"the pod's packet sent to the LAN from another address", text(s)};
    Mac dst = mac_at(out, 0);
    if (relayed) {
        // The relay's answer goes to the MAC its Interface-ID names: the client's own.
        auto id = interface_id(in);
        if (!id || dst != *id)
            return Violation6{"a relayed DHCPv6 answer sent to another MAC than its Interface-ID's", text(d)};
        return std::nullopt;
    }
    auto known = w.neighbour_mac(d);
    if (!known || dst != *known)
        return Violation6{"the pod's packet sent to another MAC than the host's", text(d)};
    return std::nullopt;
}

} // namespace

std::optional<Violation6> check_ipv6_result(Program program, const Bytes &in, int verdict, const Bytes &out,
                                            const World6View &w) {
    if (program == Program::XdpNic) {
        if (verdict != kXdpPass && verdict != kXdpDrop)
            return Violation6{"xdp verdict", std::to_string(verdict)};
        if (verdict == kXdpPass && out != in)
            return Violation6{"xdp changed a frame it passed", ""};
        return std::nullopt;
    }
    if (verdict != kTcNext && verdict != kTcShot && verdict != kTcRedirect)
        return Violation6{"tc verdict", std::to_string(verdict)};
    if (verdict == kTcNext && out != in)
        return Violation6{"tc changed a frame it handed on", ""};
    if (verdict != kTcRedirect)
        return std::nullopt;
    if (program == Program::TcPod)
        return check_pod_to_lan(in, out, w);
    if (out.size() >= 6 && mac_at(out, 0) == kPodMac)
        return check_into_pod(in, out, w);
    return check_answer_to_lan(out, w);
}

} // namespace bpfnet::fuzz
