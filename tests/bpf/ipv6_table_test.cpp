// IPv6 as packet-table rows: the NDP responder and what XDP learns from neighbour discovery, NAT66 both ways
// with its checksums, flows, and the extension headers a packet to a service address may or may not carry.
// Every output frame is built independently by packet6.cpp, checksums included.
#include "packet6.hpp"
#include "table.hpp"

namespace bpfnet::test {
namespace {

using namespace world;

const std::string other_lan_ip6 = "2001:2::50"; // on the LAN, not a service address
const std::string all_nodes = "ff02::1";
const Mac all_nodes_mac = mac("33:33:00:00:00:01");
const Mac service_group_mac = multicast_mac(solicited_node(service_ip6));

// A neighbour solicitation for target, to its solicited-node group (or to `to`).
Packet6 solicitation(const std::string &from, const std::string &target, std::optional<Mac> source_lladdr,
                     const std::string &to = "") {
    return Packet6::icmp(from, to.empty() ? solicited_node(target) : to, kNeighbourSolicit, 0,
                         ns_body(target, source_lladdr))
        .hop_limit(255);
}

// The advertisement the datapath must send for the service address.
Bytes service_advertisement(const std::string &to, uint8_t flags, const Mac &dst) {
    return Packet6::icmp(service_ip6, to, kNeighbourAdvert, 0, na_body(service_ip6, flags, nic_mac))
        .hop_limit(255)
        .macs(dst, nic_mac)
        .bytes();
}

Bytes api_request(const std::string &to, uint16_t port = 6385) {
    return from_host6(Packet6::tcp({host_ip6, 40000}, {to, port}));
}

// ICMPv6 errors (RFC 4443): type, code, the 4-byte field after the checksum (a packet too big's MTU) and
// the quoted packet, as the sender saw it (without its Ethernet header), cut at quote_len bytes if given.
inline constexpr uint8_t kIcmp6Unreachable = 1, kIcmp6PacketTooBig = 2, kIcmp6TimeExceeded = 3;
inline constexpr uint8_t kIcmp6PortUnreachable = 4;
const std::string router_ip6 = "2001:2::fe"; // a router on the LAN: its errors come from its address there

Packet6 icmp6_error(const std::string &from, const std::string &to, uint8_t type, uint8_t code, const Packet6 &quoted,
                    uint32_t mtu = 0, size_t quote_len = SIZE_MAX) {
    Bytes body = {static_cast<uint8_t>(mtu >> 24), static_cast<uint8_t>(mtu >> 16), static_cast<uint8_t>(mtu >> 8),
                  static_cast<uint8_t>(mtu)};
    const Bytes frame = quoted.bytes();
    const size_t end = kIp6Offset + std::min(frame.size() - kIp6Offset, quote_len);
    body.insert(body.end(), frame.begin() + kIp6Offset, frame.begin() + static_cast<std::ptrdiff_t>(end));
    return Packet6::icmp(from, to, type, code, body);
}

// The pod's call to a host's agent over UDP, as it left the NIC (from the service address) and as the pod
// sent it; the setup records its flow.
Packet6 call_from(const std::string &address) {
    return Packet6::udp({address, 45000}, {host_ip6, 9999}).payload("hello agent");
}
void pod_calls_agent(DatapathTest &t) {
    t.deliver(Program::TcPod, from_pod6(call_from(pod_ip6)));
}
// ... and the agent answered, which confirms the flow (an answer the pod's stack could refuse).
void agent_answered(DatapathTest &t) {
    pod_calls_agent(t);
    t.deliver(Program::TcNic, from_host6(Packet6::udp({host_ip6, 9999}, {service_ip6, 45000})));
}
// The API's answer from port 80 (6385 in the pod), long enough to be too big for a smaller hop.
Packet6 api_reply_from(const std::string &address, uint16_t port) {
    return Packet6::tcp({address, port}, {host_ip6, 40000}).payload(std::string(1200, 'x'));
}

// The frame with its ICMPv6 checksum broken (the message is otherwise the same).
Bytes with_bad_icmp6_checksum(Bytes frame) {
    frame[kL4Offset6 + 2] ^= 0xff;
    return frame;
}

const std::
    vector<Row>
        kNdpRows =
            {
                // RFC 4861 7.1.1: a message with a wrong checksum is invalid; hosts drop it, and so does NDP here.
                {"a solicitation with a wrong ICMPv6 checksum: not answered, handed to the kernel (which drops it)",
                 Program::TcNic,
                 with_bad_icmp6_checksum(from_host6(solicitation(host_ip6, service_ip6, host_mac), service_group_mac)),
                 kTcNext,
                 std::nullopt,
                 {}},
                {"an overriding advertisement with a wrong checksum moves no known host",
                 Program::XdpNic,
                 with_bad_icmp6_checksum(
                     Packet6::icmp(host_ip6, all_nodes, kNeighbourAdvert, 0, na_body(host_ip6, kNaOverride, client_mac))
                         .hop_limit(255)
                         .macs(all_nodes_mac, client_mac)
                         .bytes()),
                 kXdpPass,
                 std::nullopt,
                 {BPFNET_CTR_PASS}},
                {"an answer to the loader's solicitation with a wrong checksum teaches nothing, and is dropped",
                 Program::XdpNic,
                 with_bad_icmp6_checksum(
                     Packet6::icmp(unknown_host_ip6, service_ip6, kNeighbourAdvert, 0,
                                   na_body(unknown_host_ip6, kNaSolicited | kNaOverride, client_mac))
                         .hop_limit(255)
                         .macs(nic_mac, client_mac)
                         .bytes()),
                 kXdpDrop,
                 std::nullopt,
                 {BPFNET_CTR_DROP_PROTOCOL}},
                {"solicitation for the service address (solicited-node group): advertised, solicited and overriding",
                 Program::TcNic,
                 from_host6(solicitation(host_ip6, service_ip6, host_mac), service_group_mac),
                 kTcRedirect,
                 service_advertisement(host_ip6, kNaSolicited | kNaOverride, host_mac),
                 {BPFNET_CTR_NDP_REPLY}},
                {"unicast solicitation (reachability confirmation): advertised",
                 Program::TcNic,
                 from_host6(solicitation(host_ip6, service_ip6, host_mac, service_ip6)),
                 kTcRedirect,
                 service_advertisement(host_ip6, kNaSolicited | kNaOverride, host_mac),
                 {BPFNET_CTR_NDP_REPLY}},
                {"solicitation without a link-layer option: advertised to the frame's sender",
                 Program::TcNic,
                 from_host6(solicitation(host_ip6, service_ip6, std::nullopt), service_group_mac),
                 kTcRedirect,
                 service_advertisement(host_ip6, kNaSolicited | kNaOverride, host_mac),
                 {BPFNET_CTR_NDP_REPLY}},
                {"another node's duplicate address detection probe: defended to all nodes, not solicited",
                 Program::TcNic,
                 Packet6::icmp("::", solicited_node(service_ip6), kNeighbourSolicit, 0,
                               ns_body(service_ip6, std::nullopt))
                     .hop_limit(255)
                     .macs(service_group_mac, client_mac)
                     .bytes(),
                 kTcRedirect,
                 service_advertisement(all_nodes, kNaOverride, all_nodes_mac),
                 {BPFNET_CTR_NDP_REPLY}},
                {"another node's DAD probe for the service address is a conflict",
                 Program::XdpNic,
                 Packet6::icmp("::", solicited_node(service_ip6), kNeighbourSolicit, 0,
                               ns_body(service_ip6, std::nullopt))
                     .hop_limit(255)
                     .macs(service_group_mac, client_mac)
                     .bytes(),
                 kXdpPass,
                 std::nullopt,
                 {BPFNET_CTR_PASS, BPFNET_CTR_ARP_CONFLICT}},
                {"solicitation with a hop limit below 255 came through a router: not answered",
                 Program::TcNic,
                 from_host6(solicitation(host_ip6, service_ip6, host_mac).hop_limit(254), service_group_mac),
                 kTcNext,
                 std::nullopt,
                 {}},
                {"solicitation for the service address this node does not own: dropped (one answer on the LAN)",
                 Program::TcNic,
                 from_host6(solicitation(host_ip6, service_ip6, host_mac), service_group_mac),
                 kTcShot,
                 std::nullopt,
                 {BPFNET_CTR_NDP_NOT_ACTIVE},
                 [](DatapathTest &t) {
                     t.set_service_ip6_active(false);
                 }},
                {"solicitation for the service address this node does not own, the heartbeat stale: the kernel's",
                 Program::TcNic,
                 from_host6(solicitation(host_ip6, service_ip6, host_mac), service_group_mac),
                 kTcNext,
                 std::nullopt,
                 {BPFNET_CTR_NDP_STALE_HEARTBEAT},
                 [](DatapathTest &t) {
                     t.set_service_ip6_active(false);
                     t.set_heartbeat_age_seconds(60);
                 }},
                {"solicitation while the loader's heartbeat is stale: not answered",
                 Program::TcNic,
                 from_host6(solicitation(host_ip6, service_ip6, host_mac), service_group_mac),
                 kTcNext,
                 std::nullopt,
                 {BPFNET_CTR_NDP_STALE_HEARTBEAT},
                 [](DatapathTest &t) {
                     t.set_heartbeat_age_seconds(60);
                 }},
                {"solicitation for another address on the LAN: the kernel's",
                 Program::TcNic,
                 from_host6(solicitation(host_ip6, other_lan_ip6, host_mac),
                            multicast_mac(solicited_node(other_lan_ip6))),
                 kTcNext,
                 std::nullopt,
                 {}},
                {"a new host's solicitation teaches where it is",
                 Program::XdpNic,
                 Packet6::icmp(unknown_host_ip6, solicited_node(other_lan_ip6), kNeighbourSolicit, 0,
                               ns_body(other_lan_ip6, client_mac))
                     .hop_limit(255)
                     .macs(multicast_mac(solicited_node(other_lan_ip6)), client_mac)
                     .bytes(),
                 kXdpPass,
                 std::nullopt,
                 {BPFNET_CTR_PASS, BPFNET_CTR_NEIGHBOUR_LEARNED}},
                {"an overriding advertisement moves a known host (RFC 4861 7.2.5)",
                 Program::XdpNic,
                 Packet6::icmp(host_ip6, all_nodes, kNeighbourAdvert, 0, na_body(host_ip6, kNaOverride, client_mac))
                     .hop_limit(255)
                     .macs(all_nodes_mac, client_mac)
                     .bytes(),
                 kXdpPass,
                 std::nullopt,
                 {BPFNET_CTR_PASS, BPFNET_CTR_NEIGHBOUR_LEARNED}},
                {"an advertisement without the Override flag leaves a known host where it is",
                 Program::XdpNic,
                 Packet6::icmp(host_ip6, all_nodes, kNeighbourAdvert, 0, na_body(host_ip6, 0, client_mac))
                     .hop_limit(255)
                     .macs(all_nodes_mac, client_mac)
                     .bytes(),
                 kXdpPass,
                 std::nullopt,
                 {BPFNET_CTR_PASS}},
                {"an advertisement for a host never seen creates no entry",
                 Program::XdpNic,
                 Packet6::icmp(unknown_host_ip6, all_nodes, kNeighbourAdvert, 0,
                               na_body(unknown_host_ip6, kNaOverride, client_mac))
                     .hop_limit(255)
                     .macs(all_nodes_mac, client_mac)
                     .bytes(),
                 kXdpPass,
                 std::nullopt,
                 {BPFNET_CTR_PASS}},
                {"a host's answer to the loader's solicitation teaches where it is",
                 Program::XdpNic,
                 Packet6::icmp(unknown_host_ip6, service_ip6, kNeighbourAdvert, 0,
                               na_body(unknown_host_ip6, kNaSolicited | kNaOverride, client_mac))
                     .hop_limit(255)
                     .macs(nic_mac, client_mac)
                     .bytes(),
                 kXdpPass,
                 std::nullopt,
                 {BPFNET_CTR_PASS, BPFNET_CTR_NEIGHBOUR_LEARNED}},
                {"another MAC soliciting from the service address is a conflict",
                 Program::XdpNic,
                 Packet6::
                     icmp(service_ip6, solicited_node(other_lan_ip6), kNeighbourSolicit,
                          0, ns_body(other_lan_ip6, client_mac))
                         .hop_limit(255)
                         .macs(multicast_mac(solicited_node(other_lan_ip6)), client_mac)
                         .bytes(),
                 kXdpPass,
                 std::nullopt,
                 {BPFNET_CTR_PASS, BPFNET_CTR_ARP_CONFLICT}},
                {"a solicitation for the IPv4 service IP's mapped address is not NDP's: not answered",
                 Program::TcNic,
                 from_host6(solicitation(host_ip6, "::ffff:" + service_ip, host_mac), service_group_mac),
                 kTcNext,
                 std::nullopt,
                 {}},
                {"an advertisement for the IPv4 service IP's mapped address claims nothing",
                 Program::XdpNic,
                 Packet6::
                     icmp("::ffff:" + service_ip, all_nodes, kNeighbourAdvert,
                          0, na_body("::ffff:" + service_ip, kNaOverride, client_mac))
                         .hop_limit(255)
                         .macs(all_nodes_mac, client_mac)
                         .bytes(),
                 kXdpPass,
                 std::nullopt,
                 {BPFNET_CTR_PASS}},
                {"another MAC advertising the service address is a conflict",
                 Program::XdpNic,
                 Packet6::
                     icmp(service_ip6, all_nodes, kNeighbourAdvert, 0, na_body(service_ip6, kNaOverride, client_mac))
                         .hop_limit(255)
                         .macs(all_nodes_mac, client_mac)
                         .bytes(),
                 kXdpPass,
                 std::nullopt,
                 {BPFNET_CTR_PASS, BPFNET_CTR_ARP_CONFLICT}},
                {"a solicitation offering a group MAC teaches nothing",
                 Program::XdpNic,
                 Packet6::
                     icmp(unknown_host_ip6, solicited_node(other_lan_ip6), kNeighbourSolicit,
                          0, ns_body(other_lan_ip6, mac("01:00:5e:00:00:01")))
                         .hop_limit(255)
                         .macs(multicast_mac(solicited_node(other_lan_ip6)), client_mac)
                         .bytes(),
                 kXdpPass,
                 std::nullopt,
                 {BPFNET_CTR_PASS, BPFNET_CTR_NEIGHBOUR_REFUSED}},
                {"a solicitation with an option of length 0 is invalid (RFC 4861 4.6): not answered",
                 Program::TcNic,
                 [] {
                     Bytes body = ns_body(service_ip6, host_mac);
                     body[21] = 0; // the source link-layer option's length
                     return from_host6(Packet6::icmp(host_ip6, solicited_node(service_ip6), kNeighbourSolicit, 0, body)
                                           .hop_limit(255),
                                       service_group_mac);
                 }(),
                 kTcNext,
                 std::nullopt,
                 {}},
};

const std::vector<Row> kNat66Rows = {
    {"TCP to the Ironic API: NAT66 into the pod",
     Program::TcNic,
     api_request(service_ip6),
     kTcRedirect,
     into_pod6(Packet6::tcp({host_ip6, 40000}, {pod_ip6, 6385})),
     {BPFNET_CTR_DNAT_SERVICE}},
    {"a listed port translated (80 -> 8080)",
     Program::TcNic,
     api_request(service_ip6, 80),
     kTcRedirect,
     into_pod6(Packet6::tcp({host_ip6, 40000}, {pod_ip6, 8080})),
     {BPFNET_CTR_DNAT_SERVICE}},
    {"UDP to the TFTP port: into the pod",
     Program::TcNic,
     from_host6(Packet6::udp({host_ip6, 40001}, {service_ip6, 69})),
     kTcRedirect,
     into_pod6(Packet6::udp({host_ip6, 40001}, {pod_ip6, 69})),
     {BPFNET_CTR_DNAT_SERVICE}},
    {"hop-by-hop and destination options before TCP: walked, steered with them",
     Program::TcNic,
     from_host6(Packet6::tcp({host_ip6, 40000}, {service_ip6, 6385}).extension(0).extension(60, 1)),
     kTcRedirect,
     into_pod6(Packet6::tcp({host_ip6, 40000}, {pod_ip6, 6385}).extension(0).extension(60, 1)),
     {BPFNET_CTR_DNAT_SERVICE}},
    {"a routing header with no segments left: walked",
     Program::XdpNic,
     from_host6(Packet6::tcp({host_ip6, 40000}, {service_ip6, 6385}).extension(43, 0, 0)),
     kXdpPass,
     std::nullopt,
     {}},
    {"a routing header with segments left: not walked, dropped",
     Program::XdpNic,
     from_host6(Packet6::tcp({host_ip6, 40000}, {service_ip6, 6385}).extension(43, 2, 1)),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_EXT_HEADER}},
    {"an authentication header: not walked, dropped",
     Program::XdpNic,
     from_host6(Packet6::tcp({host_ip6, 40000}, {service_ip6, 6385}).extension(51, 1)),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_EXT_HEADER}},
    {"five destination options headers: more than walked, dropped",
     Program::XdpNic,
     from_host6(Packet6::tcp({host_ip6, 40000}, {service_ip6, 6385})
                    .extension(60)
                    .extension(60)
                    .extension(60)
                    .extension(60)
                    .extension(60)),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_EXT_HEADER}},
    {"a hop-by-hop header after the first: malformed",
     Program::XdpNic,
     from_host6(Packet6::tcp({host_ip6, 40000}, {service_ip6, 6385}).extension(60).extension(0)),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_MALFORMED}},
    {"a fragment header: ports not trustworthy, dropped",
     Program::XdpNic,
     from_host6(Packet6::udp({host_ip6, 40001}, {service_ip6, 69}).extension(44)),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_FRAGMENT}},
    {"an extension header reaching past the packet: malformed",
     Program::XdpNic,
     with_byte(from_host6(Packet6::tcp({host_ip6, 40000}, {service_ip6, 6385}).extension(60)), kL4Offset6 + 1, 200),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_MALFORMED}},
    {"a port not listed: dropped",
     Program::XdpNic,
     api_request(service_ip6, 3306),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_NOT_ALLOWED}},
    {"from off the IPv6 provisioning subnet: dropped",
     Program::XdpNic,
     from_host6(Packet6::tcp({outside_ip6, 40000}, {service_ip6, 6385})),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_OFF_SUBNET}},
    {"UDP without a checksum (not allowed over IPv6): malformed",
     Program::XdpNic,
     from_host6(Packet6::udp({host_ip6, 40001}, {service_ip6, 69}).udp_checksum_zero()),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_MALFORMED}},
    {"a payload length past the frame: malformed",
     Program::XdpNic,
     with_u16(api_request(service_ip6), kIp6Offset + 4, 1000),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_MALFORMED}},
    // sourceRanges: the IPv6 service address takes the IPv6 ranges of the list.
    {"xdp: a source inside the address's IPv6 ranges: passed on to tc",
     Program::XdpNic,
     api_request(service_ip6),
     kXdpPass,
     std::nullopt,
     {},
     [](DatapathTest &t) {
         t.set_source_ranges({"2001:2::/120", "198.18.0.0/24"}, service_ip6);
     }},
    {"xdp: a source outside the address's IPv6 ranges: dropped",
     Program::XdpNic,
     api_request(service_ip6),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_SOURCE_RANGE},
     [](DatapathTest &t) {
         t.set_source_ranges({"2001:2::80/121", "198.18.0.0/24"}, service_ip6);
     }},
    {"tc nic: a list with IPv4 ranges only admits no IPv6 source",
     Program::TcNic,
     api_request(service_ip6),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_SOURCE_RANGE},
     [](DatapathTest &t) {
         t.set_source_ranges({"0.0.0.0/0"}, service_ip6);
     }},
    {"tc nic: ::/0 among the ranges: every IPv6 source steered",
     Program::TcNic,
     api_request(service_ip6),
     kTcRedirect,
     into_pod6(Packet6::tcp({host_ip6, 40000}, {pod_ip6, 6385})),
     {BPFNET_CTR_DNAT_SERVICE},
     [](DatapathTest &t) {
         t.set_source_ranges({"2001:2::80/121", "::/0"}, service_ip6);
     }},
    {"an echo request to the service address: dropped",
     Program::XdpNic,
     from_host6(Packet6::icmp(host_ip6, service_ip6, 128, 0, {0x42, 0x42, 0, 1})),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_PROTOCOL}},
    {"an allowed packet passes XDP for TC to steer",
     Program::XdpNic,
     api_request(service_ip6),
     kXdpPass,
     std::nullopt,
     {}},
    {"IPv6 not for a service address: the kernel's",
     Program::XdpNic,
     api_request(other_lan_ip6),
     kXdpPass,
     std::nullopt,
     {BPFNET_CTR_PASS}},
    // ICMPv6 errors from the LAN about packets the datapath sent as the service address: into the pod, the
    // quote translated back to what the pod sent (address, port, quoted checksum, ICMPv6 checksum).
    {"xdp: a host's port unreachable about the pod's call to its agent: passed on to tc",
     Program::XdpNic,
     from_host6(icmp6_error(host_ip6, service_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable, call_from(service_ip6))),
     kXdpPass,
     std::nullopt,
     {},
     pod_calls_agent},
    {"tc nic: a host's port unreachable about the pod's call: into the pod, quote translated",
     Program::TcNic,
     from_host6(icmp6_error(host_ip6, service_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable, call_from(service_ip6))),
     kTcRedirect,
     into_pod6(icmp6_error(host_ip6, pod_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable, call_from(pod_ip6))),
     {BPFNET_CTR_ICMP_ERROR_TO_POD},
     pod_calls_agent},
    {"tc nic: a router's packet too big (MTU 1280) about the API's reply from 80: to the pod, quoting 8080",
     Program::TcNic,
     from_host6(icmp6_error(router_ip6, service_ip6, kIcmp6PacketTooBig, 0, api_reply_from(service_ip6, 80), 1280)),
     kTcRedirect,
     into_pod6(icmp6_error(router_ip6, pod_ip6, kIcmp6PacketTooBig, 0, api_reply_from(pod_ip6, 8080), 1280)),
     {BPFNET_CTR_ICMP_ERROR_TO_POD}},
    {"tc nic: time exceeded quoting a TCP header cut before its checksum: addresses and ports translated",
     Program::TcNic,
     from_host6(
         icmp6_error(router_ip6, service_ip6, kIcmp6TimeExceeded, 0, api_reply_from(service_ip6, 6385), 0, 40 + 12)),
     kTcRedirect,
     into_pod6(icmp6_error(router_ip6, pod_ip6, kIcmp6TimeExceeded, 0, api_reply_from(pod_ip6, 6385), 0, 40 + 12)),
     {BPFNET_CTR_ICMP_ERROR_TO_POD}},
    // From off the provisioning prefix: dropped, as every packet to a service address from there.
    {"xdp: a port unreachable from off the provisioning prefix about the pod's call: dropped, off subnet",
     Program::XdpNic,
     from_host6(
         icmp6_error(outside_ip6, service_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable, call_from(service_ip6))),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_OFF_SUBNET},
     pod_calls_agent},
    {"tc nic: a port unreachable from off the provisioning prefix about the pod's call: dropped, not into the pod",
     Program::TcNic,
     from_host6(
         icmp6_error(outside_ip6, service_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable, call_from(service_ip6))),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_OFF_SUBNET},
     pod_calls_agent},
    {"xdp: an error about a port the service address never sent from: dropped, unmatched",
     Program::XdpNic,
     from_host6(icmp6_error(host_ip6, service_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable,
                            Packet6::udp({service_ip6, 4444}, {host_ip6, 5555}))),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_ICMP_UNMATCHED}},
    {"xdp: an error to the service address quoting another sender: dropped, unmatched",
     Program::XdpNic,
     from_host6(icmp6_error(host_ip6, service_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable, call_from(other_lan_ip6))),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_ICMP_UNMATCHED},
     pod_calls_agent},
    {"tc nic: an error about the relay's Relay-Reply to a LAN relay: not the pod's packet, dropped",
     Program::TcNic,
     from_host6(icmp6_error(lan_relay_ip6, service_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable,
                            Packet6::udp({service_ip6, 547}, {lan_relay_ip6, 547}))),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_ICMP_UNMATCHED}},
    {"xdp: an error whose quote ends inside the ports: dropped (protocol)",
     Program::XdpNic,
     from_host6(icmp6_error(host_ip6, service_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable, call_from(service_ip6), 0,
                            40 + 2)),
     kXdpDrop,
     std::nullopt,
     {BPFNET_CTR_DROP_PROTOCOL},
     pod_calls_agent},
    // The pod's ICMPv6 errors about packets the datapath delivered to it: to the LAN as the service address.
    {"tc pod: the pod's port unreachable about a datagram to TFTP 69: sent as the service address",
     Program::TcPod,
     from_pod6(icmp6_error(pod_ip6, host_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable,
                           Packet6::udp({host_ip6, 40000}, {pod_ip6, 69}))),
     kTcRedirect,
     to_host6(icmp6_error(service_ip6, host_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable,
                          Packet6::udp({host_ip6, 40000}, {service_ip6, 69}))),
     {BPFNET_CTR_ICMP_ERROR_TO_LAN}},
    {"tc pod: the pod's error about a TCP segment to 8080: the quote names service port 80",
     Program::TcPod,
     from_pod6(icmp6_error(pod_ip6, host_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable,
                           Packet6::tcp({host_ip6, 40000}, {pod_ip6, 8080}))),
     kTcRedirect,
     to_host6(icmp6_error(service_ip6, host_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable,
                          Packet6::tcp({host_ip6, 40000}, {service_ip6, 80}))),
     {BPFNET_CTR_ICMP_ERROR_TO_LAN}},
    {"tc pod: the pod's port unreachable about the agent's answer to its call: the service address's",
     Program::TcPod,
     from_pod6(icmp6_error(pod_ip6, host_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable,
                           Packet6::udp({host_ip6, 9999}, {pod_ip6, 45000}))),
     kTcRedirect,
     to_host6(icmp6_error(service_ip6, host_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable,
                          Packet6::udp({host_ip6, 9999}, {service_ip6, 45000}))),
     {BPFNET_CTR_ICMP_ERROR_TO_LAN},
     agent_answered},
    {"tc pod: the pod's port unreachable addressed to the service address: dropped, a hairpin (no neighbour miss)",
     Program::TcPod,
     from_pod6(icmp6_error(pod_ip6, service_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable,
                           Packet6::udp({host_ip6, 40000}, {pod_ip6, 69}))),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_HAIRPIN}},
    {"tc pod: the pod's error about a port nothing steered: dropped, unmatched (the pod's address never leaves)",
     Program::TcPod,
     from_pod6(icmp6_error(pod_ip6, host_ip6, kIcmp6Unreachable, kIcmp6PortUnreachable,
                           Packet6::udp({host_ip6, 40000}, {pod_ip6, 7777}))),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_ICMP_UNMATCHED}},
    {"tc pod: the pod's echo request to a LAN host: dropped (protocol)",
     Program::TcPod,
     from_pod6(Packet6::icmp(pod_ip6, host_ip6, 128, 0, {0x42, 0x42, 0, 1})),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_BACKEND_PROTOCOL}},
    {"tc pod: the pod's neighbour solicitation to its gateway: not the datapath's",
     Program::TcPod,
     from_pod6(solicitation(pod_ip6, "2001:2:0:100::1", pod_mac)),
     kTcNext,
     std::nullopt,
     {}},
    {"the pod's answer from a listed port: sent as the service address",
     Program::TcPod,
     from_pod6(Packet6::tcp({pod_ip6, 6385}, {host_ip6, 40000})),
     kTcRedirect,
     to_host6(Packet6::tcp({service_ip6, 6385}, {host_ip6, 40000})),
     {BPFNET_CTR_SNAT_REPLY}},
    {"the pod calls a host's agent: sent as the service address, the flow recorded",
     Program::TcPod,
     from_pod6(Packet6::tcp({pod_ip6, 45000}, {host_ip6, 9999})),
     kTcRedirect,
     to_host6(Packet6::tcp({service_ip6, 45000}, {host_ip6, 9999})),
     {BPFNET_CTR_SNAT_FLOW, BPFNET_CTR_FLOW_CREATED}},
    {"the host answers the pod's call: into the pod, the flow confirmed",
     Program::TcNic,
     from_host6(Packet6::tcp({host_ip6, 9999}, {service_ip6, 45000})),
     kTcRedirect,
     into_pod6(Packet6::tcp({host_ip6, 9999}, {pod_ip6, 45000})),
     {BPFNET_CTR_DNAT_FLOW, BPFNET_CTR_FLOW_CONFIRMED},
     [](DatapathTest &t) {
         t.deliver(Program::TcPod, from_pod6(Packet6::tcp({pod_ip6, 45000}, {host_ip6, 9999})));
     }},
    {"the pod calls a host never seen: neighbour miss, dropped",
     Program::TcPod,
     from_pod6(Packet6::tcp({pod_ip6, 45000}, {unknown_host_ip6, 9999})),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_NEIGHBOUR_MISS}},
    {"the pod calls its own service address (hairpin): dropped",
     Program::TcPod,
     from_pod6(Packet6::tcp({pod_ip6, 45000}, {service_ip6, 6385})),
     kTcShot,
     std::nullopt,
     {BPFNET_CTR_DROP_HAIRPIN}},
    {"the pod's IPv6 traffic off the provisioning subnet: the CNI's",
     Program::TcPod,
     from_pod6(Packet6::tcp({pod_ip6, 45000}, {outside_ip6, 443})),
     kTcNext,
     std::nullopt,
     {}},
};

