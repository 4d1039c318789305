#include "reference_model.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace bpfnet::fuzz {

namespace {

constexpr size_t kEth = 14;
constexpr uint16_t kEthIp = 0x0800, kEthArp = 0x0806;
constexpr uint8_t kTcp = 6, kUdp = 17, kIcmp = 1;
constexpr Ip kBroadcastIp = 0xffffffff;
const Mac kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

uint16_t be16(const Bytes &b, size_t off) {
    return static_cast<uint16_t>(b[off] << 8 | b[off + 1]);
}
Ip raw32(const Bytes &b, size_t off) {
    Ip v;
    std::memcpy(&v, &b[off], 4);
    return v;
}
Port raw16(const Bytes &b, size_t off) {
    Port v;
    std::memcpy(&v, &b[off], 2);
    return v;
}
void put_raw32(Bytes &b, size_t off, Ip v) {
    std::memcpy(&b[off], &v, 4);
}
void put_raw16(Bytes &b, size_t off, Port v) {
    std::memcpy(&b[off], &v, 2);
}
Mac mac_at(const Bytes &b, size_t off) {
    Mac m;
    std::copy_n(b.begin() + static_cast<long>(off), 6, m.begin());
    return m;
}
void put_mac(Bytes &b, size_t off, const Mac &m) {
    std::copy(m.begin(), m.end(), b.begin() + static_cast<long>(off));
}
Port port(uint16_t host_order) {
    return htons(host_order);
}

bool group_mac(const Mac &m) {
    return m[0] & 1;
}
bool zero_mac(const Mac &m) {
    return std::all_of(m.begin(), m.end(), [](uint8_t x) { return x == 0; });
}

// The three kinds of IPv4 packet the walks tell apart (docs/design.md, walk 4 and "fragments").
enum class Parse { Ok, Malformed, Fragment, OtherProtocol };

struct Ipv4 {
    Parse verdict = Parse::Malformed;
    size_t l3 = kEth, ihl = 0, l4 = 0, l4_end = 0; // l4_end: past the UDP datagram, or the IP packet
    uint8_t proto = 0;
    Ip saddr = 0, daddr = 0;
    Port sport = 0, dport = 0;
};

// An IPv4 packet's headers as the datapath must judge them: version 4, header length at least 20 and
// within the total length, total length within the frame, not a fragment, and a TCP header (data offset at
// least 5, within the packet) or UDP header (length at least 8, within the packet) present.
Ipv4 parse_ipv4(const Bytes &f) {
    Ipv4 p;
    const size_t l3 = kEth;
    p.saddr = raw32(f, l3 + 12);
    p.daddr = raw32(f, l3 + 16);
    p.proto = f[l3 + 9];
    size_t version = f[l3] >> 4, ihl = (f[l3] & 0xf) * 4u, total = be16(f, l3 + 2);
    if (version != 4 || ihl < 20 || total < ihl || total > f.size() - l3)
        return p;
    if (be16(f, l3 + 6) & 0x3fff) {
        p.verdict = Parse::Fragment;
        return p;
    }
    p.ihl = ihl;
    p.l4 = l3 + ihl;
    p.l4_end = l3 + total;
    if (p.proto == kTcp) {
        if (p.l4 + 20 > f.size() || (f[p.l4 + 12] >> 4) < 5 || (f[p.l4 + 12] >> 4) * 4u > total - ihl)
            return p;
    } else if (p.proto == kUdp) {
        if (p.l4 + 8 > f.size())
            return p;
        size_t udp_len = be16(f, p.l4 + 4);
        if (udp_len < 8 || udp_len > total - ihl)
            return p;
        p.l4_end = p.l4 + udp_len;
    } else {
        p.verdict = Parse::OtherProtocol;
        return p;
    }
    p.sport = raw16(f, p.l4);
    p.dport = raw16(f, p.l4 + 2);
    p.verdict = Parse::Ok;
    return p;
}

uint32_t drop_reason(Parse verdict) {
    switch (verdict) {
    case Parse::Fragment:
        return BPFNET_CTR_DROP_FRAGMENT;
    case Parse::OtherProtocol:
        return BPFNET_CTR_DROP_PROTOCOL;
    default:
        return BPFNET_CTR_DROP_MALFORMED;
    }
}

} // namespace

// An ICMP error (destination unreachable, time exceeded, parameter problem) and the start of the TCP or
// UDP packet it quotes (RFC 792: the IP header and 8 bytes).
struct IcmpError {
    size_t icmp = 0, inner_l3 = 0, inner_ihl = 0, inner_l4 = 0;
    uint8_t inner_proto = 0;
    Ip inner_saddr = 0, inner_daddr = 0;
    Port inner_sport = 0, inner_dport = 0;
    uint16_t inner_udp_check = 0; // host order; 0 for TCP
};

