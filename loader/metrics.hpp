// The loader's /metrics: a snapshot of the datapath's maps, formatted in the Prometheus text exposition
// format 0.0.4. Reading (read_datapath) and formatting (format_metrics) are separate so the format can be
// tested without a kernel; every metric is described in docs/observability.md.
#pragma once

#include "maps/datapath_maps.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bpfnet {

// The Content-Type of format_metrics' output.
inline constexpr const char *kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

struct ServiceIpState {
    std::string service_ip; // dotted quad
    bool active = false;    // this node owns it (BPFNET_SERVICE_IP_ACTIVE)
};

struct ConflictState {
    std::string service_ip;
    std::string mac; // the last other MAC seen claiming it, aa:bb:cc:dd:ee:ff
    double age_seconds = 0;
};

// What the maps held at one moment.
struct DatapathSnapshot {
    std::array<uint64_t, BPFNET_CTR_MAX> counters{}; // indexed by enum bpfnet_counter, summed over CPUs
    std::vector<ServiceIpState> service_ips;
    uint64_t flows = 0;
    uint64_t flows_unconfirmed = 0;
    uint64_t neighbours = 0;
    std::optional<double> heartbeat_age_seconds; // nullopt: no heartbeat written yet
    double heartbeat_timeout_seconds = 0;
    std::vector<ConflictState> conflicts;
};

// Kubernetes mode: one list-then-watch of the API server.
struct WatchState {
    std::string resource; // "services", "endpointslices", "leases"
    uint64_t lists = 0;
    uint64_t watch_requests = 0;
    uint64_t events = 0;
    uint64_t expired = 0;   // 410 Gone: re-listed
    uint64_t bad_input = 0; // malformed or unexpected answers skipped
    uint64_t failures = 0;  // failed lists and watches (each followed by a backoff)
};

// Kubernetes mode: what the last reconcile pass decided.
struct KubernetesState {
    std::vector<WatchState> watches;
    uint64_t reconciles = 0;
    uint64_t services_served = 0;  // accepted, and served by this node (it holds the Lease)
    uint64_t services_standby = 0; // accepted, served elsewhere or nowhere
    uint64_t services_refused = 0; // of our class, refused (an Event says why)
    uint64_t leases_held = 0;
};

struct MetricsSnapshot {
    std::string version;
    bool ready = false;
    std::optional<DatapathSnapshot> datapath;  // nullopt until the datapath is attached
    std::optional<KubernetesState> kubernetes; // nullopt in standalone mode
};

// A label value escaped per the exposition format: backslash, double quote and line feed.
std::string escape_label_value(std::string_view value);

// The whole exposition: HELP and TYPE once per family, families without samples left out.
std::string format_metrics(const MetricsSnapshot &snapshot);

// Reads the maps; now_ns is CLOCK_MONOTONIC (the clock of the heartbeat and of conflicts' last_seen_ns).
DatapathSnapshot read_datapath(const DatapathMaps &maps, uint64_t now_ns);

} // namespace bpfnet
