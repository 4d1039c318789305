#include "k8s/metrics.hpp"

namespace bpfnet::k8s {

void write_kubernetes_metrics(MetricsWriter &out, const KubernetesState &k8s) {
    using Field = uint64_t WatchState::*;
    const struct {
        const char *name;
        const char *help;
        Field field;
    } watch_families[] = {
        {"bpfnet_k8s_lists_total", "Full lists of a resource (at start, and after 410 Gone or a failure).",
         &WatchState::lists},
        {"bpfnet_k8s_watch_requests_total", "Watch requests started (each reconnect is one).",
         &WatchState::watch_requests},
        {"bpfnet_k8s_watch_events_total", "ADDED, MODIFIED and DELETED events applied.", &WatchState::events},
        {"bpfnet_k8s_watch_expired_total", "Watches answered 410 Gone (resourceVersion too old): re-listed.",
         &WatchState::expired},
        {"bpfnet_k8s_bad_input_total", "Malformed or unexpected answers from the API server, skipped.",
         &WatchState::bad_input},
        {"bpfnet_k8s_failures_total",
         "Failed lists and watches (API server unreachable or refusing), each retried "
         "after a backoff.",
         &WatchState::failures},
        {"bpfnet_k8s_watch_stalls_total",
         "Watches that sent nothing, not even a bookmark, for --watch-idle-timeout: restarted from the last "
         "resourceVersion.",
         &WatchState::stalls},
    };
    for (const auto &family : watch_families) {
        out.family(family.name, "counter", family.help);
        for (const WatchState &w : k8s.watches)
            out.sample(family.name, {{"resource", w.resource}}, w.*family.field);
    }
    out.family("bpfnet_k8s_reconciles_total", "counter", "Reconcile passes (one per batch of changes or tick).");
    out.sample("bpfnet_k8s_reconciles_total", {}, k8s.reconciles);
    out.family("bpfnet_k8s_services", "gauge",
               "Services of bpfnet's class: served by this node, standby (accepted, served elsewhere or nowhere), "
               "refused.");
    out.sample("bpfnet_k8s_services", {{"state", "served"}}, k8s.services_served);
    out.sample("bpfnet_k8s_services", {{"state", "standby"}}, k8s.services_standby);
    out.sample("bpfnet_k8s_services", {{"state", "refused"}}, k8s.services_refused);
    out.family("bpfnet_k8s_leases_held", "gauge", "Leases this node holds (one per service IP it serves).");
    out.sample("bpfnet_k8s_leases_held", {}, k8s.leases_held);
    out.family("bpfnet_k8s_lease_takeovers_total", "counter",
               "Leases this node claimed from a holder that had not released them (expired unrenewed).");
    out.sample("bpfnet_k8s_lease_takeovers_total", {}, k8s.lease_takeovers);
    out.family("bpfnet_k8s_lease_yields_total", "counter",
               "Times this node stopped answering for a service IP because another node claimed it on the LAN "
               "after this node's Lease could not be renewed.");
    out.sample("bpfnet_k8s_lease_yields_total", {}, k8s.lease_yields);
    out.family("bpfnet_k8s_lease_deferrals_total", "counter",
               "Times a Lease this node wrote was not answered because another MAC answered the probe for its "
               "service IP on the LAN (another cluster's node: a pivot under way).");
    out.sample("bpfnet_k8s_lease_deferrals_total", {}, k8s.lease_deferrals);
    out.family("bpfnet_k8s_events_dropped_total", "counter",
               "Events not posted because the queue to the API server was full (the oldest go first).");
    out.sample("bpfnet_k8s_events_dropped_total", {}, k8s.events_dropped);
}

} // namespace bpfnet::k8s
