#include "k8s/flags.hpp"

#include "core/addresses.hpp"
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

} // namespace

void add_kubernetes_flags(CLI::App &app, KubernetesFlags &k) {
    const char *group = "Kubernetes mode (docs/kubernetes.md)";
    app.add_flag("--kubernetes", k.enabled, "take the services from the Kubernetes API instead of --config")
        ->group(group);
    app.add_option("--kubeconfig", k.kubeconfig, "kubeconfig to use (default: the in-cluster service account)")
        ->group(group);
    app.add_option("--interface", k.interface, "the provisioning NIC")->group(group);
    app.add_option("--subnet", k.subnet, "the provisioning subnet, CIDR (e.g. 172.22.0.0/24)")->group(group);
    app.add_option("--node-name", k.node_name, "this node's name (default: $NODE_NAME)")->group(group);
    app.add_option("--allowed-namespaces", k.allowed_namespaces, "namespaces whose Services may be served")
        ->delimiter(',')
        ->group(group);
    app.add_option("--lease-namespace", k.lease_namespace,
                   "namespace of the Leases that decide which node answers for each service IP (default: "
                   "$POD_NAMESPACE, the loader's own, else bpfnet-system)")
        ->group(group);
    app.add_option("--allowed-cidrs", k.allowed_cidrs, "CIDRs service IPs must lie in")->delimiter(',')->group(group);
    app.add_option("--dhcp-relays", k.dhcp_relays,
                   "DHCP relay agents on the provisioning LAN whose giaddr is accepted (default: none)")
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
    auto subnet = parse_cidr(k.subnet);
    if (!subnet)
        throw std::invalid_argument("--subnet: '" + k.subnet + "' is not a CIDR like 172.22.0.0/24 (no host bits)");
    if (k.node_name.empty())
        if (const char *env = std::getenv("NODE_NAME"))
            k.node_name = env;
    if (k.node_name.empty())
        throw std::invalid_argument("--node-name (or NODE_NAME) is required with --kubernetes");
    if (k.allowed_namespaces.empty())
        throw std::invalid_argument("--allowed-namespaces is required with --kubernetes: name the Ironic namespace");
    if (k.allowed_cidrs.empty())
        throw std::invalid_argument("--allowed-cidrs is required with --kubernetes: the range of service IPs");
    if (k.lease_namespace.empty())
        if (const char *env = std::getenv("POD_NAMESPACE"))
            k.lease_namespace = env;
    if (k.lease_namespace.empty())
        k.lease_namespace = "bpfnet-system";
    if (!namespace_name(k.lease_namespace))
        throw std::invalid_argument("--lease-namespace: '" + k.lease_namespace +
                                    "' is not a namespace name (lower-case letters, digits and '-')");
    if (k.pin_root.empty() || k.pin_root[0] != '/')
        throw std::invalid_argument("--pin-root must be an absolute path");

    NodeSettings node;
    node.interface = k.interface;
    node.subnet_be = subnet->first;
    node.prefix_len = subnet->second;
    for (const std::string &text : k.dhcp_relays) {
        auto relay = parse_ipv4(text);
        if (!relay)
            throw std::invalid_argument("--dhcp-relays: '" + text + "' is not an IPv4 address");
        if (auto problem = lan_host_problem(*relay, node.subnet_be, node.prefix_len))
            throw std::invalid_argument("--dhcp-relays: " + *problem);
        if (std::find(node.dhcp_relays.begin(), node.dhcp_relays.end(), ip_from_v4(*relay)) != node.dhcp_relays.end())
            throw std::invalid_argument("--dhcp-relays: " + text + " is listed twice");
        node.dhcp_relays.push_back(ip_from_v4(*relay));
    }
    if (node.dhcp_relays.size() > BPFNET_MAX_DHCP_RELAYS)
        throw std::invalid_argument("--dhcp-relays: at most " + std::to_string(BPFNET_MAX_DHCP_RELAYS) + " relays");
    // The spellings were checked by CLI11 (one_of) against the same names the config file takes.
    node.xdp_mode = parse_xdp_mode(k.xdp_mode).value_or(XdpMode::Auto);
    node.tc_attach = parse_tc_attach(k.tc_attach).value_or(TcAttach::Auto);
    node.redirect_peer = parse_redirect_peer(k.redirect_peer).value_or(RedirectPeer::Auto);
    while (k.pin_root.size() > 1 && k.pin_root.back() == '/')
        k.pin_root.pop_back();
    node.pin_root = k.pin_root;
    if (!k.control_socket.empty() && (k.control_socket[0] != '/' || k.control_socket.size() > 107))
        throw std::invalid_argument("--control-socket must be an absolute path of at most 107 bytes");
    node.control_socket = k.control_socket;

    KubernetesOptions options;
    options.kubeconfig = k.kubeconfig;
    options.node_name = k.node_name;
    options.lease_namespace = k.lease_namespace;
    options.lease_duration = std::chrono::seconds(k.lease_duration_s);
    options.event_refresh = std::chrono::seconds(k.event_refresh_s);
    options.watch_idle_timeout = std::chrono::seconds(k.watch_idle_timeout_s);
    options.upgrade_grace = std::chrono::seconds(k.upgrade_grace_s);
    options.policy.allowed_namespaces = k.allowed_namespaces;
    for (const std::string &text : k.allowed_cidrs) {
        auto cidr = parse_cidr(text);
        if (!cidr)
            throw std::invalid_argument("--allowed-cidrs: '" + text +
                                        "' is not a CIDR like 172.22.0.0/24 (no host bits)");
        options.policy.allowed_cidrs.push_back(*cidr);
    }
    return {node, options};
}

} // namespace bpfnet::k8s
