// Kubernetes mode's own /metrics families (bpfnet_k8s_*, docs/observability.md): the watches of the API
// server and what the last reconcile pass decided. Written through the core's MetricsWriter, after the
// datapath's families, by the function the controller publishes (LoaderStatus::publish_mode_metrics).
#pragma once

#include "core/metrics.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace bpfnet::k8s {

// One list-then-watch of the API server.
struct WatchState {
    std::string resource; // "services", "endpointslices", "leases"
    uint64_t lists = 0;
    uint64_t watch_requests = 0;
    uint64_t events = 0;
    uint64_t expired = 0;   // 410 Gone: re-listed
    uint64_t bad_input = 0; // malformed or unexpected answers skipped
    uint64_t failures = 0;  // failed lists and watches (each followed by a backoff)
    uint64_t stalls = 0;    // watches silent for the idle timeout: restarted
};

// What the last reconcile pass decided.
struct KubernetesState {
    std::vector<WatchState> watches;
    uint64_t reconciles = 0;
    uint64_t services_served = 0;  // accepted, and served by this node (it holds the Lease)
    uint64_t services_standby = 0; // accepted, served elsewhere or nowhere
    uint64_t services_refused = 0; // of our class, refused (an Event says why)
    uint64_t leases_held = 0;
    uint64_t lease_takeovers = 0; // Leases claimed from a holder that had not released them (it expired)
    uint64_t lease_yields = 0;    // service IPs yielded: another node claimed them after our claim lapsed
    uint64_t lease_deferrals = 0; // claims not answered: another MAC answered their probe
    uint64_t events_dropped = 0;  // Events dropped because the queue to the API server was full
};

void write_kubernetes_metrics(MetricsWriter &out, const KubernetesState &k8s);

} // namespace bpfnet::k8s
