// The DHCP relay (packet walk 2) as a table. Requests: client or LAN relay -> service IP relay -> DHCP
// server in the pod. Replies: server -> relay at giaddr -> client, as RFC 2131 4.1 and RFC 1542 say, with
// the pod's address hidden behind the service IP. Every output is a frame built from scratch, so each
// row also checks the UDP checksum over the whole DHCP message.
#include "table.hpp"

namespace bpfnet::test {
namespace {

using namespace world;

constexpr uint8_t kMessageType = 53, kServerId = 54, kDiscover = 1, kOffer = 2, kAck = 5;

Dhcp request(uint8_t type) {
    Dhcp d;
    d.chaddr = client_mac;
    d.option(kMessageType, Bytes{type});
    return d;
}

// The server's reply as dnsmasq or Kea send it to the relay: giaddr = service IP, naming itself (the pod).
Dhcp reply(uint8_t type, const std::string &server_id = pod_ip) {
    Dhcp d;
    d.op = 2;
    d.hops = 1;
    d.yiaddr = client_ip;
    d.siaddr = server_id;
    d.giaddr = service_ip;
    d.chaddr = client_mac;
    d.option(kMessageType, Bytes{type}); // 3 bytes: option 54 lands at an odd offset from the UDP header
    d.option(kServerId, server_id);
    return d;
}

// What the relay does to a request: one more hop, giaddr = service IP unless a relay already set it.
Dhcp relayed(Dhcp d) {
    d.hops++;
    if (d.giaddr == "0.0.0.0")
        d.giaddr = service_ip;
    return d;
}

// What the client must see of a reply: the service IP wherever the server named itself.
Dhcp hidden(Dhcp d) {
    if (d.siaddr == pod_ip)
        d.siaddr = service_ip;
    for (auto &[code, value] : d.options)
        if (code == kServerId && value == Dhcp().option(kServerId, pod_ip).options[0].second)
            value = Dhcp().option(kServerId, service_ip).options[0].second;
    return d;
}

Bytes broadcast_from_client(const Dhcp &d) {
    return Packet::udp({"0.0.0.0", 68}, {broadcast_ip, 67}).payload(d.bytes()).macs(broadcast, client_mac).bytes();
}
Bytes into_server(const Dhcp &d) {
    return into_pod(Packet::udp({service_ip, 67}, {pod_ip, 67}).payload(d.bytes()));
}
Bytes from_server(const Dhcp &d, const std::string &to = service_ip) {
    return from_pod(Packet::udp({pod_ip, 67}, {to, 67}).payload(d.bytes()));
}
Bytes to_client(const Dhcp &d, const std::string &ip, const Mac &mac) {
    return Packet::udp({service_ip, 67}, {ip, 68}).payload(d.bytes()).macs(mac, nic_mac).bytes();
}
// A raw reply message as the client must get it, with siaddr (which reply() sets to the pod) hidden.
Bytes to_client_bytes(Bytes message) {
    Bytes service = Dhcp().option(kServerId, service_ip).options[0].second;
    std::copy(service.begin(), service.end(), message.begin() + 20);
    return Packet::udp({service_ip, 67}, {client_ip, 68}).payload(message).macs(client_mac, nic_mac).bytes();
}

std::vector<Row> rows() {
    const Dhcp discover = request(kDiscover);
    Dhcp renewal = request(3);
    renewal.ciaddr = client_ip;
    Dhcp via_lan_relay = request(kDiscover);
    via_lan_relay.giaddr = lan_relay_ip;
    via_lan_relay.hops = 1;
    Dhcp at_limit = request(kDiscover);
    at_limit.hops = dhcp_max_hops;
    Dhcp over_limit = request(kDiscover);
    over_limit.hops = dhcp_max_hops + 1;
    Dhcp foreign_relay = request(kDiscover);
    foreign_relay.giaddr = outside_ip;
    Dhcp plain_host_relay = request(kDiscover); // a host that is no configured relay names itself
    plain_host_relay.giaddr = other_lan_ip;
    plain_host_relay.hops = 1;
    Dhcp wrong_op = request(kDiscover);
    wrong_op.op = 2;

    Dhcp offer_broadcast = reply(kOffer);
    offer_broadcast.flags = 0x8000;
    Dhcp renewal_ack = reply(kAck);
    renewal_ack.ciaddr = client_ip;
    Dhcp proxy_offer = reply(kOffer, service_ip); // dnsmasq --dhcp-proxy already names the relay
    Dhcp server_id_first;                         // option 54 at an even offset
    server_id_first = reply(kOffer);
    std::swap(server_id_first.options[0], server_id_first.options[1]);
    Dhcp broken_options = reply(kOffer);
    broken_options.options.push_back({61, Bytes(4, 0xaa)}); // then claims to run past the message
    Bytes broken = broken_options.bytes();
    broken[240 + 3 + 6 + 1] = 200; // the length byte of option 61
    Dhcp to_lan_relay = reply(kOffer);
    to_lan_relay.giaddr = lan_relay_ip;
    Dhcp to_plain_host = reply(kOffer);
    to_plain_host.giaddr = other_lan_ip;
    Dhcp ack_off_subnet = reply(kAck); // a client claiming an address behind a router
    ack_off_subnet.ciaddr = "203.0.113.7";
    Dhcp offer_group_chaddr = reply(kOffer);
    offer_group_chaddr.chaddr = mac("01:00:5e:00:00:07");
    Dhcp two_server_ids = reply(kOffer); // a second copy of option 54 must not keep the pod's address
    two_server_ids.option(kServerId, pod_ip);
    Dhcp padded_server_id = reply(kOffer); // 100 pads, then option 54: bytes, not options, bound the walk
    padded_server_id.options.insert(padded_server_id.options.begin() + 1, 100, {0, Bytes{}});
    Dhcp unknown_relay = reply(kOffer);
    unknown_relay.giaddr = "198.18.0.77"; // not where the server sent it

    // The expected delivery of the broken-options reply: siaddr rewritten, option list untouched.
    Bytes broken_out = broken;
    {
        Bytes service = Dhcp().option(kServerId, service_ip).options[0].second;
        std::copy(service.begin(), service.end(), broken_out.begin() + 20);
    }

    return {
        // Client -> server.
        {"broadcast DISCOVER relayed into the pod with giaddr = service IP and one hop",
         Program::TcNic,
         broadcast_from_client(discover),
         kTcRedirect,
         into_server(relayed(discover)),
         {BPFNET_CTR_DHCP_REQUEST_RELAYED}},
        {"broadcast DISCOVER without UDP checksum keeps checksum 0",
         Program::TcNic,
         Packet::udp({"0.0.0.0", 68}, {broadcast_ip, 67})
             .payload(discover.bytes())
             .udp_checksum_none()
             .macs(broadcast, client_mac)
             .bytes(),
         kTcRedirect,
         into_pod(Packet::udp({service_ip, 67}, {pod_ip, 67}).payload(relayed(discover).bytes()).udp_checksum_none()),
         {BPFNET_CTR_DHCP_REQUEST_RELAYED}},
        {"renewal unicast to the service IP relayed like a broadcast",
         Program::TcNic,
         from_host(Packet::udp({client_ip, 68}, {service_ip, 67}).payload(renewal.bytes())),
         kTcRedirect,
         into_server(relayed(renewal)),
         {BPFNET_CTR_DHCP_REQUEST_RELAYED, BPFNET_CTR_NEIGHBOUR_LEARNED}}, // accepted: the client is learned
        {"request from a configured relay on the LAN keeps its giaddr",
         Program::TcNic,
         from_host(Packet::udp({lan_relay_ip, 67}, {service_ip, 67}).payload(via_lan_relay.bytes())),
         kTcRedirect,
         into_server(relayed(via_lan_relay)),
         {BPFNET_CTR_DHCP_REQUEST_RELAYED}},
        {"request at the hop limit is still relayed",
         Program::TcNic,
         broadcast_from_client(at_limit),
         kTcRedirect,
         into_server(relayed(at_limit)),
         {BPFNET_CTR_DHCP_REQUEST_RELAYED}},
        {"request over the hop limit dropped",
         Program::TcNic,
         broadcast_from_client(over_limit),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_DHCP_HOPS}},
        {"request with a giaddr off the provisioning subnet dropped",
         Program::TcNic,
         broadcast_from_client(foreign_relay),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY}},
        {"request naming a plain host as giaddr (no configured relay) dropped",
         Program::TcNic,
         broadcast_from_client(plain_host_relay),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY}},
        {"BOOTREPLY sent to the server port dropped",
         Program::TcNic,
         broadcast_from_client(wrong_op),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_DHCP_MALFORMED}},
        {"truncated BOOTP header dropped",
         Program::TcNic,
         Packet::udp({"0.0.0.0", 68}, {broadcast_ip, 67}).payload(Bytes(100, 1)).macs(broadcast, client_mac).bytes(),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_DHCP_MALFORMED}},
        {"broadcast DHCP while another node owns the service IP: not ours",
         Program::TcNic,
         broadcast_from_client(discover),
         kTcNext,
         std::nullopt,
         {},
         [](DatapathTest &d) {
             d.set_service_ip_active(false);
         }},
        {"other broadcast UDP passes untouched",
         Program::TcNic,
         Packet::udp({client_ip, 137}, {broadcast_ip, 137}).macs(broadcast, client_mac).bytes(),
         kTcNext,
         std::nullopt,
         {}},
        {"xdp passes broadcast DHCP to tc",
         Program::XdpNic,
         broadcast_from_client(discover),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS}},
        {"xdp passes a renewal to the DHCP port and learns nothing before TC accepts it",
         Program::XdpNic,
         Packet::udp({client_ip, 68}, {service_ip, 67}).payload(renewal.bytes()).macs(nic_mac, client_mac).bytes(),
         kXdpPass,
         std::nullopt,
         {}},

        // Server -> client.
        {"OFFER unicast to chaddr/yiaddr, server id and siaddr hidden",
         Program::TcPod,
         from_server(reply(kOffer)),
         kTcRedirect,
         to_client(hidden(reply(kOffer)), client_ip, client_mac),
         {BPFNET_CTR_DHCP_REPLY_RELAYED, BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN}},
        {"OFFER with the broadcast flag broadcast",
         Program::TcPod,
         from_server(offer_broadcast),
         kTcRedirect,
         to_client(hidden(offer_broadcast), broadcast_ip, broadcast),
         {BPFNET_CTR_DHCP_REPLY_RELAYED, BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN}},
        {"ACK to a renewing client unicast to ciaddr",
         Program::TcPod,
         from_server(renewal_ack),
         kTcRedirect,
         to_client(hidden(renewal_ack), client_ip, client_mac),
         {BPFNET_CTR_DHCP_REPLY_RELAYED, BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN}},
        {"server id at an even offset rewritten too",
         Program::TcPod,
         from_server(server_id_first),
         kTcRedirect,
         to_client(hidden(server_id_first), client_ip, client_mac),
         {BPFNET_CTR_DHCP_REPLY_RELAYED, BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN}},
        {"reply already naming the service IP is not rewritten",
         Program::TcPod,
         from_server(proxy_offer),
         kTcRedirect,
         to_client(proxy_offer, client_ip, client_mac),
         {BPFNET_CTR_DHCP_REPLY_RELAYED}},
        {"broken option list delivered with options untouched",
         Program::TcPod,
         from_pod(Packet::udp({pod_ip, 67}, {service_ip, 67}).payload(broken)),
         kTcRedirect,
         Packet::udp({service_ip, 67}, {client_ip, 68}).payload(broken_out).macs(client_mac, nic_mac).bytes(),
         {BPFNET_CTR_DHCP_REPLY_RELAYED, BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN, BPFNET_CTR_DHCP_OPTIONS_MALFORMED}},
        {"reply for a relay on the LAN goes back to that relay",
         Program::TcPod,
         from_server(to_lan_relay, lan_relay_ip),
         kTcRedirect,
         to_host(Packet::udp({service_ip, 67}, {lan_relay_ip, 67}).payload(hidden(to_lan_relay).bytes())),
         {BPFNET_CTR_DHCP_REPLY_RELAYED, BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN}},
        {"every copy of option 54 naming the pod is rewritten",
         Program::TcPod,
         from_server(two_server_ids),
         kTcRedirect,
         to_client(hidden(two_server_ids), client_ip, client_mac),
         {BPFNET_CTR_DHCP_REPLY_RELAYED, BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN}},
        {"option 54 after 100 pad bytes is rewritten",
         Program::TcPod,
         from_server(padded_server_id),
         kTcRedirect,
         to_client(hidden(padded_server_id), client_ip, client_mac),
         {BPFNET_CTR_DHCP_REPLY_RELAYED, BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN}},
        {"reply for a LAN address that is no configured relay dropped",
         Program::TcPod,
         from_server(to_plain_host, other_lan_ip),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY}},
        {"ACK to a ciaddr off the provisioning subnet dropped, untouched",
         Program::TcPod,
         from_server(ack_off_subnet),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_DHCP_OFF_SUBNET}},
        {"OFFER whose chaddr is a group MAC broadcast",
         Program::TcPod,
         from_server(offer_group_chaddr),
         kTcRedirect,
         to_client(hidden(offer_group_chaddr), broadcast_ip, broadcast),
         {BPFNET_CTR_DHCP_REPLY_RELAYED, BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN}},
        {"reply whose giaddr is not where it was sent dropped",
         Program::TcPod,
         from_server(unknown_relay),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY}},
        {"truncated reply dropped",
         Program::TcPod,
         from_pod(Packet::udp({pod_ip, 67}, {service_ip, 67}).payload(Bytes(120, 2))),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_DHCP_MALFORMED}},
    };
}