namespace {

std::optional<IcmpError> read_icmp_error(const Bytes &f, const Ipv4 &p) {
    if (p.proto != kIcmp || p.l4 + 28 > p.l4_end)
        return std::nullopt;
    uint8_t type = f[p.l4];
    if (type != 3 && type != 11 && type != 12)
        return std::nullopt;
    IcmpError e;
    e.icmp = p.l4;
    e.inner_l3 = p.l4 + 8;
    e.inner_ihl = (f[e.inner_l3] & 0xf) * 4u;
    e.inner_proto = f[e.inner_l3 + 9];
    if ((f[e.inner_l3] >> 4) != 4 || e.inner_ihl < 20 || (e.inner_proto != kTcp && e.inner_proto != kUdp) ||
        (be16(f, e.inner_l3 + 6) & 0x1fff))
        return std::nullopt;
    e.inner_l4 = e.inner_l3 + e.inner_ihl;
    if (e.inner_l4 + 8 > p.l4_end)
        return std::nullopt;
    e.inner_saddr = raw32(f, e.inner_l3 + 12);
    e.inner_daddr = raw32(f, e.inner_l3 + 16);
    e.inner_sport = raw16(f, e.inner_l4);
    e.inner_dport = raw16(f, e.inner_l4 + 2);
    e.inner_udp_check = e.inner_proto == kUdp ? be16(f, e.inner_l4 + 6) : 0;
    return e;
}

// RFC 1624 eqn 3: a UDP checksum after some 16-bit words it covers changed.
uint16_t checksum_after(uint16_t check, const std::vector<std::pair<uint16_t, uint16_t>> &changes) {
    uint32_t sum = static_cast<uint16_t>(~check);
    for (auto [from, to] : changes)
        sum += static_cast<uint16_t>(~from) + static_cast<uint32_t>(to);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    uint16_t result = static_cast<uint16_t>(~sum);
    return result ? result : 0xffff; // RFC 768: a computed 0 is sent as all ones; 0 means "none"
}

std::vector<std::pair<uint16_t, uint16_t>> word_changes(Ip from_ip, Ip to_ip, Port from_port, Port to_port) {
    uint32_t a = ntohl(from_ip), b = ntohl(to_ip);
    return {{static_cast<uint16_t>(a >> 16), static_cast<uint16_t>(b >> 16)},
            {static_cast<uint16_t>(a & 0xffff), static_cast<uint16_t>(b & 0xffff)},
            {ntohs(from_port), ntohs(to_port)}};
}

// The BOOTP/DHCP message (RFC 2131 section 2, RFC 2132) as the relay reads it.
constexpr size_t kBootpOptions = 240, kBootpCookie = 236, kBootpFile = 108, kBootpSname = 44;
constexpr size_t kDhcpScan = 2048;  // the walk reads the first 2048 bytes of a message
constexpr size_t kMaxServerIds = 8; // more copies of option 54 than this: malformed
constexpr uint32_t kDhcpCookie = 0x63825363;

// The option walk of docs/design.md (walk 2): the options field, then `file` and `sname` when option 52
// overloads them, each ending with END; pads are skipped; every copy of option 54 is found.
struct OptionWalk {
    enum Result { Done, NoOptions, Broken } result = NoOptions;
    std::vector<size_t> server_ids; // offsets of option 54's values, from the start of the message
};

OptionWalk walk_options(const Bytes &f, size_t bootp, size_t end_of_message) {
    OptionWalk w;
    if (bootp + kBootpOptions > end_of_message)
        return w;
    size_t n = std::min(end_of_message - bootp, kDhcpScan);
    uint32_t cookie = static_cast<uint32_t>(be16(f, bootp + kBootpCookie)) << 16 | be16(f, bootp + kBootpCookie + 2);
    if (cookie != kDhcpCookie)
        return w;
    unsigned overload = 0;
    auto walk_area = [&](size_t pos, size_t end, bool options_field) {
        while (pos < end) {
            uint8_t code = f[bootp + pos];
            if (code == 0) {
                pos++;
                continue;
            }
            if (code == 255)
                return true;
            if (pos + 1 >= end)
                return false;
            size_t len = f[bootp + pos + 1];
            if (pos + 2 + len > end)
                return false;
            if (code == 54) {
                if (len != 4 || w.server_ids.size() == kMaxServerIds)
                    return false;
                w.server_ids.push_back(pos + 2);
            } else if (code == 52 && len == 1 && options_field) {
                overload = f[bootp + pos + 2] & 3;
            }
            pos += 2 + len;
        }
        return false; // no END
    };
    bool ok = walk_area(kBootpOptions, n, true);
    if (ok && (overload & 1))
        ok = walk_area(kBootpFile, kBootpFile + 128, false);
    if (ok && (overload & 2))
        ok = walk_area(kBootpSname, kBootpSname + 64, false);
    w.result = ok ? OptionWalk::Done : OptionWalk::Broken;
    return w;
}

} // namespace

const char *name(Program program) {
    switch (program) {
    case Program::XdpNic:
        return "xdp_nic";
    case Program::TcNic:
        return "tc_nic_ingress";
    case Program::TcPod:
        return "tc_pod_ingress";
    }
    return "?";
}

struct ReferenceModel::Ctx {
    const Bytes &in;
    Expectation e;
    Ipv4 p;
    bool begun = false;
    bool nat_checked = false;

    explicit Ctx(const Bytes &frame) : in(frame) { e.out = frame; }
    void count(uint32_t counter) { e.counted.push_back(counter); }
    void decide(uint32_t counter) {
        count(counter);
        if (begun)
            e.traced = counter;
    }
    void begin(uint8_t hook, Ip saddr, Ip daddr) {
        begun = true;
        e.hook = hook;
        e.trace_saddr = saddr;
        e.trace_daddr = daddr;
    }
    void note(const std::string &what) { e.walk += e.walk.empty() ? what : " > " + what; }
    Bytes &out() {
        e.rewritten = true;
        return e.out;
    }
    // The outer IPv4 header's and the TCP/UDP checksum must stay as right as they were.
    void keep_ip_and_transport_checksums() {
        if (nat_checked)
            return;
        nat_checked = true;
        e.checksums.push_back({ChecksumRule::IpHeader, p.l3, p.ihl, 0, 0, 0, p.l3 + 10});
        size_t field = p.l4 + (p.proto == kTcp ? 16 : 6);
        e.checksums.push_back({ChecksumRule::Transport, p.l4, p.l4_end - p.l4, p.l3, p.proto, 0, field});
    }
    // Rewrites the source or destination address and port (walk 4's DNAT, the way back's SNAT).
    void nat(bool source, Ip to_ip, Port to_port) {
        keep_ip_and_transport_checksums();
        put_raw32(out(), p.l3 + (source ? 12 : 16), to_ip);
        put_raw16(out(), p.l4 + (source ? 0 : 2), to_port);
    }
    void macs(const Mac &dst, const Mac &src) {
        put_mac(out(), 0, dst);
        put_mac(out(), 6, src);
    }
};

