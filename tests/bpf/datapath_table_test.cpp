// The datapath's behaviour as a table: one row per behaviour, with the input frame, the verdict and the
// exact output frame (checksums recomputed independently by the packet builder), and the counters that
// must move. Sequences (a flow recorded on the way out, then used on the way in) follow as plain tests.
#include "table.hpp"

#include "maps/layout.hpp"

#include <arpa/inet.h>

#include <functional>
#include <set>

namespace bpfnet::test {
namespace {

using namespace world;

Bytes arp_request_for(const std::string &target, const std::string &sender = host_ip,
                      const Mac &sender_mac = host_mac) {
    return arp(1, broadcast, sender_mac, sender, zero_mac, target);
}

const Packet api_request = Packet::tcp({host_ip, 40000}, {service_ip, 6385});
Bytes api_frame() {
    return from_host(api_request);
}

std::vector<Row> rows() {
    const Bytes api = api_frame();
    const Bytes tftp = from_host(Packet::udp({host_ip, 40000}, {service_ip, 69}));
    std::vector<Row> t = {
        // Packet walk 1: ARP for the service IP. XDP learns from every ARP frame and never answers (XDP_TX
        // is lost on a veth whose peer has no XDP program); TC ingress answers out of the NIC's egress.
        {"xdp: arp who-has service IP handed on to tc, not counted here",
         Program::XdpNic,
         arp_request_for(service_ip),
         kXdpPass,
         std::nullopt,
         {}},
        {"tc nic: arp who-has service IP answered from the NIC MAC, out of the NIC's egress",
         Program::TcNic,
         arp_request_for(service_ip),
         kTcRedirect,
         arp(2, host_mac, nic_mac, service_ip, host_mac, host_ip),
         {BPFNET_CTR_ARP_REPLY}},
        {"tc nic: arp who-has service IP, padded to the Ethernet minimum: answered, padding kept",
         Program::TcNic,
         padded(arp_request_for(service_ip), 60),
         kTcRedirect,
         padded(arp(2, host_mac, nic_mac, service_ip, host_mac, host_ip), 60),
         {BPFNET_CTR_ARP_REPLY}},
        {"xdp: arp who-has another LAN address: passed",
         Program::XdpNic,
         arp_request_for(other_lan_ip),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS}},
        {"tc nic: arp who-has another LAN address: handed on, not counted",
         Program::TcNic,
         arp_request_for(other_lan_ip),
         kTcNext,
         std::nullopt,
         {}},
        {"tc nic: arp who-has service IP while not the owner: dropped, so that no kernel answers it "
         "(kube-proxy's IPVS binds the IP to kube-ipvs0 on every node)",
         Program::TcNic,
         arp_request_for(service_ip),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_ARP_NOT_ACTIVE},
         [](DatapathTest &d) {
             d.set_service_ip_active(false);
         }},
        {"tc nic: arp who-has service IP while not the owner, the loader's heartbeat stale: handed on",
         Program::TcNic,
         arp_request_for(service_ip),
         kTcNext,
         std::nullopt,
         {BPFNET_CTR_ARP_STALE_HEARTBEAT},
         [](DatapathTest &d) {
             d.set_service_ip_active(false);
             d.set_heartbeat_age_seconds(6);
         }},
        {"tc nic: arp who-has service IP with a stale loader heartbeat: handed on",
         Program::TcNic,
         arp_request_for(service_ip),
         kTcNext,
         std::nullopt,
         {BPFNET_CTR_ARP_STALE_HEARTBEAT},
         [](DatapathTest &d) {
             d.set_heartbeat_age_seconds(6);
         }},
        {"tc nic: arp who-has service IP during a stopped loader's grace (heartbeat in the future): answered",
         Program::TcNic,
         arp_request_for(service_ip),
         kTcRedirect,
         arp(2, host_mac, nic_mac, service_ip, host_mac, host_ip),
         {BPFNET_CTR_ARP_REPLY},
         [](DatapathTest &d) {
             d.set_heartbeat_grace_seconds(30);
         }},
        {"xdp: arp reply naming the service IP: passed, not answered",
         Program::XdpNic,
         arp(2, nic_mac, host_mac, host_ip, nic_mac, service_ip),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS}},
        {"tc nic: arp reply naming the service IP: handed on, not answered",
         Program::TcNic,
         arp(2, nic_mac, host_mac, host_ip, nic_mac, service_ip),
         kTcNext,
         std::nullopt,
         {}},
        {"xdp: arp reply from another MAC claiming the service IP: a conflict",
         Program::XdpNic,
         arp(2, nic_mac, mac("02:00:00:00:00:66"), service_ip, nic_mac, host_ip),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS, BPFNET_CTR_ARP_CONFLICT}},
        {"xdp: gratuitous ARP from another MAC for the service IP: a conflict, handed on to be answered",
         Program::XdpNic,
         arp(1, broadcast, mac("02:00:00:00:00:66"), service_ip, zero_mac, service_ip),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_ARP_CONFLICT}},
        {"tc nic: gratuitous ARP from another MAC for the service IP: our claim answered to it",
         Program::TcNic,
         arp(1, broadcast, mac("02:00:00:00:00:66"), service_ip, zero_mac, service_ip),
         kTcRedirect,
         arp(2, mac("02:00:00:00:00:66"), nic_mac, service_ip, mac("02:00:00:00:00:66"), service_ip),
         {BPFNET_CTR_ARP_REPLY}},
        {"xdp: another MAC's ARP probe (sender 0.0.0.0) for the service IP: a conflict, a node about to claim it",
         Program::XdpNic,
         arp(1, broadcast, mac("02:00:00:00:00:66"), "0.0.0.0", zero_mac, service_ip),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_ARP_CONFLICT}},
        {"tc nic: another MAC's ARP probe for the service IP: answered to the prober, which then defers",
         Program::TcNic,
         arp(1, broadcast, mac("02:00:00:00:00:66"), "0.0.0.0", zero_mac, service_ip),
         kTcRedirect,
         arp(2, mac("02:00:00:00:00:66"), nic_mac, service_ip, mac("02:00:00:00:00:66"), "0.0.0.0"),
         {BPFNET_CTR_ARP_REPLY}},
        {"xdp: an ARP probe for a service IP this node does not answer for: a standby node's, not a conflict",
         Program::XdpNic,
         arp(1, broadcast, mac("02:00:00:00:00:66"), "0.0.0.0", zero_mac, service_ip),
         kXdpPass,
         std::nullopt,
         {},
         [](DatapathTest &d) {
             d.set_service_ip_active(false);
         }},
        {"xdp: our own ARP probe is not a conflict",
         Program::XdpNic,
         arp(1, broadcast, nic_mac, "0.0.0.0", zero_mac, service_ip),
         kXdpPass,
         std::nullopt,
         {}},
        {"xdp: an ARP probe for a host's address (a host's own RFC 5227 check): neither learned nor a conflict",
         Program::XdpNic,
         arp(1, broadcast, mac("02:00:00:00:00:66"), "0.0.0.0", zero_mac, unknown_host_ip),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS}},
        {"xdp: another MAC announcing a service IP this node does not answer for: the owner, not a conflict",
         Program::XdpNic,
         arp(1, broadcast, mac("02:00:00:00:00:66"), service_ip, zero_mac, service_ip),
         kXdpPass,
         std::nullopt,
         {},
         [](DatapathTest &d) {
             d.set_service_ip_active(false);
         }},
        {"xdp: another MAC announcing the service IP while the heartbeat is stale: not a conflict",
         Program::XdpNic,
         arp(1, broadcast, mac("02:00:00:00:00:66"), service_ip, zero_mac, service_ip),
         kXdpPass,
         std::nullopt,
         {},
         [](DatapathTest &d) {
             d.set_heartbeat_age_seconds(6);
         }},
        {"xdp: our own announcement is not a conflict",
         Program::XdpNic,
         arp(1, broadcast, nic_mac, service_ip, zero_mac, service_ip),
         kXdpPass,
         std::nullopt,
         {}},
        {"xdp: arp from a new host: passed and learned",
         Program::XdpNic,
         arp_request_for(other_lan_ip, unknown_host_ip, mac("02:00:00:00:00:11")),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS, BPFNET_CTR_NEIGHBOUR_LEARNED}},
        {"tc nic: truncated arp for the service IP: handed on untouched",
         Program::TcNic,
         truncated(arp_request_for(service_ip), 40),
         kTcNext,
         std::nullopt,
         {}},

        // Packet walk 4: listed TCP and UDP ports, DNAT into the pod.
        {"xdp: listed tcp port passed on to tc", Program::XdpNic, api, kXdpPass, std::nullopt, {}},
        {"tc nic: tcp to a listed port is DNATed into the pod",
         Program::TcNic,
         api,
         kTcRedirect,
         into_pod(Packet::tcp({host_ip, 40000}, {pod_ip, 6385})),
         {BPFNET_CTR_DNAT_SERVICE}},
        // What an accepted TCP packet teaches: its connection's SYN says where a new host is; the segments
        // after it would find their sender known and pay a neighbours lookup each for nothing.
        {"tc nic: a new host's SYN to a listed port: steered, its sender learned",
         Program::TcNic,
         from_host(Packet::tcp({unknown_host_ip, 40000}, {service_ip, 6385}).tcp_flags(0x02)),
         kTcRedirect,
         into_pod(Packet::tcp({unknown_host_ip, 40000}, {pod_ip, 6385}).tcp_flags(0x02)),
         {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_NEIGHBOUR_LEARNED}},
        {"tc nic: a new host's segment after the SYN to a listed port: steered, nothing learned",
         Program::TcNic,
         from_host(Packet::tcp({unknown_host_ip, 40000}, {service_ip, 6385})),
         kTcRedirect,
         into_pod(Packet::tcp({unknown_host_ip, 40000}, {pod_ip, 6385})),
         {BPFNET_CTR_DNAT_SERVICE}},
        // loadBalancerSourceRanges: only sources in the service IP's ranges reach its listed ports.
        {"xdp: to a listed port from a source in the service IP's source ranges: passed on to tc",
         Program::XdpNic,
         api,
         kXdpPass,
         std::nullopt,
         {},
         [](DatapathTest &d) {
             d.set_source_ranges({"10.0.0.0/8", host_ip + "/32"});
         }},
        {"xdp: to a listed port from a source outside the service IP's source ranges: dropped",
         Program::XdpNic,
         api,
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_SOURCE_RANGE},
         [](DatapathTest &d) {
             d.set_source_ranges({"198.18.0.128/25"});
         }},
        {"tc nic: to a listed port from a source outside the service IP's source ranges: dropped",
         Program::TcNic,
         api,
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_SOURCE_RANGE},
         [](DatapathTest &d) {
             d.set_source_ranges({"198.18.0.128/25"});
         }},
        {"tc nic: source ranges including 0.0.0.0/0: every source steered",
         Program::TcNic,
         api,
         kTcRedirect,
         into_pod(Packet::tcp({host_ip, 40000}, {pod_ip, 6385})),
         {BPFNET_CTR_DNAT_SERVICE},
         [](DatapathTest &d) {
             d.set_source_ranges({"198.18.0.128/25", "0.0.0.0/0"});
         }},
        {"tc nic: port translation 80 -> 8080",
         Program::TcNic,
         from_host(Packet::tcp({host_ip, 40000}, {service_ip, 80})),
         kTcRedirect,
         into_pod(Packet::tcp({host_ip, 40000}, {pod_ip, 8080})),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: udp to a listed port is DNATed into the pod",
         Program::TcNic,
         tftp,
         kTcRedirect,
         into_pod(Packet::udp({host_ip, 40000}, {pod_ip, 69})),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: udp without checksum keeps checksum 0",
         Program::TcNic,
         from_host(Packet::udp({host_ip, 40000}, {service_ip, 69}).udp_checksum_none()),
         kTcRedirect,
         into_pod(Packet::udp({host_ip, 40000}, {pod_ip, 69}).udp_checksum_none()),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: IP options are kept and the ports found behind them",
         Program::TcNic,
         from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385}).ip_options(2)),
         kTcRedirect,
         into_pod(Packet::tcp({host_ip, 40000}, {pod_ip, 6385}).ip_options(2)),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: listed port without a backend on this node is dropped",
         Program::TcNic,
         api,
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_NO_BACKEND},
         [](DatapathTest &d) {
             d.remove_backend();
         }},

        // A recorded flow (walks 3 and 5) lets the host reach the pod's port.
        {"xdp: packet on a recorded flow passed on to tc",
         Program::XdpNic,
         from_host(Packet::udp({host_ip, flow_host_port}, {service_ip, flow_pod_port})),
         kXdpPass,
         std::nullopt,
         {}},
        {"tc nic: packet on a recorded flow is DNATed",
         Program::TcNic,
         from_host(Packet::udp({host_ip, flow_host_port}, {service_ip, flow_pod_port})),
         kTcRedirect,
         into_pod(Packet::udp({host_ip, flow_host_port}, {pod_ip, flow_pod_port})),
         {BPFNET_CTR_DNAT_FLOW}},

        // Packet walk 6: everything else to the service IP is dropped and counted.
        {"xdp: unlisted tcp port dropped",
         Program::XdpNic,
         from_host(Packet::tcp({host_ip, 40000}, {service_ip, 22})),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_NOT_ALLOWED}},
        {"xdp: same port as a flow but another host port dropped",
         Program::XdpNic,
         from_host(Packet::udp({host_ip, flow_host_port + 1}, {service_ip, flow_pod_port})),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_NOT_ALLOWED}},
        {"xdp: listed port number but other protocol dropped",
         Program::XdpNic,
         from_host(Packet::udp({host_ip, 40000}, {service_ip, 6385})),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_NOT_ALLOWED}},
        {"xdp: icmp to the service IP dropped",
         Program::XdpNic,
         from_host(Packet::icmp_echo(host_ip, service_ip)),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_PROTOCOL}},
        {"tc nic: unlisted port dropped even without xdp",
         Program::TcNic,
         from_host(Packet::tcp({host_ip, 40000}, {service_ip, 22})),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_NOT_ALLOWED}},

        // Traffic that is not for a service IP is not ours.
        {"xdp: tcp to another LAN address passes unchanged",
         Program::XdpNic,
         from_host(Packet::tcp({host_ip, 40000}, {other_lan_ip, 6385})),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS}},
        {"xdp: tcp to an address outside the subnet passes unchanged",
         Program::XdpNic,
         from_host(Packet::tcp({host_ip, 40000}, {outside_ip, 6385})),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS}},
        {"xdp: not IPv4 passes unchanged",
         Program::XdpNic,
         with_u16(api, 12, 0x86dd),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS}},
        {"tc nic: tcp to another LAN address passes unchanged",
         Program::TcNic,
         from_host(Packet::tcp({host_ip, 40000}, {other_lan_ip, 6385})),
         kTcNext,
         std::nullopt,
         {}},

        // Malformed input to the service IP: never steered, never rewritten, counted.
        {"xdp: truncated Ethernet header passes untouched",
         Program::XdpNic,
         truncated(api, 10),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS}},
        {"xdp: truncated IPv4 header passes untouched",
         Program::XdpNic,
         truncated(api, kIpOffset + 12),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS}},
        {"tc nic: truncated IPv4 header passes untouched",
         Program::TcNic,
         truncated(api, kIpOffset + 12),
         kTcNext,
         std::nullopt,
         {}},
        {"xdp: IHL < 5 dropped",
         Program::XdpNic,
         with_byte(api, kIpOffset, 0x44),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},
        {"tc nic: IHL < 5 dropped",
         Program::TcNic,
         with_byte(api, kIpOffset, 0x44),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},
        {"xdp: IP total length beyond the frame dropped",
         Program::XdpNic,
         with_u16(api, kIpOffset + 2, static_cast<uint16_t>(api.size())),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},
        {"tc nic: IP total length beyond the frame dropped",
         Program::TcNic,
         with_u16(api, kIpOffset + 2, static_cast<uint16_t>(api.size())),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},
        {"xdp: IP fragment dropped",
         Program::XdpNic,
         from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385}).more_fragments()),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_FRAGMENT}},
        {"tc nic: IP fragment dropped",
         Program::TcNic,
         from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385}).more_fragments()),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_FRAGMENT}},
        {"xdp: TCP data offset < 5 dropped",
         Program::XdpNic,
         with_byte(api, kL4Offset + 12, 0x40),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},
        {"tc nic: TCP data offset < 5 dropped",
         Program::TcNic,
         with_byte(api, kL4Offset + 12, 0x40),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},
        {"xdp: truncated TCP header dropped",
         Program::XdpNic,
         with_u16(truncated(api, kL4Offset + 10), kIpOffset + 2, 30),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},
        {"tc nic: truncated TCP header dropped",
         Program::TcNic,
         with_u16(truncated(api, kL4Offset + 10), kIpOffset + 2, 30),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},
        {"xdp: truncated UDP header dropped",
         Program::XdpNic,
         with_u16(truncated(tftp, kL4Offset + 6), kIpOffset + 2, 26),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},
        {"xdp: UDP length beyond the IP payload dropped",
         Program::XdpNic,
         with_u16(tftp, kL4Offset + 4, static_cast<uint16_t>(tftp.size())),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},
        {"tc nic: UDP length beyond the IP payload dropped",
         Program::TcNic,
         with_u16(tftp, kL4Offset + 4, static_cast<uint16_t>(tftp.size())),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},

        // The way back (walk 4 reverse): replies from listed ports leave as the service IP.
        {"tc pod: reply from a listed port is SNATed to the service IP",
         Program::TcPod,
         from_pod(Packet::tcp({pod_ip, 6385}, {host_ip, 40000})),
         kTcRedirect,
         to_host(Packet::tcp({service_ip, 6385}, {host_ip, 40000})),
         {BPFNET_CTR_SNAT_REPLY}},
        {"tc pod: reply from a translated port leaves from the service port",
         Program::TcPod,
         from_pod(Packet::tcp({pod_ip, 8080}, {host_ip, 40000})),
         kTcRedirect,
         to_host(Packet::tcp({service_ip, 80}, {host_ip, 40000})),
         {BPFNET_CTR_SNAT_REPLY}},
        {"tc pod: traffic to outside the provisioning subnet is the CNI's",
         Program::TcPod,
         from_pod(Packet::tcp({pod_ip, 6385}, {outside_ip, 40000})),
         kTcNext,
         std::nullopt,
         {}},
        {"tc pod: traffic from another pod is not touched",
         Program::TcPod,
         from_pod(Packet::tcp({other_pod_ip, 6385}, {host_ip, 40000})),
         kTcNext,
         std::nullopt,
         {}},
        {"tc pod: backend calling its own service IP (hairpin) dropped",
         Program::TcPod,
         from_pod(Packet::tcp({pod_ip, 45000}, {service_ip, 6385})),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_HAIRPIN}},
        {"tc pod: icmp from the backend to the LAN dropped",
         Program::TcPod,
         from_pod(Packet::icmp_echo(pod_ip, host_ip)),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_BACKEND_PROTOCOL}},
        {"tc pod: malformed backend packet dropped",
         Program::TcPod,
         with_byte(from_pod(Packet::tcp({pod_ip, 6385}, {host_ip, 40000})), kL4Offset + 12, 0x30),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},
    };
    return t;
}

