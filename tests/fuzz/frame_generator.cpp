#include "frame_generator.hpp"

#include <arpa/inet.h>

#include <algorithm>

#include <cstring>
#include <stdexcept>

namespace bpfnet::fuzz {

namespace {

constexpr uint8_t kTcp = 6, kUdp = 17, kIcmp = 1;

const Mac kNicMac = {0x02, 0, 0, 0, 0, 0x01};
const Mac kPodMac = {0x02, 0, 0, 0, 0x01, 0x02};
const Mac kVethMac = {0x02, 0, 0, 0, 0x01, 0x01};
const Mac kKnownHostMac = {0x02, 0, 0, 0, 0, 0x10};
const Mac kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

void put16(Bytes &b, size_t off, uint16_t host_value) {
    b[off] = static_cast<uint8_t>(host_value >> 8);
    b[off + 1] = static_cast<uint8_t>(host_value);
}
void put_ip(Bytes &b, size_t off, Ip ip) {
    std::memcpy(&b[off], &ip, 4);
}
void append(Bytes &to, const Bytes &from) {
    to.insert(to.end(), from.begin(), from.end());
}

Bytes pseudo_header(Ip saddr, Ip daddr, uint8_t proto, size_t length) {
    Bytes p(12);
    put_ip(p, 0, saddr);
    put_ip(p, 4, daddr);
    p[9] = proto;
    put16(p, 10, static_cast<uint16_t>(length));
    return p;
}

uint16_t transport_checksum(Ip saddr, Ip daddr, uint8_t proto, const Bytes &l4) {
    Bytes all = pseudo_header(saddr, daddr, proto, l4.size());
    append(all, l4);
    return internet_checksum(all.data(), all.size());
}

const std::vector<uint16_t> kServicePorts = {6385, 80, 69, 67, 68, 443, 22, 33333, 33334, 9999, 8080, 5050};
const std::vector<uint16_t> kHostPorts = {40000, 40001, 68, 67, 69, 9999, 443, 6385};
const std::vector<uint16_t> kPodPorts = {33333, 33334, 69, 67, 6385, 8080, 443, 9999, 40000};

} // namespace

uint16_t internet_checksum(const uint8_t *data, size_t len, uint32_t acc) {
    for (size_t i = 0; i + 1 < len; i += 2)
        acc += static_cast<uint32_t>(data[i] << 8 | data[i + 1]);
    if (len % 2)
        acc += static_cast<uint32_t>(data[len - 1] << 8);
    while (acc >> 16)
        acc = (acc & 0xffff) + (acc >> 16);
    return static_cast<uint16_t>(~acc);
}

Ip ipv4(const char *dotted) {
    in_addr a{};
    if (inet_pton(AF_INET, dotted, &a) != 1)
        throw std::invalid_argument(std::string("bad IPv4 ") + dotted);
    return a.s_addr;
}

ModelConfig world_config() {
    ModelConfig c;
    c.subnet = ipv4(world::subnet);
    c.mask = ipv4(world::mask);
    c.nic_mac = kNicMac;
    c.dhcp_service_ip = ipv4(world::service_ip);
    c.dhcp_max_hops = 4;
    c.service_ips = {{ipv4(world::service_ip), true}, {ipv4(world::standby_service_ip), false}};
    Ip service = ipv4(world::service_ip), pod = ipv4(world::pod_ip);
    auto listed = [&](Ip on, uint16_t service_port, uint8_t proto, Ip backend, uint16_t backend_port, uint8_t kind) {
        c.services[{on, htons(service_port), proto}] = {backend, htons(backend_port), kind};
        c.backend_ports[{backend, htons(backend_port), proto}] = {on, htons(service_port), kind};
    };
    listed(service, 6385, kTcp, pod, 6385, BPFNET_KIND_PLAIN); // Ironic API
    listed(service, 80, kTcp, pod, 8080, BPFNET_KIND_PLAIN);   // the image server, port translated
    listed(service, 69, kUdp, pod, 69, BPFNET_KIND_TFTP);
    listed(service, 67, kUdp, pod, 67, BPFNET_KIND_DHCP);
    // The standby IP's backend runs on another node: the loader lists its port with no backend (address 0)
    // and nothing on the way back (core/desired_state.cpp); the remote pod's packets are not ours.
    c.services[{ipv4(world::standby_service_ip), htons(6385), kTcp}] = {0, htons(6385), BPFNET_KIND_PLAIN};
    c.backends[pod] = {kPodMac, kVethMac, service, world::pod_mtu};
    c.relays = {ipv4(world::known_host_ip)};
    return c;
}

ModelState world_state() {
    ModelState s;
    s.neighbours[ipv4(world::known_host_ip)] = kKnownHostMac;
    return s;
}

Bytes ethernet(const Mac &dst, const Mac &src, uint16_t type, const Bytes &payload) {
    Bytes f(14);
    std::copy(dst.begin(), dst.end(), f.begin());
    std::copy(src.begin(), src.end(), f.begin() + 6);
    put16(f, 12, type);
    append(f, payload);
    return f;
}

Bytes ipv4_packet(Ip saddr, Ip daddr, uint8_t proto, const Bytes &l4, size_t option_words) {
    size_t header = 20 + 4 * option_words;
    Bytes p(header, 1); // options: NOPs (RFC 791 type 1), so every header length is a valid one
    p[0] = static_cast<uint8_t>(0x40 | header / 4);
    put16(p, 2, static_cast<uint16_t>(header + l4.size()));
    put16(p, 4, 0x4242);
    put16(p, 6, 0x4000); // DF
    p[8] = 64;
    p[9] = proto;
    put16(p, 10, 0);
    put_ip(p, 12, saddr);
    put_ip(p, 16, daddr);
    put16(p, 10, internet_checksum(p.data(), header));
    append(p, l4);
    return p;
}

Bytes udp_datagram(Ip saddr, Ip daddr, Port sport, Port dport, const Bytes &payload, bool no_checksum) {
    Bytes u(8);
    std::memcpy(&u[0], &sport, 2);
    std::memcpy(&u[2], &dport, 2);
    put16(u, 4, static_cast<uint16_t>(8 + payload.size()));
    append(u, payload);
    if (!no_checksum) {
        uint16_t check = transport_checksum(saddr, daddr, kUdp, u);
        put16(u, 6, check ? check : 0xffff);
    }
    return u;
}

Bytes tcp_segment(Ip saddr, Ip daddr, Port sport, Port dport, const Bytes &payload, uint8_t flags) {
    Bytes t(20);
    std::memcpy(&t[0], &sport, 2);
    std::memcpy(&t[2], &dport, 2);
    put16(t, 4, 0x1000);
    t[12] = 5 << 4;
    t[13] = flags;
    put16(t, 14, 64240);
    append(t, payload);
    put16(t, 16, transport_checksum(saddr, daddr, kTcp, t));
    return t;
}

Bytes icmp_message(uint8_t type, uint8_t code, uint32_t rest, const Bytes &data) {
    Bytes m(8);
    m[0] = type;
    m[1] = code;
    put16(m, 4, static_cast<uint16_t>(rest >> 16));
    put16(m, 6, static_cast<uint16_t>(rest));
    append(m, data);
    put16(m, 2, internet_checksum(m.data(), m.size()));
    return m;
}

// Now and then with IP options: every offset past the IP header moves.
Bytes FrameGenerator::ip_packet(Ip saddr, Ip daddr, uint8_t proto, const Bytes &l4) {
    return ipv4_packet(saddr, daddr, proto, l4, chance(0.1) ? 1 + below(10) : 0);
}

Ip FrameGenerator::lan_source() {
    static const std::vector<const char *> pool = {"198.18.0.10",  "198.18.0.11",  "198.18.0.12", "198.18.0.13",
                                                   "198.18.0.150", "198.18.0.50",  "198.18.0.10", "198.18.0.11",
                                                   "198.18.0.0",   "198.18.0.255", "198.18.0.2",  "198.18.0.3",
                                                   "0.0.0.0",      "198.19.0.1",   "203.0.113.7"};
    return ipv4(pick(pool));
}

Ip FrameGenerator::lan_destination() {
    static const std::vector<const char *> pool = {"198.18.0.2",      "198.18.0.2",   "198.18.0.2",
                                                   "198.18.0.2",      "198.18.0.3",   "198.18.0.10",
                                                   "255.255.255.255", "198.18.0.255", "198.19.0.1"};
    return ipv4(pick(pool));
}

Mac FrameGenerator::lan_mac() {
    static const std::vector<Mac> pool = {kKnownHostMac,
                                          {0x02, 0, 0, 0, 0, 0x11},
                                          {0x02, 0, 0, 0, 0, 0x12},
                                          {0x52, 0x54, 0x00, 0x12, 0x34, 0x56},
                                          {0x02, 0x66, 0x66, 0x66, 0x66, 0x66},
                                          kBroadcast,
                                          {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01},
                                          {0, 0, 0, 0, 0, 0},
                                          kNicMac,
                                          {0x02, 0, 0, 0, 0, 0x11}};
    return pick(pool);
}

Port FrameGenerator::pick_port(const std::vector<uint16_t> &ports) {
    return htons(chance(0.05) ? static_cast<uint16_t>(below(65536)) : pick(ports));
}

Bytes FrameGenerator::random_payload(size_t max) {
    Bytes b(below(max + 1));
    for (auto &x : b)
        x = static_cast<uint8_t>(below(256));
    return b;
}

// A TFTP request (RFC 1350, options RFC 2347/2348): the blksize option in the forms firmware and servers
// write it, and in forms they do not.
Bytes FrameGenerator::tftp_request() {
    Bytes b = {0, static_cast<uint8_t>(chance(0.8) ? 1 : below(7))};
    auto add = [&](const std::string &s) {
        b.insert(b.end(), s.begin(), s.end());
        b.push_back(0);
    };
    add(chance(0.9) ? "boot.ipxe" : std::string(below(240), 'x'));
    add(chance(0.5) ? "octet" : "netascii");
    static const std::vector<std::string> names = {"blksize",    "BLKSIZE",  "BlkSize", "tsize",
                                                   "windowsize", "blksize2", "lksize"};
    static const std::vector<std::string> values = {"1468",     "1418",      "1419", "512",  "65464", "00001468",
                                                    "99999999", "123456789", "",     "14a8", "8",     "1500"};
    for (uint64_t i = below(4); i > 0; i--) {
        add(pick(names));
        add(pick(values));
    }
    if (chance(0.1))
        b.pop_back(); // the last string unterminated
    return b;
}

// DHCP options in the orders and forms clients, servers and attackers write them.
Bytes FrameGenerator::dhcp_options() {
    Bytes o = {0x63, 0x82, 0x53, 0x63};
    auto option = [&](uint8_t code, const Bytes &value) {
        o.push_back(code);
        o.push_back(static_cast<uint8_t>(value.size()));
        append(o, value);
    };
    auto ip_bytes = [](Ip ip) {
        Bytes v(4);
        std::memcpy(v.data(), &ip, 4);
        return v;
    };
    static const std::vector<const char *> ids = {world::service_ip, world::pod_ip, "198.18.0.99",
                                                  world::standby_service_ip};
    option(53, {static_cast<uint8_t>(1 + below(8))});
    for (uint64_t i = below(4) == 0 ? below(10) : below(2); i > 0; i--)
        option(54, ip_bytes(ipv4(pick(ids))));
    for (uint64_t i = chance(0.2) ? below(120) : 0; i > 0; i--)
        o.push_back(0); // pads
    if (chance(0.3))
        option(55, random_payload(12));
    if (chance(0.15))
        option(52, {static_cast<uint8_t>(below(5))});
    if (chance(0.05))
        option(54, {1, 2, 3}); // a short server identifier
    if (chance(0.05))
        o.push_back(54); // an option whose length is missing
    if (chance(0.92))
        o.push_back(255);
    return o;
}

// A BOOTP message (RFC 2131 section 2); `file` and `sname` sometimes carry options (overload).
Bytes FrameGenerator::dhcp_message(uint8_t op, Ip giaddr) {
    Bytes m(236);
    m[0] = chance(0.95) ? op : static_cast<uint8_t>(below(4));
    m[1] = chance(0.9) ? 1 : static_cast<uint8_t>(below(3));
    m[2] = chance(0.9) ? 6 : static_cast<uint8_t>(below(17));
    m[3] = static_cast<uint8_t>(chance(0.8) ? below(2) : below(20));
    put16(m, 4, 0x5eed);
    put16(m, 10, chance(0.4) ? 0x8000 : 0);
    static const std::vector<const char *> addrs = {"0.0.0.0",     "0.0.0.0",      "198.18.0.150", "198.18.0.11",
                                                    "203.0.113.7", "198.18.0.255", world::pod_ip};
    put_ip(m, 12, ipv4(pick(addrs)));                               // ciaddr
    put_ip(m, 16, ipv4(pick(addrs)));                               // yiaddr
    put_ip(m, 20, ipv4(chance(0.5) ? world::pod_ip : pick(addrs))); // siaddr
    put_ip(m, 24, giaddr);
    Mac chaddr = lan_mac();
    std::copy(chaddr.begin(), chaddr.end(), m.begin() + 28);
    auto fill_overloaded = [&](size_t at, size_t size) {
        Bytes area;
        if (chance(0.6)) {
            Ip id = ipv4(chance(0.7) ? world::pod_ip : world::service_ip);
            area = {54, 4};
            area.resize(6);
            std::memcpy(&area[2], &id, 4);
        }
        if (chance(0.9))
            area.push_back(255);
        if (chance(0.1))
            area.assign(size, 1); // no END anywhere
        std::copy_n(area.begin(), std::min(area.size(), size), m.begin() + static_cast<long>(at));
    };
    fill_overloaded(108, 128);
    fill_overloaded(44, 64);
    if (chance(0.95))
        append(m, dhcp_options());
    if (chance(0.7) && m.size() < 300)
        m.resize(300); // BOOTP's minimum
    return m;
}

GeneratedFrame FrameGenerator::arp() {
    Bytes a(28);
    put16(a, 0, chance(0.95) ? 1 : static_cast<uint16_t>(below(8)));
    put16(a, 2, chance(0.95) ? 0x0800 : 0x86dd);
    a[4] = chance(0.95) ? 6 : 8;
    a[5] = chance(0.95) ? 4 : 16;
    put16(a, 6, chance(0.9) ? static_cast<uint16_t>(1 + below(2)) : static_cast<uint16_t>(below(10)));
    Mac sender = lan_mac();
    std::copy(sender.begin(), sender.end(), a.begin() + 8);
    put_ip(a, 14, lan_source());
    if (chance(0.3))
        std::fill_n(a.begin() + 18, 6, 0xff);
    put_ip(a, 24, chance(0.6) ? ipv4(chance(0.8) ? world::service_ip : world::standby_service_ip) : lan_source());
    Mac eth_src = chance(0.85) ? sender : lan_mac();
    return {ethernet(chance(0.7) ? kBroadcast : kNicMac, eth_src, 0x0806, a), false, "arp"};
}

GeneratedFrame FrameGenerator::lan_to_service() {
    Ip saddr, daddr = lan_destination();
    Port sport, dport;
    uint8_t proto;
    if (!conversations_.empty() && chance(0.4)) {
        const Conversation &c = pick(conversations_); // the host answers the pod
        saddr = c.host;
        sport = c.host_port;
        dport = c.pod_port;
        proto = c.proto;
        daddr = ipv4(world::service_ip);
    } else {
        saddr = lan_source();
        sport = pick_port(kHostPorts);
        dport = pick_port(kServicePorts);
        proto = chance(0.5) ? kTcp : kUdp;
    }
    Bytes payload = proto == kUdp && dport == htons(69) && chance(0.8) ? tftp_request() : random_payload(40);
    Bytes l4 = proto == kTcp ? tcp_segment(saddr, daddr, sport, dport, payload, chance(0.2) ? 0x02 : 0x18)
                             : udp_datagram(saddr, daddr, sport, dport, payload, chance(0.1));
    if (chance(0.03))
        proto = static_cast<uint8_t>(below(256)); // SCTP, GRE, whatever a host sends
    return {ethernet(kNicMac, lan_mac(), 0x0800, ip_packet(saddr, daddr, proto, l4)), false, "lan to service"};
}

GeneratedFrame FrameGenerator::lan_dhcp() {
    bool broadcast = chance(0.6);
    Ip saddr = broadcast && chance(0.7) ? 0 : lan_source();
    Ip daddr = broadcast ? 0xffffffff : ipv4(chance(0.85) ? world::service_ip : world::standby_service_ip);
    static const std::vector<const char *> giaddrs = {"0.0.0.0",     "0.0.0.0",        "0.0.0.0", world::known_host_ip,
                                                      "198.18.0.11", world::service_ip};
    Bytes msg = dhcp_message(1, ipv4(pick(giaddrs)));
    Port sport = htons(chance(0.8) ? 68 : 67);
    Bytes l4 = udp_datagram(saddr, daddr, sport, htons(chance(0.95) ? 67 : 68), msg, chance(0.05));
    return {ethernet(broadcast ? kBroadcast : kNicMac, lan_mac(), 0x0800, ip_packet(saddr, daddr, kUdp, l4)), false,
            "lan dhcp"};
}

GeneratedFrame FrameGenerator::lan_icmp_error() {
    Ip service = ipv4(chance(0.9) ? world::service_ip : world::standby_service_ip);
    Ip host = lan_source();
    Port sport = pick_port(kPodPorts), dport = pick_port(kHostPorts);
    uint8_t proto = chance(0.5) ? kUdp : kTcp;
    if (!conversations_.empty() && chance(0.5)) {
        const Conversation &c = pick(conversations_);
        host = c.host;
        sport = c.pod_port;
        dport = c.host_port;
        proto = c.proto;
    }
    // The packet the datapath sent from the service IP, as the host (or a router) quotes it.
    Bytes inner_l4 = proto == kUdp ? udp_datagram(service, host, sport, dport, random_payload(20), chance(0.2))
                                   : tcp_segment(service, host, sport, dport, {}, 0x18);
    Bytes quote = ip_packet(service, host, proto, inner_l4);
    quote.resize(std::min(quote.size(), static_cast<size_t>(chance(0.5) ? 28 : 20 + below(inner_l4.size() + 1))));
    static const std::vector<uint8_t> types = {3, 3, 11, 12, 8, 0, 5};
    Bytes icmp = icmp_message(pick(types), static_cast<uint8_t>(below(5)), chance(0.3) ? 1300 : 0, quote);
    Ip from = chance(0.8) ? host : ipv4("198.19.0.1"); // a router off the subnet, for "fragmentation needed"
    return {ethernet(kNicMac, lan_mac(), 0x0800, ip_packet(from, service, kIcmp, icmp)), false, "lan icmp error"};
}

GeneratedFrame FrameGenerator::pod_to_lan() {
    Ip pod = ipv4(chance(0.95) ? world::pod_ip : world::remote_pod_ip);
    Ip host = chance(0.9) ? lan_source() : lan_destination();
    Port sport = pick_port(kPodPorts), dport = pick_port(kHostPorts);
    uint8_t proto = chance(0.5) ? kUdp : kTcp;
    if (host != 0 && conversations_.size() < 256)
        conversations_.push_back({host, dport, sport, proto});
    else if (host != 0)
        conversations_[below(conversations_.size())] = {host, dport, sport, proto};
    Bytes l4 = proto == kTcp ? tcp_segment(pod, host, sport, dport, random_payload(40), 0x12)
                             : udp_datagram(pod, host, sport, dport, random_payload(40), chance(0.1));
    if (chance(0.03))
        proto = static_cast<uint8_t>(below(256));
    return {ethernet(kVethMac, kPodMac, 0x0800, ip_packet(pod, host, proto, l4)), true, "pod to lan"};
}

GeneratedFrame FrameGenerator::pod_dhcp_reply() {
    Ip pod = ipv4(world::pod_ip);
    static const std::vector<const char *> giaddrs = {world::service_ip,    world::service_ip, world::service_ip,
                                                      world::known_host_ip, "198.18.0.11",     "0.0.0.0"};
    Ip giaddr = ipv4(pick(giaddrs));
    Ip daddr = chance(0.9) ? giaddr : lan_source();
    Bytes msg = dhcp_message(2, giaddr);
    Bytes l4 = udp_datagram(pod, daddr, htons(67), htons(chance(0.95) ? 67 : 68), msg, chance(0.05));
    return {ethernet(kVethMac, kPodMac, 0x0800, ip_packet(pod, daddr, kUdp, l4)), true, "pod dhcp reply"};
}

GeneratedFrame FrameGenerator::pod_icmp_error() {
    Ip pod = ipv4(world::pod_ip);
    Ip host = lan_source();
    Port hport = pick_port(kHostPorts), pport = pick_port(kPodPorts);
    uint8_t proto = chance(0.5) ? kUdp : kTcp;
    if (!conversations_.empty() && chance(0.5)) {
        const Conversation &c = pick(conversations_);
        host = c.host;
        hport = c.host_port;
        pport = c.pod_port;
        proto = c.proto;
    } else if (chance(0.5)) {
        pport = htons(chance(0.5) ? 69 : 8080); // a listed backend port
        proto = pport == htons(69) ? kUdp : kTcp;
    }
    // The packet the pod received (to its own address), as its stack quotes it.
    Bytes inner_l4 = proto == kUdp ? udp_datagram(host, pod, hport, pport, random_payload(20), chance(0.2))
                                   : tcp_segment(host, pod, hport, pport, {}, 0x18);
    Bytes quote = ip_packet(host, pod, proto, inner_l4);
    quote.resize(std::min(quote.size(), static_cast<size_t>(28 + below(64))));
    Bytes icmp = icmp_message(chance(0.8) ? 3 : static_cast<uint8_t>(below(16)), 3, 0, quote);
    return {ethernet(kVethMac, kPodMac, 0x0800, ip_packet(pod, host, kIcmp, icmp)), true, "pod icmp error"};
}

GeneratedFrame FrameGenerator::garbage() {
    static const std::vector<uint16_t> types = {0x0800, 0x0806, 0x86dd, 0x8100, 0x88cc, 0x0000};
    Bytes payload = random_payload(120);
    if (chance(0.5) && payload.size() >= 20) {
        payload[0] = 0x45; // an IPv4 header's first byte, to get past the first check
        Ip service = ipv4(world::service_ip);
        std::memcpy(&payload[16], &service, 4);
    }
    bool from_pod = chance(0.3);
    return {ethernet(from_pod ? kVethMac : kNicMac, from_pod ? kPodMac : lan_mac(), pick(types), payload), from_pod,
            "garbage"};
}

// Damage as the LAN delivers it: flipped bits, cut frames, lying length fields, fragments, tags, padding.
void FrameGenerator::damage(GeneratedFrame &g) {
    Bytes &f = g.bytes;
    g.damaged = true;
    switch (below(9)) {
    case 0: // bit flips, mostly in the headers
        for (uint64_t i = 1 + below(3); i > 0; i--) {
            size_t at = chance(0.8) ? below(std::min<size_t>(f.size(), 64)) : below(f.size());
            f[at] ^= static_cast<uint8_t>(1u << below(8));
        }
        break;
    case 1: // truncation
        f.resize(below(f.size() + 1));
        break;
    case 2: // IPv4 total length lies
        if (f.size() >= 18)
            put16(f, 16, static_cast<uint16_t>(chance(0.5) ? below(f.size() + 40) : below(65536)));
        break;
    case 3: // IPv4 header length lies
        if (f.size() >= 15)
            f[14] = static_cast<uint8_t>((f[14] & 0xf0) | below(16));
        break;
    case 4: // UDP length or TCP data offset lies
        if (f.size() >= 40)
            put16(f, 38, static_cast<uint16_t>(below(f.size())));
        if (f.size() >= 47 && chance(0.5))
            f[46] = static_cast<uint8_t>(below(256));
        break;
    case 5: // a fragment: more fragments, or a later one
        if (f.size() >= 22)
            put16(f, 20, static_cast<uint16_t>(chance(0.5) ? 0x2000 : below(0x2000)));
        break;
    case 6: { // an 802.1Q tag (VLAN 0..4095, 0 being a priority tag)
        if (f.size() < 14)
            break;
        Bytes tag = {0x81, 0x00, static_cast<uint8_t>(below(16)), static_cast<uint8_t>(below(256))};
        f.insert(f.begin() + 12, tag.begin(), tag.end());
        break;
    }
    case 7: // Ethernet padding, or trailing garbage past the IP packet
        for (uint64_t i = 1 + below(40); i > 0; i--)
            f.push_back(chance(0.5) ? 0 : static_cast<uint8_t>(below(256)));
        break;
    default: // a wrong checksum somewhere (IP header, or the transport's)
        if (f.size() >= 60)
            f[chance(0.5) ? 24 : 14 + 20 + below(20)] ^= 0x5a;
        break;
    }
}

GeneratedFrame FrameGenerator::next() {
    GeneratedFrame g;
    uint64_t roll = below(100);
    if (roll < 12)
        g = arp();
    else if (roll < 30)
        g = lan_to_service();
    else if (roll < 42)
        g = lan_dhcp();
    else if (roll < 50)
        g = lan_icmp_error();
    else if (roll < 75)
        g = pod_to_lan();
    else if (roll < 88)
        g = pod_dhcp_reply();
    else if (roll < 96)
        g = pod_icmp_error();
    else
        g = garbage();
    if (chance(0.35) && !g.bytes.empty())
        damage(g);
    return g;
}

} // namespace bpfnet::fuzz
