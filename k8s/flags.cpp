#include "k8s/flags.hpp"

#include "core/addresses.hpp"
#include "core/node_rules.hpp"
#include "k8s/service_model.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace bpfnet::k8s {

namespace {

// The spellings core/node.hpp defines (the config file takes the same words).
template <typename T>
CLI::IsMember one_of() {
    std::vector<std::string> names;
    for (std::string_view name : spellings<T>())
        names.emplace_back(name);
    return CLI::IsMember(names);
}

// A namespace name: an RFC 1123 DNS label (lower-case alphanumerics and '-', at most 63, alphanumeric ends).
bool namespace_name(const std::string &name) {
    auto alnum = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    };
    return !name.empty() && name.size() <= 63 && alnum(name.front()) && alnum(name.back()) &&
           std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-'; });
}

// How the flags spell the node settings core/node_rules.hpp checks.
constexpr NodeFieldNames kFlagNames{.interface = "--interface",
                                    .subnet = "--subnet",
                                    .subnet_v6 = "--subnet-v6",
                                    .pin_root = "--pin-root",
                                    .control_socket = "--control-socket",
                                    .dhcp_relays = "--dhcp-relays",
                                    .router_advertisements = "--router-advertisements",
                                    .ra_interval = "--ra-interval"};

[[noreturn]] void refuse(NodeField field, const std::string &detail) {
    throw std::invalid_argument(std::string(kFlagNames[field]) + ": " + detail);
}

// --subnet or --subnet-v6, the provisioning subnet of `family`; its limits are checked with the rest.
Prefix read_subnet(const std::string &text, IpFamily family) {
    const ParsedPrefix subnet = parse_subnet(text, family, kFlagNames);
    if (!subnet.prefix)
        refuse(family == IpFamily::V4 ? NodeField::Subnet : NodeField::SubnetV6, subnet.error);
    return *subnet.prefix;
}

// The node's datapath settings from the flags, checked by the rules the config file obeys too.
NodeSettings node_settings(const KubernetesFlags &k) {
    NodeSettings node;
    node.interface = k.interface;
    node.interface_macs = k.interface_macs;
    if (!k.subnet.empty()) {
        const Prefix subnet = read_subnet(k.subnet, IpFamily::V4);
        node.subnet_be = v4_of(subnet.network);
        node.prefix_len = subnet.prefix_len;
    }
    if (!k.subnet_v6.empty()) {
        const Prefix subnet = read_subnet(k.subnet_v6, IpFamily::V6);
        node.subnet6 = subnet.network;
        node.prefix6_len = subnet.prefix_len;
    }
    node.router_advertisements = k.router_advertisements;
    node.ra_interval = std::chrono::seconds(k.ra_interval_s);
    for (const std::string &text : k.dhcp_relays) {
        std::string error;
        const std::optional<bpfnet_ip> relay = parse_relay(text, error);
        if (!relay)
            refuse(NodeField::DhcpRelays, error);
        node.dhcp_relays.push_back(*relay);
    }
    // The spellings were checked by CLI11 (one_of) against the same names the config file takes.
    node.xdp_mode = parse_xdp_mode(k.xdp_mode).value_or(XdpMode::Auto);
    node.tc_attach = parse_tc_attach(k.tc_attach).value_or(TcAttach::Auto);
    node.redirect_peer = parse_redirect_peer(k.redirect_peer).value_or(RedirectPeer::Auto);
    node.pin_root = without_trailing_slashes(k.pin_root);
    node.control_socket = k.control_socket;
    // A node that only serves shared addresses (virtual media without a provisioning network) has no LAN.
    if (const auto problem = validate_node_settings(node, kFlagNames, k.shared_addresses.empty()))
        refuse(problem->field, problem->detail);
    return node;
}

// --allowed-cidrs: the ranges service IPs must lie in, each of a family the LAN has.
std::vector<SourceRange> allowed_cidrs(const std::vector<std::string> &texts, const NodeSettings &node) {
    std::vector<SourceRange> cidrs;
    for (const std::string &text : texts) {
        const ParsedPrefix cidr = parse_prefix(text);
        if (!cidr.prefix)
            throw std::invalid_argument("--allowed-cidrs: " + cidr.error);
        const bool v4 = cidr.prefix->family() == IpFamily::V4;
        if (v4 ? node.prefix_len == 0 : node.prefix6_len == 0)
            throw std::invalid_argument("--allowed-cidrs: " + text + " is " + to_string(cidr.prefix->family()) +
                                        ", and there is no " + (v4 ? "--subnet" : "--subnet-v6"));
        cidrs.push_back(*cidr.prefix);
    }
    return cidrs;
}