INSTANTIATE_TEST_SUITE_P(Steering, DatapathTable, ::testing::ValuesIn(rows()), row_test_name);

// Walk 5: the pod calls the ramdisk agent on a host (Ironic -> IPA :9999); the reply must find its way back.
// A stopped loader's grace lasts until another MAC claims one of its service IPs: the node that took the IP
// over (its pod moved while no loader ran here) is answered from then on, not this one.
TEST_F(DatapathTest, AnotherClaimEndsAStoppedLoadersGrace) {
    set_heartbeat_grace_seconds(30);
    const Bytes who_has = arp_request_for(service_ip);
    ASSERT_EQ(run(Program::TcNic, who_has).retval, kTcRedirect);
    const Bytes claim = arp(1, broadcast, mac("02:00:00:00:00:66"), service_ip, zero_mac, service_ip);
    EXPECT_EQ(run(Program::XdpNic, claim).retval, kXdpPass);
    EXPECT_EQ(maps_->heartbeat.lookup(0)->monotonic_ns, 0u);
    EXPECT_EQ(run(Program::TcNic, who_has).retval, kTcNext);
    EXPECT_EQ(counters()[BPFNET_CTR_ARP_STALE_HEARTBEAT], 1u);
}

// A running loader's heartbeat is never in the future: another MAC's claim is reported, the gate stays open.
TEST_F(DatapathTest, AnotherClaimLeavesARunningLoadersHeartbeat) {
    const __u64 before = maps_->heartbeat.lookup(0)->monotonic_ns;
    const Bytes claim = arp(1, broadcast, mac("02:00:00:00:00:66"), service_ip, zero_mac, service_ip);
    EXPECT_EQ(run(Program::XdpNic, claim).retval, kXdpPass);
    EXPECT_EQ(maps_->heartbeat.lookup(0)->monotonic_ns, before);
    EXPECT_EQ(counters()[BPFNET_CTR_ARP_CONFLICT], 1u);
    EXPECT_EQ(run(Program::TcNic, arp_request_for(service_ip)).retval, kTcRedirect);
}

