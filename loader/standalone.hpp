// The loader in standalone mode: desired state from a config file, kept in the maps until SIGTERM.
#pragma once

#include "config.hpp"
#include "datapath_runtime.hpp"
#include "desired_state.hpp"
#include "loader_status.hpp"
#include "maps/unique_fd.hpp"

#include <string>

namespace bpfnet {

class StandaloneLoader {
public:
    // status: where the loader reports readiness and publishes its maps for the HTTP endpoints; it must
    // outlive the loader.
    StandaloneLoader(std::string config_path, Config config, LoaderStatus &status);
    ~StandaloneLoader();

    // Attaches (or adopts) the datapath and fills the maps. Throws on failure, with nothing half attached.
    void start();
    // Serves until SIGTERM or SIGINT; returns the process exit code.
    int run();
    // Removes programs and pins of the configured interface (`--teardown`).
    void teardown();

private:
    void apply(const Config &config);
    // Re-reads the file and applies it if valid; `forced` (SIGHUP) also re-applies an unchanged one.
    void reload_config(bool forced);
    void reload_failed(const std::string &reason);

    std::string config_path_;
    Config config_;
    LoaderStatus &status_;
    DatapathRuntime runtime_;
    UniqueFd epoll_, signals_, inotify_;
};

} // namespace bpfnet
