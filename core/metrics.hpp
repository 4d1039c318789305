// The loader's /metrics: a snapshot of the datapath's maps, formatted in the Prometheus text exposition
// format 0.0.4. Reading (read_datapath) and formatting (format_metrics) are separate so the format can be
// tested without a kernel; every metric is described in docs/observability.md.
#pragma once

#include "maps/datapath_maps.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bpfnet {

// The Content-Type of format_metrics' output.
inline constexpr const char *kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

struct ServiceIpState {
    std::string service_ip; // format_ip: a dotted quad, or RFC 5952 text for IPv6
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
    uint64_t neighbours_unconfirmed = 0;
    std::optional<double> heartbeat_age_seconds; // nullopt: no heartbeat written yet
    double heartbeat_timeout_seconds = 0;
    std::vector<ConflictState> conflicts;
};

struct MetricLabel {
    std::string_view name;
    std::string value;
};

// Builds the exposition text. The caller announces a family once (HELP, TYPE), then writes its samples;
// nothing here decides which families exist. The modes write their own families with it.
class MetricsWriter {
public:
    void family(std::string_view name, std::string_view type, std::string_view help);
    void sample(std::string_view name, std::initializer_list<MetricLabel> labels, uint64_t value);
    void sample(std::string_view name, std::initializer_list<MetricLabel> labels, double value);
    std::string take() { return std::move(out_); }

private:
    void begin_sample(std::string_view name, std::initializer_list<MetricLabel> labels);
    void append_help(std::string_view help);
    void append_double(double value);

    std::string out_;
};

// A mode's own metric families (Kubernetes mode: bpfnet_k8s_*), written after the datapath's. Called on an
// HTTP worker thread: it must be thread-safe.
using ModeMetrics = std::function<void(MetricsWriter &)>;

struct MetricsSnapshot {
    std::string version;
    bool ready = false;
    std::optional<bool> nic_carrier;          // nullopt until the loader follows the NIC's carrier
    std::optional<DatapathSnapshot> datapath; // nullopt until the datapath is attached
    ModeMetrics mode_families;                // empty: the mode has none (standalone)
};

// A label value escaped per the exposition format: backslash, double quote and line feed.
std::string escape_label_value(std::string_view value);

// The whole exposition: HELP and TYPE once per family, families without samples left out.
std::string format_metrics(const MetricsSnapshot &snapshot);

// Reads the maps; now_ns is CLOCK_MONOTONIC (the clock of the heartbeat and of conflicts' last_seen_ns).
DatapathSnapshot read_datapath(const DatapathMaps &maps, uint64_t now_ns);

} // namespace bpfnet
