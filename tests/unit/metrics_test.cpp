// Unit tests of the loader's /metrics exposition (no kernel: a known snapshot is formatted) and of the
// --metrics-address parser. The whole output is also checked with `promtool check metrics` when promtool is
// installed (Debian package prometheus).
#include "core/http_server.hpp"
#include "core/metrics.hpp"
#include "tests/unit/promtool.hpp"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace bpfnet {
namespace {

MetricsSnapshot known_snapshot() {
    DatapathSnapshot dp;
    for (size_t i = 0; i < dp.counters.size(); i++)
        dp.counters[i] = 1000 + i; // every slot distinct, so a line can only match its own slot
    dp.counters[BPFNET_CTR_DNAT_SERVICE] = 7;
    dp.counters[BPFNET_CTR_DROP_NOT_ALLOWED] = 3;
    dp.counters[BPFNET_CTR_ARP_CONFLICT] = 2;
    dp.service_ips = {{"198.18.0.2", true}, {"198.18.0.3", false}};
    dp.flows = 12;
    dp.neighbours = 4;
    dp.neighbours_unconfirmed = 6;
    dp.heartbeat_age_seconds = 0.25;
    dp.heartbeat_timeout_seconds = 5;
    dp.conflicts = {{"198.18.0.2", "02:00:00:00:00:99", 1.5}};
    return MetricsSnapshot{.version = "0.1.0", .ready = true, .nic_carrier = true, .datapath = dp, .mode_families = {}};
}

std::vector<std::string> lines_of(const std::string &text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

bool has_line(const std::string &text, const std::string &line) {
    for (const std::string &l : lines_of(text))
        if (l == line)
            return true;
    return false;
}

// The metric name of a sample line: up to '{' or ' '.
std::string sample_name(const std::string &line) {
    return line.substr(0, line.find_first_of("{ "));
}

TEST(Metrics, ExactLinesForKnownSnapshot) {
    std::string text = format_metrics(known_snapshot());
    for (const char *line : {
             R"(bpfnet_build_info{version="0.1.0"} 1)",
             "bpfnet_loader_ready 1",
             R"(bpfnet_datapath_packets_total{decision="dnat_service"} 7)",
             R"(bpfnet_datapath_events_total{event="arp_conflict"} 2)",
             R"(bpfnet_datapath_drops_total{reason="not_allowed"} 3)",
             R"(bpfnet_service_ip_active{service_ip="198.18.0.2"} 1)",
             R"(bpfnet_service_ip_active{service_ip="198.18.0.3"} 0)",
             "bpfnet_flows 12",
             "bpfnet_flows_capacity 65536",
             "bpfnet_neighbours 4",
             "bpfnet_neighbours_capacity 4096",
             "bpfnet_neighbours_unconfirmed 6",
             "bpfnet_loader_heartbeat_age_seconds 0.25",
             "bpfnet_loader_heartbeat_timeout_seconds 5",
             "bpfnet_conflicts_total 2",
             R"(bpfnet_conflict_info{service_ip="198.18.0.2",mac="02:00:00:00:00:99"} 1)",
             R"(bpfnet_conflict_age_seconds{service_ip="198.18.0.2"} 1.5)",
             "# TYPE bpfnet_datapath_packets_total counter",
             "# TYPE bpfnet_datapath_drops_total counter",
             "# TYPE bpfnet_datapath_events_total counter",
             "# TYPE bpfnet_flows gauge",
         })
        EXPECT_TRUE(has_line(text, line)) << "missing line: " << line << "\nin:\n" << text;
    EXPECT_EQ(text.back(), '\n');
}

// Each counter in the family of its kind (maps/bpfnet_maps.h), exactly once; drop reasons without the prefix.
TEST(Metrics, EveryCounterOnceInTheFamilyOfItsKind) {
    std::string text = format_metrics(known_snapshot());
    auto family = [](CounterKind kind) -> std::string {
        switch (kind) {
        case CounterKind::Path:
            return R"(bpfnet_datapath_packets_total{decision=")";
        case CounterKind::Drop:
            return R"(bpfnet_datapath_drops_total{reason=")";
        case CounterKind::Event:
            return R"(bpfnet_datapath_events_total{event=")";
        }
        return "?";
    };
    for (size_t i = 0; i < counter_table.size(); i++) {
        std::string value = " " + std::to_string(known_snapshot().datapath->counters[i]);
        std::string line = family(counter_table[i].kind) + std::string(counter_label(counter_table[i])) + "\"}" + value;
        EXPECT_TRUE(has_line(text, line)) << line;
        std::string label = "\"" + std::string(counter_label(counter_table[i])) + "\"}";
        size_t first = text.find(label), second = first == std::string::npos ? first : text.find(label, first + 1);
        EXPECT_EQ(second, std::string::npos) << label << " in two families";
    }
    EXPECT_EQ(text.find(R"(decision="drop_)"), std::string::npos);
    EXPECT_TRUE(has_line(text, R"(bpfnet_datapath_drops_total{reason="neighbour_miss"} )" +
                                   std::to_string(known_snapshot().datapath->counters[BPFNET_CTR_NEIGHBOUR_MISS])))
        << "a neighbour miss drops the packet";
}

