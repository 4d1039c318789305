// bpfnet-loader: attaches bpfnet's datapath to the provisioning NIC and keeps its maps in the state the
// configuration describes. See docs/config.md for the file and README.md for how it is run.
#include "backend_locator.hpp"
#include "config.hpp"
#include "http_server.hpp"
#include "log.hpp"
#include "standalone.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <optional>

namespace {

// Exit codes, documented in docs/config.md.
constexpr int kExitRuntime = 1; // the kernel refused something; nothing is left half attached
constexpr int kExitConfig = 2;  // the configuration (or the command line) is wrong; the kernel is untouched

// The DaemonSet runs with hostNetwork, so listening on every address lets the kubelet probe the node IP.
constexpr const char *kDefaultMetricsAddress = "0.0.0.0:9394";

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"bpfnet-loader: eBPF datapath for the Metal3/Ironic provisioning network"};
    std::string config_path;
    std::string level = "info";
    bool check_only = false;
    bool teardown = false;
    std::string metrics_address = kDefaultMetricsAddress;
    app.add_option("-c,--config", config_path, "configuration file (docs/config.md)")->required();
    app.add_option("--log-level", level, "debug, info, warn or error")
        ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
    app.add_flag("--check", check_only, "validate the configuration and exit");
    app.add_flag("--teardown", teardown, "detach the programs and remove the pinned maps, then exit");
    app.add_option("--metrics-address", metrics_address,
                   "HOST:PORT of /metrics, /healthz and /readyz (docs/observability.md); '' disables them")
        ->capture_default_str();
    try {
        app.parse(argc, argv);
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
    bpfnet::set_log_level(*bpfnet::parse_log_level(level));
    bpfnet::route_library_logs();

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
        // Listening before start() lets the probes answer (not ready) while the datapath is attached, and a
        // port in use stops the loader before it touches the kernel.
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
