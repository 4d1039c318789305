// The LANs users really have, as packet-table rows: TFTP block sizes through a pod network with a smaller
// MTU, frames whose checksums a peer's offload left partial, ICMP errors about steered packets, and IPv4
// fragments. Every output frame is built independently by the packet builder, checksums included.
#include "table.hpp"

#include "maps/layout.hpp"

#include <utility>

namespace bpfnet::test {
namespace {

using namespace world;

// A TFTP read request (RFC 1350) with options (RFC 2347): opcode 1, file, mode, then name/value pairs.
Bytes tftp_rrq(const std::vector<std::pair<std::string, std::string>> &options, uint8_t opcode = 1) {
    Bytes b = {0, opcode};
    auto put = [&b](const std::string &s) {
        b.insert(b.end(), s.begin(), s.end());
        b.push_back(0);
    };
    put("ipxe.efi");
    put("octet");
    for (const auto &[name, value] : options) {
        put(name);
        put(value);
    }
    return b;
}

Packet rrq_to(const std::string &to, const Bytes &request) {
    return Packet::udp({host_ip, 40000}, {to, 69}).payload(request);
}

constexpr uint8_t kUnreachable = 3, kPortUnreachable = 3, kFragmentationNeeded = 4, kTimeExceeded = 11;
const std::string router_ip = other_lan_ip; // a router on the LAN, on the way to a host behind it

// A TFTP DATA packet of a recorded flow, as it left the NIC (from the service IP) and as the pod sent it.
Packet flow_data_from(const std::string &from) {
    return Packet::udp({from, flow_pod_port}, {host_ip, flow_host_port}).payload(std::string(512, 'd'));
}
// The pod's reply to the Ironic API client, from a listed port with translation (8080 behind 80).
Packet api_reply_from(const std::string &from, uint16_t port) {
    return Packet::tcp({from, port}, {host_ip, 40000});
}

std::vector<Row> rows() {
    return {
        // A pod MTU of 1450 (world::pod_mtu) carries TFTP blocks of 1450 - 20 - 8 - 4 = 1418 bytes.
        {"tc nic: TFTP read request for blksize 1468 through a pod MTU of 1450: clamped to 1418",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "1468"}, {"tsize", "0"}}))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "1418"}, {"tsize", "0"}}))),
         {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_TFTP_BLKSIZE_CLAMPED}},
        {"tc nic: TFTP BLKSIZE 65464 (name in capitals, after another option): 01418, same length",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"tsize", "0"}, {"BLKSIZE", "65464"}}))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"tsize", "0"}, {"BLKSIZE", "01418"}}))),
         {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_TFTP_BLKSIZE_CLAMPED}},
        {"tc nic: TFTP blksize 1418 fits the pod MTU exactly: untouched",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "1418"}}))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "1418"}}))),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: TFTP blksize 1419, one byte too many: clamped",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "1419"}}))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "1418"}}))),
         {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_TFTP_BLKSIZE_CLAMPED}},
        {"tc nic: TFTP blksize in a UDP datagram without checksum: clamped, checksum stays 0",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "1468"}})).udp_checksum_none()),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "1418"}})).udp_checksum_none()),
         {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_TFTP_BLKSIZE_CLAMPED}},
        {"tc nic: TFTP write request for blksize 1468: untouched (the pod receives, never sends, the blocks)",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "1468"}}, 2))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "1468"}}, 2))),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: 'blksize' as a file name or a value is not the option: untouched",
         Program::TcNic,
         from_host(rrq_to(service_ip, Bytes{0, 1, 'b', 'l', 'k', 's', 'i', 'z', 'e', 0, '9', '9', '9', '9', 0})),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, Bytes{0, 1, 'b', 'l', 'k', 's', 'i', 'z', 'e', 0, '9', '9', '9', '9', 0})),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: TFTP blksize that is not a number: untouched, for the server to refuse",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "15x0"}}))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "15x0"}}))),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: TFTP request cut off inside the blksize value: untouched",
         Program::TcNic,
         from_host(rrq_to(service_ip, truncated(tftp_rrq({{"blksize", "1468"}}), 26))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, truncated(tftp_rrq({{"blksize", "1468"}}), 26))),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: TFTP blksize through a pod with a 1500 MTU: untouched",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "1468"}}))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "1468"}}))),
         {BPFNET_CTR_DNAT_SERVICE},
         [](DatapathTest &d) {
             d.set_backend_mtu(1500);
         }},

        // Frames from peers with checksum offload (veth, virtio): the L4 checksum field holds only the
        // pseudo-header sum, as native XDP sees it. XDP never judges an L4 checksum; it steers by ports.
        // (TC computes the rewritten checksum from the skb's checksum state, or has the kernel's helpers do
        // it; test-run's skbs are never CHECKSUM_PARTIAL, so e2e_steering's case checksums, on default
        // offloads, judges that part.)
        {"xdp: TCP with a partial checksum to a listed port: passed on to tc untouched",
         Program::XdpNic,
         from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385}).partial_checksum()),
         kXdpPass,
         std::nullopt,
         {}},
        {"xdp: UDP with a partial checksum on a recorded flow: passed on to tc untouched",
         Program::XdpNic,
         from_host(Packet::udp({host_ip, flow_host_port}, {service_ip, flow_pod_port}).partial_checksum()),
         kXdpPass,
         std::nullopt,
         {}},
        {"xdp: TCP with a partial checksum to an unlisted port: dropped as not allowed, not as malformed",
         Program::XdpNic,
         from_host(Packet::tcp({host_ip, 40000}, {service_ip, 22}).partial_checksum()),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_NOT_ALLOWED}},

        // IPv4 fragments are never steered: only the first carries the ports (the TFTP clamp above keeps
        // servers from sending them).
        {"xdp: a later fragment (offset 1480) to the service IP: dropped, counted",
         Program::XdpNic,
         from_host(Packet::udp({host_ip, 40000}, {service_ip, 69}).fragment_offset(185)),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_FRAGMENT}},
        {"tc pod: the pod's first fragment of a datagram too big for its MTU: dropped, counted",
         Program::TcPod,
         from_pod(Packet::udp({pod_ip, 69}, {host_ip, 40000}).more_fragments()),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_FRAGMENT}},

        // A VLAN's frames as the parent device of a VLAN sub-interface sees them (interface: prov0 on a
        // trunk, instead of prov0.100): the datapath reads untagged Ethernet only, and hands tagged frames to
        // the kernel untouched, which gives them to the sub-interface. So the interface must be the one
        // where the provisioning network arrives untagged (docs/config.md, "interface").
        {"xdp: 802.1Q-tagged who-has for the service IP: passed untouched, not learned from",
         Program::XdpNic,
         vlan_tagged(arp(1, broadcast, host_mac, unknown_host_ip, zero_mac, service_ip), 100),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS}},
        {"tc nic: 802.1Q-tagged who-has for the service IP: handed on, not answered",
         Program::TcNic,
         vlan_tagged(arp(1, broadcast, host_mac, unknown_host_ip, zero_mac, service_ip), 100),
         kTcNext,
         std::nullopt,
         {}},
        {"xdp: 802.1Q-tagged TCP to an unlisted port of the service IP: passed untouched, not dropped",
         Program::XdpNic,
         vlan_tagged(from_host(Packet::tcp({host_ip, 40000}, {service_ip, 22})), 100),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS}},
        {"tc nic: 802.1Q-tagged TCP to a listed port: handed on, not steered",
         Program::TcNic,
         vlan_tagged(from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385})), 100),
         kTcNext,
         std::nullopt,
         {}},

        // ICMP errors from the LAN about packets the datapath sent as the service IP: into the pod, the quote
        // translated back to what the pod sent.
        {"xdp: host's port unreachable about a recorded flow's datagram: passed on to tc",
         Program::XdpNic,
         from_host(Packet::icmp_error(host_ip, service_ip, kUnreachable, kPortUnreachable, flow_data_from(service_ip))),
         kXdpPass,
         std::nullopt,
         {}},
        {"tc nic: host's port unreachable about a recorded flow's datagram: into the pod, quote translated",
         Program::TcNic,
         from_host(Packet::icmp_error(host_ip, service_ip, kUnreachable, kPortUnreachable, flow_data_from(service_ip))),
         kTcRedirect,
         into_pod(Packet::icmp_error(host_ip, pod_ip, kUnreachable, kPortUnreachable, flow_data_from(pod_ip))),
         {BPFNET_CTR_ICMP_ERROR_TO_POD}},
        {"tc nic: router's fragmentation needed (MTU 1400) about a reply from 80: to the pod, quoting 8080",
         Program::TcNic,
         from_host(Packet::icmp_error(router_ip, service_ip, kUnreachable, kFragmentationNeeded,
                                      api_reply_from(service_ip, 80), 1400)),
         kTcRedirect,
         into_pod(Packet::icmp_error(router_ip, pod_ip, kUnreachable, kFragmentationNeeded,
                                     api_reply_from(pod_ip, 8080), 1400)),
         {BPFNET_CTR_ICMP_ERROR_TO_POD}},
        {"tc nic: time exceeded about a datagram without UDP checksum: translated, quoted checksum stays 0",
         Program::TcNic,
         from_host(Packet::icmp_error(router_ip, service_ip, kTimeExceeded, 0,
                                      flow_data_from(service_ip).udp_checksum_none())),
         kTcRedirect,
         into_pod(Packet::icmp_error(router_ip, pod_ip, kTimeExceeded, 0, flow_data_from(pod_ip).udp_checksum_none())),
         {BPFNET_CTR_ICMP_ERROR_TO_POD}},
        // From off the provisioning subnet: dropped, as every packet to a service IP from there (the datapath
        // sends only onto the subnet; a router's errors come from its address there). Quoting a real flow.
        {"xdp: port unreachable from off the provisioning subnet about a recorded flow: dropped, off subnet",
         Program::XdpNic,
         from_host(
             Packet::icmp_error(outside_ip, service_ip, kUnreachable, kPortUnreachable, flow_data_from(service_ip))),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_OFF_SUBNET}},
        {"tc nic: port unreachable from off the provisioning subnet about a recorded flow: dropped, not into the pod",
         Program::TcNic,
         from_host(
             Packet::icmp_error(outside_ip, service_ip, kUnreachable, kPortUnreachable, flow_data_from(service_ip))),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_OFF_SUBNET}},
        {"xdp: ICMP error about a port the service IP never sent from: dropped, unmatched",
         Program::XdpNic,
         from_host(Packet::icmp_error(host_ip, service_ip, kUnreachable, kPortUnreachable,
                                      Packet::udp({service_ip, 4444}, {host_ip, 5555}))),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_ICMP_UNMATCHED}},
        {"xdp: ICMP error to the service IP quoting another sender: dropped, unmatched",
         Program::XdpNic,
         from_host(
             Packet::icmp_error(host_ip, service_ip, kUnreachable, kPortUnreachable, flow_data_from(other_lan_ip))),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_ICMP_UNMATCHED}},
        {"tc nic: ICMP error about a port the service IP never sent from: dropped, unmatched",
         Program::TcNic,
         from_host(Packet::icmp_error(host_ip, service_ip, kUnreachable, kPortUnreachable,
                                      Packet::udp({service_ip, 4444}, {host_ip, 5555}))),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_ICMP_UNMATCHED}},
        {"tc nic: ICMP error about the relay's DHCP reply: not the pod's packet, dropped",
         Program::TcNic,
         from_host(Packet::icmp_error(host_ip, service_ip, kUnreachable, kPortUnreachable,
                                      Packet::udp({service_ip, 67}, {host_ip, 68}))),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_ICMP_UNMATCHED}},
        {"xdp: echo request to the service IP: dropped (protocol)",
         Program::XdpNic,
         from_host(Packet::icmp_echo(host_ip, service_ip)),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_PROTOCOL}},
        {"xdp: ICMP error whose IP length runs past the frame (cut inside the quote): dropped, malformed",
         Program::XdpNic,
         truncated(from_host(Packet::icmp_error(host_ip, service_ip, kUnreachable, kPortUnreachable,
                                                flow_data_from(service_ip))),
                   14 + 20 + 8 + 20 + 2),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_MALFORMED}},

        // The pod's ICMP errors about packets the datapath delivered to it: to the LAN as the service IP.
        {"tc pod: pod's port unreachable about a datagram to TFTP 69: sent as the service IP, quote translated",
         Program::TcPod,
         from_pod(Packet::icmp_error(pod_ip, host_ip, kUnreachable, kPortUnreachable,
                                     Packet::udp({host_ip, 40000}, {pod_ip, 69}))),
         kTcRedirect,
         to_host(Packet::icmp_error(service_ip, host_ip, kUnreachable, kPortUnreachable,
                                    Packet::udp({host_ip, 40000}, {service_ip, 69}))),
         {BPFNET_CTR_ICMP_ERROR_TO_LAN}},
        {"tc pod: pod's error about a TCP segment to 8080: the quote names service port 80",
         Program::TcPod,
         from_pod(Packet::icmp_error(pod_ip, host_ip, kUnreachable, kPortUnreachable,
                                     Packet::tcp({host_ip, 40000}, {pod_ip, 8080}))),
         kTcRedirect,
         to_host(Packet::icmp_error(service_ip, host_ip, kUnreachable, kPortUnreachable,
                                    Packet::tcp({host_ip, 40000}, {service_ip, 80}))),
         {BPFNET_CTR_ICMP_ERROR_TO_LAN}},
        {"tc pod: pod's port unreachable about a recorded flow's datagram: the service IP's",
         Program::TcPod,
         from_pod(Packet::icmp_error(pod_ip, host_ip, kUnreachable, kPortUnreachable,
                                     Packet::udp({host_ip, flow_host_port}, {pod_ip, flow_pod_port}))),
         kTcRedirect,
         to_host(Packet::icmp_error(service_ip, host_ip, kUnreachable, kPortUnreachable,
                                    Packet::udp({host_ip, flow_host_port}, {service_ip, flow_pod_port}))),
         {BPFNET_CTR_ICMP_ERROR_TO_LAN}},
        {"tc pod: pod's ICMP error about a port nothing steered: dropped, unmatched (the pod IP never leaks)",
         Program::TcPod,
         from_pod(Packet::icmp_error(pod_ip, host_ip, kUnreachable, kPortUnreachable,
                                     Packet::udp({host_ip, 40000}, {pod_ip, 7777}))),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_ICMP_UNMATCHED}},
        {"tc pod: pod's port unreachable addressed to the service IP: dropped, a hairpin (no neighbour miss)",
         Program::TcPod,
         from_pod(Packet::icmp_error(pod_ip, service_ip, kUnreachable, kPortUnreachable,
                                     Packet::udp({host_ip, 40000}, {pod_ip, 69}))),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_HAIRPIN}},
        {"tc pod: pod's echo request to a LAN host: dropped (protocol)",
         Program::TcPod,
         from_pod(Packet::icmp_echo(pod_ip, host_ip)),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_BACKEND_PROTOCOL}},
    };
}

INSTANTIATE_TEST_SUITE_P(Lan, DatapathTable, ::testing::ValuesIn(rows()), row_test_name);

} // namespace
} // namespace bpfnet::test
