// The part of a Service's status this loader owns: status.loadBalancer.ingress, one entry with the service
// IP. Compared by meaning (the API server adds ipMode: VIP), written as a merge patch of that field only
// (conditions and anything else in the status are left to their writers), and cleared when no node serves.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>

namespace bpfnet::k8s {

// status.loadBalancer.ingress says exactly what this loader writes: one entry, ip = service_ip_be, no
// hostname, and ipMode absent or "VIP" (the server's default since Kubernetes 1.30).
bool ingress_announces(const nlohmann::json &service, uint32_t service_ip_be);

// Some entry of status.loadBalancer.ingress names service_ip_be (what a release must take back).
bool ingress_names(const nlohmann::json &service, uint32_t service_ip_be);

// The merge patch (RFC 7386) for .../status that sets the ingress to the service IP, and the one that
// removes the ingress (no node serves the Service).
nlohmann::json ingress_patch(uint32_t service_ip_be);
nlohmann::json ingress_removal_patch();

} // namespace bpfnet::k8s