// An ICMP error translated like the packet it quotes (docs/design.md, "ICMP errors"): the outer address on
// one side, the quote's opposite side (address and port). Every checksum stays as right as it was: the outer
// and the quoted IP header's, the ICMP checksum, and the quoted UDP checksum (0 stays 0).
void ReferenceModel::translate_icmp_error(Ctx &c, const IcmpError &error, bool outer_source, Ip to_ip, Port to_port) {
    size_t quote_ip = error.inner_l3 + (outer_source ? 16 : 12), quote_port = error.inner_l4 + (outer_source ? 2 : 0);
    Ip from_ip = raw32(c.in, quote_ip);
    Port from_port = raw16(c.in, quote_port);
    Bytes &o = c.out();
    put_raw32(o, c.p.l3 + (outer_source ? 12 : 16), to_ip);
    put_raw32(o, quote_ip, to_ip);
    put_raw16(o, quote_port, to_port);
    c.e.checksums.push_back({ChecksumRule::IpHeader, c.p.l3, c.p.ihl, 0, 0, 0, c.p.l3 + 10});
    c.e.checksums.push_back({ChecksumRule::IpHeader, error.inner_l3, error.inner_ihl, 0, 0, 0, error.inner_l3 + 10});
    c.e.checksums.push_back({ChecksumRule::Plain, c.p.l4, c.p.l4_end - c.p.l4, 0, 0, 0, c.p.l4 + 2});
    if (error.inner_proto == kUdp) {
        uint16_t expected =
            error.inner_udp_check == 0
                ? 0
                : checksum_after(error.inner_udp_check, word_changes(from_ip, to_ip, from_port, to_port));
        c.e.checksums.push_back({ChecksumRule::QuotedUdp, 0, 0, 0, 0, expected, error.inner_l4 + 6});
    }
}

// Walk 4's allow decision: a recorded flow (confirmed, then unconfirmed) comes before a listed port.
std::optional<ReferenceModel::Steering> ReferenceModel::steering(const FlowKey &key) const {
    if (auto it = st_.flows.find(key); it != st_.flows.end())
        return Steering{it->second, BPFNET_KIND_PLAIN, false, BPFNET_CTR_DNAT_FLOW};
    if (auto it = st_.flows_unconfirmed.find(key); it != st_.flows_unconfirmed.end())
        return Steering{it->second, BPFNET_KIND_PLAIN, true, BPFNET_CTR_DNAT_FLOW};
    auto s = cfg_.services.find({key.service_ip, key.service_port, key.proto});
    if (s == cfg_.services.end())
        return std::nullopt;
    return Steering{{s->second.backend_ip, s->second.backend_port}, s->second.kind, false, BPFNET_CTR_DNAT_SERVICE};
}

// "ICMP errors": an error to service_ip is ours when it quotes a packet sent from there that the host's answer
// would have been steered back for (not a relayed DHCP reply); the backend endpoint that packet came from.
std::optional<FlowTarget> ReferenceModel::quoted_target(const IcmpError &error, Ip service_ip) const {
    if (error.inner_saddr != service_ip)
        return std::nullopt;
    auto to = steering({error.inner_daddr, error.inner_saddr, error.inner_dport, error.inner_sport, error.inner_proto});
    if (!to || to->kind == BPFNET_KIND_DHCP || to->target.backend_ip == 0)
        return std::nullopt;
    return to->target;
}

bool ReferenceModel::in_subnet(Ip ip) const {
    return (ip & cfg_.mask) == cfg_.subnet;
}

// Trust model: only a LAN host's own unicast address is ever learned.
bool ReferenceModel::neighbour_acceptable(Ip ip, const Mac &mac) const {
    uint32_t host_mask = ~ntohl(cfg_.mask), host = ntohl(ip) & host_mask;
    if (host_mask >= 3 && (host == 0 || host == host_mask))
        return false; // network or broadcast address (a /31 or /32 has neither)
    if (group_mac(mac) || zero_mac(mac))
        return false;
    return !cfg_.service_ips.contains(ip);
}

void ReferenceModel::learn_neighbour(Ctx &c, Ip ip, const Mac &mac, bool from_arp, Ip service_ip) {
    if (ip == 0 || !in_subnet(ip))
        return;
    if (!neighbour_acceptable(ip, mac)) {
        c.count(BPFNET_CTR_NEIGHBOUR_REFUSED);
        return;
    }
    auto known = st_.neighbours.find(ip);
    if (known != st_.neighbours.end() && known->second == mac)
        return;
    if (known != st_.neighbours.end() && !from_arp) {
        c.count(BPFNET_CTR_NEIGHBOUR_KEPT);
        return;
    }
    if (known != st_.neighbours.end()) {
        arp_moves_.insert(ip);
        known->second = mac;
        c.count(BPFNET_CTR_NEIGHBOUR_LEARNED);
        c.note("neighbour moved by ARP");
        return;
    }
    // Not yet a host the datapath accepted a packet from: ARP teaches the unconfirmed table only, and the
    // host's first accepted packet moves it (at the MAC ARP told) to neighbours.
    auto pending = st_.neighbours_unconfirmed.find(ip);
    if (from_arp) {
        if (pending != st_.neighbours_unconfirmed.end() && pending->second == mac)
            return;
        st_.neighbours_unconfirmed[ip] = mac;
        c.count(BPFNET_CTR_NEIGHBOUR_LEARNED);
        c.note("learned unconfirmed neighbour");
        return;
    }
    if (pending != st_.neighbours_unconfirmed.end()) {
        if (pending->second != mac)
            c.count(BPFNET_CTR_NEIGHBOUR_KEPT);
        st_.neighbours[ip] = pending->second;
        st_.neighbours_unconfirmed.erase(pending);
        c.count(BPFNET_CTR_NEIGHBOUR_CONFIRMED);
        c.note("neighbour confirmed");
        return;
    }
    st_.neighbours[ip] = mac;
    c.count(BPFNET_CTR_NEIGHBOUR_LEARNED);
    c.note("learned neighbour");
    c.e.events.push_back({BPFNET_EVENT_NEIGHBOUR_VERIFY, ip, service_ip, mac, false});
}