TEST_F(DatapathTest, PodInitiatedConnectionAndItsReturn) {
    auto out = run(Program::TcPod, from_pod(Packet::tcp({pod_ip, 45000}, {host_ip, 9999}).tcp_flags(0x02)));
    EXPECT_EQ(out.retval, kTcRedirect);
    Bytes want = to_host(Packet::tcp({service_ip, 45000}, {host_ip, 9999}).tcp_flags(0x02));
    EXPECT_EQ(out.out, want) << describe_difference(out.out, want);

    Bytes reply = from_host(Packet::tcp({host_ip, 9999}, {service_ip, 45000}).tcp_flags(0x12));
    EXPECT_EQ(run(Program::XdpNic, reply).retval, kXdpPass) << "the reply must not be dropped as unlisted";
    auto in = run(Program::TcNic, reply);
    EXPECT_EQ(in.retval, kTcRedirect);
    want = into_pod(Packet::tcp({host_ip, 9999}, {pod_ip, 45000}).tcp_flags(0x12));
    EXPECT_EQ(in.out, want) << describe_difference(in.out, want);

    auto c = counters();
    EXPECT_EQ(c[BPFNET_CTR_FLOW_CREATED], 1u);
    EXPECT_EQ(c[BPFNET_CTR_SNAT_FLOW], 1u);
    EXPECT_EQ(c[BPFNET_CTR_DNAT_FLOW], 1u);
}