INSTANTIATE_TEST_SUITE_P(Dhcp, DatapathTable, ::testing::ValuesIn(rows()), row_test_name);

} // namespace
} // namespace bpfnet::test

namespace bpfnet::test {
namespace {

using namespace world;

// Kea names itself (the pod) as server identifier; the client, having seen the service IP, sends that
// back in its REQUEST. The relay must hand the server its own identifier again, or the server drops the
// request as meant for another server.
TEST_F(DatapathTest, RequestGetsBackTheIdentifierTheServerNamesItselfWith) {
    auto offer = run(Program::TcPod, from_server(reply(kOffer)));
    ASSERT_EQ(offer.retval, kTcRedirect);

    Dhcp select = request(3);
    select.option(kServerId, service_ip);
    auto relayed_request = run(Program::TcNic, broadcast_from_client(select));
    EXPECT_EQ(relayed_request.retval, kTcRedirect);
    Dhcp want = relayed(request(3));
    want.option(kServerId, pod_ip);
    Bytes want_frame = into_server(want);
    EXPECT_EQ(relayed_request.out, want_frame) << describe_difference(relayed_request.out, want_frame);
    EXPECT_EQ(counters()[BPFNET_CTR_DHCP_SERVER_ID_RESTORED], 1u);
}

// Option 52 (RFC 2132 9.3): options that do not fit the options field continue in `file` (1), `sname` (2) or
// both (3), each area ending with END. Option 54 there must be rewritten like anywhere else.
Bytes overloaded_reply(uint8_t overload, const std::string &server_id) {
    Dhcp d = reply(kOffer);
    d.options.erase(d.options.begin() + 1); // option 54 moves out of the options field
    d.option(52, Bytes{overload});
    Bytes message = d.bytes();
    Bytes id = Dhcp().option(kServerId, server_id).options[0].second;
    Bytes in_area = {kServerId, 4, id[0], id[1], id[2], id[3], 255};
    if (overload == 3)      // file holds only END (the rest pads), sname the identifier
        message[108] = 255; // the file area is walked before sname
    std::copy(in_area.begin(), in_area.end(), message.begin() + (overload == 1 ? 108 : 44));
    return message;
}

TEST_F(DatapathTest, OptionOverloadedIntoFileOrSnameIsRewritten) {
    for (uint8_t overload : {uint8_t{1}, uint8_t{2}, uint8_t{3}}) {
        Bytes sent = overloaded_reply(overload, pod_ip);
        auto out = run(Program::TcPod, from_pod(Packet::udp({pod_ip, 67}, {service_ip, 67}).payload(sent)));
        EXPECT_EQ(out.retval, kTcRedirect);
        Bytes want = to_client_bytes(overloaded_reply(overload, service_ip));
        EXPECT_EQ(out.out, want) << "overload " << int{overload} << describe_difference(out.out, want);
    }
    EXPECT_EQ(counters()[BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN], 3u);
}

// A REQUEST naming the service IP twice: the server gets its own identifier back in both copies.
TEST_F(DatapathTest, EveryCopyOfTheServiceIpInARequestIsRestored) {
    ASSERT_EQ(run(Program::TcPod, from_server(reply(kOffer))).retval, kTcRedirect);
    Dhcp select = request(3);
    select.option(kServerId, service_ip);
    select.option(kServerId, service_ip);
    auto relayed_request = run(Program::TcNic, broadcast_from_client(select));
    Dhcp want = relayed(request(3));
    want.option(kServerId, pod_ip);
    want.option(kServerId, pod_ip);
    Bytes want_frame = into_server(want);
    EXPECT_EQ(relayed_request.out, want_frame) << describe_difference(relayed_request.out, want_frame);
}

// dnsmasq with --dhcp-proxy names the service IP itself: its requests pass with option 54 untouched.
TEST_F(DatapathTest, RequestForAServerNamingTheServiceIpIsNotRewritten) {
    ASSERT_EQ(run(Program::TcPod, from_server(reply(kOffer, service_ip))).retval, kTcRedirect);
    Dhcp select = request(3);
    select.option(kServerId, service_ip);
    auto relayed_request = run(Program::TcNic, broadcast_from_client(select));
    Bytes want_frame = into_server(relayed(select));
    EXPECT_EQ(relayed_request.out, want_frame) << describe_difference(relayed_request.out, want_frame);
    EXPECT_EQ(counters()[BPFNET_CTR_DHCP_SERVER_ID_RESTORED], 0u);
}

} // namespace
} // namespace bpfnet::test