std::set<Ip> ReferenceModel::take_arp_moves() {
    return std::exchange(arp_moves_, {});
}

namespace {
// An Ethernet/IPv4 ARP packet (RFC 826): hardware type 1, protocol 0x0800, lengths 6 and 4.
bool arp_ipv4(const Bytes &f) {
    return f.size() >= kEth + 28 && be16(f, 12) == kEthArp && be16(f, 14) == 1 && be16(f, 16) == kEthIp && f[18] == 6 &&
           f[19] == 4;
}
constexpr size_t kArpOp = 20, kArpSenderMac = 22, kArpSenderIp = 28, kArpTargetMac = 32, kArpTargetIp = 38;
} // namespace

// Walk 1 and "Conflicts": XDP learns the sender of a request or reply, or sees a claim on a service IP.
void ReferenceModel::observe_arp(Ctx &c, const Bytes &f) {
    uint16_t op = be16(f, kArpOp);
    Ip sender = raw32(f, kArpSenderIp);
    Mac sender_mac = mac_at(f, kArpSenderMac);
    if (op != 1 && op != 2)
        return;                   // requests and replies only
    if (op == 1 && sender == 0) { // a probe (RFC 5227): another node about to use the target address
        Ip target = raw32(f, kArpTargetIp);
        auto probed = cfg_.service_ips.find(target);
        if (probed != cfg_.service_ips.end() && probed->second && cfg_.loader_alive && sender_mac != cfg_.nic_mac)
            see_conflict(c, target, sender_mac);
        return;
    }
    auto claimed = cfg_.service_ips.find(sender);
    if (claimed == cfg_.service_ips.end()) {
        learn_neighbour(c, sender, sender_mac, true, 0);
        return;
    }
    if (claimed->second && cfg_.loader_alive && sender_mac != cfg_.nic_mac)
        see_conflict(c, sender, sender_mac);
}

// "Conflicts": another MAC claims a service IP this node answers for (report_conflict in bpf/lib/events.h).
void ReferenceModel::see_conflict(Ctx &c, Ip service_ip, const Mac &mac) {
    auto known = st_.conflicts.find(service_ip);
    bool must_report = known == st_.conflicts.end() || known->second != mac;
    st_.conflicts[service_ip] = mac;
    c.count(BPFNET_CTR_ARP_CONFLICT);
    c.note("conflict");
    c.e.events.push_back({BPFNET_EVENT_CONFLICT, service_ip, service_ip, mac, !must_report});
}

Expectation ReferenceModel::xdp_nic(const Bytes &f) {
    Ctx c(f);
    c.e.verdict = kXdpPass;
    if (f.size() < kEth) {
        c.count(BPFNET_CTR_PASS);
        return c.e;
    }
    uint16_t type = be16(f, 12);
    if (type == kEthArp) {
        bool who_has_service = false;
        if (arp_ipv4(f)) {
            observe_arp(c, f);
            who_has_service = be16(f, kArpOp) == 1 && cfg_.service_ips.contains(raw32(f, kArpTargetIp));
        }
        if (!who_has_service)
            c.count(BPFNET_CTR_PASS); // the who-has is counted where it is answered
        c.note("arp");
        return c.e;
    }
    if (type != kEthIp || f.size() < kEth + 20 || !in_subnet(raw32(f, kEth + 16)) ||
        !cfg_.service_ips.contains(raw32(f, kEth + 16))) {
        c.count(BPFNET_CTR_PASS);
        c.note("not ours");
        return c.e;
    }
    c.p = parse_ipv4(f);
    c.begin(BPFNET_HOOK_XDP_NIC, c.p.saddr, c.p.daddr);
    auto drop = [&](uint32_t reason) {
        c.decide(reason);
        c.e.verdict = kXdpDrop;
        return c.e;
    };
    if (c.p.verdict == Parse::OtherProtocol && c.p.proto == kIcmp) {
        // From the provisioning subnet, as every packet to a service IP.
        if (!in_subnet(c.p.saddr))
            return drop(BPFNET_CTR_DROP_OFF_SUBNET);
        auto error = read_icmp_error(f, c.p);
        if (!error)
            return drop(BPFNET_CTR_DROP_PROTOCOL);
        bool explained = quoted_target(*error, c.p.daddr).has_value();
        if (!explained)
            return drop(BPFNET_CTR_DROP_ICMP_UNMATCHED);
        c.note("icmp error passed");
        return c.e;
    }
    if (c.p.verdict != Parse::Ok)
        return drop(drop_reason(c.p.verdict));
    if (!in_subnet(c.p.saddr))
        return drop(BPFNET_CTR_DROP_OFF_SUBNET);
    if (!steering({c.p.saddr, c.p.daddr, c.p.sport, c.p.dport, c.p.proto}))
        return drop(BPFNET_CTR_DROP_NOT_ALLOWED);
    c.note("allowed");
    return c.e; // passed to TC, no decision of its own
}