// --shared-addresses: each "node" or an IP outside the provisioning subnets and the allowed CIDRs (an address
// there could be claimed as a Service's service IP, which bpfnet owns), once each.
std::vector<SharedChoice> shared_addresses(const std::vector<std::string> &texts, const NodeSettings &node,
                                           const std::vector<SourceRange> &allowed) {
    if (texts.size() > BPFNET_MAX_SHARED_ADDRESSES)
        throw std::invalid_argument("--shared-addresses: at most " + std::to_string(BPFNET_MAX_SHARED_ADDRESSES) +
                                    " addresses, got " + std::to_string(texts.size()));
    std::vector<SharedChoice> choices;
    for (const std::string &text : texts) {
        const ParsedSharedChoice parsed = parse_shared_choice(text, node);
        if (!parsed.choice)
            throw std::invalid_argument("--shared-addresses: " + parsed.error);
        const SharedChoice &choice = *parsed.choice;
        if (std::find(choices.begin(), choices.end(), choice) != choices.end())
            throw std::invalid_argument("--shared-addresses: lists " + describe(choice) + " twice");
        for (const SourceRange &cidr : allowed)
            if (choice && cidr.contains(*choice))
                throw std::invalid_argument("--shared-addresses: " + text + " is inside --allowed-cidrs " +
                                            format_prefix(cidr) +
                                            ", where a Service could claim it as its service IP (answering ARP for "
                                            "it); a shared address stays the node's");
        choices.push_back(choice);
    }
    return choices;
}

} // namespace

void add_kubernetes_flags(CLI::App &app, KubernetesFlags &k) {
    const char *group = "Kubernetes mode (docs/kubernetes.md)";
    app.add_flag("--kubernetes", k.enabled, "take the services from the Kubernetes API instead of --config")
        ->group(group);
    app.add_option("--kubeconfig", k.kubeconfig, "kubeconfig to use (default: the in-cluster service account)")
        ->group(group);
    app.add_option("--interface", k.interface,
                   "the provisioning NIC: its name, or MAC addresses (comma-separated) of which this node has one")
        ->group(group);
    app.add_option("--subnet", k.subnet, "the IPv4 provisioning subnet, CIDR (e.g. 172.22.0.0/24)")->group(group);
    app.add_option("--subnet-v6", k.subnet_v6,
                   "the IPv6 provisioning subnet, CIDR (e.g. fd00:1::/64); with --subnet for a dual-stack LAN, "
                   "alone for an IPv6-only one")
        ->group(group);
    app.add_option("--node-name", k.node_name, "this node's name (default: $NODE_NAME)")->group(group);
    app.add_option("--allowed-namespaces", k.allowed_namespaces, "namespaces whose Services may be served")
        ->delimiter(',')
        ->group(group);
    app.add_option("--lease-namespace", k.lease_namespace,
                   "namespace of the Leases that decide which node answers for each service IP (default: "
                   "$POD_NAMESPACE, the loader's own, else bpfnet-system)")
        ->group(group);
    app.add_option("--allowed-cidrs", k.allowed_cidrs, "CIDRs service IPs must lie in")->delimiter(',')->group(group);
    app.add_option("--shared-addresses", k.shared_addresses,
                   "addresses of the nodes' that Services may share (annotation bpfnet.io/shared-address): the "
                   "control plane's VIP, or \"node\" for each node's own address; bpfnet steers their listed ports "
                   "without owning them")
        ->delimiter(',')
        ->group(group);
    app.add_option("--shared-ports", k.shared_ports,
                   "the ports a Service may list on a shared address (its other ports stay the node's): Ironic's "
                   "image server, virtual media over TLS and API by default")
        ->delimiter(',')
        ->check(CLI::Range(1u, 65535u))
        ->capture_default_str()
        ->group(group);
    app.add_option("--dhcp-relays", k.dhcp_relays,
                   "DHCP relay agents on the provisioning LAN whose giaddr (IPv6: Relay-Forward) is accepted "
                   "(default: none)")
        ->delimiter(',')
        ->group(group);
    app.add_option("--lease-duration", k.lease_duration_s, "seconds a Lease holder's claim lasts without renewal")
        ->check(CLI::Range(2u, 3600u))
        ->capture_default_str()
        ->group(group);
    app.add_option("--event-refresh", k.event_refresh_s,
                   "seconds after which a standing Warning Event (a refused Service) is reported again; the API "
                   "server deletes Events an hour after their last write")
        ->check(CLI::Range(1u, 3000u))
        ->capture_default_str()
        ->group(group);
    app.add_option("--watch-idle-timeout", k.watch_idle_timeout_s,
                   "seconds a watch may send nothing, not even a bookmark, before it is taken as stalled and "
                   "restarted")
        ->check(CLI::Range(2u, 600u))
        ->capture_default_str()
        ->group(group);
    app.add_option("--upgrade-grace", k.upgrade_grace_s,
                   "seconds the datapath keeps answering for the service IPs after the loader stops (SIGTERM), "
                   "for the next loader of a rolling update to take over; 0: stop at the heartbeat timeout")
        ->check(CLI::Range(0u, 600u))
        ->capture_default_str()
        ->group(group);
    app.add_flag("--router-advertisements", k.router_advertisements,
                 "send router advertisements for --subnet-v6 (managed: hosts ask DHCPv6) while this node owns an "
                 "IPv6 service address, as dnsmasq's enable-ra does on a host network")
        ->group(group);
    // Its range is a node rule (core/node_rules.hpp), checked in the config file's words.
    app.add_option("--ra-interval", k.ra_interval_s, "seconds between router advertisements (4..1800)")
        ->capture_default_str()
        ->group(group);
    app.add_option("--xdp-mode", k.xdp_mode, "auto (native where the driver supports it), native or generic")
        ->check(one_of<XdpMode>())
        ->capture_default_str()
        ->group(group);
    app.add_option("--tc-attach", k.tc_attach, "auto (tcx links where the kernel has them), tcx or clsact")
        ->check(one_of<TcAttach>())
        ->capture_default_str()
        ->group(group);
    app.add_option("--redirect-peer", k.redirect_peer, "auto (where the kernel has it) or off")
        ->check(one_of<RedirectPeer>())
        ->capture_default_str()
        ->group(group);
    app.add_option("--pin-root", k.pin_root, "bpffs directory for the pins")->capture_default_str()->group(group);
    app.add_option("--control-socket", k.control_socket,
                   "where bpfnetctl reaches the loader (default: /run/bpfnet/<interface>.sock)")
        ->group(group);
}

