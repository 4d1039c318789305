// Pure model of bpfnet's Kubernetes mode: turns API objects (nlohmann::json, exactly as the API returns
// them) into the datapath's desired state. No I/O, no logging, nothing here throws: malformed or unexpected
// JSON makes a Service Refused (with a reason for its Event) and makes an EndpointSlice contribute nothing.
#pragma once

#include "core/addresses.hpp"
#include "core/desired_state.hpp"
#include "core/node.hpp"
#include "core/shared_addresses.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bpfnet::k8s {

// Which Services of our class are honoured.
struct ServicePolicy {
    std::vector<std::string> allowed_namespaces; // exact names; empty = none allowed
    std::vector<SourceRange> allowed_cidrs;      // either family; empty = none
    std::string load_balancer_class = "bpfnet.io/provisioning";
    // The families of this node's provisioning LAN (--subnet, --subnet-v6): an address of another family
    // could never be reached from the LAN, so a Service asking for one is refused.
    bool ipv4_lan = true;
    bool ipv6_lan = true;
    // The shared addresses Services may name (--shared-addresses): the addresses of the nodes' that bpfnet
    // steers a Service's ports on without owning them (the control plane's VIP; nullopt: each node's own).
    std::vector<SharedChoice> shared_addresses;
    // The ports a Service may list on a shared address (--shared-ports; Ironic's by default): the rest of the
    // address's ports are the node's (the API server's 6443, kubelet's, SSH), whoever writes the Service.
    std::vector<uint16_t> shared_ports;
};

// The service addresses: one, or one per family comma-separated ("172.22.0.2,fd00:1::2").
inline constexpr const char *kServiceIpAnnotation = "bpfnet.io/ip";
// How the LAN's packets reach the Service's pod: "auto" (the default) or "route" (always through the node's
// routing; BackendLocation, docs/design.md "Pod delivery").
inline constexpr const char *kPodDeliveryAnnotation = "bpfnet.io/pod-delivery";
// A shared address instead of a service IP (docs/design.md, "Shared addresses"): one of the loader's
// --shared-addresses, an IP or "node".
inline constexpr const char *kSharedAddressAnnotation = "bpfnet.io/shared-address";
// The older form of spec.loadBalancerSourceRanges, still honoured by cloud load balancers.
inline constexpr const char *kSourceRangesAnnotation = "service.beta.kubernetes.io/load-balancer-source-ranges";

struct ServiceDecision {
    enum class Outcome { Ignored, Refused, Accepted };
    Outcome outcome = Outcome::Ignored;
    std::string reason;                 // Refused: human-readable, for the Event; empty otherwise
    std::string namespace_;             // metadata.namespace (empty when it could not be read)
    std::string name;                   // metadata.name (empty when it could not be read)
    std::vector<bpfnet_ip> service_ips; // Accepted only: one or two, one per family, IPv4 first
    std::vector<PortRule> ports;        // Accepted only, in spec order; a named targetPort leaves target_port 0
    // Accepted only: the named targetPort of each port ("" for a number), or empty when no port names one.
    std::vector<std::string> target_port_names;
    // Accepted only: spec.loadBalancerSourceRanges (else its annotation), either family, host bits cleared,
    // sorted, without duplicates; empty: every source. Each service address takes the ranges of its family.
    std::vector<SourceRange> source_ranges;
    PodDelivery delivery = PodDelivery::Auto; // Accepted only: annotation bpfnet.io/pod-delivery
    // Accepted only: on a shared address (annotation bpfnet.io/shared-address), the VIP in service_ips, or the
    // node's own address (node_address: service_ips empty, each node serves its own).
    bool shared = false;
    bool node_address = false;

    std::string key() const { return namespace_ + "/" + name; }
};