// Walk 1 at TC: the is-at answer, made in place from the who-has, out of the NIC's egress.
int ReferenceModel::answer_arp(Ctx &c, const Bytes &f) {
    Ip service_ip = raw32(f, kArpTargetIp);
    c.begin(BPFNET_HOOK_TC_NIC_INGRESS, raw32(f, kArpSenderIp), service_ip);
    if (!cfg_.loader_alive) {
        c.decide(BPFNET_CTR_ARP_STALE_HEARTBEAT);
        return kTcNext;
    }
    if (!cfg_.service_ips.at(service_ip)) {
        c.decide(BPFNET_CTR_ARP_NOT_ACTIVE);
        return kTcShot;
    }
    Mac asker = mac_at(f, kArpSenderMac);
    Ip asker_ip = raw32(f, kArpSenderIp);
    Bytes &o = c.out();
    put_mac(o, 0, asker);
    put_mac(o, 6, cfg_.nic_mac);
    o[kArpOp] = 0;
    o[kArpOp + 1] = 2;
    put_mac(o, kArpTargetMac, asker);
    put_raw32(o, kArpTargetIp, asker_ip);
    put_mac(o, kArpSenderMac, cfg_.nic_mac);
    put_raw32(o, kArpSenderIp, service_ip);
    c.decide(BPFNET_CTR_ARP_REPLY);
    return kTcRedirect;
}

Expectation ReferenceModel::tc_nic_ingress(const Bytes &f) {
    Ctx c(f);
    c.e.verdict = kTcNext;
    if (f.size() < kEth)
        return c.e;
    uint16_t type = be16(f, 12);
    if (type == kEthArp) {
        if (arp_ipv4(f) && be16(f, kArpOp) == 1 && cfg_.service_ips.contains(raw32(f, kArpTargetIp)))
            c.e.verdict = answer_arp(c, f);
        c.note("arp");
        return c.e;
    }
    if (type != kEthIp || f.size() < kEth + 20)
        return c.e;
    Ip daddr = raw32(f, kEth + 16);
    if (daddr == kBroadcastIp) {
        c.p = parse_ipv4(f);
        // Walk 2: a broadcast is ours only as a DHCP request while this node owns the DHCP service IP.
        if (!cfg_.dhcp_service_ip || c.p.proto != kUdp || c.p.verdict != Parse::Ok || c.p.dport != port(67) ||
            !cfg_.service_ips.contains(cfg_.dhcp_service_ip) || !cfg_.service_ips.at(cfg_.dhcp_service_ip)) {
            c.note("broadcast, not ours");
            return c.e;
        }
        c.begin(BPFNET_HOOK_TC_NIC_INGRESS, c.p.saddr, c.p.daddr);
        c.e.verdict = relay_broadcast_dhcp(c);
        return c.e;
    }
    if (!in_subnet(daddr) || !cfg_.service_ips.contains(daddr)) {
        c.note("not ours");
        return c.e;
    }
    c.p = parse_ipv4(f);
    c.begin(BPFNET_HOOK_TC_NIC_INGRESS, c.p.saddr, c.p.daddr);
    c.e.verdict = steer_from_lan(c, f);
    if (c.e.verdict != kTcRedirect)
        c.e.bytes_matter = c.e.verdict != kTcShot;
    return c.e;
}

int ReferenceModel::relay_broadcast_dhcp(Ctx &c) {
    c.note("broadcast dhcp");
    if (!cfg_.loader_alive) {
        c.decide(BPFNET_CTR_DHCP_STALE_HEARTBEAT);
        return kTcNext;
    }
    Ip service_ip = cfg_.dhcp_service_ip;
    auto to = steering({c.p.saddr, service_ip, c.p.sport, c.p.dport, kUdp});
    if (!to || to->kind != BPFNET_KIND_DHCP) {
        c.decide(BPFNET_CTR_DROP_NO_BACKEND);
        c.e.bytes_matter = false;
        return kTcShot;
    }
    int verdict = relay_dhcp_request(c, service_ip, to->target);
    if (verdict == kTcShot)
        c.e.bytes_matter = false;
    return verdict;
}

// Walks 3, 4 and 6 at TC: DNAT into the pod, the relay, ICMP errors; then what an accepted packet teaches.
int ReferenceModel::steer_from_lan(Ctx &c, const Bytes &f) {
    if (c.p.verdict == Parse::OtherProtocol && c.p.proto == kIcmp)
        return icmp_error_to_pod(c);
    if (c.p.verdict != Parse::Ok) {
        c.decide(drop_reason(c.p.verdict));
        return kTcShot;
    }
    if (!in_subnet(c.p.saddr)) {
        c.decide(BPFNET_CTR_DROP_OFF_SUBNET);
        return kTcShot;
    }
    FlowKey key{c.p.saddr, c.p.daddr, c.p.sport, c.p.dport, c.p.proto};
    auto to = steering(key);
    if (!to) {
        c.decide(BPFNET_CTR_DROP_NOT_ALLOWED);
        return kTcShot;
    }
    const auto &[target, kind, unconfirmed, path] = *to;
    Mac sender = mac_at(f, 6);
    int verdict;
    if (kind == BPFNET_KIND_DHCP) {
        if (!cfg_.loader_alive) {
            c.decide(BPFNET_CTR_DHCP_STALE_HEARTBEAT);
            return kTcShot;
        }
        verdict = relay_dhcp_request(c, c.p.daddr, target);
    } else {
        auto backend = cfg_.backends.find(target.backend_ip);
        if (backend == cfg_.backends.end()) {
            c.decide(BPFNET_CTR_DROP_NO_BACKEND);
            return kTcShot;
        }
        if (kind == BPFNET_KIND_TFTP)
            clamp_tftp_blksize(c, backend->second.mtu);
        c.nat(false, target.backend_ip, target.backend_port);
        c.macs(backend->second.pod_mac, backend->second.veth_mac);
        c.decide(path);
        c.note(path == BPFNET_CTR_DNAT_FLOW ? "dnat flow" : "dnat service");
        verdict = kTcRedirect;
    }
    if (verdict != kTcRedirect)
        return verdict;
    // Only the host confirms a flow: the answer's MAC is the one the host is known at (either table).
    std::optional<Mac> host_mac;
    if (auto n = st_.neighbours.find(c.p.saddr); n != st_.neighbours.end())
        host_mac = n->second;
    else if (auto u = st_.neighbours_unconfirmed.find(c.p.saddr); u != st_.neighbours_unconfirmed.end())
        host_mac = u->second;
    const bool from_host = host_mac && *host_mac == sender;
    auto share = st_.flow_shares.find(c.p.saddr);
    if (unconfirmed && !from_host) {
        c.count(BPFNET_CTR_FLOW_FOREIGN_ANSWER);
        c.note("flow answered from another MAC than its host's");
    } else if (unconfirmed && share != st_.flow_shares.end() && share->second >= BPFNET_MAX_FLOWS_PER_HOST) {
        c.count(BPFNET_CTR_FLOW_OVER_SHARE); // the host holds its share: the flow stays unconfirmed
        c.note("flow over the host's share");
    } else if (unconfirmed) {
        st_.flows[key] = target;
        st_.flows_unconfirmed.erase(key);
        st_.flow_shares[c.p.saddr]++;
        c.count(BPFNET_CTR_FLOW_CONFIRMED);
        c.note("flow confirmed");
    }
    // A TCP connection teaches with its SYN only (the host's first packet); UDP with every datagram but those
    // of a confirmed flow (the one that confirmed it found its host known at its MAC).
    const bool confirmed_flow = path == BPFNET_CTR_DNAT_FLOW && !unconfirmed;
    const bool teaches = !confirmed_flow && (c.p.proto != kTcp || (f[c.p.l4 + 13] & 0x02));
    if (teaches)
        learn_neighbour(c, c.p.saddr, sender, false, c.p.daddr);
    return verdict;
}