// Source ranges say who may reach the listed ports; the host the pod itself called answers through its flow,
// wherever it is, and a dropped packet confirms nothing.
TEST_F(DatapathTest, SourceRangesLeaveTheAnswersToThePodsOwnCalls) {
    set_source_ranges({"198.18.0.128/25"});
    ASSERT_EQ(run(Program::TcPod, from_pod(Packet::tcp({pod_ip, 45000}, {host_ip, 9999}).tcp_flags(0x02))).retval,
              kTcRedirect);
    Bytes reply = from_host(Packet::tcp({host_ip, 9999}, {service_ip, 45000}).tcp_flags(0x12));
    EXPECT_EQ(run(Program::XdpNic, reply).retval, kXdpPass);
    EXPECT_EQ(run(Program::TcNic, reply).retval, kTcRedirect);
    EXPECT_EQ(run(Program::TcNic, api_frame()).retval, kTcShot); // a new call from the same host: refused
    auto c = counters();
    EXPECT_EQ(c[BPFNET_CTR_DNAT_FLOW], 1u);
    EXPECT_EQ(c[BPFNET_CTR_DROP_SOURCE_RANGE], 1u);
}

// A recorded flow is written once, not on every packet of the connection.
TEST_F(DatapathTest, FlowIsRecordedOnlyOnce) {
    Bytes frame = from_pod(Packet::tcp({pod_ip, 45000}, {host_ip, 9999}));
    run(Program::TcPod, frame);
    run(Program::TcPod, frame);
    run(Program::TcPod, frame);
    auto c = counters();
    EXPECT_EQ(c[BPFNET_CTR_FLOW_CREATED], 1u);
    EXPECT_EQ(c[BPFNET_CTR_SNAT_FLOW], 3u);
}

