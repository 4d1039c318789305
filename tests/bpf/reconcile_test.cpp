// The loader's reconcile against real BPF maps: the first run fills them, a repeat writes nothing, a change
// writes only what changed, and learned state (flows) is never touched.
#include "bpfnet.skel.h"
#include "core/desired_state.hpp"
#include "standalone/config.hpp"
#include "tests/bpf/loaded_datapath.hpp"
#include "tests/bpf/packet.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace bpfnet {
namespace {

using test::ip;
using test::key_ip;

class ReconcileTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (geteuid() != 0)
            GTEST_SKIP() << "loading BPF maps needs root (label bpf)";
        skel_ = test::loaded_datapath();
        ASSERT_NE(skel_, nullptr);
        ASSERT_NO_THROW(test::reset_maps(*skel_)); // reconcile starts from freshly loaded, empty maps
        maps_.emplace(DatapathMaps::from_skeleton(*skel_));
        config_ = parse_config(R"(
interface: prov0
serviceIP: 198.18.0.2
subnet: 198.18.0.0/24
ports:
  - {name: ironic-api, protocol: tcp, port: 6385}
  - {name: tftp, protocol: udp, port: 69, kind: tftp}
backend:
  ip: 198.18.100.2
)",
                               "test.yaml");
        here_.ifindex = 20;
        here_.pod_mac = {2, 0, 0, 0, 1, 2};
        here_.veth_mac = {2, 0, 0, 0, 1, 1};
        here_.redirect_peer = true;
    }

    bpfnet_bpf *skel_ = nullptr;
    std::optional<DatapathMaps> maps_;
    Config config_;
    BackendLocation here_;
};

TEST_F(ReconcileTest, FirstRunFillsAndActivatesRepeatWritesNothing) {
    ReconcileReport first = reconcile(*maps_, desired_state(config_, here_));
    EXPECT_EQ(first.upserts, 1u + 2u + 2u + 1u); // service IP, services, backend ports, backend
    EXPECT_EQ(first.removals, 0u);
    ASSERT_EQ(first.activated.size(), 1u);
    EXPECT_EQ(first.activated[0], key_ip("198.18.0.2"));

    EXPECT_TRUE(first.deactivated.empty());

    ReconcileReport again = reconcile(*maps_, desired_state(config_, here_));
    EXPECT_EQ(again.upserts, 0u);
    EXPECT_EQ(again.removals, 0u);
    EXPECT_TRUE(again.activated.empty());
    EXPECT_TRUE(again.deactivated.empty());
}

// Source ranges land in the LPM trie (read back through the same diff), change by the difference, and go.
TEST_F(ReconcileTest, SourceRangesWrittenChangedAndRemoved) {
    ServiceSpec spec;
    spec.service_ip = key_ip("198.18.0.2");
    spec.ports = {{"http", Protocol::Tcp, 80, 8080, PortKind::Plain}};
    spec.source_ranges = {{key_ip("198.18.0.0"), 28}, {key_ip("10.1.0.0"), 16}};
    ReconcileReport first = reconcile(*maps_, desired_state({spec}));
    EXPECT_EQ(first.upserts, 1u + 1u + 3u); // service IP, service, three range entries
    EXPECT_EQ(maps_->source_ranges.entries().size(), 3u);
    EXPECT_EQ(reconcile(*maps_, desired_state({spec})).upserts, 0u);

    spec.source_ranges = {{key_ip("198.18.0.0"), 28}};
    ReconcileReport narrowed = reconcile(*maps_, desired_state({spec}));
    EXPECT_EQ(narrowed.upserts, 0u);
    EXPECT_EQ(narrowed.removals, 1u);

    spec.source_ranges.clear();
    ReconcileReport opened = reconcile(*maps_, desired_state({spec}));
    EXPECT_EQ(opened.removals, 2u);
    EXPECT_TRUE(maps_->source_ranges.entries().empty());
}

// The backend and the pod link its listed ports carry (two ports): nothing else.
TEST_F(ReconcileTest, BackendMovedToAnotherVethRewritesTheBackendAndItsPortsLinks) {
    reconcile(*maps_, desired_state(config_, here_));
    BackendLocation moved = here_;
    moved.ifindex = 21;
    ReconcileReport report = reconcile(*maps_, desired_state(config_, moved));
    EXPECT_EQ(report.upserts, 1u + 2u);
    EXPECT_EQ(report.removals, 0u);
    ASSERT_EQ(report.departed.size(), 1u);
    EXPECT_EQ(report.departed[0].ifindex, 20u);
    EXPECT_EQ(maps_->backends.lookup(key_ip("198.18.100.2"))->ifindex, 21u);
    for (const auto &[key, service] : maps_->services.entries())
        EXPECT_EQ(service.link.ifindex, 21u);
}

// An address the datapath learned as a host is forgotten when it becomes a service IP: the pod's packets to
// it are refused as a hairpin, never sent to the host that had it.
TEST_F(ReconcileTest, HostBecomingAServiceIpIsForgotten) {
    bpfnet_neighbour host{};
    host.mac[0] = 0x02;
    host.mac[5] = 0x10;
    maps_->neighbours.update(key_ip("198.18.0.2"), host);
    maps_->neighbours.update(key_ip("198.18.0.10"), host);
    reconcile(*maps_, desired_state(config_, here_));
    EXPECT_FALSE(maps_->neighbours.lookup(key_ip("198.18.0.2")).has_value());
    EXPECT_TRUE(maps_->neighbours.lookup(key_ip("198.18.0.10")).has_value());
}

TEST_F(ReconcileTest, BackendGoneDeactivatesAndKeepsLearnedFlows) {
    reconcile(*maps_, desired_state(config_, here_));
    bpfnet_flow_key flow{};
    flow.remote_ip = key_ip("198.18.0.10");
    flow.service_ip = key_ip("198.18.0.2");
    flow.remote_port_be = htons(9999);
    flow.service_port_be = htons(45000);
    flow.proto = BPFNET_PROTO_TCP;
    maps_->flows.update(flow, bpfnet_flow{key_ip("198.18.100.2"), htons(45000), 0});

    Config without = config_;
    without.backend.reset();
    ReconcileReport report = reconcile(*maps_, desired_state(without, std::nullopt));
    EXPECT_EQ(maps_->service_ips.lookup(key_ip("198.18.0.2"))->flags, 0u);
    EXPECT_EQ(report.deactivated, std::vector<bpfnet_ip>{key_ip("198.18.0.2")}); // its announcements end
    EXPECT_TRUE(report.activated.empty());
    EXPECT_TRUE(maps_->backends.entries().empty());
    EXPECT_TRUE(maps_->backend_ports.entries().empty());
    for (const auto &[key, service] : maps_->services.entries())
        EXPECT_EQ(service.backend_ip, bpfnet_ip{});
    EXPECT_EQ(report.departed.size(), 1u);
    EXPECT_TRUE(maps_->flows.lookup(flow).has_value()) << "reconcile must not touch learned flows";
}

} // namespace
} // namespace bpfnet