// Ignored: spec.type is not "LoadBalancer" (absent counts as ClusterIP) or spec.loadBalancerClass is not
//   policy.load_balancer_class (absent counts as the cluster default) -- not ours, no Event.
// Refused: the object, metadata or spec is not an object, or type/class are not strings (we cannot tell it is
//   not ours); no IP (annotation bpfnet.io/ip, else spec.loadBalancerIP); an address that is neither a strict
//   dotted quad nor an IPv6 unicast address, or two of one family; an address of a family spec.ipFamilies
//   (when set) does not list, or of a family this node's LAN does not have (ServicePolicy); ipFamilyPolicy
//   RequireDualStack with one address; namespace not allowed; an address outside every allowed CIDR of its
//   family; spec.loadBalancerSourceRanges (or, when it is empty, its annotation) not a list of CIDRs (host bits
//   are cleared, as Kubernetes does), a range of a family the Service has no address of, no range of a family
//   it has one of, or more than kMaxSourceRangesPerIp of one family (what the datapath holds per IP); no
//   ports; a port that is not an object, protocol other than TCP/UDP (absent = TCP), port not an integer
//   1..65535, targetPort neither an integer 1..65535 nor a port name (IANA_SVC_NAME, as the API validates
//   container port names), DHCP port that is not UDP 67 or without an IPv4 address, DHCPv6 port that is not
//   UDP 547 or without an IPv6 address, TFTP port that is not UDP, duplicate (protocol, port) or (protocol,
//   targetPort); annotation bpfnet.io/pod-delivery neither "auto" nor "route". A named targetPort (the Ironic
//   Standalone Operator's Services use them) is resolved per endpoint: resolve_target_ports.
// A Service on a shared address (annotation bpfnet.io/shared-address) is refused when it also names a service
//   IP (bpfnet.io/ip, spec.loadBalancerIP); when the address is not one of policy.shared_addresses; when
//   spec.ipFamilies does not list its family ("node": IPv4) or ipFamilyPolicy is RequireDualStack; when it has
//   source ranges (not applied on a shared address); when a port is not plain (the relays and TFTP need the
//   provisioning LAN) or not one of policy.shared_ports. The namespace rule and the port rules above hold for it too;
//   allowed CIDRs do not.
// Port kind: dhcp when appProtocol is "dhcp", or (appProtocol absent or neither dhcp nor tftp) the name is
//   "dhcp"; likewise tftp; else plain.
ServiceDecision decide_service(const nlohmann::json &service, const ServicePolicy &policy);

// An Accepted Service, as check_shared_ips needs it.
struct AcceptedService {
    std::string namespace_;
    std::string name;
    std::vector<bpfnet_ip> service_ips;
    std::vector<PortRule> ports;
    std::vector<std::string> target_port_names; // as in ServiceDecision
    std::vector<SourceRange> source_ranges;     // as in ServiceDecision
    PodDelivery delivery = PodDelivery::Auto;   // as in ServiceDecision
    bool shared = false;                        // as in ServiceDecision
    bool node_address = false;                  // as in ServiceDecision (the controller fills service_ips)

    std::string key() const { return namespace_ + "/" + name; }
};
AcceptedService accepted(const ServiceDecision &decision);

// The Service as one of its addresses serves it: the ports of that family (and their target port names). DHCP
// is relayed on the IPv4 address, DHCPv6 on the IPv6 one; every other port is listed on both.
AcceptedService ports_for_family(const AcceptedService &service, IpFamily family);
// The source ranges of one family.
std::vector<SourceRange> ranges_of_family(const std::vector<SourceRange> &ranges, IpFamily family);

// One overlapping pair: `refused` (the later by namespace/name order) must not get the IP; `other` keeps it
// as far as this pair is concerned.
struct Conflict {
    std::string refused;                                // "namespace/name"
    std::string other;                                  // "namespace/name"
    bpfnet_ip service_ip{};                             // the (first) address both use
    std::vector<std::pair<Protocol, uint16_t>> overlap; // the shared (protocol, port)s, sorted
    std::string reason;                                 // for the refused Service's Event; names the other Service

    bool operator==(const Conflict &) const = default;
};