// Walk 3: the TFTP server answers from a new port; the client's ACK to that port reaches the server.
TEST_F(DatapathTest, TftpEphemeralReplyAndTheClientsNextPacket) {
    const uint16_t client = 2070, transfer = 51000;
    auto data = run(Program::TcPod, from_pod(Packet::udp({pod_ip, transfer}, {host_ip, client})));
    EXPECT_EQ(data.retval, kTcRedirect);
    Bytes want = to_host(Packet::udp({service_ip, transfer}, {host_ip, client}));
    EXPECT_EQ(data.out, want) << describe_difference(data.out, want);

    Bytes ack = from_host(Packet::udp({host_ip, client}, {service_ip, transfer}));
    EXPECT_EQ(run(Program::XdpNic, ack).retval, kXdpPass);
    auto in = run(Program::TcNic, ack);
    EXPECT_EQ(in.retval, kTcRedirect);
    want = into_pod(Packet::udp({host_ip, client}, {pod_ip, transfer}));
    EXPECT_EQ(in.out, want) << describe_difference(in.out, want);

    // Another host cannot use the transfer port.
    Bytes stranger = from_host(Packet::udp({other_lan_ip, client}, {service_ip, transfer}));
    EXPECT_EQ(run(Program::XdpNic, stranger).retval, kXdpDrop);
}

