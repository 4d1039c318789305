// The node Leases: each loader with shared addresses enabled publishes its node's own address on the NIC (the
// one core/shared_addresses.hpp's node_address() gives) in a Lease of its own, "bpfnet-node-NODE" in the Lease
// namespace. A node holding a shared VIP whose Ironic pod runs on another node hands the VIP's listed ports to
// that node's published address (ServiceSpec::via_node); a node with no such Lease runs no loader that would
// take them in, and is handed nothing. The Lease decides nothing (no expiry, never claimed by another node): it
// is where nodes find each other on the NIC's network, which Node objects do not say (their InternalIP may be
// on another network) and which needs no access to Nodes. Its loader renews it once a Lease duration; the
// holders trust it while they have seen it renewed lately (KubernetesLoader::node_lease_expiry).
// Pure functions over the objects as the API returns them; reading one never throws.
#pragma once

#include "k8s/client.hpp"
#include "k8s/lease.hpp"
#include "maps/layout.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace bpfnet::k8s {

inline constexpr const char *kNodeLeasePrefix = "bpfnet-node-";
// The node's own IPv4 address on the NIC, dotted; absent: the node has none (no address is handed there).
inline constexpr const char *kNodeAddressAnnotation = "bpfnet.io/node-address";

// "bpfnet-node-worker-0" for node worker-0 (never a service IP's Lease name: lease_service_ip() refuses it).
std::string node_lease_name(const std::string &node);

// The address a node Lease publishes, nullopt when it publishes none (or one that is not an IPv4 unicast
// address). Its holder must be the node its name says: a Lease of another shape is not a node's word.
std::optional<bpfnet_ip> published_node_address(const LeaseState &lease);

// The node Lease with `address` (nullopt: none), written by `node` now: the body for POST (when
// !current.exists) or PUT. Everything else in current.object is kept.
nlohmann::json node_lease(const LeaseState &current, const std::string &namespace_, const std::string &node,
                          const std::optional<bpfnet_ip> &address, Clock::time_point now);

} // namespace bpfnet::k8s
