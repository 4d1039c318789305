#include "k8s/service_model.hpp"

#include "core/service_rules.hpp"
#include "k8s/json_fields.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <exception>
#include <set>
#include <tuple>

namespace bpfnet::k8s {

using json = nlohmann::json;

namespace {

// An integer JSON number in [lo, hi]; nullopt for other types (including 80.0) and out-of-range values.
std::optional<int64_t> integer_in(const json &value, int64_t lo, int64_t hi) {
    if (value.is_number_unsigned()) {
        const auto v = value.get<uint64_t>();
        if (v > static_cast<uint64_t>(hi) || static_cast<int64_t>(v) < lo)
            return std::nullopt;
        return static_cast<int64_t>(v);
    }
    if (value.is_number_integer()) {
        const auto v = value.get<int64_t>();
        if (v < lo || v > hi)
            return std::nullopt;
        return v;
    }
    return std::nullopt;
}

// The items of a comma-separated annotation, blanks around them trimmed, empty ones left out.
std::vector<std::string> comma_separated(const std::string &list) {
    std::vector<std::string> items;
    for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        std::string item = list.substr(start, comma - start);
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        if (!item.empty())
            items.push_back(std::move(item));
        start = comma + 1;
    }
    return items;
}

bool has_family(const std::vector<bpfnet_ip> &ips, IpFamily family) {
    return std::any_of(ips.begin(), ips.end(), [&](const bpfnet_ip &ip) { return family_of(ip) == family; });
}

// spec.loadBalancerSourceRanges, else (when absent or empty) the annotation's comma-separated list, as
// Kubernetes reads them (host bits cleared); an error for the Event, or nullopt with `out` filled.
std::optional<std::string> read_source_ranges(const json &spec, const json *annotations, std::vector<SourceRange> &out,
                                              std::string &where) {
    std::vector<std::string> texts;
    where = "spec.loadBalancerSourceRanges";
    if (const json *ranges = non_null_member(spec, "loadBalancerSourceRanges")) {
        if (!ranges->is_array())
            return where + " is not a list";
        for (const json &r : *ranges) {
            if (!r.is_string())
                return where + " has an entry that is not a string";
            texts.push_back(r.get<std::string>());
        }
    }
    if (texts.empty() && annotations) {
        if (const json *a = non_null_member(*annotations, kSourceRangesAnnotation)) {
            where = std::string("annotation ") + kSourceRangesAnnotation;
            if (!a->is_string())
                return where + " is not a string";
            texts = comma_separated(a->get<std::string>());
        }
    }
    for (const std::string &text : texts) {
        const ParsedPrefix range = parse_prefix(text, HostBits::Cleared);
        if (!range.prefix)
            return where + ": " + range.error;
        out.push_back(*range.prefix);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return std::nullopt;
}

// Each service address takes the ranges of its family: a list must cover every family the Service has (an
// IPv4-only list would otherwise close the IPv6 address to every host, or, read the other way, leave it
// open) and no other (a range nothing can match is a mistake worth hearing about).
std::optional<std::string> source_range_families_problem(const std::vector<SourceRange> &ranges,
                                                         const std::vector<bpfnet_ip> &service_ips,
                                                         const std::string &where) {
    if (ranges.empty())
        return std::nullopt;
    for (const SourceRange &range : ranges) {
        const IpFamily family = family_of(range.network);
        if (!has_family(service_ips, family))
            return where + ": " + format_prefix(range) + " is " + to_string(family) + " but the Service has no " +
                   to_string(family) + " address";
    }
    for (const bpfnet_ip &ip : service_ips) {
        const IpFamily family = family_of(ip);
        const size_t count = ranges_of_family(ranges, family).size();
        if (count == 0)
            return where + " lists no " + to_string(family) + " range for service IP " + format_ip(ip) + ": add the " +
                   to_string(family) + " ranges that may reach it (" + (family == IpFamily::V4 ? "0.0.0.0/0" : "::/0") +
                   ": every host)";
        if (count > kMaxSourceRangesPerIp)
            return where + " has " + std::to_string(count) + " " + to_string(family) +
                   " ranges; bpfnet takes at most " + std::to_string(kMaxSourceRangesPerIp) + " per service IP";
    }
    return std::nullopt;
}

std::string proto_name(Protocol p) {
    return p == Protocol::Udp ? "UDP" : "TCP";
}

ServiceDecision refuse(ServiceDecision d, std::string reason) {
    d.outcome = ServiceDecision::Outcome::Refused;
    d.reason = std::move(reason);
    d.service_ips.clear();
    d.ports.clear();
    d.source_ranges.clear();
    return d;
}

std::optional<std::string> port_kind(const json &p, const std::string &label, PortRule &out);

// A container port's name as the API validates it (IANA_SVC_NAME): 1-15 characters of a-z, 0-9 and '-', at
// least one letter, no '-' at either end and no "--".
bool is_port_name(const std::string &name) {
    if (name.empty() || name.size() > 15 || name.front() == '-' || name.back() == '-' ||
        name.find("--") != std::string::npos)
        return false;
    bool letter = false;
    for (char c : name) {
        if (c >= 'a' && c <= 'z')
            letter = true;
        else if (!(c >= '0' && c <= '9') && c != '-')
            return false;
    }
    return letter;
}

// Parses spec.ports[i]; returns the reason on refusal. A named targetPort leaves out.target_port 0 and its
// name in target_name.
std::optional<std::string> parse_port(const json &p, size_t i, PortRule &out, std::string &target_name) {
    const std::string where = "spec.ports[" + std::to_string(i) + "]";
    if (!p.is_object())
        return where + " is not an object";

    if (const json *n = non_null_member(p, "name")) {
        if (!n->is_string())
            return where + ".name is not a string";
        out.name = n->get<std::string>();
    }
    const std::string label = out.name.empty() ? where : where + " (" + out.name + ")";

    std::string proto = "TCP"; // the API's default
    if (const json *pr = non_null_member(p, "protocol")) {
        if (!pr->is_string())
            return label + ": protocol is not a string";
        proto = pr->get<std::string>();
    }
    if (proto == "TCP")
        out.protocol = Protocol::Tcp;
    else if (proto == "UDP")
        out.protocol = Protocol::Udp;
    else
        return label + ": protocol " + proto + " is not supported (only TCP and UDP)";

    const json *port = non_null_member(p, "port");
    if (!port)
        return label + ": port is missing";
    auto pv = integer_in(*port, 1, 65535);
    if (!pv)
        return label + ": port must be an integer between 1 and 65535";
    out.port = static_cast<uint16_t>(*pv);

    out.target_port = out.port;
    if (const json *tp = non_null_member(p, "targetPort")) {
        if (tp->is_string()) {
            // A port of the pod's containers, by name: its number comes with the EndpointSlice.
            const std::string name = tp->get<std::string>();
            if (!is_port_name(name))
                return label + ": targetPort \"" + name +
                       "\" is not a port name (1-15 lowercase letters, digits and inner single '-', a letter among "
                       "them)";
            out.target_port = 0;
            target_name = name;
            return port_kind(p, label, out);
        }
        auto tv = integer_in(*tp, 1, 65535);
        if (!tv)
            return label + ": targetPort must be an integer between 1 and 65535";
        out.target_port = static_cast<uint16_t>(*tv);
    }
    return port_kind(p, label, out);
}

// The port's kind, from appProtocol or its name; returns the reason on refusal.
std::optional<std::string> port_kind(const json &p, const std::string &label, PortRule &out) {
    std::string app;
    if (const json *ap = non_null_member(p, "appProtocol")) {
        if (!ap->is_string())
            return label + ": appProtocol is not a string";
        app = ap->get<std::string>();
    }
    // The kind's word (core/node.hpp, from BPFNET_PORT_KINDS) as appProtocol, else as the port's name.
    const auto special = [](const std::string &word) -> std::optional<PortKind> {
        auto kind = parse_port_kind(word);
        return kind && *kind != PortKind::Plain ? kind : std::nullopt;
    };
    out.kind = special(app).value_or(special(out.name).value_or(PortKind::Plain));
    return std::nullopt;
}

// The annotation bpfnet.io/pod-delivery, when present: "auto" or "route".
std::optional<std::string> read_pod_delivery(const json *annotations, PodDelivery &out) {
    const json *a = annotations ? non_null_member(*annotations, kPodDeliveryAnnotation) : nullptr;
    if (!a)
        return std::nullopt;
    const std::optional<PodDelivery> delivery =
        a->is_string() ? parse_pod_delivery(a->get<std::string>()) : std::nullopt;
    if (!delivery)
        return std::string("annotation ") + kPodDeliveryAnnotation + " must be \"auto\" or \"route\"; got " + a->dump();
    out = *delivery;
    return std::nullopt;
}

// The service addresses: the annotation's list (one address per family), else spec.loadBalancerIP. IPv4
// first. An error for the Event, or nullopt with `out` filled.
std::optional<std::string> read_service_ips(const json &spec, const json *annotations, std::vector<bpfnet_ip> &out) {
    std::vector<std::string> texts;
    std::string source;
    if (const json *a = annotations ? non_null_member(*annotations, kServiceIpAnnotation) : nullptr) {
        source = std::string("annotation ") + kServiceIpAnnotation;
        if (!a->is_string())
            return source + " is not a string";
        texts = comma_separated(a->get<std::string>());
    } else if (const json *lb = non_null_member(spec, "loadBalancerIP")) {
        source = "spec.loadBalancerIP";
        if (!lb->is_string())
            return source + " is not a string";
        if (!lb->get<std::string>().empty())
            texts.push_back(lb->get<std::string>());
    }
    if (texts.empty())
        return std::string("no service IP: set the annotation ") + kServiceIpAnnotation +
               " (one address, or an IPv4 and an IPv6 address comma-separated) or spec.loadBalancerIP";
    for (const std::string &text : texts) {
        const auto ip = parse_address(text);
        if (!ip)
            return source + " \"" + text + "\" is not a valid IPv4 or IPv6 address";
        const auto unusable = is_v4(*ip) ? non_unicast_reason(v4_of(*ip)) : non_unicast_reason6(*ip);
        if (unusable)
            return source + " \"" + text + "\" cannot be a service IP: it is " + *unusable;
        if (has_family(out, family_of(*ip)))
            return source + " lists two " + to_string(family_of(*ip)) + " addresses: one address per family";
        out.push_back(*ip);
    }
    std::sort(out.begin(), out.end(), [](const bpfnet_ip &a, const bpfnet_ip &b) { return is_v4(a) && !is_v4(b); });
    return std::nullopt;
}

// The addresses against the Service's families (spec.ipFamilies and ipFamilyPolicy, when the API server set
// them) and this node's LAN.
std::optional<std::string> families_problem(const json &spec, const std::vector<bpfnet_ip> &ips,
                                            const ServicePolicy &policy) {
    if (const json *families = non_null_member(spec, "ipFamilies")) {
        std::vector<std::string> listed;
        if (families->is_array())
            for (const json &f : *families)
                if (f.is_string())
                    listed.push_back(f.get<std::string>());
        if (!families->is_array() || listed.size() != families->size())
            return "spec.ipFamilies is not a list of IPv4 and IPv6";
        for (const bpfnet_ip &ip : ips)
            if (std::find(listed.begin(), listed.end(), to_string(family_of(ip))) == listed.end())
                return "service IP " + format_ip(ip) + " is " + to_string(family_of(ip)) +
                       ", and spec.ipFamilies does not list it: a Service with an address of each family needs "
                       "ipFamilyPolicy PreferDualStack (or RequireDualStack) and ipFamilies [IPv4, IPv6]";
    }
    if (const json *policy_field = non_null_member(spec, "ipFamilyPolicy")) {
        if (!policy_field->is_string())
            return "spec.ipFamilyPolicy is not a string";
        if (policy_field->get<std::string>() == "RequireDualStack" && ips.size() < 2)
            return std::string("spec.ipFamilyPolicy is RequireDualStack: the annotation ") + kServiceIpAnnotation +
                   " needs an IPv4 and an IPv6 address, comma-separated";
    }
    for (const bpfnet_ip &ip : ips) {
        const bool v4 = is_v4(ip);
        if (v4 ? !policy.ipv4_lan : !policy.ipv6_lan)
            return "service IP " + format_ip(ip) + " is " + to_string(family_of(ip)) + ", and the loader has no " +
                   to_string(family_of(ip)) + " provisioning subnet (" + (v4 ? "--subnet" : "--subnet-v6") + ")";
    }
    return std::nullopt;
}

// The annotation bpfnet.io/shared-address: one of the loader's --shared-addresses, an IP or "node", and no
// service IP beside it. Fills `ip` (the VIP) or `node_address`; returns the reason on refusal.
std::optional<std::string> read_shared_address(const json &spec, const json &annotations, const ServicePolicy &policy,
                                               std::vector<bpfnet_ip> &ip, bool &node_address) {
    const json &a = *non_null_member(annotations, kSharedAddressAnnotation);
    const std::string source = std::string("annotation ") + kSharedAddressAnnotation;
    if (!a.is_string())
        return source + " is not a string";
    if (non_null_member(annotations, kServiceIpAnnotation))
        return source + " and annotation " + kServiceIpAnnotation +
               " are both set: a Service on a shared address has no service IP of its own";
    if (const json *lb = non_null_member(spec, "loadBalancerIP");
        lb && !(lb->is_string() && lb->get<std::string>().empty()))
        return source + " and spec.loadBalancerIP are both set: a Service on a shared address has no service IP of "
                        "its own";
    const std::string text = a.get<std::string>();
    SharedChoice choice;
    if (text != "node") {
        const auto parsed = parse_address(text);
        if (!parsed)
            return source + " \"" + text + "\" is neither \"node\" nor an IPv4 or IPv6 address";
        choice = *parsed;
    }
    if (std::find(policy.shared_addresses.begin(), policy.shared_addresses.end(), choice) ==
        policy.shared_addresses.end()) {
        std::string list;
        for (const SharedChoice &c : policy.shared_addresses)
            list += (list.empty() ? "" : ", ") + describe(c);
        return source + " \"" + text + "\" is not one of the addresses the loaders share (--shared-addresses: " +
               (list.empty() ? "none given" : list) + ")";
    }
    node_address = !choice;
    if (choice)
        ip.push_back(*choice);
    return std::nullopt;
}

// A shared address's family against spec.ipFamilies and ipFamilyPolicy ("node" is the node's IPv4 address).
std::optional<std::string> shared_family_problem(const json &spec, IpFamily family) {
    if (const json *families = non_null_member(spec, "ipFamilies")) {
        bool listed = false;
        if (families->is_array())
            for (const json &f : *families)
                listed = listed || (f.is_string() && f.get<std::string>() == to_string(family));
        if (!listed)
            return std::string("the shared address is ") + to_string(family) + ", and spec.ipFamilies does not list it";
    }
    if (const json *policy_field = non_null_member(spec, "ipFamilyPolicy");
        policy_field && policy_field->is_string() && policy_field->get<std::string>() == "RequireDualStack")
        return std::string("spec.ipFamilyPolicy is RequireDualStack, and a Service on a shared address has one "
                           "address");
    return std::nullopt;
}

// A shared address carries plain ports (the relays and TFTP need the provisioning LAN), and only those the
// loaders share: every other port of the address is the node's.
std::optional<std::string> shared_ports_problem(const std::vector<PortRule> &rules, const ServicePolicy &policy) {
    for (size_t i = 0; i < rules.size(); ++i) {
        const std::string label =
            "spec.ports[" + std::to_string(i) + "]" + (rules[i].name.empty() ? "" : " (" + rules[i].name + ")");
        if (rules[i].kind != PortKind::Plain)
            return label + ": " + to_string(rules[i].kind) +
                   " needs the provisioning LAN; a shared address carries plain ports (put it on a Service with a "
                   "service IP)";
        if (std::find(policy.shared_ports.begin(), policy.shared_ports.end(), rules[i].port) ==
            policy.shared_ports.end()) {
            std::string list;
            for (uint16_t port : policy.shared_ports)
                list += (list.empty() ? "" : ", ") + std::to_string(port);
            return label + ": port " + std::to_string(rules[i].port) +
                   " is not one the loaders steer on a shared address (--shared-ports: " +
                   (list.empty() ? "none" : list) + "); the address's other ports are the node's";
        }
    }
    return std::nullopt;
}

// A relayed port is one family's: DHCP is relayed for the IPv4 address, DHCPv6 for the IPv6 one.
std::optional<std::string> relay_families_problem(const std::vector<PortRule> &rules,
                                                  const std::vector<bpfnet_ip> &ips) {
    for (size_t i = 0; i < rules.size(); ++i) {
        const std::string label =
            "spec.ports[" + std::to_string(i) + "]" + (rules[i].name.empty() ? "" : " (" + rules[i].name + ")");
        if (rules[i].kind == PortKind::Dhcp && !has_family(ips, IpFamily::V4))
            return label + ": dhcp relays DHCPv4 for an IPv4 service address, and the Service has none (an IPv6 "
                           "LAN uses dhcpv6 on UDP 547)";
        if (rules[i].kind == PortKind::Dhcp6 && !has_family(ips, IpFamily::V6))
            return label + ": dhcpv6 relays DHCPv6 for an IPv6 service address, and the Service has none";
    }
    return std::nullopt;
}

ServiceDecision decide(const json &service, const ServicePolicy &policy) {
    ServiceDecision d;
    if (!service.is_object())
        return refuse(d, "the Service is not a JSON object");
    const json *meta = non_null_member(service, "metadata");
    if (meta && !meta->is_object())
        return refuse(d, "metadata is not an object");
    if (meta) {
        if (const json *ns = non_null_member(*meta, "namespace"); ns && ns->is_string())
            d.namespace_ = ns->get<std::string>();
        if (const json *n = non_null_member(*meta, "name"); n && n->is_string())
            d.name = n->get<std::string>();
    }
    const json *spec = non_null_member(service, "spec");
    if (!spec)
        return d; // no spec: ClusterIP by default, not ours
    if (!spec->is_object())
        return refuse(d, "spec is not an object");

    const json *type = non_null_member(*spec, "type");
    if (type && !type->is_string())
        return refuse(d, "spec.type is not a string");
    if (!type || type->get<std::string>() != "LoadBalancer")
        return d;
    const json *cls = non_null_member(*spec, "loadBalancerClass");
    if (cls && !cls->is_string())
        return refuse(d, "spec.loadBalancerClass is not a string");
    if (!cls || cls->get<std::string>() != policy.load_balancer_class)
        return d;

    // Ours from here on.
    if (!meta)
        return refuse(d, "metadata is missing");
    if (const json *n = non_null_member(*meta, "name"); !n || !n->is_string() || d.name.empty())
        return refuse(d, "metadata.name is missing or not a string");
    if (const json *ns = non_null_member(*meta, "namespace"); !ns || !ns->is_string() || d.namespace_.empty())
        return refuse(d, "metadata.namespace is missing or not a string");

    const json *annotations = non_null_member(*meta, "annotations");
    if (annotations && !annotations->is_object())
        return refuse(d, "metadata.annotations is not an object");
    std::vector<bpfnet_ip> ips;
    const bool shared = annotations && non_null_member(*annotations, kSharedAddressAnnotation);
    if (shared) {
        if (auto why = read_shared_address(*spec, *annotations, policy, ips, d.node_address))
            return refuse(d, *why);
        if (auto why = shared_family_problem(*spec, d.node_address ? IpFamily::V4 : family_of(ips.front())))
            return refuse(d, *why);
    } else {
        if (auto why = read_service_ips(*spec, annotations, ips))
            return refuse(d, *why);
        if (auto why = families_problem(*spec, ips, policy))
            return refuse(d, *why);
    }

    if (std::find(policy.allowed_namespaces.begin(), policy.allowed_namespaces.end(), d.namespace_) ==
        policy.allowed_namespaces.end())
        return refuse(d,
                      "namespace " + d.namespace_ + " is not allowed to use the class " + policy.load_balancer_class);
    // A shared address was allowed by name (--shared-addresses); the CIDRs are for the addresses bpfnet owns.
    for (const bpfnet_ip &ip : ips) {
        const bool in_cidr = std::any_of(policy.allowed_cidrs.begin(), policy.allowed_cidrs.end(),
                                         [&](const SourceRange &cidr) { return cidr.contains(ip); });
        if (!shared && !in_cidr)
            return refuse(d, "service IP " + format_ip(ip) + " is outside every allowed CIDR");
    }

    // A source restriction is a security setting: one that cannot be read refuses the Service rather than
    // serve the IP to every host on the LAN.
    std::string ranges_field;
    if (auto why = read_source_ranges(*spec, annotations, d.source_ranges, ranges_field))
        return refuse(d, *why);
    if (shared && !d.source_ranges.empty())
        return refuse(d, ranges_field + " is set, and source ranges are not applied on a shared address (its other "
                                        "ports are the node's; restrict its clients with the node's firewall)");
    if (auto why = source_range_families_problem(d.source_ranges, ips, ranges_field))
        return refuse(d, *why);

    const json *ports = non_null_member(*spec, "ports");
    if (!ports)
        return refuse(d, "spec.ports is missing");
    if (!ports->is_array())
        return refuse(d, "spec.ports is not a list");
    if (ports->empty())
        return refuse(d, "spec.ports is empty");
    std::vector<PortRule> rules;
    std::vector<std::string> target_names;
    for (size_t i = 0; i < ports->size(); ++i) {
        PortRule rule;
        std::string target_name;
        if (auto why = parse_port((*ports)[i], i, rule, target_name))
            return refuse(d, *why);
        rules.push_back(std::move(rule));
        target_names.push_back(std::move(target_name));
    }
    // Two ports naming one container port would share a target port on every pod.
    for (size_t i = 0; i < rules.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (!target_names[i].empty() && target_names[i] == target_names[j] &&
                rules[i].protocol == rules[j].protocol)
                return refuse(d, "spec.ports[" + std::to_string(i) + "]: " + to_string(rules[i].protocol) +
                                     " targetPort \"" + target_names[i] + "\" is already used by spec.ports[" +
                                     std::to_string(j) + "]");
    // The rules the config file's ports obey too (core/service_rules.hpp), in the same words.
    auto entry = [](size_t i) {
        return "spec.ports[" + std::to_string(i) + "]";
    };
    if (auto problem = port_rules_problem(rules, entry)) {
        if (!problem->index)
            return refuse(d, "spec.ports: " + problem->detail);
        const PortRule &rule = rules[*problem->index];
        return refuse(d, entry(*problem->index) + (rule.name.empty() ? "" : " (" + rule.name + ")") + ": " +
                             problem->detail);
    }
    if (auto why = shared ? shared_ports_problem(rules, policy) : relay_families_problem(rules, ips))
        return refuse(d, *why);
    if (auto why = read_pod_delivery(annotations, d.delivery))
        return refuse(d, *why);

    d.outcome = ServiceDecision::Outcome::Accepted;
    d.shared = shared;
    d.service_ips = std::move(ips);
    d.ports = std::move(rules);
    if (std::any_of(target_names.begin(), target_names.end(), [](const std::string &n) { return !n.empty(); }))
        d.target_port_names = std::move(target_names);
    return d;
}

// How an endpoint may take traffic, best first. A pod being replaced keeps serving while it terminates
// (ready is false then, serving still true): it keeps the traffic until a new pod is ready, not a gap.
enum class Readiness { Ready, ServingWhileTerminating };

struct Candidate {
    Readiness readiness;
    bpfnet_ip ip; // ordered by value: the bytes are in network order
    std::string node;
    std::vector<EndpointPort> ports; // of the endpoint's slice
    bool operator<(const Candidate &o) const {
        return std::tie(readiness, ip, node) < std::tie(o.readiness, o.ip, o.node);
    }
};

// A condition of conditions: true / false, or `absent` when the field is missing; nullopt when the field is
// there but not a boolean (the endpoint is then not used).
std::optional<bool> condition(const json &conditions, const char *name, bool absent) {
    const json *value = non_null_member(conditions, name);
    if (!value)
        return absent;
    if (!value->is_boolean())
        return std::nullopt;
    return value->get<bool>();
}

// The EndpointSlice API: ready (nil means ready) is never true for a terminating endpoint; serving is ready
// regardless of terminating (nil means serving, as kube-proxy reads it); terminating nil means false.
std::optional<Readiness> readiness(const json &endpoint) {
    const json *conditions = non_null_member(endpoint, "conditions");
    if (!conditions)
        return Readiness::Ready;
    if (!conditions->is_object())
        return std::nullopt;
    auto ready = condition(*conditions, "ready", true);
    if (!ready)
        return std::nullopt;
    if (*ready)
        return Readiness::Ready;
    auto serving = condition(*conditions, "serving", true);
    auto terminating = condition(*conditions, "terminating", false);
    if (serving && terminating && *serving && *terminating)
        return Readiness::ServingWhileTerminating;
    return std::nullopt;
}

// A slice's ports: name absent means "" (a Service's single unnamed port), protocol absent means TCP; a port
// without a number ("all ports") or of another protocol resolves nothing.
std::vector<EndpointPort> slice_ports(const json &slice) {
    std::vector<EndpointPort> out;
    const json *ports = non_null_member(slice, "ports");
    if (!ports || !ports->is_array())
        return out;
    for (const json &p : *ports) {
        EndpointPort port;
        if (const json *n = non_null_member(p, "name")) {
            if (!n->is_string())
                continue;
            port.name = n->get<std::string>();
        }
        std::string proto = "TCP";
        if (const json *pr = non_null_member(p, "protocol")) {
            if (!pr->is_string())
                continue;
            proto = pr->get<std::string>();
        }
        if (proto != "TCP" && proto != "UDP")
            continue;
        port.protocol = proto == "TCP" ? Protocol::Tcp : Protocol::Udp;
        auto number = non_null_member(p, "port") ? integer_in(*non_null_member(p, "port"), 1, 65535) : std::nullopt;
        if (!number)
            continue;
        port.port = static_cast<uint16_t>(*number);
        out.push_back(std::move(port));
    }
    return out;
}

void collect_slice(const json &slice, IpFamily family, std::vector<Candidate> &out) {
    const json *type = non_null_member(slice, "addressType");
    if (!type || !type->is_string() || type->get<std::string>() != to_string(family))
        return;
    const std::vector<EndpointPort> ports = slice_ports(slice);
    const json *endpoints = non_null_member(slice, "endpoints");
    if (!endpoints || !endpoints->is_array())
        return;
    for (const json &ep : *endpoints) {
        if (!ep.is_object())
            continue;
        auto how = readiness(ep);
        if (!how)
            continue;
        std::string node;
        if (const json *n = non_null_member(ep, "nodeName")) {
            if (!n->is_string())
                continue;
            node = n->get<std::string>();
        }
        const json *addrs = non_null_member(ep, "addresses");
        if (!addrs || !addrs->is_array())
            continue;
        for (const json &a : *addrs) {
            if (!a.is_string())
                continue;
            if (auto ip = parse_address(a.get<std::string>()); ip && family_of(*ip) == family)
                out.push_back({*how, *ip, node, ports});
        }
    }
}

} // namespace

std::optional<bpfnet_ip> parse_address(const std::string &text) {
    if (text.find(':') == std::string::npos) {
        const auto v4 = parse_ipv4_strict(text);
        return v4 ? std::optional(ip_from_v4(*v4)) : std::nullopt;
    }
    const auto ip = parse_ip(text); // never IPv4-mapped: those are written as the IPv4 address they are
    return ip && !is_v4(*ip) ? ip : std::nullopt;
}

AcceptedService ports_for_family(const AcceptedService &service, IpFamily family) {
    AcceptedService out = service;
    out.ports.clear();
    out.target_port_names.clear();
    const PortKind other = family == IpFamily::V4 ? PortKind::Dhcp6 : PortKind::Dhcp;
    for (size_t i = 0; i < service.ports.size(); ++i) {
        if (service.ports[i].kind == other)
            continue;
        out.ports.push_back(service.ports[i]);
        if (i < service.target_port_names.size())
            out.target_port_names.push_back(service.target_port_names[i]);
    }
    return out;
}

std::vector<SourceRange> ranges_of_family(const std::vector<SourceRange> &ranges, IpFamily family) {
    std::vector<SourceRange> out;
    std::copy_if(ranges.begin(), ranges.end(), std::back_inserter(out),
                 [&](const SourceRange &range) { return family_of(range.network) == family; });
    return out;
}

std::optional<uint32_t> parse_ipv4_strict(const std::string &text) {
    uint32_t host = 0;
    size_t i = 0;
    for (int octet = 0; octet < 4; ++octet) {
        if (octet > 0) {
            if (i >= text.size() || text[i] != '.')
                return std::nullopt;
            ++i;
        }
        const size_t start = i;
        uint32_t v = 0;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - start < 3) {
            v = v * 10 + static_cast<uint32_t>(text[i] - '0');
            ++i;
        }
        const size_t len = i - start;
        if (len == 0 || v > 255 || (len > 1 && text[start] == '0'))
            return std::nullopt;
        host = (host << 8) | v;
    }
    if (i != text.size())
        return std::nullopt;
    return htonl(host);
}

ServiceDecision decide_service(const json &service, const ServicePolicy &policy) {
    try {
        return decide(service, policy);
    } catch (const std::exception &e) {
        return refuse(ServiceDecision{}, std::string("unexpected Service object: ") + e.what());
    }
}

AcceptedService accepted(const ServiceDecision &decision) {
    return AcceptedService{decision.namespace_,        decision.name,          decision.service_ips, decision.ports,
                           decision.target_port_names, decision.source_ranges, decision.delivery,    decision.shared,
                           decision.node_address};
}

std::vector<OverCapacity> over_capacity(const std::vector<AcceptedService> &services) {
    std::set<bpfnet_ip> ips, shared_ips;
    size_t ports = 0;
    std::vector<OverCapacity> refused;
    for (const AcceptedService &service : services) {
        std::set<bpfnet_ip> &taken = service.shared ? shared_ips : ips;
        const size_t limit = service.shared ? BPFNET_MAX_SHARED_ADDRESSES : BPFNET_MAX_SERVICE_IPS;
        std::set<bpfnet_ip> added;
        size_t listed = 0;
        for (const bpfnet_ip &ip : service.service_ips) {
            if (!taken.contains(ip))
                added.insert(ip);
            listed += ports_for_family(service, family_of(ip)).ports.size();
        }
        if (taken.size() + added.size() > limit) {
            refused.push_back({service.key(), "the datapath holds " + std::to_string(limit) +
                                                  (service.shared ? " shared addresses" : " service IPs") +
                                                  ", which older Services of its class take"});
            continue;
        }
        if (ports + listed > BPFNET_MAX_SERVICES) {
            refused.push_back({service.key(), "the datapath holds " + std::to_string(BPFNET_MAX_SERVICES) +
                                                  " listed ports of all service IPs, which older Services of its "
                                                  "class take"});
            continue;
        }
        taken.insert(added.begin(), added.end());
        ports += listed;
    }
    return refused;
}

std::vector<Conflict> check_shared_ips(const std::vector<AcceptedService> &services) {
    std::vector<const AcceptedService *> sorted;
    for (const auto &s : services)
        sorted.push_back(&s);
    std::stable_sort(sorted.begin(), sorted.end(), [](const AcceptedService *a, const AcceptedService *b) {
        return std::tie(a->namespace_, a->name) < std::tie(b->namespace_, b->name);
    });
    std::vector<Conflict> out;
    for (size_t j = 0; j < sorted.size(); ++j) {
        const AcceptedService &later = *sorted[j];
        std::set<std::pair<Protocol, uint16_t>> mine, my_targets;
        for (const auto &p : later.ports) {
            mine.insert({p.protocol, p.port});
            if (p.target_port != 0) // a named target port is known per endpoint only
                my_targets.insert({p.protocol, p.target_port});
        }
        for (size_t i = 0; i < j; ++i) {
            const AcceptedService &earlier = *sorted[i];
            std::vector<bpfnet_ip> shared_ips;
            for (const bpfnet_ip &ip : later.service_ips)
                if (std::find(earlier.service_ips.begin(), earlier.service_ips.end(), ip) != earlier.service_ips.end())
                    shared_ips.push_back(ip);
            if (shared_ips.empty())
                continue;
            if (earlier.shared != later.shared) {
                Conflict c;
                c.refused = later.key();
                c.other = earlier.key();
                c.service_ip = shared_ips.front();
                c.reason = format_ip(c.service_ip) + " is " + (later.shared ? "a service IP" : "a shared address") +
                           " of Service " + c.other +
                           "; an address is either bpfnet's (a service IP) or the node's "
                           "(a shared address), not both";
                out.push_back(std::move(c));
                continue;
            }
            const bool same_ranges = std::all_of(shared_ips.begin(), shared_ips.end(), [&](const bpfnet_ip &ip) {
                return ranges_of_family(earlier.source_ranges, family_of(ip)) ==
                       ranges_of_family(later.source_ranges, family_of(ip));
            });
            // Services sharing an IP are served by one node and usually one pod; the datapath maps a reply back
            // to its service port by the pod's port, so target ports must be disjoint too.
            std::set<std::pair<Protocol, uint16_t>> overlap, target_overlap;
            for (const auto &p : earlier.ports) {
                if (mine.count({p.protocol, p.port}))
                    overlap.insert({p.protocol, p.port});
                if (my_targets.count({p.protocol, p.target_port}))
                    target_overlap.insert({p.protocol, p.target_port});
            }
            bool on_targets = overlap.empty();
            if (on_targets && target_overlap.empty()) {
                if (!same_ranges) {
                    Conflict c;
                    c.refused = later.key();
                    c.other = earlier.key();
                    c.service_ip = shared_ips.front();
                    c.reason = "service IP " + format_ip(c.service_ip) + " is shared with Service " + c.other +
                               " with other loadBalancerSourceRanges; the datapath filters sources per IP, so "
                               "services sharing an IP need the same ranges";
                    out.push_back(std::move(c));
                }
                continue;
            }
            Conflict c;
            c.refused = later.key();
            c.other = earlier.key();
            c.service_ip = shared_ips.front();
            const auto &shared = on_targets ? target_overlap : overlap;
            c.overlap.assign(shared.begin(), shared.end());
            std::string list;
            for (const auto &[proto, port] : c.overlap)
                list += (list.empty() ? "" : ", ") + proto_name(proto) + " " + std::to_string(port);
            c.reason =
                "service IP " + format_ip(c.service_ip) + " is shared with Service " + c.other +
                (on_targets ? " with the same target ports (" + list +
                                  "); replies are mapped back by the pod's port, so services sharing an IP "
                                  "need disjoint ports and target ports"
                            : " on the same ports (" + list + "); services may share an IP only with disjoint ports");
            out.push_back(std::move(c));
        }
    }
    std::sort(out.begin(), out.end(), [](const Conflict &a, const Conflict &b) {
        return std::tie(a.refused, a.other) < std::tie(b.refused, b.other);
    });
    return out;
}

std::optional<ReadyEndpoint> ready_endpoint(const json &endpoint_slices_for_service, const std::string &node_name,
                                            IpFamily family) {
    std::vector<Candidate> all;
    try {
        const json *slices = &endpoint_slices_for_service;
        if (slices->is_object())
            slices = non_null_member(*slices, "items");
        if (!slices || !slices->is_array())
            return std::nullopt;
        for (const json &slice : *slices) {
            std::vector<Candidate> mine;
            try {
                collect_slice(slice, family, mine);
            } catch (const std::exception &) {
                continue; // a slice that cannot be read contributes nothing
            }
            all.insert(all.end(), mine.begin(), mine.end());
        }
    } catch (const std::exception &) {
        return std::nullopt;
    }
    if (all.empty())
        return std::nullopt;
    std::sort(all.begin(), all.end());
    // Only the best readiness present counts: a ready pod anywhere wins over a terminating one here.
    const Readiness best = all.front().readiness;
    std::erase_if(all, [&](const Candidate &c) { return c.readiness != best; });
    auto local = std::find_if(all.begin(), all.end(),
                              [&](const Candidate &c) { return !node_name.empty() && c.node == node_name; });
    const Candidate &pick = local != all.end() ? *local : all.front();
    return ReadyEndpoint{pick.ip, pick.node, local != all.end(), best == Readiness::ServingWhileTerminating,
                         pick.ports};
}

ResolvedPorts resolve_target_ports(const AcceptedService &service, const std::optional<ReadyEndpoint> &endpoint) {
    ResolvedPorts out;
    for (size_t i = 0; i < service.ports.size(); ++i) {
        PortRule rule = service.ports[i];
        const std::string target = i < service.target_port_names.size() ? service.target_port_names[i] : "";
        if (!target.empty()) {
            const EndpointPort *found = nullptr;
            if (endpoint)
                for (const EndpointPort &p : endpoint->ports)
                    if (p.name == rule.name && p.protocol == rule.protocol)
                        found = &p;
            if (!found) {
                out.missing.push_back("spec.ports[" + std::to_string(i) + "]" +
                                      (rule.name.empty() ? "" : " (" + rule.name + ")") + ": targetPort \"" + target +
                                      "\"");
                continue;
            }
            rule.target_port = found->port;
        }
        out.ports.push_back(std::move(rule));
    }
    return out;
}

} // namespace bpfnet::k8s