// The reverse path has no MAC for the host: the loader is asked to resolve it, the packet is dropped.
TEST_F(DatapathTest, NeighbourMissIsReportedToTheLoader) {
    Bytes frame = from_pod(Packet::tcp({pod_ip, 45000}, {unknown_host_ip, 9999}).tcp_flags(0x02));
    auto out = run(Program::TcPod, frame);
    EXPECT_EQ(out.retval, kTcShot);
    EXPECT_EQ(out.out, frame);

    auto events = drain_events();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, BPFNET_EVENT_NEIGHBOUR_MISS);
    EXPECT_EQ(events[0].ip, key_ip(unknown_host_ip));
    EXPECT_EQ(events[0].service_ip, key_ip(service_ip));
    EXPECT_EQ(counters()[BPFNET_CTR_NEIGHBOUR_MISS], 1u);

    // Once the host answers the loader's ARP request, the next attempt leaves.
    Mac learned = mac("02:00:00:00:00:11");
    EXPECT_EQ(run(Program::XdpNic, arp(2, nic_mac, learned, unknown_host_ip, nic_mac, service_ip)).retval, kXdpPass);
    auto retry = run(Program::TcPod, frame);
    EXPECT_EQ(retry.retval, kTcRedirect);
    Bytes want = to_host(Packet::tcp({service_ip, 45000}, {unknown_host_ip, 9999}).tcp_flags(0x02), learned);
    EXPECT_EQ(retry.out, want) << describe_difference(retry.out, want);
}

