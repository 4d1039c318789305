// The loader in standalone mode: desired state from a config file, kept in the maps until SIGTERM.
#pragma once

#include "arp_sender.hpp"
#include "config.hpp"
#include "datapath.hpp"
#include "desired_state.hpp"
#include "loader_status.hpp"
#include "maps/unique_fd.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct ring_buffer;

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
    enum class Announce { NewlyActive, AllActive };
    void apply(const Config &config, Announce which = Announce::NewlyActive);
    bool heartbeat_fresh();
    void write_heartbeat();
    // Re-reads the file and applies it if valid; `forced` (SIGHUP) also re-applies an unchanged one.
    void reload_config(bool forced);
    void reload_failed(const std::string &reason);
    void announce(const std::vector<__be32> &service_ips, const Config &config);
    void send_next_announcement();
    void handle_event(const struct bpfnet_event &event);
    void resolve_neighbour(__be32 host, __be32 service_ip);
    void report_conflict(__be32 service_ip, const __u8 *mac);
    static int on_ring_event(void *ctx, void *data, size_t size);

    std::string config_path_;
    Config config_;
    LoaderStatus &status_;
    std::unique_ptr<Datapath> datapath_;
    std::optional<ArpSender> arp_;
    MacAddress nic_mac_{};

    UniqueFd epoll_, signals_, heartbeat_timer_, announce_timer_, inotify_;
    std::unique_ptr<ring_buffer, void (*)(ring_buffer *)> events_;
    std::vector<__be32> announcing_;
    uint32_t announcements_left_ = 0;
    std::map<__be32, std::chrono::steady_clock::time_point> last_resolution_;
    std::map<__be32, std::chrono::steady_clock::time_point> last_conflict_log_;
};

} // namespace bpfnet
