// The known state ("world") that packet tests and per-path benchmarks start from: one service IP with a
// backend pod on this node, one known host and one recorded flow.
#pragma once

#include "core/monotonic_clock.hpp"
#include "maps/datapath_maps.hpp"
#include "packet.hpp"

#include <string>

namespace bpfnet::test {

// The world every case starts from (addresses from 198.18.0.0/15, the benchmarking range).
namespace world {
inline const Mac nic_mac = mac("02:00:00:00:00:01");
inline const Mac host_mac = mac("02:00:00:00:00:10"); // a bare-metal host the datapath already knows
inline const Mac pod_mac = mac("02:00:00:00:01:02");
inline const Mac veth_mac = mac("02:00:00:00:01:01"); // host side of the pod's veth
inline const Mac broadcast = mac("ff:ff:ff:ff:ff:ff");
inline const Mac zero_mac = mac("00:00:00:00:00:00");
inline const std::string service_ip = "198.18.0.2";
inline const std::string host_ip = "198.18.0.10";
inline const std::string unknown_host_ip = "198.18.0.11"; // on the LAN, never seen
inline const std::string other_lan_ip = "198.18.0.50";    // on the LAN, not a service IP
inline const std::string outside_ip = "198.19.0.1";       // not on the provisioning subnet
inline const std::string pod_ip = "198.18.100.2";
inline const std::string other_pod_ip = "198.18.100.3";
inline constexpr int nic_ifindex = 10;
inline constexpr int veth_ifindex = 20;
inline constexpr uint16_t pod_mtu = 1450; // a VXLAN pod network: TFTP blocks of at most 1450 - 32 = 1418 fit
// A flow the reverse path recorded earlier: the pod's UDP port 33333 talks to host port 40000.
inline constexpr uint16_t flow_pod_port = 33333;
inline constexpr uint16_t flow_host_port = 40000;
// A PXE client on the LAN, and a DHCP relay agent (another router) on the LAN.
inline const Mac client_mac = mac("52:54:00:12:34:56");
inline const std::string client_ip = "198.18.0.150";
inline const std::string lan_relay_ip = host_ip; // a configured relay (dhcp_relays); its MAC is known: host_mac
inline const std::string broadcast_ip = "255.255.255.255";
inline constexpr uint8_t dhcp_max_hops = 4;
// The same world over IPv6 (addresses from 2001:2::/48, IPv6's benchmarking range, RFC 5180): the service
// address and the pod's, the known host and one never seen, with the same MACs and ports.
inline const std::string subnet6 = "2001:2::";
inline constexpr uint8_t subnet6_prefix_len = 64;
inline const std::string service_ip6 = "2001:2::2";
inline const std::string host_ip6 = "2001:2::10";
inline const std::string unknown_host_ip6 = "2001:2::11";
inline const std::string outside_ip6 = "2001:2:1::1"; // not on the provisioning subnet
inline const std::string pod_ip6 = "2001:2:0:100::2";
// The DHCPv6 relay: the NIC's link-local address (replies to clients leave from it), a client's link-local
// address, and a configured relay agent on the LAN (its MAC is host_mac).
inline const std::string nic_link_local = "fe80::1";
inline const std::string client_link_local = "fe80::5054:ff:fe12:3456";
inline const std::string lan_relay_ip6 = "2001:2::20";
} // namespace world

// Fills freshly created maps with the world (both families).
void fill_world(DatapathMaps &maps);
// The IPv6 part, over an IPv4 world.
void fill_world6(DatapathMaps &maps);
// What the loader derives from its desired state (core/desired_state.cpp), derived from the maps: every
// services entry's pod link and source-ranges flag, the iface entry's service IP marks. Called after a change
// to backends, to service IPs or to their ranges.
void derive_loader_fields(DatapathMaps &maps);
// A listed TCP port of a shared address (BPFNET_SERVICE_SHARED, as desired_state() writes one the node
// holds): its services and backend_ports entries flagged, the address marked and counted in iface.
void add_shared_port(DatapathMaps &maps, const std::string &shared_ip, uint16_t port, uint16_t target_port,
                     const std::string &pod_ip);
// The same port when its pod runs on another node (BPFNET_SERVICE_VIA_NODE, as desired_state() writes it on
// the node holding the address): its services entry names that node, no reverse entry (the pod's node has it).
void add_shared_port_via_node(DatapathMaps &maps, const std::string &shared_ip, uint16_t port, uint16_t target_port,
                              const std::string &pod_ip, const std::string &node_ip);

} // namespace bpfnet::test
