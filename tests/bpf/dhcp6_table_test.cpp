// The DHCPv6 relay agent (RFC 8415 section 19) as a table. Requests: a client's message to ff02::1:2, or a
// configured LAN relay's Relay-Forward, wrapped in a Relay-Forward into the pod. Replies: the pod's
// Relay-Reply unwrapped, its message sent to the peer at the MAC of the Interface-ID. Every frame is built
// here from scratch (messages byte by byte, checksums by packet6.cpp), so each row checks the UDP checksum
// over messages the datapath moved, grew and cut, odd lengths and odd offsets included.
#include "packet6.hpp"
#include "table.hpp"

namespace bpfnet::test {
namespace {

using namespace world;

constexpr uint8_t kSolicit = 1, kAdvertise = 2, kRequest = 3, kReply = 7, kRelayForw = 12, kRelayRepl = 13;
constexpr uint16_t kOptClientId = 1, kOptRelayMsg = 9, kOptInterfaceId = 18, kOptBootfileUrl = 59,
                   kOptClientLinkLayer = 79;
constexpr uint16_t kClientPort = 546, kServerPort = 547;
const std::string all_dhcp_agents = "ff02::1:2";
const Mac all_dhcp_agents_mac = mac("33:33:00:01:00:02");

void put16(Bytes &b, uint16_t value) {
    b.push_back(static_cast<uint8_t>(value >> 8));
    b.push_back(static_cast<uint8_t>(value & 0xff));
}

Bytes option(uint16_t code, const Bytes &data) {
    Bytes o;
    put16(o, code);
    put16(o, static_cast<uint16_t>(data.size()));
    o.insert(o.end(), data.begin(), data.end());
    return o;
}

Bytes text(const std::string &s) {
    return Bytes(s.begin(), s.end());
}

Bytes concat(std::initializer_list<Bytes> parts) {
    Bytes all;
    for (const auto &p : parts)
        all.insert(all.end(), p.begin(), p.end());
    return all;
}

// A client or server message: msg-type, transaction id, options. The client identifier is a DUID-LL.
Bytes message(uint8_t type, const Bytes &more_options = {}) {
    Bytes m = {type, 0x12, 0x34, 0x56};
    Bytes duid = {0, 3, 0, 1};
    duid.insert(duid.end(), client_mac.begin(), client_mac.end());
    auto id = option(kOptClientId, duid);
    m.insert(m.end(), id.begin(), id.end());
    m.insert(m.end(), more_options.begin(), more_options.end());
    return m;
}

// A server's Advertise with an odd-length boot file URL (option 59, RFC 5970): the message's length is odd.
Bytes advertise() {
    return message(kAdvertise, option(kOptBootfileUrl, text("tftp://[2001:2::2]/snp.efi")));
}

Bytes relay_head(uint8_t type, uint8_t hops, const std::string &link, const std::string &peer) {
    Bytes h = {type, hops};
    auto l = ip6(link), p = ip6(peer);
    h.insert(h.end(), l.begin(), l.end());
    h.insert(h.end(), p.begin(), p.end());
    return h;
}

Bytes mac_bytes(const Mac &m) {
    return Bytes(m.begin(), m.end());
}

// The Client Link-Layer Address option (RFC 6939): hardware type 1 (Ethernet), the MAC.
Bytes client_link_layer(const Mac &m) {
    return option(kOptClientLinkLayer, concat({Bytes{0, 1}, mac_bytes(m)}));
}

// The Relay-Forward the datapath must build: its header; for a client's message the Interface-ID (the frame's
// source MAC) and the Client Link-Layer Address (the same MAC), for a relay's Relay-Forward the Interface-ID
// alone, the MAC followed by 12 zero bytes (the same length: the message has one place); the Relay Message.
Bytes relay_forward(uint8_t hops, const std::string &link, const std::string &peer, const Mac &from,
                    const Bytes &inner) {
    const Bytes options = inner.at(0) == kRelayForw
                              ? option(kOptInterfaceId, concat({mac_bytes(from), Bytes(12, 0)}))
                              : concat({option(kOptInterfaceId, mac_bytes(from)), client_link_layer(from)});
    return concat({relay_head(kRelayForw, hops, link, peer), options, option(kOptRelayMsg, inner)});
}

// The Relay-Forward as built before the Client Link-Layer Address: a relay agent on the LAN sends this shape.
Bytes lan_relay_forward(uint8_t hops, const std::string &link, const std::string &peer, const Mac &from,
                        const Bytes &inner) {
    return concat({relay_head(kRelayForw, hops, link, peer), option(kOptInterfaceId, mac_bytes(from)),
                   option(kOptRelayMsg, inner)});
}

// A server's Relay-Reply, the options in the order given.
Bytes relay_reply(const std::string &peer, std::initializer_list<Bytes> options, uint8_t hops = 0,
                  const std::string &link = service_ip6) {
    Bytes r = relay_head(kRelayRepl, hops, link, peer);
    for (const auto &o : options)
        r.insert(r.end(), o.begin(), o.end());
    return r;
}

Bytes client_solicits(const Bytes &msg, const Mac &from = client_mac) {
    return Packet6::udp({client_link_local, kClientPort}, {all_dhcp_agents, kServerPort})
        .payload(msg)
        .hop_limit(1)
        .macs(all_dhcp_agents_mac, from)
        .bytes();
}

// The Relay-Forward into the pod: the relay's own datagram, with its own hop limit (64), whatever the client's was
// (1 to ff02::1:2), so that a node forwarding it on the way to the pod (delivery through the node's routing)
// passes it on.
Bytes into_server(const Bytes &relay_msg) {
    return Packet6::udp({service_ip6, kServerPort}, {pod_ip6, kServerPort})
        .payload(relay_msg)
        .hop_limit(64)
        .macs(pod_mac, veth_mac)
        .bytes();
}

Bytes from_server(const Bytes &relay_msg, const std::string &to = service_ip6) {
    return Packet6::udp({pod_ip6, kServerPort}, {to, kServerPort}).payload(relay_msg).macs(veth_mac, pod_mac).bytes();
}

Bytes lan_relay_forwards(const std::string &relay, uint8_t hops) {
    return Packet6::udp({relay, kServerPort}, {service_ip6, kServerPort})
        .payload(lan_relay_forward(hops, "2001:2:5::1", "fe80::99", host_mac, message(kSolicit)))
        .macs(nic_mac, host_mac)
        .bytes();
}

const Bytes interface_id = option(kOptInterfaceId, mac_bytes(client_mac));

const std::vector<Row> kRequestRows = {
    {"a client's Solicit to ff02::1:2: wrapped in a Relay-Forward from the service address into the pod",
     Program::TcNic,
     client_solicits(message(kSolicit)),
     kTcRedirect,
     into_server(relay_forward(0, service_ip6, client_link_local, client_mac, message(kSolicit))),
     {BPFNET_CTR_DHCP6_REQUEST_RELAYED}},
    {"a Request of odd length: wrapped, its checksum right",
     Program::TcNic,
     client_solicits(message(kRequest, option(kOptBootfileUrl, text("odd")))),
     kTcRedirect,
     into_server(relay_forward(0, service_ip6, client_link_local, client_mac,
                               message(kRequest, option(kOptBootfileUrl, text("odd"))))),
     {BPFNET_CTR_DHCP6_REQUEST_RELAYED}},
    {"the Interface-ID carries the MAC the frame came from, whatever address it claims",
     Program::TcNic,
     client_solicits(message(kSolicit), host_mac),
     kTcRedirect,
     into_server(relay_forward(0, service_ip6, client_link_local, host_mac, message(kSolicit))),
     {BPFNET_CTR_DHCP6_REQUEST_RELAYED}},
    {"a configured LAN relay's Relay-Forward: wrapped again, one hop more, link-address unspecified",
     Program::TcNic,
     lan_relay_forwards(lan_relay_ip6, 0),
     kTcRedirect,
     Packet6::udp({service_ip6, kServerPort}, {pod_ip6, kServerPort})
         .payload(relay_forward(1, "::", lan_relay_ip6, host_mac,
                                lan_relay_forward(0, "2001:2:5::1", "fe80::99", host_mac, message(kSolicit))))
         .macs(pod_mac, veth_mac)
         .bytes(),
     {BPFNET_CTR_DHCP6_REQUEST_RELAYED}},
    {"a Relay-Forward from a relay that is not configured: dropped",
     Program::TcNic,
     lan_relay_forwards(host_ip6, 0),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY}},
    {"a Relay-Forward that has used up the hop limit: dropped",
     Program::TcNic,
     lan_relay_forwards(lan_relay_ip6, dhcp_max_hops),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP_HOPS}},
    {"a Relay-Forward shorter than its header, from a configured relay: malformed",
     Program::TcNic,
     Packet6::udp({lan_relay_ip6, kServerPort}, {service_ip6, kServerPort})
         .payload(Bytes{kRelayForw, 0, 0x20, 0x01})
         .macs(nic_mac, host_mac)
         .bytes(),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP6_MALFORMED}},
    {"a server's Advertise from the LAN: not relayed",
     Program::TcNic,
     client_solicits(advertise()),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP6_MALFORMED}},
    {"a Relay-Reply from the LAN: not relayed",
     Program::TcNic,
     client_solicits(relay_reply(client_link_local, {interface_id, option(kOptRelayMsg, advertise())})),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP6_MALFORMED}},
    {"a message shorter than its header: dropped",
     Program::TcNic,
     client_solicits(Bytes{kSolicit, 0x12}),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP6_MALFORMED}},
    {"another node owns the DHCPv6 address: ff02::1:2 is handed on untouched",
     Program::TcNic,
     client_solicits(message(kSolicit)),
     kTcNext,
     std::nullopt,
     {},
     [](DatapathTest &t) {
         t.set_service_ip6_active(false);
     }},
    {"the loader's heartbeat is stale: handed on, not relayed",
     Program::TcNic,
     client_solicits(message(kSolicit)),
     kTcNext,
     std::nullopt,
     {BPFNET_CTR_DHCP_STALE_HEARTBEAT},
     [](DatapathTest &t) {
         t.set_heartbeat_age_seconds(60);
     }},
    {"the DHCPv6 port with no backend on this node: dropped",
     Program::TcNic,
     client_solicits(message(kSolicit)),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_NO_BACKEND},
     [](DatapathTest &t) {
         t.remove_backend();
     }},
    {"UDP to port 547 of another LAN address: the kernel's",
     Program::TcNic,
     Packet6::udp({client_link_local, kClientPort}, {"2001:2::50", kServerPort})
         .payload(message(kSolicit))
         .macs(nic_mac, client_mac)
         .bytes(),
     kTcNext,
     std::nullopt,
     {}},
};