// Neighbours are learned from ARP (a new sender in the unconfirmed table), and an unchanged entry is not
// written again.
TEST_F(DatapathTest, NeighbourLearningWritesOnlyChanges) {
    Mac first = mac("02:00:00:00:00:30"), second = mac("02:00:00:00:00:31");
    run(Program::XdpNic, arp_request_for(other_lan_ip, "198.18.0.30", first));
    run(Program::XdpNic, arp_request_for(other_lan_ip, "198.18.0.30", first));
    EXPECT_EQ(counters()[BPFNET_CTR_NEIGHBOUR_LEARNED], 1u);
    EXPECT_FALSE(maps_->neighbours.lookup(key_ip("198.18.0.30")).has_value());
    auto entry = maps_->neighbours_unconfirmed.lookup(key_ip("198.18.0.30"));
    ASSERT_TRUE(entry.has_value());
    EXPECT_TRUE(std::equal(first.begin(), first.end(), entry->mac));

    run(Program::XdpNic, arp_request_for(other_lan_ip, "198.18.0.30", second)); // the host's NIC changed
    EXPECT_EQ(counters()[BPFNET_CTR_NEIGHBOUR_LEARNED], 2u);
    entry = maps_->neighbours_unconfirmed.lookup(key_ip("198.18.0.30"));
    EXPECT_TRUE(std::equal(second.begin(), second.end(), entry->mac));

    // A confirmed host moves in neighbours.
    run(Program::XdpNic, arp_request_for(other_lan_ip, host_ip, second));
    EXPECT_EQ(counters()[BPFNET_CTR_NEIGHBOUR_LEARNED], 3u);
    entry = maps_->neighbours.lookup(key_ip(host_ip));
    ASSERT_TRUE(entry.has_value());
    EXPECT_TRUE(std::equal(second.begin(), second.end(), entry->mac));
    EXPECT_FALSE(maps_->neighbours_unconfirmed.lookup(key_ip(host_ip)).has_value());

    // Addresses outside the provisioning subnet, and claims on the service IP itself, are not learned.
    run(Program::XdpNic, arp_request_for(other_lan_ip, outside_ip, first));
    run(Program::XdpNic, arp(2, broadcast, first, service_ip, zero_mac, service_ip));
    for (const auto &address : {outside_ip, service_ip}) {
        EXPECT_FALSE(maps_->neighbours.lookup(key_ip(address)).has_value()) << address;
        EXPECT_FALSE(maps_->neighbours_unconfirmed.lookup(key_ip(address)).has_value()) << address;
    }
}

} // namespace
} // namespace bpfnet::test