// Walk 2, client (or configured relay) -> server, into the pod from service IP:67.
int ReferenceModel::relay_dhcp_request(Ctx &c, Ip service_ip, const FlowTarget &to) {
    c.note("dhcp request");
    auto backend = cfg_.backends.find(to.backend_ip);
    if (backend == cfg_.backends.end()) {
        c.decide(BPFNET_CTR_DROP_NO_BACKEND);
        return kTcShot;
    }
    size_t bootp = c.p.l4 + 8;
    if (bootp + kBootpOptions > c.p.l4_end || c.in[bootp] != 1) {
        c.decide(BPFNET_CTR_DROP_DHCP_MALFORMED);
        return kTcShot;
    }
    uint8_t hops = c.in[bootp + 3];
    if (hops > cfg_.dhcp_max_hops) {
        c.decide(BPFNET_CTR_DROP_DHCP_HOPS);
        return kTcShot;
    }
    Ip giaddr = raw32(c.in, bootp + 24);
    if (giaddr && !cfg_.relays.contains(giaddr)) {
        c.decide(BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY);
        return kTcShot;
    }
    restore_server_id(c, to.backend_ip, service_ip);
    c.out()[bootp + 3] = static_cast<uint8_t>(hops + 1);
    if (!giaddr)
        put_raw32(c.out(), bootp + 24, service_ip);
    c.nat(true, service_ip, port(67));
    c.nat(false, to.backend_ip, to.backend_port);
    c.macs(backend->second.pod_mac, backend->second.veth_mac);
    c.decide(BPFNET_CTR_DHCP_REQUEST_RELAYED);
    return kTcRedirect;
}

// A server that names itself gets its own identifier back wherever the client names the service IP.
void ReferenceModel::restore_server_id(Ctx &c, Ip backend_ip, Ip service_ip) {
    auto server = st_.dhcp_servers.find(backend_ip);
    if (server == st_.dhcp_servers.end() || server->second == service_ip)
        return;
    size_t bootp = c.p.l4 + 8;
    // A DISCOVER or INFORM by its first option carries no server identifier: not walked (the frame's
    // bytes are read, wherever the UDP length ends).
    const size_t first = bootp + 240;
    if (first + 4 <= c.in.size() &&
        (static_cast<uint32_t>(be16(c.in, bootp + 236)) << 16 | be16(c.in, bootp + 238)) == 0x63825363u &&
        c.in[first] == 53 && c.in[first + 1] == 1 && (c.in[first + 2] == 1 || c.in[first + 2] == 8))
        return;
    OptionWalk w = walk_options(c.in, bootp, c.p.l4_end);
    if (w.result == OptionWalk::Broken)
        c.count(BPFNET_CTR_DHCP_OPTIONS_MALFORMED);
    if (w.result != OptionWalk::Done)
        return;
    bool restored = false;
    for (size_t at : w.server_ids)
        if (raw32(c.in, bootp + at) == service_ip) {
            put_raw32(c.out(), bootp + at, server->second);
            restored = true;
        }
    if (restored)
        c.count(BPFNET_CTR_DHCP_SERVER_ID_RESTORED);
}

// The pod's size for a TFTP read request's blksize (docs/design.md, "Pod MTU").
void ReferenceModel::clamp_tftp_blksize(Ctx &c, uint16_t mtu) {
    size_t off = c.p.l4 + 8;
    if (mtu < 40 || off + 4 > c.p.l4_end)
        return;
    size_t n = std::min<size_t>(c.p.l4_end - off, 256);
    const Bytes &f = c.in;
    if (f[off] != 0 || f[off + 1] != 1)
        return; // not a read request
    // Strings after the opcode: file name, mode, then option name/value pairs, each ending with NUL. Only
    // what lies in the first 256 bytes is searched.
    std::vector<std::pair<size_t, size_t>> strings; // [start, end) of each complete string
    size_t start = 2;
    for (size_t i = 2; i < n; i++)
        if (f[off + i] == 0) {
            strings.emplace_back(start, i);
            start = i + 1;
        }
    for (size_t k = 2; k + 1 < strings.size() + 1; k += 2) {
        auto [ns, ne] = strings[k];
        std::string name(f.begin() + static_cast<long>(off + ns), f.begin() + static_cast<long>(off + ne));
        std::transform(name.begin(), name.end(), name.begin(),
                       [](char ch) { return static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch); });
        if (name != "blksize")
            continue;
        if (k + 1 >= strings.size())
            return; // its value does not end within the searched bytes
        auto [vs, ve] = strings[k + 1];
        size_t len = ve - vs;
        if (len < 1 || len > 8)
            return;
        long asked = 0;
        for (size_t i = vs; i < ve; i++) {
            if (f[off + i] < '0' || f[off + i] > '9')
                return;
            asked = asked * 10 + (f[off + i] - '0');
        }
        long fits = mtu - 32;
        if (asked <= fits)
            return;
        for (size_t i = len; i-- > 0;) {
            c.out()[off + vs + i] = static_cast<uint8_t>('0' + fits % 10);
            fits /= 10;
        }
        c.keep_ip_and_transport_checksums();
        c.count(BPFNET_CTR_TFTP_BLKSIZE_CLAMPED);
        c.note("blksize clamped");
        return; // the first blksize option decides
    }
}

