// `bpfnetctl status`: one look at the datapath of an interface: what is attached, whether this node
// answers for its service IPs, where the backend is, whether the loader is alive, and who else claims the
// service IPs. Read from the kernel into StatusView; rendered from StatusView only (unit-tested).
#pragma once

#include "cli/hooks.hpp"
#include "cli/output.hpp"
#include "maps/datapath_maps.hpp"

#include <optional>
#include <string>
#include <vector>

namespace bpfnet::cli {

struct ServiceIpStatus {
    bpfnet_ip ip{};
    bool active = false; // this node owns it (the ACTIVE flag): it answers ARP (NDP) while the heartbeat is fresh
    // IPv6: the NIC is a member of the address's solicited-node group (the loader joins it, so that hosts
    // behind an MLD-snooping switch reach the NIC with their solicitations); nullopt for IPv4.
    std::optional<bool> solicited_node_member;
};

// A shared address whose listed ports the datapath steers (BPFNET_SERVICE_SHARED): the node's, not ours.
struct SharedPortStatus {
    std::string protocol;
    uint16_t port = 0;
    bpfnet_ip backend_ip{}; // zero: no backend on this node, nor on one named by via_node
    uint16_t backend_port = 0;
    bpfnet_ip via_node{}; // the pod's node the packets are handed to (BPFNET_SERVICE_VIA_NODE); zero: here
};
struct SharedAddressStatus {
    bpfnet_ip ip{};
    std::string held_on; // the interface that holds it here; empty when none does (the loader is behind)
    std::vector<SharedPortStatus> ports;
};

struct BackendStatus {
    bpfnet_ip ip{};
    __u32 ifindex = 0;
    std::string veth; // empty when the ifindex has no name here any more
    HookState pod_hook;
    std::string delivery; // how packets reach the pod: "redirect_peer", "veth" or "route" (the backends entry's)
};

struct ConflictStatus {
    bpfnet_ip service_ip{};
    Mac mac{};
    double age_seconds = 0;
};

enum class HeartbeatState { Fresh, Stale, Never };

struct StatusView {
    std::string interface;
    __u32 ifindex = 0;
    Mac nic_mac{};
    std::optional<bool> carrier; // up with carrier (the kernel's word); nullopt when the link cannot be read
    __be32 subnet_be = 0;
    __be32 subnet_mask_be = 0;
    __be32 dhcp_service_ip_be = 0;   // 0: no service IP relays DHCP
    bpfnet_ip dhcp6_service_ip{};    // zero: no DHCPv6 relay
    bool dhcp6_group_member = false; // the NIC is in ff02::1:2 (where DHCPv6 clients send)
    bpfnet_ip subnet6{};
    uint8_t subnet6_prefix_len = 0; // 0: no IPv6 subnet
    // The IPv4 subnet, or "none" (an IPv6-only LAN's iface entry matches no IPv4 address).
    std::string subnet_text() const;
    bool has_ipv4_subnet() const { return subnet_text() != "none"; }
    HookState xdp;
    HookState tc_ingress;
    bool redirect_peer = false; // the loader delivers into pods with bpf_redirect_peer (probed at its start)
    std::optional<double> heartbeat_age_seconds; // nullopt: never written
    double heartbeat_timeout_seconds = 0;
    std::vector<ServiceIpStatus> service_ips;
    std::vector<SharedAddressStatus> shared_addresses;
    std::vector<BackendStatus> backends;
    __u64 conflicts_seen = 0; // the arp_conflict counter (ARP and NDP claims alike)
    std::vector<ConflictStatus> conflicts;
    // The loader on the control socket as it describes itself (core/control_socket.hpp, kDescribeCommand): its
    // mode and how it chose the NIC. nullopt: none answered, and loader_problem says why.
    std::optional<Json> loader;
    std::string loader_problem;

    HeartbeatState heartbeat() const;
    // What the datapath does for ARP: active and a live loader.
    bool answering_arp(const ServiceIpStatus &ip) const { return ip.active && heartbeat() == HeartbeatState::Fresh; }
};

StatusView read_status(const DatapathMaps &maps, const std::string &interface, const std::string &pin_dir);
void print_status_table(std::ostream &out, const StatusView &status);
Json status_json(const StatusView &status);

Json hook_json(const HookState &hook);
Json tc_hook_json(const HookState &hook);

} // namespace bpfnet::cli
