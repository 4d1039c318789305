// Pure model of bpfnet's Kubernetes mode: turns API objects (nlohmann::json, exactly as the API returns
// them) into the datapath's desired state. No I/O, no logging, nothing here throws: malformed or unexpected
// JSON makes a Service Refused (with a reason for its Event) and makes an EndpointSlice contribute nothing.
#pragma once

#include "core/addresses.hpp"
#include "core/desired_state.hpp"
#include "core/node.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bpfnet::k8s {

// Which Services of our class are honoured.
struct ServicePolicy {
    std::vector<std::string> allowed_namespaces;             // exact names; empty = none allowed
    std::vector<std::pair<uint32_t, uint8_t>> allowed_cidrs; // (network_be, prefix 0..32); empty = none
    std::string load_balancer_class = "bpfnet.io/provisioning";
};

inline constexpr const char *kServiceIpAnnotation = "bpfnet.io/ip";
// The older form of spec.loadBalancerSourceRanges, still honoured by cloud load balancers.
inline constexpr const char *kSourceRangesAnnotation = "service.beta.kubernetes.io/load-balancer-source-ranges";

struct ServiceDecision {
    enum class Outcome { Ignored, Refused, Accepted };
    Outcome outcome = Outcome::Ignored;
    std::string reason;          // Refused: human-readable, for the Event; empty otherwise
    std::string namespace_;      // metadata.namespace (empty when it could not be read)
    std::string name;            // metadata.name (empty when it could not be read)
    uint32_t service_ip_be = 0;  // Accepted only
    std::vector<PortRule> ports; // Accepted only, in spec order; a named targetPort leaves target_port 0
    // Accepted only: the named targetPort of each port ("" for a number), or empty when no port names one.
    std::vector<std::string> target_port_names;
    // Accepted only: spec.loadBalancerSourceRanges (else its annotation) as (network_be, prefix), host bits
    // cleared, sorted, without duplicates; empty: every source.
    std::vector<std::pair<uint32_t, uint8_t>> source_ranges;

    std::string key() const { return namespace_ + "/" + name; }
};

// Ignored: spec.type is not "LoadBalancer" (absent counts as ClusterIP) or spec.loadBalancerClass is not
//   policy.load_balancer_class (absent counts as the cluster default) -- not ours, no Event.
// Refused: the object, metadata or spec is not an object, or type/class are not strings (we cannot tell it is
//   not ours); no IP (annotation bpfnet.io/ip, else spec.loadBalancerIP); IP not a strict dotted quad;
//   namespace not allowed; IP outside every allowed CIDR; spec.loadBalancerSourceRanges (or, when it is
//   empty, its annotation) not a list of IPv4 CIDRs (host bits are cleared, as Kubernetes does), or more than
//   kMaxSourceRangesPerIp (what the datapath holds per IP); no ports; a port that is not an object, protocol
//   other than TCP/UDP (absent = TCP), port not an integer 1..65535, targetPort neither an integer 1..65535
//   nor a port name (IANA_SVC_NAME, as the API validates container port names), DHCP port that is not UDP
//   67, TFTP port that is not UDP, duplicate (protocol, port) or (protocol, targetPort). A named targetPort
//   (the Ironic Standalone Operator's Services use them) is resolved per endpoint: resolve_target_ports.
// Port kind: dhcp when appProtocol is "dhcp", or (appProtocol absent or neither dhcp nor tftp) the name is
//   "dhcp"; likewise tftp; else plain.
ServiceDecision decide_service(const nlohmann::json &service, const ServicePolicy &policy);

// An Accepted Service, as check_shared_ips needs it.
struct AcceptedService {
    std::string namespace_;
    std::string name;
    uint32_t service_ip_be = 0;
    std::vector<PortRule> ports;
    std::vector<std::string> target_port_names;              // as in ServiceDecision
    std::vector<std::pair<uint32_t, uint8_t>> source_ranges; // as in ServiceDecision

    std::string key() const { return namespace_ + "/" + name; }
};
AcceptedService accepted(const ServiceDecision &decision);

// One overlapping pair: `refused` (the later by namespace/name order) must not get the IP; `other` keeps it
// as far as this pair is concerned.
struct Conflict {
    std::string refused; // "namespace/name"
    std::string other;   // "namespace/name"
    uint32_t service_ip_be = 0;
    std::vector<std::pair<Protocol, uint16_t>> overlap; // the shared (protocol, port)s, sorted
    std::string reason;                                 // for the refused Service's Event; names the other Service

    bool operator==(const Conflict &) const = default;
};

// Services may share an IP only with disjoint (protocol, port) sets and disjoint (protocol, targetPort) sets
// (replies are mapped back to the service port by the pod's port), and with the same source ranges (the
// datapath filters sources per IP). Reports every overlapping pair, ordered by
// (refused, other); `overlap` lists the shared ports, or the shared target ports when only those overlap.
// Input order does not matter.
std::vector<Conflict> check_shared_ips(const std::vector<AcceptedService> &services);

// A port of an EndpointSlice: the Service port's name (empty for a single unnamed port) and the number the
// endpoints of that slice take it on, named target ports resolved by the EndpointSlice controller.
struct EndpointPort {
    std::string name;
    Protocol protocol = Protocol::Tcp;
    uint16_t port = 0;

    bool operator==(const EndpointPort &) const = default;
};

struct ReadyEndpoint {
    uint32_t ip_be = 0;
    std::string node_name;           // empty when the endpoint has no nodeName
    bool on_this_node = false;       // this node is eligible (a ready endpoint runs on it)
    bool terminating = false;        // no endpoint is ready: this one still serves while its pod terminates
    std::vector<EndpointPort> ports; // the ports of the slice this endpoint is in

    bool operator==(const ReadyEndpoint &) const = default;
};

// endpoint_slices_for_service: a JSON array of EndpointSlices (discovery.k8s.io/v1) or an EndpointSliceList
// ({"items": [...]}). Only addressType "IPv4" slices count. An endpoint is ready when conditions.ready is
// true or absent (the API's "nil means ready"); when no endpoint is ready, those still serving while they
// terminate (serving and terminating true, as during a rolling update) are used instead, as MetalLB's
// EndpointCanServe does, so traffic stays on the old pod until a new one is ready. Every valid dotted-quad
// address of such an endpoint is a candidate. When one runs on node_name, the lowest such address is chosen
// (on_this_node = true); otherwise the lowest on any node. Ties: lowest nodeName. nullopt when none can serve.
std::optional<ReadyEndpoint> ready_endpoint(const nlohmann::json &endpoint_slices_for_service,
                                            const std::string &node_name);

// The Service's ports with every named targetPort resolved from the endpoint's slice: the slice port with
// the Service port's name and protocol gives the number. `missing` names the ports the slice does not
// resolve (the pod has no container port of that name, or no endpoint is known); those are left out of
// `ports`. A Service without named target ports resolves to its own ports.
struct ResolvedPorts {
    std::vector<PortRule> ports;
    std::vector<std::string> missing; // "spec.ports[1] (api): targetPort \"ironic-api\""
};
ResolvedPorts resolve_target_ports(const AcceptedService &service, const std::optional<ReadyEndpoint> &endpoint);

// "A.B.C.D/N" (strict dotted quad, N in 0..32, no host bits set) to (network_be, N); nullopt otherwise.
std::optional<std::pair<uint32_t, uint8_t>> parse_cidr(const std::string &text);

// Strict dotted quad ("10.0.0.1": four decimal octets, no leading zeros) to network byte order.
std::optional<uint32_t> parse_ipv4_strict(const std::string &text);

} // namespace bpfnet::k8s