// ICMP errors from the LAN about what the datapath sent as the service IP, into the pod.
int ReferenceModel::icmp_error_to_pod(Ctx &c) {
    c.note("icmp error to pod");
    if (!in_subnet(c.p.saddr)) {
        c.decide(BPFNET_CTR_DROP_OFF_SUBNET);
        return kTcShot;
    }
    auto error = read_icmp_error(c.in, c.p);
    if (!error) {
        c.decide(BPFNET_CTR_DROP_PROTOCOL);
        return kTcShot;
    }
    auto target = quoted_target(*error, c.p.daddr);
    if (!target) {
        c.decide(BPFNET_CTR_DROP_ICMP_UNMATCHED);
        return kTcShot;
    }
    auto backend = cfg_.backends.find(target->backend_ip);
    if (backend == cfg_.backends.end()) {
        c.decide(BPFNET_CTR_DROP_NO_BACKEND);
        return kTcShot;
    }
    // The quote travelled the other way: its source is the service IP the host saw.
    translate_icmp_error(c, *error, false, target->backend_ip, target->backend_port);
    c.macs(backend->second.pod_mac, backend->second.veth_mac);
    c.decide(BPFNET_CTR_ICMP_ERROR_TO_POD);
    return kTcRedirect;
}

// The reverse path (walks 2-5): a backend's packet to the provisioning LAN.
Expectation ReferenceModel::tc_pod_ingress(const Bytes &f) {
    Ctx c(f);
    c.e.verdict = kTcNext;
    if (f.size() < kEth + 20 || be16(f, 12) != kEthIp)
        return c.e;
    Ip saddr = raw32(f, kEth + 12), daddr = raw32(f, kEth + 16);
    auto backend = cfg_.backends.find(saddr);
    if (backend == cfg_.backends.end() || !in_subnet(daddr)) {
        c.note("not ours (the CNI's)");
        return c.e;
    }
    c.p = parse_ipv4(f);
    c.begin(BPFNET_HOOK_TC_POD_INGRESS, saddr, daddr);
    c.e.verdict = steer_from_pod(c, backend->second);
    if (c.e.verdict == kTcShot)
        c.e.bytes_matter = false;
    return c.e;
}

bool ReferenceModel::neighbour_for(Ctx &c, Ip host, Ip service_ip, Mac &mac) {
    // neighbours first, then the hosts known from ARP only.
    for (const std::map<Ip, Mac> *table : {&st_.neighbours, &st_.neighbours_unconfirmed})
        if (auto it = table->find(host); it != table->end()) {
            mac = it->second;
            return true;
        }
    c.e.events.push_back({BPFNET_EVENT_NEIGHBOUR_MISS, host, service_ip, {}, false});
    c.decide(BPFNET_CTR_NEIGHBOUR_MISS);
    c.note("neighbour miss");
    return false;
}

void ReferenceModel::record_flow(Ctx &c, const FlowKey &key, const FlowTarget &target) {
    if (auto known = st_.flows.find(key); known != st_.flows.end()) {
        known->second = target; // the pod moved its side of a known flow: trusted
        return;
    }
    auto pending = st_.flows_unconfirmed.find(key);
    if (pending != st_.flows_unconfirmed.end() && pending->second == target)
        return;
    st_.flows_unconfirmed[key] = target;
    c.count(BPFNET_CTR_FLOW_CREATED);
    c.note("flow recorded");
}

int ReferenceModel::steer_from_pod(Ctx &c, const Backend &backend) {
    if (c.p.verdict == Parse::OtherProtocol && c.p.proto == kIcmp)
        return icmp_error_to_lan(c, backend);
    if (c.p.verdict != Parse::Ok) {
        c.decide(c.p.verdict == Parse::OtherProtocol ? uint32_t{BPFNET_CTR_DROP_BACKEND_PROTOCOL}
                                                     : drop_reason(c.p.verdict));
        return kTcShot;
    }
    auto listed = cfg_.backend_ports.find({c.p.saddr, c.p.sport, c.p.proto});
    bool is_listed = listed != cfg_.backend_ports.end();
    if (is_listed && listed->second.kind == BPFNET_KIND_DHCP && c.p.dport == port(67))
        return relay_dhcp_reply(c, listed->second);
    if (cfg_.service_ips.contains(c.p.daddr)) {
        c.decide(BPFNET_CTR_DROP_HAIRPIN);
        return kTcShot;
    }
    Ip service_ip = is_listed ? listed->second.service_ip : backend.service_ip;
    Port service_port = is_listed ? listed->second.service_port : c.p.sport;
    Mac host;
    if (!neighbour_for(c, c.p.daddr, service_ip, host))
        return kTcShot;
    if (!is_listed)
        record_flow(c, {c.p.daddr, service_ip, c.p.dport, c.p.sport, c.p.proto}, {c.p.saddr, c.p.sport});
    c.nat(true, service_ip, service_port);
    c.macs(host, cfg_.nic_mac);
    c.decide(is_listed ? BPFNET_CTR_SNAT_REPLY : BPFNET_CTR_SNAT_FLOW);
    c.note(is_listed ? "snat reply" : "snat flow");
    return kTcRedirect;
}