// Services may share an IP only with disjoint (protocol, port) sets and disjoint (protocol, targetPort) sets
// (replies are mapped back to the service port by the pod's port), with the same source ranges of that IP's
// family (the datapath filters sources per IP), and as the same kind of address (a shared address beside a
// service IP is refused: the one is the node's, the other bpfnet's). Reports every overlapping pair, ordered by
// (refused, other); `overlap` lists the shared ports, or the shared target ports when only those overlap.
// Input order does not matter.
std::vector<Conflict> check_shared_ips(const std::vector<AcceptedService> &services);

// A Service the datapath's tables have no room for, and why.
struct OverCapacity {
    std::string key; // namespace/name
    std::string reason;
};
// The Services past what the datapath's tables hold (BPFNET_MAX_SERVICE_IPS service IPs,
// BPFNET_MAX_SHARED_ADDRESSES shared addresses, BPFNET_MAX_SERVICES listed ports of all of them), taking `services` in
// the order given (the caller's: the oldest first): a Service whose addresses or ports would not fit is refused whole,
// and the later ones are still taken where they fit. An address several Services share counts once.
std::vector<OverCapacity> over_capacity(const std::vector<AcceptedService> &services);

// A port of an EndpointSlice: the Service port's name (empty for a single unnamed port) and the number the
// endpoints of that slice take it on, named target ports resolved by the EndpointSlice controller.
struct EndpointPort {
    std::string name;
    Protocol protocol = Protocol::Tcp;
    uint16_t port = 0;

    bool operator==(const EndpointPort &) const = default;
};

struct ReadyEndpoint {
    bpfnet_ip ip{};
    std::string node_name;           // empty when the endpoint has no nodeName
    bool on_this_node = false;       // this node is eligible (a ready endpoint runs on it)
    bool terminating = false;        // no endpoint is ready: this one still serves while its pod terminates
    std::vector<EndpointPort> ports; // the ports of the slice this endpoint is in

    bool operator==(const ReadyEndpoint &) const = default;
};

// endpoint_slices_for_service: a JSON array of EndpointSlices (discovery.k8s.io/v1) or an EndpointSliceList
// ({"items": [...]}). Only slices of the family's addressType ("IPv4", "IPv6") count: a dual-stack Service has
// one of each, and each of its addresses is steered to the pod's address of the same family. An endpoint is ready when
// conditions.ready is true or absent (the API's "nil means ready"); when no endpoint is ready, those still serving
// while they terminate (serving and terminating true, as during a rolling update) are used instead, as MetalLB's
// EndpointCanServe does, so traffic stays on the old pod until a new one is ready. Every valid address of the
// family of such an endpoint is a candidate. When one runs on node_name, the lowest such address is chosen
// (on_this_node = true); otherwise the lowest on any node. Ties: lowest nodeName. nullopt when none can serve.
std::optional<ReadyEndpoint> ready_endpoint(const nlohmann::json &endpoint_slices_for_service,
                                            const std::string &node_name, IpFamily family = IpFamily::V4);

// The Service's ports with every named targetPort resolved from the endpoint's slice: the slice port with
// the Service port's name and protocol gives the number. `missing` names the ports the slice does not
// resolve (the pod has no container port of that name, or no endpoint is known); those are left out of
// `ports`. A Service without named target ports resolves to its own ports.
struct ResolvedPorts {
    std::vector<PortRule> ports;
    std::vector<std::string> missing; // "spec.ports[1] (api): targetPort \"ironic-api\""
};
ResolvedPorts resolve_target_ports(const AcceptedService &service, const std::optional<ReadyEndpoint> &endpoint);

// A service or endpoint address: a strict dotted quad, or IPv6 text (not IPv4-mapped); nullopt otherwise.
std::optional<bpfnet_ip> parse_address(const std::string &text);

// Strict dotted quad ("10.0.0.1": four decimal octets, no leading zeros) to network byte order.
std::optional<uint32_t> parse_ipv4_strict(const std::string &text);

} // namespace bpfnet::k8s