std::pair<NodeSettings, KubernetesOptions> kubernetes_settings(KubernetesFlags k) {
    if (k.interface.empty())
        throw std::invalid_argument("--interface is required with --kubernetes");
    if (k.node_name.empty())
        if (const char *env = std::getenv("NODE_NAME"))
            k.node_name = env;
    if (k.node_name.empty())
        throw std::invalid_argument("--node-name (or NODE_NAME) is required with --kubernetes");
    if (k.allowed_namespaces.empty())
        throw std::invalid_argument("--allowed-namespaces is required with --kubernetes: name the Ironic namespace");
    if (k.allowed_cidrs.empty() && (!k.subnet.empty() || !k.subnet_v6.empty() || k.shared_addresses.empty()))
        throw std::invalid_argument("--allowed-cidrs is required with --kubernetes: the range of service IPs");
    if (k.lease_namespace.empty())
        if (const char *env = std::getenv("POD_NAMESPACE"))
            k.lease_namespace = env;
    if (k.lease_namespace.empty())
        k.lease_namespace = "bpfnet-system";
    if (!namespace_name(k.lease_namespace))
        throw std::invalid_argument("--lease-namespace: '" + k.lease_namespace +
                                    "' is not a namespace name (lower-case letters, digits and '-')");
    const NodeSettings node = node_settings(k);

    KubernetesOptions options;
    options.kubeconfig = k.kubeconfig;
    options.node_name = k.node_name;
    options.lease_namespace = k.lease_namespace;
    options.lease_duration = std::chrono::seconds(k.lease_duration_s);
    options.event_refresh = std::chrono::seconds(k.event_refresh_s);
    options.watch_idle_timeout = std::chrono::seconds(k.watch_idle_timeout_s);
    options.upgrade_grace = std::chrono::seconds(k.upgrade_grace_s);
    options.policy.allowed_namespaces = k.allowed_namespaces;
    options.policy.ipv4_lan = node.prefix_len != 0;
    options.policy.ipv6_lan = node.prefix6_len != 0;
    options.policy.allowed_cidrs = allowed_cidrs(k.allowed_cidrs, node);
    options.policy.shared_addresses = shared_addresses(k.shared_addresses, node, options.policy.allowed_cidrs);
    for (unsigned port : k.shared_ports)
        options.policy.shared_ports.push_back(static_cast<uint16_t>(port));
    return {node, options};
}

} // namespace bpfnet::k8s
