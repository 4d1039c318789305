// The part of a Service's status this loader owns: status.loadBalancer.ingress, one entry per service address
// served (one per family). Compared by meaning (the API server adds ipMode: VIP; order does not matter),
// written as a merge patch of that field only (conditions and anything else in the status are left to their
// writers), and cleared when no node serves.
#pragma once

#include "maps/layout.hpp"

#include <nlohmann/json.hpp>

#include <vector>

namespace bpfnet::k8s {

// status.loadBalancer.ingress says exactly what this loader writes: one entry per address of service_ips and
// no other, each with no hostname and ipMode absent or "VIP" (the server's default since Kubernetes 1.30).
bool ingress_announces(const nlohmann::json &service, const std::vector<bpfnet_ip> &service_ips);

// The addresses the entries of status.loadBalancer.ingress name (those that are addresses), in their order.
std::vector<bpfnet_ip> ingress_addresses(const nlohmann::json &service);

// The merge patch (RFC 7386) for .../status that sets the ingress to the service addresses (one entry each,
// in order), and the one that removes the ingress (no node serves the Service). An empty list removes it.
nlohmann::json ingress_patch(const std::vector<bpfnet_ip> &service_ips);
nlohmann::json ingress_removal_patch();

} // namespace bpfnet::k8s
