// The loader's flow sweep (core/flow_sweep.hpp) against the datapath's real maps: idle flows go, flows
// written by a build without the flow clock are kept until the pod stamps them or the loader has run an idle
// timeout, each host's share count is written again from the table; and a host whose flows went idle
// confirms new ones again.
#include "core/flow_sweep.hpp"
#include "datapath_fixture.hpp"
#include "table.hpp"

#include <arpa/inet.h>

namespace bpfnet::test {
namespace {

using namespace world;

constexpr uint16_t kIdle = 100;
constexpr FlowSweepRule kEveryHost{.idle = kIdle, .swept_from = 1, .unstamped_idle = false};

bpfnet_flow_key flow_of(const std::string &host, uint16_t host_port, uint16_t pod_port) {
    return flow_key(host, host_port, pod_port, IPPROTO_UDP);
}

class FlowSweep : public DatapathTest {
protected:
    void add_flow(const bpfnet_flow_key &key, uint16_t seen) {
        maps_->flows.update(key, bpfnet_flow{key_ip(pod_ip), key.service_port_be, seen});
    }
    std::optional<__u32> share(const std::string &host) {
        auto entry = maps_->flow_shares.lookup(key_ip(host));
        return entry ? std::optional(entry->confirmed) : std::nullopt;
    }
};

TEST_F(FlowSweep, IdleFlowsGoAndEachHostsShareIsCountedAgain) {
    const uint16_t now = 1000;
    // The world's flow goes: this case writes its own.
    for (const auto &[key, flow] : maps_->flows.entries())
        maps_->flows.erase(key);
    add_flow(flow_of(host_ip, 2070, 50001), now - 10);                  // in use
    add_flow(flow_of(host_ip, 2070, 50002), now - kIdle - 1);           // idle
    add_flow(flow_of(other_lan_ip, 2070, 50003), now - kIdle);          // at the limit: kept
    add_flow(flow_of(unknown_host_ip, 2070, 50004), 0);                 // from a build without the clock
    maps_->flow_shares.update(key_ip(host_ip), bpfnet_flow_share{7});   // drifted up (the LRU evicted some)
    maps_->flow_shares.update(key_ip(client_ip), bpfnet_flow_share{3}); // a host with no flow left

    FlowSweepReport report = sweep_flows(*maps_, now, kEveryHost);

    EXPECT_EQ(report.removed, 1u);
    EXPECT_EQ(report.unstamped, 1u);
    EXPECT_EQ(report.kept, 3u);
    EXPECT_EQ(report.hosts, 3u);
    EXPECT_FALSE(maps_->flows.lookup(flow_of(host_ip, 2070, 50002)).has_value());
    EXPECT_TRUE(maps_->flows.lookup(flow_of(host_ip, 2070, 50001)).has_value());
    auto unstamped = maps_->flows.lookup(flow_of(unknown_host_ip, 2070, 50004));
    ASSERT_TRUE(unstamped.has_value()) << "no age known yet: kept";
    EXPECT_EQ(unstamped->seen, 0) << "the sweep writes no flow";
    EXPECT_EQ(share(host_ip), 1u);
    EXPECT_EQ(share(other_lan_ip), 1u);
    EXPECT_EQ(share(unknown_host_ip), 1u);
    EXPECT_FALSE(share(client_ip).has_value());

    // A second sweep at the same time changes nothing.
    report = sweep_flows(*maps_, now, kEveryHost);
    EXPECT_EQ(report.removed, 0u);
    EXPECT_EQ(report.kept, 3u);

    // An idle timeout after the loader started, a flow still unstamped is idle: the pod sent nothing on it.
    FlowSweepRule later = kEveryHost;
    later.unstamped_idle = true;
    report = sweep_flows(*maps_, now, later);
    EXPECT_EQ(report.removed, 1u);
    EXPECT_FALSE(maps_->flows.lookup(flow_of(unknown_host_ip, 2070, 50004)).has_value());
    EXPECT_FALSE(share(unknown_host_ip).has_value());
}

// The pod's packet on a flow of a build without the clock stamps it (so the sweep can judge its age).
TEST_F(FlowSweep, ThePodsPacketStampsAnUnstampedFlow) {
    auto key = flow_of(host_ip, flow_host_port, flow_pod_port); // the world's flow, written with seen 0
    ASSERT_EQ(maps_->flows.lookup(key)->seen, 0);
    run(Program::TcPod, from_pod(Packet::udp({pod_ip, flow_pod_port}, {host_ip, flow_host_port})));
    EXPECT_NE(maps_->flows.lookup(key)->seen, 0);
}

// A host holding fewer flows than swept_from keeps its idle ones (a connection the pod keeps open for an
// hour, whose host then speaks first); from swept_from on, its idle ones go and its used ones stay.
TEST_F(FlowSweep, OnlyAHostHoldingHalfItsShareLosesItsIdleFlows) {
    const uint16_t now = 1000;
    add_flow(flow_of(other_lan_ip, 2070, 50001), now - kIdle - 1);
    add_flow(flow_of(other_lan_ip, 2070, 50002), now - 1);
    const FlowSweepRule from_three{.idle = kIdle, .swept_from = 3, .unstamped_idle = false};
    sweep_flows(*maps_, now, from_three);
    EXPECT_TRUE(maps_->flows.lookup(flow_of(other_lan_ip, 2070, 50001)).has_value());
    EXPECT_EQ(share(other_lan_ip), 2u);

    add_flow(flow_of(other_lan_ip, 2070, 50003), now - 1);
    FlowSweepReport report = sweep_flows(*maps_, now, from_three);
    EXPECT_EQ(report.removed, 1u);
    EXPECT_FALSE(maps_->flows.lookup(flow_of(other_lan_ip, 2070, 50001)).has_value());
    EXPECT_TRUE(maps_->flows.lookup(flow_of(other_lan_ip, 2070, 50002)).has_value());
    EXPECT_EQ(share(other_lan_ip), 2u);
}

// The clock wraps every 2^16 units: a flow stamped just before the wrap is as young as it is.
TEST_F(FlowSweep, AgesAcrossTheClocksWrap) {
    add_flow(flow_of(host_ip, 2070, 50001), 65530);
    add_flow(flow_of(host_ip, 2070, 50002), 65000);
    add_flow(flow_of(host_ip, 2070, 50003), 6); // stamped after the sweep read its clock
    sweep_flows(*maps_, 5, kEveryHost);
    EXPECT_TRUE(maps_->flows.lookup(flow_of(host_ip, 2070, 50001)).has_value());  // 11 units old
    EXPECT_FALSE(maps_->flows.lookup(flow_of(host_ip, 2070, 50002)).has_value()); // 541 units old
    EXPECT_TRUE(maps_->flows.lookup(flow_of(host_ip, 2070, 50003)).has_value());  // newer than the clock: fresh
    EXPECT_EQ(flow_age(6, 5), 0);
    EXPECT_EQ(flow_age(65530, 5), 11);
}

// A host that reached its share and stopped (its flows idle) gets its share back with the sweep: an honest
// host's flows over days never lock it out of flows.
TEST_F(FlowSweep, AHostWhoseFlowsWentIdleConfirmsFlowsAgain) {
    const Mac mac_of_host = mac("02:00:00:00:00:66");
    const std::string &host = unknown_host_ip;
    run(Program::XdpNic, arp(1, broadcast, mac_of_host, host, zero_mac, service_ip));
    auto open_and_answer = [&](uint16_t pod_port) {
        run(Program::TcPod, from_pod(Packet::udp({pod_ip, pod_port}, {host, 2070})));
        return run(Program::TcNic,
                   Packet::udp({host, 2070}, {service_ip, pod_port}).macs(nic_mac, mac_of_host).bytes());
    };
    for (uint16_t i = 0; i < BPFNET_MAX_FLOWS_PER_HOST; i++)
        ASSERT_EQ(open_and_answer(static_cast<uint16_t>(20000 + i)).retval, kTcRedirect);
    EXPECT_EQ(share(host), __u32{BPFNET_MAX_FLOWS_PER_HOST});
    EXPECT_EQ(open_and_answer(30000).retval, kTcRedirect);
    EXPECT_EQ(counters()[BPFNET_CTR_FLOW_OVER_SHARE], 1u) << "at its share, the flow stays unconfirmed";

    // The datapath stamped the flows with the flow clock; the sweep runs later than they are idle.
    const uint16_t later = static_cast<uint16_t>(flow_clock_now() + flow_clock_units(kFlowIdleTimeout) + 2);
    FlowSweepReport report = sweep_flows(*maps_, later, {.idle = flow_clock_units(kFlowIdleTimeout)});
    EXPECT_GE(report.removed, size_t{BPFNET_MAX_FLOWS_PER_HOST});
    EXPECT_FALSE(share(host).has_value());

    const __u64 confirmed_before = counters()[BPFNET_CTR_FLOW_CONFIRMED];
    EXPECT_EQ(open_and_answer(30001).retval, kTcRedirect);
    EXPECT_EQ(counters()[BPFNET_CTR_FLOW_CONFIRMED], confirmed_before + 1);
    EXPECT_EQ(share(host), 1u);
}

// The flow clock the loader reads is the one the datapath stamps with.
TEST_F(FlowSweep, TheLoadersClockIsTheDatapaths) {
    const uint16_t before = flow_clock_now();
    run(Program::TcPod, from_pod(Packet::udp({pod_ip, 45000}, {host_ip, 2070})));
    const uint16_t after = flow_clock_now();
    auto flow = maps_->flows_unconfirmed.lookup(flow_of(host_ip, 2070, 45000));
    ASSERT_TRUE(flow.has_value());
    EXPECT_LE(static_cast<uint16_t>(flow->seen - before), static_cast<uint16_t>(after - before + 1));
}

} // namespace
} // namespace bpfnet::test
