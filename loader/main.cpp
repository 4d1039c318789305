// bpfnet-loader: attaches bpfnet's datapath to the provisioning NIC and keeps its maps in the state the
// configuration describes. See docs/config.md for the file and README.md for how it is run.
#include "core/backend_locator.hpp"
#include "core/datapath.hpp"
#include "core/event_loop.hpp"
#include "core/http_server.hpp"
#include "core/kernel_probe.hpp"
#include "core/log.hpp"
#include "core/nic_choice.hpp"
#include "core/pin_lock.hpp"
#include "k8s/controller.hpp"
#include "k8s/flags.hpp"
#include "standalone/config.hpp"
#include "standalone/standalone.hpp"

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

// --interface as MAC addresses (core/nic_choice.hpp): the flags with the name of the link that has one of them.
bpfnet::k8s::KubernetesFlags with_nic_chosen(bpfnet::k8s::KubernetesFlags flags) {
    if (!bpfnet::lists_macs(flags.interface))
        return flags;
    const std::string macs = flags.interface;
    flags.interface = bpfnet::link_with_mac(macs, bpfnet::all_links());
    flags.interface_macs = macs;
    bpfnet::log_info("provisioning NIC chosen by MAC", {{"iface", flags.interface}, {"macs", macs}});
    return flags;
}

// The uninstall of Kubernetes mode on this node (k8s/uninstall runs it with the DaemonSet's flags once the
// loaders are gone): the programs detached and the pins removed, as the standalone --teardown does. Not under a
// running loader (the pin directory's lock): a terminating one would re-create what is removed.
int teardown_kubernetes_node(const bpfnet::NodeSettings &node) {
    try {
        bpfnet::PinDirLock lock(node.pin_dir());
        bpfnet::Datapath::remove(
            bpfnet::DatapathOptions{.interface = node.interface, .pin_dir = node.pin_dir(), .xdp_mode = node.xdp_mode});
        bpfnet::log_info("datapath removed", {{"iface", node.interface}, {"pins", node.pin_dir()}});
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bpfnet-loader: %s\n", e.what());
        return kExitRuntime;
    }
}

int run_kubernetes(const bpfnet::k8s::KubernetesFlags &flags, const std::optional<bpfnet::ListenAddress> &listen,
                   bool check_only, bool teardown) {
    std::pair<bpfnet::NodeSettings, bpfnet::k8s::KubernetesOptions> settings;
    try {
        settings = bpfnet::k8s::kubernetes_settings(with_nic_chosen(flags));
    } catch (const std::invalid_argument &e) {
        std::fprintf(stderr, "bpfnet-loader: %s\n", e.what());
        return kExitConfig;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bpfnet-loader: %s\n", e.what());
        return kExitRuntime;
    }
    if (check_only) {
        std::printf("kubernetes mode: valid (node %s, interface %s)\n", settings.second.node_name.c_str(),
                    settings.first.interface.c_str());
        return 0;
    }
    if (teardown)
        return teardown_kubernetes_node(settings.first);
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
    std::printf("l4_checksums %s\n", kernel.skb_csum_state ? "computed" : "helper");
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
    bpfnet::k8s::KubernetesFlags kubernetes;
    auto *config_option = app.add_option("-c,--config", config_path, "configuration file (docs/config.md)");
    app.add_option("--log-level", level, "debug, info, warn or error")
        ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
    app.add_flag("--check", check_only, "validate the configuration (or the Kubernetes mode flags) and exit");
    app.add_flag("--teardown", teardown,
                 "detach the programs and remove the pinned maps, then exit (with --config, or with --kubernetes "
                 "and its flags)");
    app.add_flag("--probe-kernel", probe_kernel,
                 "print what this kernel offers (tcx, bpf_redirect_peer, the skb checksum state) and the automatic "
                 "choices, then exit");
    app.add_option("--metrics-address", metrics_address,
                   "HOST:PORT of /metrics, /healthz and /readyz (docs/observability.md); '' disables them")
        ->capture_default_str();
    bpfnet::k8s::add_kubernetes_flags(app, kubernetes);
    // What an image runs is told by its version (Containerfile; scripts/image.sh tags the image with it).
    app.set_version_flag("--version", std::string("bpfnet-loader ") + BPFNET_VERSION);
    try {
        app.parse(argc, argv);
        if (probe_kernel) {
            bpfnet::route_library_logs(); // a probe the kernel refuses is an answer, not a library's alarm
            return print_kernel_probe();
        }
        if (kubernetes.enabled && config_option->count() > 0)
            throw CLI::ValidationError("--kubernetes", "cannot be combined with --config");
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
        return run_kubernetes(kubernetes, listen, check_only, teardown);

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
