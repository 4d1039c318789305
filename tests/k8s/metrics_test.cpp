// Kubernetes mode's /metrics families (k8s/metrics.cpp), written after the datapath's through the core's
// writer, as docs/observability.md lists them; promtool-clean when promtool is installed.
#include "core/metrics.hpp"
#include "k8s/metrics.hpp"
#include "tests/unit/promtool.hpp"

#include <gtest/gtest.h>

namespace bpfnet::k8s {
namespace {

KubernetesState known_state() {
    KubernetesState k8s;
    k8s.watches = {{"services", 2, 5, 40, 1, 3, 4, 6}, {"leases", 1, 2, 7, 0, 0, 0, 0}};
    k8s.reconciles = 12;
    k8s.services_served = 1;
    k8s.services_standby = 2;
    k8s.services_refused = 3;
    k8s.leases_held = 1;
    k8s.events_dropped = 9;
    return k8s;
}

TEST(KubernetesMetrics, EveryFamilyWithItsSamples) {
    MetricsSnapshot snapshot{
        .version = "0.1.0", .ready = true, .nic_carrier = true, .datapath = std::nullopt, .mode_families = {}};
    snapshot.mode_families = [](MetricsWriter &out) {
        write_kubernetes_metrics(out, known_state());
    };
    const std::string text = format_metrics(snapshot);
    for (const char *line :
         {"bpfnet_k8s_lists_total{resource=\"services\"} 2\n",
          "bpfnet_k8s_watch_requests_total{resource=\"services\"} 5\n",
          "bpfnet_k8s_watch_events_total{resource=\"services\"} 40\n",
          "bpfnet_k8s_watch_events_total{resource=\"leases\"} 7\n",
          "bpfnet_k8s_watch_expired_total{resource=\"services\"} 1\n",
          "bpfnet_k8s_bad_input_total{resource=\"services\"} 3\n",
          "bpfnet_k8s_failures_total{resource=\"services\"} 4\n", "bpfnet_k8s_reconciles_total 12\n",
          "bpfnet_k8s_services{state=\"served\"} 1\n", "bpfnet_k8s_services{state=\"standby\"} 2\n",
          "bpfnet_k8s_services{state=\"refused\"} 3\n", "bpfnet_k8s_leases_held 1\n",
          "bpfnet_k8s_watch_stalls_total{resource=\"services\"} 6\n", "bpfnet_k8s_events_dropped_total 9\n"})
        EXPECT_NE(text.find(line), std::string::npos) << line << "not in:\n" << text;
    if (!promtool_installed())
        GTEST_SKIP() << "promtool is not on PATH (Debian package prometheus)";
    std::string output;
    EXPECT_EQ(promtool_check(text, output), 0) << output;
    EXPECT_EQ(output, "") << output;
}

} // namespace
} // namespace bpfnet::k8s