// HELP and TYPE exactly once per family, before its samples, and each family's samples together.
TEST(Metrics, HelpAndTypeOncePerFamily) {
    std::map<std::string, int> help, type;
    std::set<std::string> finished;
    std::string current;
    for (const std::string &line : lines_of(format_metrics(known_snapshot()))) {
        ASSERT_FALSE(line.empty());
        if (line.starts_with("# HELP ")) {
            std::string name = line.substr(7, line.find(' ', 7) - 7);
            help[name]++;
            if (!current.empty())
                finished.insert(current);
            current = name;
        } else if (line.starts_with("# TYPE ")) {
            std::string name = line.substr(7, line.find(' ', 7) - 7);
            type[name]++;
            EXPECT_EQ(name, current) << "TYPE not right after its HELP: " << line;
        } else {
            EXPECT_EQ(sample_name(line), current) << "sample outside its family: " << line;
            EXPECT_FALSE(finished.contains(sample_name(line))) << line;
        }
    }
    EXPECT_EQ(help.size(), 18u); // the loader's three (build, ready, the NIC's carrier) and the datapath's
    for (const auto &[name, n] : help) {
        EXPECT_EQ(n, 1) << name;
        EXPECT_EQ(type[name], 1) << name;
    }
    EXPECT_EQ(help.size(), type.size());
}

TEST(Metrics, LabelValuesEscaped) {
    EXPECT_EQ(escape_label_value("plain"), "plain");
    EXPECT_EQ(escape_label_value("a\\b\"c\nd"), R"(a\\b\"c\nd)");
    MetricsSnapshot snapshot{.version = "1.0 \"rc\\1\"\nx",
                             .ready = false,
                             .nic_carrier = std::nullopt,
                             .datapath = std::nullopt,
                             .mode_families = {}};
    EXPECT_TRUE(has_line(format_metrics(snapshot), R"(bpfnet_build_info{version="1.0 \"rc\\1\"\nx"} 1)"))
        << format_metrics(snapshot);
}

// Before the datapath is attached only the loader's own families are shown, not counters at zero.
TEST(Metrics, NoDatapathYet) {
    MetricsSnapshot snapshot{
        .version = "0.1.0", .ready = false, .nic_carrier = std::nullopt, .datapath = std::nullopt, .mode_families = {}};
    std::string text = format_metrics(snapshot);
    EXPECT_TRUE(has_line(text, "bpfnet_loader_ready 0"));
    EXPECT_EQ(text.find("bpfnet_nic_carrier"), std::string::npos) << "the carrier is not followed yet";
    EXPECT_EQ(text.find("bpfnet_datapath_"), std::string::npos) << text;
    EXPECT_EQ(lines_of(text).size(), 6u) << text;
}

// No service IP and no conflict: those families are left out rather than shown without samples.
TEST(Metrics, EmptyFamiliesLeftOut) {
    MetricsSnapshot snapshot = known_snapshot();
    snapshot.datapath->service_ips.clear();
    snapshot.datapath->conflicts.clear();
    snapshot.datapath->heartbeat_age_seconds.reset();
    std::string text = format_metrics(snapshot);
    for (const char *name : {"bpfnet_service_ip_active", "bpfnet_conflict_info", "bpfnet_conflict_age_seconds",
                             "bpfnet_loader_heartbeat_age_seconds"})
        EXPECT_EQ(text.find(name), std::string::npos) << name;
    EXPECT_TRUE(has_line(text, "bpfnet_conflicts_total 2"));
}