// Walk 2, server -> relay: delivered as RFC 2131 4.1 says, with the pod's address hidden.
int ReferenceModel::relay_dhcp_reply(Ctx &c, const BackendPort &listed) {
    c.note("dhcp reply");
    size_t bootp = c.p.l4 + 8;
    if (bootp + kBootpOptions > c.p.l4_end || c.in[bootp] != 2) {
        c.decide(BPFNET_CTR_DROP_DHCP_MALFORMED);
        return kTcShot;
    }
    Ip giaddr = raw32(c.in, bootp + 24);
    if (!giaddr || giaddr != c.p.daddr) {
        c.decide(BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY);
        return kTcShot;
    }
    Ip to_ip = c.p.daddr;
    Port to_port = port(67);
    Mac to_mac;
    if (cfg_.service_ips.contains(c.p.daddr)) {
        to_port = port(68);
        Ip ciaddr = raw32(c.in, bootp + 12), yiaddr = raw32(c.in, bootp + 16);
        Mac chaddr = mac_at(c.in, bootp + 28);
        bool usable = c.in[bootp + 1] == 1 && c.in[bootp + 2] == 6 && !group_mac(chaddr);
        bool broadcast_flag = c.in[bootp + 10] & 0x80;
        if (ciaddr && usable) {
            to_ip = ciaddr;
            to_mac = chaddr;
        } else if (broadcast_flag || !yiaddr || !usable) {
            to_ip = kBroadcastIp;
            to_mac = kBroadcastMac;
        } else {
            to_ip = yiaddr;
            to_mac = chaddr;
        }
        if (to_ip != kBroadcastIp && !in_subnet(to_ip)) {
            c.decide(BPFNET_CTR_DROP_DHCP_OFF_SUBNET);
            return kTcShot;
        }
    } else {
        if (!cfg_.relays.contains(c.p.daddr)) {
            c.decide(BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY);
            return kTcShot;
        }
        if (!neighbour_for(c, c.p.daddr, listed.service_ip, to_mac))
            return kTcShot;
    }
    hide_backend(c, c.p.saddr, listed.service_ip);
    c.nat(true, listed.service_ip, port(67));
    c.nat(false, to_ip, to_port);
    c.macs(to_mac, cfg_.nic_mac);
    c.decide(BPFNET_CTR_DHCP_REPLY_RELAYED);
    return kTcRedirect;
}

// The client only ever sees the service IP: siaddr and every option 54 naming the pod are rewritten.
void ReferenceModel::hide_backend(Ctx &c, Ip backend_ip, Ip service_ip) {
    size_t bootp = c.p.l4 + 8;
    bool rewritten = false;
    if (raw32(c.in, bootp + 20) == backend_ip) {
        put_raw32(c.out(), bootp + 20, service_ip);
        rewritten = true;
    }
    OptionWalk w = walk_options(c.in, bootp, c.p.l4_end);
    if (w.result == OptionWalk::Broken)
        c.count(BPFNET_CTR_DHCP_OPTIONS_MALFORMED);
    if (w.result == OptionWalk::Done && !w.server_ids.empty()) {
        Ip first = raw32(c.in, bootp + w.server_ids.front());
        st_.dhcp_servers[backend_ip] = first;
        for (size_t at : w.server_ids)
            if (raw32(c.in, bootp + at) == backend_ip) {
                put_raw32(c.out(), bootp + at, service_ip);
                rewritten = true;
            }
    }
    if (rewritten)
        c.count(BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN);
}

// The pod's ICMP error about what the datapath delivered to it, out to the LAN as the service IP.
int ReferenceModel::icmp_error_to_lan(Ctx &c, const Backend &backend) {
    c.note("icmp error to lan");
    auto error = read_icmp_error(c.in, c.p);
    if (!error) {
        c.decide(BPFNET_CTR_DROP_BACKEND_PROTOCOL);
        return kTcShot;
    }
    std::optional<std::pair<Ip, Port>> service;
    if (error->inner_daddr == c.p.saddr) {
        auto listed = cfg_.backend_ports.find({error->inner_daddr, error->inner_dport, error->inner_proto});
        if (listed != cfg_.backend_ports.end()) {
            if (listed->second.kind != BPFNET_KIND_DHCP)
                service = {listed->second.service_ip, listed->second.service_port};
        } else {
            FlowKey key{error->inner_saddr, backend.service_ip, error->inner_sport, error->inner_dport,
                        error->inner_proto};
            auto flow = st_.flows.find(key); // only a flow the host answered explains an error to it
            if (flow != st_.flows.end() && flow->second == FlowTarget{error->inner_daddr, error->inner_dport})
                service = {backend.service_ip, error->inner_dport};
        }
    }
    if (!service) {
        c.decide(BPFNET_CTR_DROP_ICMP_UNMATCHED);
        return kTcShot;
    }
    if (cfg_.service_ips.contains(c.p.daddr)) { // the pod's own packet to a service IP, as in steer_from_pod
        c.decide(BPFNET_CTR_DROP_HAIRPIN);
        return kTcShot;
    }
    Mac host;
    if (!neighbour_for(c, c.p.daddr, service->first, host))
        return kTcShot;
    translate_icmp_error(c, *error, true, service->first, service->second);
    c.macs(host, cfg_.nic_mac);
    c.decide(BPFNET_CTR_ICMP_ERROR_TO_LAN);
    return kTcRedirect;
}

Expectation ReferenceModel::run(Program program, const Bytes &frame) {
    switch (program) {
    case Program::XdpNic:
        return xdp_nic(frame);
    case Program::TcNic:
        return tc_nic_ingress(frame);
    case Program::TcPod:
        return tc_pod_ingress(frame);
    }
    return {};
}

} // namespace bpfnet::fuzz
