// What the maps should hold, computed from the mode-neutral desired state (the node's settings, each service
// IP's ports and the pod behind them, wherever it came from), and the smallest set of map writes that gets
// the live maps there. Pure functions: unit-tested without a kernel.
#pragma once

#include "core/addresses.hpp"
#include "core/netlink.hpp"
#include "core/node.hpp"
#include "maps/bpfnet_maps.h"
#include "maps/datapath_maps.hpp"

#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace bpfnet {

// Map keys are plain structs with explicit padding: ordering them by their bytes is exact.
template <typename T>
struct BytewiseLess {
    bool operator()(const T &a, const T &b) const { return std::memcmp(&a, &b, sizeof(T)) < 0; }
};
template <typename T>
bool bytewise_equal(const T &a, const T &b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <typename K, typename V>
using Table = std::map<K, V, BytewiseLess<K>>;

// Where the backend pod is attached on this node, as found in the kernel, and how its packets reach it.
struct BackendLocation {
    int ifindex = 0; // host side of the pod's veth (its pod hook goes there, whatever the delivery)
    MacAddress pod_mac{};
    MacAddress veth_mac{}; // the host side of the pod's veth
    bool redirect_peer = false;
    bool route = false; // delivered through the node's routing (bpf_fib_lookup) instead of into the veth
    unsigned mtu = 0;   // of the host side of the veth, which a CNI sets to the pod's MTU
    // How the veth was found: "named" (given), "route" (the route to the pod names it: a routed CNI) or
    // "namespace" (the veth whose peer holds the pod's address, behind route_device: a bridge, cilium_host).
    std::string found_by;
    std::string route_device;

    bool operator==(const BackendLocation &) const = default;
};

struct DesiredState {
    Table<bpfnet_ip, bpfnet_service_ip> service_ips;
    Table<bpfnet_service_key, bpfnet_service> services;
    Table<bpfnet_backend_port_key, bpfnet_backend_port> backend_ports;
    Table<bpfnet_ip, bpfnet_backend> backends;
    Table<bpfnet_source_range_key, bpfnet_source_range> source_ranges;
    // The shared addresses whose ports are listed (ServiceSpec::shared): marked like the service IPs, counted
    // in the iface entry; they have no service_ips entry.
    std::set<bpfnet_ip, BytewiseLess<bpfnet_ip>> shared_addresses;
};

// Source ranges one service IP takes (the datapath's table holds BPFNET_MAX_SOURCE_RANGES in all).
inline constexpr size_t kMaxSourceRangesPerIp = 63;

// A range of sources: a prefix of either family (core/addresses.hpp).
using SourceRange = Prefix;

// One service IP's listed ports and, when this node serves it, the backend pod that gets its traffic.
struct ServiceSpec {
    bpfnet_ip service_ip{};
    std::vector<PortRule> ports;
    bpfnet_ip backend_ip{};                  // of the service IP's family; zero: no backend here
    std::optional<BackendLocation> location; // set exactly when backend_ip is
    // The sources that may reach the listed ports; empty: every source (specs sharing an IP: the union).
    // Only the ranges of the service IP's family apply: a list with none of them admits no source.
    std::vector<SourceRange> source_ranges;
    // service_ip is a shared address (docs/design.md, "Shared addresses"): an address of the node's that
    // bpfnet does not own (the control plane's VIP, the node's own address). Its ARP and NDP, its claim and
    // every port not listed stay the node's: no service_ips entry, no announcement, its listed ports flagged
    // BPFNET_SERVICE_SHARED. The modes give such a spec while the node holds the address, and while the pod is
    // here: another node holding it may hand its ports on (via_node there).
    bool shared = false;
    // A shared address's pod on another node (shared; location unset, backend_ip the pod's): that node's
    // address on the NIC's network. The listed ports' packets are handed to it (BPFNET_SERVICE_VIA_NODE), whose
    // own spec of the address (the pod there) takes them in.
    std::optional<bpfnet_ip> via_node{};

    bool operator==(const ServiceSpec &) const = default;
};

// A service IP is active (answers ARP) exactly when a backend is located on this node; without one the
// ports stay listed with no backend, so their traffic is dropped and counted as drop_no_backend. Several
// specs may share a service IP (disjoint ports); it is active when any of them has a backend.
DesiredState desired_state(const std::vector<ServiceSpec> &specs);
// What of a desired state the datapath's tables cannot hold, in words ("300 service IPs: the datapath holds
// 256"); nullopt when it fits. The runtime checks it before it writes anything: a state too large changes
// nothing (the modes keep their states within it: Kubernetes mode refuses the Services past it).
std::optional<std::string> capacity_problem(const DesiredState &desired);
// What the relays need besides the node's settings: the service IP broadcast DHCP is relayed for (0: none),
// the IPv6 service address DHCPv6 to ff02::1:2 is relayed for (zero: none), and the NIC's link-local address
// DHCPv6 replies to clients leave from (zero: the NIC has none, they leave from the service address).
struct RelayAddresses {
    __be32 dhcp_service_ip_be = 0;
    bpfnet_ip dhcp6_service_ip{};
    bpfnet_ip nic_link_local{};
};
bpfnet_iface iface_entry(const NodeSettings &node, int nic_ifindex, const MacAddress &nic_mac,
                         const RelayAddresses &relay);
// Marks every service IP and shared address of the desired state in the iface entry
// (bpfnet_iface.service_ip_marks), and counts the shared addresses (bpfnet_iface.shared_addresses).
void mark_service_ips(bpfnet_iface &iface, const DesiredState &desired);
// The service IP of the first spec with a DHCP port, preferring one this node serves; 0 when none lists one.
__be32 dhcp_service_ip(const std::vector<ServiceSpec> &specs);
// The same for DHCPv6: the IPv6 service address of the first spec with a dhcpv6 port; zero when none.
bpfnet_ip dhcp6_service_ip(const std::vector<ServiceSpec> &specs);
// Both relays' service addresses (nic_link_local left zero: a fact of the NIC, not of the specs).
RelayAddresses relay_addresses(const std::vector<ServiceSpec> &specs);

template <typename K, typename V>
struct TableDiff {
    std::vector<std::pair<K, V>> upserts; // new or changed
    std::vector<K> removals;
    bool empty() const { return upserts.empty() && removals.empty(); }
};

template <typename K, typename V>
TableDiff<K, V> diff_table(const std::vector<std::pair<K, V>> &current, const Table<K, V> &desired) {
    TableDiff<K, V> diff;
    Table<K, V> live(current.begin(), current.end());
    for (const auto &[key, value] : desired) {
        auto it = live.find(key);
        if (it == live.end() || !bytewise_equal(it->second, value))
            diff.upserts.emplace_back(key, value);
    }
    for (const auto &[key, value] : live)
        if (!desired.contains(key))
            diff.removals.push_back(key);
    return diff;
}

struct ReconcileReport {
    size_t upserts = 0;
    size_t removals = 0;
    std::vector<bpfnet_ip> activated;     // service IPs that became active: announce them
    std::vector<bpfnet_ip> deactivated;   // service IPs that stopped being active: announce them no more
    std::vector<bpfnet_backend> departed; // backends no longer here: their veth hook can go
};

// Brings the maps to the desired state with the fewest writes. New state is written before anything
// points at it (backends, then ports, then service IPs) and removed in the reverse order, so a packet
// never finds a reference to an entry that is not there yet.
ReconcileReport reconcile(DatapathMaps &maps, const DesiredState &desired);

} // namespace bpfnet
