// bpfnet-loader: attaches bpfnet's datapath to the provisioning NIC and keeps its maps in the state the
// configuration describes. See docs/config.md for the file and README.md for how it is run.
#include "backend_locator.hpp"
#include "config.hpp"
#include "event_loop.hpp"
#include "http_server.hpp"
#include "k8s/controller.hpp"
#include "kernel_probe.hpp"
#include "log.hpp"
#include "standalone.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <sstream>

namespace {

// Exit codes, documented in docs/config.md.
constexpr int kExitRuntime = 1; // the kernel refused something; nothing is left half attached
constexpr int kExitConfig = 2;  // the configuration (or the command line) is wrong; the kernel is untouched

// The DaemonSet runs with hostNetwork, so listening on every address lets the kubelet probe the node IP.
constexpr const char *kDefaultMetricsAddress = "0.0.0.0:9394";

struct KubernetesFlags {
    bool enabled = false;
    std::string kubeconfig;
    std::string interface;
    std::string subnet;
    std::string node_name;
    std::vector<std::string> allowed_namespaces;
    std::vector<std::string> allowed_cidrs;
    std::vector<std::string> dhcp_relays;
    unsigned lease_duration_s = 15;
    std::string xdp_mode = "auto";
    std::string tc_attach = "auto";
    std::string redirect_peer = "auto";
    std::string pin_root{bpfnet::kDefaultPinRoot};
    std::string control_socket; // empty: /run/bpfnet/<interface>.sock
};

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
    app.add_option("--allowed-cidrs", k.allowed_cidrs, "CIDRs service IPs must lie in")->delimiter(',')->group(group);
    app.add_option("--dhcp-relays", k.dhcp_relays,
                   "DHCP relay agents on the provisioning LAN whose giaddr is accepted (default: none)")
        ->delimiter(',')
        ->group(group);
    app.add_option("--lease-duration", k.lease_duration_s, "seconds a Lease holder's claim lasts without renewal")
        ->check(CLI::Range(2u, 3600u))
        ->capture_default_str()
        ->group(group);
    app.add_option("--xdp-mode", k.xdp_mode, "auto (native where the driver supports it), native or generic")
        ->check(CLI::IsMember({"auto", "native", "generic"}))
        ->capture_default_str()
        ->group(group);
    app.add_option("--tc-attach", k.tc_attach, "auto (tcx links where the kernel has them), tcx or clsact")
        ->check(CLI::IsMember({"auto", "tcx", "clsact"}))
        ->capture_default_str()
        ->group(group);
    app.add_option("--redirect-peer", k.redirect_peer, "auto (where the kernel has it) or off")
        ->check(CLI::IsMember({"auto", "off"}))
        ->capture_default_str()
        ->group(group);
    app.add_option("--pin-root", k.pin_root, "bpffs directory for the pins")->capture_default_str()->group(group);
    app.add_option("--control-socket", k.control_socket,
                   "where bpfnetctl reaches the loader (default: /run/bpfnet/<interface>.sock)")
        ->group(group);
}

