// The loader in standalone mode: desired state from a config file, kept in the maps until SIGTERM.
#pragma once

#include "core/control_socket.hpp"
#include "core/datapath_runtime.hpp"
#include "core/desired_state.hpp"
#include "core/link_watch.hpp"
#include "core/loader_status.hpp"
#include "maps/unique_fd.hpp"
#include "standalone/config.hpp"

#include <optional>
#include <string>

namespace bpfnet {

class StandaloneLoader {
public:
    // status: where the loader reports readiness and publishes its maps for the HTTP endpoints; it must
    // outlive the loader.
    StandaloneLoader(std::string config_path, Config config, LoaderStatus &status);
    ~StandaloneLoader();

    // Checks the interface and the backend, then becomes the interface's one writer: the pin directory's
    // lock and the control socket. Throws (BackendNotFound, PinDirBusy naming the holder) with nothing
    // changed. start() does it when the caller has not.
    void claim();
    // Attaches (or adopts) the datapath and fills the maps. Throws on failure, with nothing half attached.
    void start();
    // Serves until SIGTERM or SIGINT; returns the process exit code.
    int run();
    // Removes programs and pins of the configured interface (`--teardown`).
    void teardown();

private:
    struct Change {
        DatapathRuntime::Applied applied;
        std::optional<BackendLocation> where;
    };
    // Locates the config's backend (before any map changes) and brings the datapath to the config.
    Change apply(const Config &config);
    // A request on the control socket (bpfnetctl backend set/clear): the running config with another
    // backend, applied like a reload. Lasts until the config is applied again (SIGHUP, file change, restart).
    nlohmann::json control(const ControlRequest &request);
    // The datapath brought to config with the backend where it was located (none: not steered to, its
    // service IPs not answered), the claims held accordingly.
    DatapathRuntime::Applied apply_located(const Config &config, const std::optional<BackendLocation> &where);
    // Warns once per change when the pod's node (backend.node) is on no subnet of the NIC's addresses.
    void warn_pod_node_off_link(const Config &config);
    // Re-reads the file and applies it if valid; `forced` (SIGHUP) also re-applies an unchanged one.
    void reload_config(bool forced);
    void reload_failed(const std::string &reason);
    // The link notifications: the NIC's carrier (reported), and the backend's veth going down or away (a pod
    // deleted or restarting), after which its pod is steered to no more and it is looked for again each
    // second (lost_backend_timer_) and at each notification until it is found (a new veth for the same IP).
    void follow_links();
    // The shared addresses the node holds now (sharedAddresses), read from its interfaces.
    HeldAddresses held_now(const Config &config) const;
    // An address came or went: the shared addresses' ports follow them (steered while held, the node's after).
    void follow_shared_addresses();
    void backend_lost();
    void look_for_lost_backend();

    std::string config_path_;
    Config config_;
    LoaderStatus &status_;
    DatapathRuntime runtime_;
    int nic_ifindex_ = 0;
    std::optional<LinkWatch> links_;         // from start(): the NIC's carrier (reported) and the backend's veth
    std::optional<int> backend_ifindex_;     // where the running config's backend was last located
    std::optional<BackendLocation> located_; // where apply() last located it (none: no backend)
    HeldAddresses held_;                     // the shared addresses held when the maps were last written
    std::string off_link_warned_;            // the pod's node last warned about as off the NIC's link
    bool backend_lost_ = false;              // its veth went down or away: not steered to, looked for
    bool reload_failed_ = false;             // the file is not what runs (reload_failed); a reload clears it
    std::optional<ControlServer> control_;
    UniqueFd epoll_, signals_, inotify_, lost_backend_timer_;
};

// The backend a backend_set request on the control socket names, checked against the running config: its
// addresses (one per family the service has, outside the provisioning subnet), its veth. A request that is not
// one throws ControlFailure (BadRequest, InvalidArgument) saying what is wrong.
Backend requested_backend(const nlohmann::json &request, const Config &config);

} // namespace bpfnet