// What leaves the NIC for the client: from the NIC's link-local address, to the client's port 546.
Bytes to_client(const Bytes &msg, const Mac &dst = client_mac) {
    return Packet6::udp({nic_link_local, kServerPort}, {client_link_local, kClientPort})
        .payload(msg)
        .macs(dst, nic_mac)
        .bytes();
}

const std::vector<Row> kReplyRows = {
    {"the server's Relay-Reply: its Advertise sent to the client's link-local address from the NIC's",
     Program::TcPod,
     from_server(relay_reply(client_link_local, {interface_id, option(kOptRelayMsg, advertise())})),
     kTcRedirect,
     to_client(advertise()),
     {BPFNET_CTR_DHCP6_REPLY_RELAYED}},
    {"Relay Message first, an option between, the message at an odd offset: moved, checksum right",
     Program::TcPod,
     from_server(relay_reply(client_link_local,
                             {option(kOptRelayMsg, message(kReply)), option(99, Bytes{1, 2, 3}), interface_id})),
     kTcRedirect,
     to_client(message(kReply)),
     {BPFNET_CTR_DHCP6_REPLY_RELAYED}},
    {"the reply goes to the MAC of the Interface-ID, not to whoever owns the address",
     Program::TcPod,
     from_server(relay_reply(client_link_local,
                             {option(kOptInterfaceId, mac_bytes(host_mac)), option(kOptRelayMsg, advertise())})),
     kTcRedirect,
     to_client(advertise(), host_mac),
     {BPFNET_CTR_DHCP6_REPLY_RELAYED}},
    {"a Relay-Reply for a configured LAN relay: its inner Relay-Reply sent to the relay, port 547 (the relay's "
     "Interface-ID, padded as the Relay-Forward had it)",
     Program::TcPod,
     from_server(relay_reply(lan_relay_ip6,
                             {option(kOptInterfaceId, concat({mac_bytes(host_mac), Bytes(12, 0)})),
                              option(kOptRelayMsg, relay_reply("fe80::99", {option(kOptRelayMsg, advertise())}))},
                             1, "::")),
     kTcRedirect,
     Packet6::udp({service_ip6, kServerPort}, {lan_relay_ip6, kServerPort})
         .payload(relay_reply("fe80::99", {option(kOptRelayMsg, advertise())}))
         .macs(host_mac, nic_mac)
         .bytes(),
     {BPFNET_CTR_DHCP6_REPLY_RELAYED}},
    {"a Relay-Reply for an address that is no configured relay: dropped",
     Program::TcPod,
     from_server(relay_reply(host_ip6, {interface_id, option(kOptRelayMsg, relay_reply("fe80::99", {}))})),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY}},
    {"an Advertise for a peer off the provisioning subnet: dropped",
     Program::TcPod,
     from_server(relay_reply(outside_ip6, {interface_id, option(kOptRelayMsg, advertise())})),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP_OFF_SUBNET}},
    {"no Interface-ID: nowhere to send it, dropped",
     Program::TcPod,
     from_server(relay_reply(client_link_local, {option(kOptRelayMsg, advertise())})),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP6_MALFORMED}},
    {"an Interface-ID of neither length the relay writes (6 or 18 bytes): dropped",
     Program::TcPod,
     from_server(relay_reply(client_link_local, {option(kOptInterfaceId, concat({mac_bytes(client_mac), Bytes(4, 0)})),
                                                 option(kOptRelayMsg, advertise())})),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP6_MALFORMED}},
    {"an Interface-ID holding a group MAC: dropped",
     Program::TcPod,
     from_server(relay_reply(client_link_local, {option(kOptInterfaceId, mac_bytes(all_dhcp_agents_mac)),
                                                 option(kOptRelayMsg, advertise())})),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP6_MALFORMED}},
    {"two Relay Message options: dropped",
     Program::TcPod,
     from_server(relay_reply(client_link_local,
                             {interface_id, option(kOptRelayMsg, advertise()), option(kOptRelayMsg, advertise())})),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP6_MALFORMED}},
    {"an option reaching past the message: dropped",
     Program::TcPod,
     from_server(concat({relay_reply(client_link_local, {interface_id}), Bytes{0, kOptRelayMsg, 0x01, 0x00, 2}})),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP6_MALFORMED}},
    {"a Relay-Reply carrying a client's message: dropped",
     Program::TcPod,
     from_server(relay_reply(client_link_local, {interface_id, option(kOptRelayMsg, message(kSolicit))})),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP6_MALFORMED}},
    {"a Relay-Forward from the pod instead of a Relay-Reply: dropped",
     Program::TcPod,
     from_server(relay_forward(0, service_ip6, client_link_local, client_mac, advertise())),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_DHCP6_MALFORMED}},
};

INSTANTIATE_TEST_SUITE_P(Dhcp6Request, DatapathTable, ::testing::ValuesIn(kRequestRows), row_test_name);
INSTANTIATE_TEST_SUITE_P(Dhcp6Reply, DatapathTable, ::testing::ValuesIn(kReplyRows), row_test_name);

} // namespace
} // namespace bpfnet::test