// The node's datapath settings and the Service policy from the flags; throws std::invalid_argument naming
// the flag.
std::pair<bpfnet::Config, bpfnet::k8s::KubernetesOptions> kubernetes_settings(KubernetesFlags k) {
    if (k.interface.empty())
        throw std::invalid_argument("--interface is required with --kubernetes");
    auto subnet = bpfnet::k8s::parse_cidr(k.subnet);
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
    if (k.pin_root.empty() || k.pin_root[0] != '/')
        throw std::invalid_argument("--pin-root must be an absolute path");

    bpfnet::Config node;
    node.interface = k.interface;
    node.subnet_be = subnet->first;
    node.prefix_len = subnet->second;
    for (const std::string &text : k.dhcp_relays) {
        auto relay = bpfnet::parse_ipv4(text);
        if (!relay)
            throw std::invalid_argument("--dhcp-relays: '" + text + "' is not an IPv4 address");
        if (auto problem = bpfnet::lan_host_problem(*relay, node.subnet_be, node.prefix_len))
            throw std::invalid_argument("--dhcp-relays: " + *problem);
        if (std::find(node.dhcp_relays.begin(), node.dhcp_relays.end(), *relay) != node.dhcp_relays.end())
            throw std::invalid_argument("--dhcp-relays: " + text + " is listed twice");
        node.dhcp_relays.push_back(*relay);
    }
    if (node.dhcp_relays.size() > BPFNET_MAX_DHCP_RELAYS)
        throw std::invalid_argument("--dhcp-relays: at most " + std::to_string(BPFNET_MAX_DHCP_RELAYS) + " relays");
    // The spellings were checked by CLI11 (IsMember) against the same names the config file takes.
    node.xdp_mode = bpfnet::parse_xdp_mode(k.xdp_mode).value_or(bpfnet::XdpMode::Auto);
    node.tc_attach = bpfnet::parse_tc_attach(k.tc_attach).value_or(bpfnet::TcAttach::Auto);
    node.redirect_peer = bpfnet::parse_redirect_peer(k.redirect_peer).value_or(bpfnet::RedirectPeer::Auto);
    while (k.pin_root.size() > 1 && k.pin_root.back() == '/')
        k.pin_root.pop_back();
    node.pin_root = k.pin_root;
    if (!k.control_socket.empty() && (k.control_socket[0] != '/' || k.control_socket.size() > 107))
        throw std::invalid_argument("--control-socket must be an absolute path of at most 107 bytes");
    node.control_socket = k.control_socket;

    bpfnet::k8s::KubernetesOptions options;
    options.kubeconfig = k.kubeconfig;
    options.node_name = k.node_name;
    options.lease_duration = std::chrono::seconds(k.lease_duration_s);
    options.policy.allowed_namespaces = k.allowed_namespaces;
    for (const std::string &text : k.allowed_cidrs) {
        auto cidr = bpfnet::k8s::parse_cidr(text);
        if (!cidr)
            throw std::invalid_argument("--allowed-cidrs: '" + text +
                                        "' is not a CIDR like 172.22.0.0/24 (no host bits)");
        options.policy.allowed_cidrs.push_back(*cidr);
    }
    return {node, options};
}

int run_kubernetes(const KubernetesFlags &flags, const std::optional<bpfnet::ListenAddress> &listen, bool check_only) {
    std::pair<bpfnet::Config, bpfnet::k8s::KubernetesOptions> settings;
    try {
        settings = kubernetes_settings(flags);
    } catch (const std::invalid_argument &e) {
        std::fprintf(stderr, "bpfnet-loader: %s\n", e.what());
        return kExitConfig;
    }
    if (check_only) {
        std::printf("kubernetes mode: valid (node %s, interface %s)\n", settings.second.node_name.c_str(),
                    settings.first.interface.c_str());
        return 0;
    }
    try {
        bpfnet::LoaderStatus status;
        bpfnet::k8s::KubernetesLoader loader(settings.first, settings.second, status);
        loader.claim();
        std::optional<bpfnet::HttpServer> http;
        if (listen)
            http.emplace(*listen, status, BPFNET_VERSION);
        loader.start();
        return loader.run();
    } catch (const bpfnet::k8s::ConfigError &e) {
        std::fprintf(stderr, "bpfnet-loader: cluster configuration: %s\n", e.what());
        return kExitConfig;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bpfnet-loader: %s\n", e.what());
        return kExitRuntime;
    }
}