INSTANTIATE_TEST_SUITE_P(Ndp, DatapathTable, ::testing::ValuesIn(kNdpRows), row_test_name);
INSTANTIATE_TEST_SUITE_P(Nat66, DatapathTable, ::testing::ValuesIn(kNat66Rows), row_test_name);

// What the conflict leaves behind: the claimant in the conflicts table and a report to the loader, as for ARP.
TEST_F(DatapathTest, DadProbeForTheServiceAddressIsRecordedAndReported) {
    drain_events();
    run(Program::XdpNic,
        Packet6::icmp("::", solicited_node(service_ip6), kNeighbourSolicit, 0, ns_body(service_ip6, std::nullopt))
            .hop_limit(255)
            .macs(service_group_mac, client_mac)
            .bytes());
    auto conflict = maps_->conflicts.lookup(key_ip(service_ip6));
    ASSERT_TRUE(conflict.has_value());
    EXPECT_TRUE(std::equal(client_mac.begin(), client_mac.end(), conflict->mac));
    auto events = drain_events();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, BPFNET_EVENT_CONFLICT);
    EXPECT_EQ(events[0].service_ip, key_ip(service_ip6));
}

// A miss asks the loader to resolve the IPv6 host (it sends a neighbour solicitation from the service address).
TEST_F(DatapathTest, NeighbourMissOverIpv6IsReportedWithBothAddresses) {
    drain_events();
    run(Program::TcPod, from_pod6(Packet6::tcp({pod_ip6, 45000}, {unknown_host_ip6, 9999})));
    auto events = drain_events();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, BPFNET_EVENT_NEIGHBOUR_MISS);
    EXPECT_EQ(events[0].ip, key_ip(unknown_host_ip6));
    EXPECT_EQ(events[0].service_ip, key_ip(service_ip6));
}

// An IPv6 host answering more flows than its share holds its share of flows: the rest still steer, from
// flows_unconfirmed (the IPv4 case, with the table full: hostile_lan_test.cpp).
TEST_F(DatapathTest, AnIpv6HostHoldsItsShareOfFlows) {
    const int answered_flows = BPFNET_MAX_FLOWS_PER_HOST + 40;
    int steered = 0;
    for (int i = 0; i < answered_flows; i++) {
        const auto pod_port = static_cast<uint16_t>(20000 + i);
        run(Program::TcPod, from_pod6(Packet6::udp({pod_ip6, pod_port}, {host_ip6, 2070})));
        steered += run(Program::TcNic, from_host6(Packet6::udp({host_ip6, 2070}, {service_ip6, pod_port}))).retval ==
                   kTcRedirect;
    }
    EXPECT_EQ(steered, answered_flows);
    size_t held = 0;
    for (const auto &[key, flow] : maps_->flows.entries())
        held += key.remote_ip == key_ip(host_ip6);
    EXPECT_EQ(held, size_t{BPFNET_MAX_FLOWS_PER_HOST});
    EXPECT_EQ(counters()[BPFNET_CTR_FLOW_OVER_SHARE], 40u);
}

} // namespace
} // namespace bpfnet::test