TEST(Metrics, PromtoolAcceptsTheExposition) {
    if (!promtool_installed())
        GTEST_SKIP() << "promtool is not on PATH (Debian package prometheus)";
    for (const MetricsSnapshot &snapshot : {known_snapshot(), MetricsSnapshot{.version = "a\"b\\c\nd",
                                                              .ready = false,
                                                              .nic_carrier = false,
                                                              .datapath = std::nullopt,
                                                              .mode_families = {}}}) {
        std::string text = format_metrics(snapshot);
        std::string output;
        EXPECT_EQ(promtool_check(text, output), 0) << output << "\nfor:\n" << text;
        EXPECT_EQ(output, "") << "promtool lint findings:\n" << output;
    }
}

// A mode's own families (Kubernetes mode's bpfnet_k8s_*, k8s/metrics.cpp) come after the datapath's,
// through the same writer; standalone mode has none.
TEST(Metrics, ModeFamiliesFollowTheDatapaths) {
    MetricsSnapshot snapshot = known_snapshot();
    snapshot.mode_families = [](MetricsWriter &out) {
        out.family("bpfnet_test_mode_total", "counter", "A mode's family.");
        out.sample("bpfnet_test_mode_total", {{"resource", "x"}}, uint64_t{7});
    };
    std::string text = format_metrics(snapshot);
    const size_t mode = text.find("# HELP bpfnet_test_mode_total A mode's family.\n");
    ASSERT_NE(mode, std::string::npos) << text;
    EXPECT_GT(mode, text.find("bpfnet_datapath_packets_total"));
    EXPECT_TRUE(has_line(text, "bpfnet_test_mode_total{resource=\"x\"} 7"));
    EXPECT_EQ(format_metrics(known_snapshot()).find("bpfnet_test_mode_total"), std::string::npos);
    if (!promtool_installed())
        GTEST_SKIP() << "promtool is not on PATH (Debian package prometheus)";
    std::string output;
    EXPECT_EQ(promtool_check(text, output), 0) << output;
}

TEST(ListenAddress, Parsed) {
    ListenAddress a = parse_listen_address("0.0.0.0:9394");
    EXPECT_EQ(a.host, "0.0.0.0");
    EXPECT_EQ(a.port, 9394);
    ListenAddress b = parse_listen_address("[::1]:80");
    EXPECT_EQ(b.host, "::1");
    EXPECT_EQ(b.port, 80);
    EXPECT_EQ(parse_listen_address("localhost:1").host, "localhost");
}

TEST(ListenAddress, Rejected) {
    for (const char *bad :
         {"9394", ":9394", "0.0.0.0:", "0.0.0.0:0", "0.0.0.0:65536", "0.0.0.0:80x", "::1:80", "0.0.0.0:-1", "[]:80"})
        EXPECT_THROW(parse_listen_address(bad), std::invalid_argument) << bad;
}

// Not ready until told otherwise; a reason is one line, whatever the exception text held.
TEST(LoaderStatus, ReadinessAndReason) {
    LoaderStatus status;
    EXPECT_FALSE(status.ready());
    EXPECT_TRUE(status.not_ready_reason()->starts_with("starting"));
    status.set_ready();
    EXPECT_TRUE(status.ready());
    EXPECT_EQ(status.not_ready_reason(), std::nullopt);
    status.set_not_ready("config not applied: a\nb\r\nc");
    EXPECT_FALSE(status.ready());
    EXPECT_EQ(*status.not_ready_reason(), "config not applied: a b  c");
    EXPECT_EQ(status.maps(), nullptr);
}

// The provisioning NIC's carrier: a gauge once the loader follows it, and a reason for /readyz without it.
TEST(Metrics, NicCarrierIsAGaugeOnceFollowed) {
    MetricsSnapshot snapshot = known_snapshot();
    EXPECT_TRUE(has_line(format_metrics(snapshot), "bpfnet_nic_carrier 1")) << format_metrics(snapshot);
    snapshot.nic_carrier = false;
    EXPECT_TRUE(has_line(format_metrics(snapshot), "bpfnet_nic_carrier 0")) << format_metrics(snapshot);
}

TEST(LoaderStatus, NoCarrierIsAReasonNotToBeReady) {
    LoaderStatus status;
    EXPECT_FALSE(status.nic_carrier());
    EXPECT_FALSE(status.carrier_problem());
    status.set_nic_carrier("prov0", false);
    ASSERT_TRUE(status.nic_carrier());
    EXPECT_FALSE(*status.nic_carrier());
    ASSERT_TRUE(status.carrier_problem());
    EXPECT_NE(status.carrier_problem()->find("prov0 has no carrier"), std::string::npos) << *status.carrier_problem();
    status.set_nic_carrier("prov0", true);
    EXPECT_FALSE(status.carrier_problem());
}

} // namespace
} // namespace bpfnet