// --probe-kernel: what this node's kernel offers and what the loader would choose with the defaults.
int print_kernel_probe() {
    const bpfnet::KernelFeatures kernel = bpfnet::probe_kernel();
    const bpfnet::AttachPlan plan = bpfnet::plan_attach(bpfnet::TcAttach::Auto, bpfnet::RedirectPeer::Auto, kernel);
    std::printf("release %s\n", kernel.release.c_str());
    std::printf("tcx %s (%s)\n", kernel.tcx ? "yes" : "no", kernel.tcx_detail.c_str());
    std::printf("redirect_peer %s\n", kernel.redirect_peer ? "yes" : "no");
    std::printf("tc_attach %s\n", bpfnet::to_string(plan.tc).c_str());
    std::printf("pod_delivery %s\n", plan.redirect_peer ? "redirect_peer" : "veth");
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"bpfnet-loader: eBPF datapath for the Metal3/Ironic provisioning network"};
    std::string config_path;
    std::string level = "info";
    bool check_only = false;
    bool teardown = false;
    bool probe_kernel = false;
    std::string metrics_address = kDefaultMetricsAddress;
    KubernetesFlags kubernetes;
    auto *config_option = app.add_option("-c,--config", config_path, "configuration file (docs/config.md)");
    app.add_option("--log-level", level, "debug, info, warn or error")
        ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
    app.add_flag("--check", check_only, "validate the configuration (or the Kubernetes mode flags) and exit");
    app.add_flag("--teardown", teardown, "detach the programs and remove the pinned maps, then exit");
    app.add_flag("--probe-kernel", probe_kernel,
                 "print what this kernel offers (tcx, bpf_redirect_peer) and the automatic choices, then exit");
    app.add_option("--metrics-address", metrics_address,
                   "HOST:PORT of /metrics, /healthz and /readyz (docs/observability.md); '' disables them")
        ->capture_default_str();
    add_kubernetes_flags(app, kubernetes);
    try {
        app.parse(argc, argv);
        if (probe_kernel)
            return print_kernel_probe();
        if (kubernetes.enabled && (config_option->count() > 0 || teardown))
            throw CLI::ValidationError("--kubernetes", "cannot be combined with --config or --teardown");
        if (!kubernetes.enabled && config_option->count() == 0)
            throw CLI::RequiredError("--config (or --kubernetes)");
    } catch (const CLI::ParseError &e) {
        int code = app.exit(e);
        return code == 0 ? 0 : kExitConfig;
    }
    std::optional<bpfnet::ListenAddress> listen;
    try {
        if (!metrics_address.empty())
            listen = bpfnet::parse_listen_address(metrics_address);
    } catch (const std::invalid_argument &e) {
        std::fprintf(stderr, "bpfnet-loader: --metrics-address: %s\n", e.what());
        return kExitConfig;
    }
    // Before any thread (the HTTP listener, watches) starts: they inherit the mask.
    bpfnet::loop::block_handled_signals();
    bpfnet::set_log_level(*bpfnet::parse_log_level(level));
    bpfnet::route_library_logs();

    if (kubernetes.enabled)
        return run_kubernetes(kubernetes, listen, check_only);

    bpfnet::Config config;
    try {
        config = bpfnet::load_config_file(config_path);
    } catch (const bpfnet::ConfigError &e) {
        std::fprintf(stderr, "bpfnet-loader: invalid configuration: %s\n", e.what());
        return kExitConfig;
    }
    if (check_only) {
        std::printf("%s: valid\n", config_path.c_str());
        return 0;
    }

    try {
        // Destroyed in reverse order: the HTTP server stops (and stops reading the status) first.
        bpfnet::LoaderStatus status;
        bpfnet::StandaloneLoader loader(config_path, config, status);
        if (teardown) {
            loader.teardown();
            return 0;
        }
        // A second loader for this interface is refused first, naming the running one (not as "port in use").
        // Listening before start() lets the probes answer (not ready) while the datapath is attached, and a
        // port in use stops the loader before it touches the kernel.
        loader.claim();
        std::optional<bpfnet::HttpServer> http;
        if (listen)
            http.emplace(*listen, status, BPFNET_VERSION);
        loader.start();
        return loader.run();
    } catch (const bpfnet::BackendNotFound &e) {
        std::fprintf(stderr, "bpfnet-loader: invalid configuration: %s: %s\n", config_path.c_str(), e.what());
        return kExitConfig;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bpfnet-loader: %s\n", e.what());
        return kExitRuntime;
    }
}
