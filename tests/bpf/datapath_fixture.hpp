// Runs bpfnet's BPF programs (loaded once per process, no attach, no pins) on test frames through
// BPF_PROG_TEST_RUN, with the maps set to a known "world" before each case.
#pragma once

#include "maps/datapath_maps.hpp"
#include "packet.hpp"
#include "world.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct bpfnet_bpf;
struct ring_buffer;

namespace bpfnet::test {

enum class Program { XdpNic, TcNic, TcPod };
const char *name(Program program);

// Verdicts as the kernel returns them.
inline constexpr int kXdpDrop = 1, kXdpPass = 2, kXdpTx = 3;
// kTcNext: TC_ACT_UNSPEC, "not ours, the next program decides" (TCX_NEXT under tcx).
inline constexpr int kTcNext = -1, kTcShot = 2, kTcRedirect = 7;

// Kernels refuse BPF_PROG_TEST_RUN on frames shorter than some minimum (6.18: Ethernet + IPv4 header for TC,
// Ethernet for XDP). Such runts are then reported as refused rather than run.
inline constexpr size_t kMinimumTestRunFrame = 34;

struct RunResult {
    int retval = -1;
    Bytes out;
    bool refused = false; // the kernel would not run the program on this frame
};

class DatapathTest : public ::testing::Test {
public:
    // Changes to the world, for the cases that need one.
    void set_service_ip_active(bool active);
    void set_service_ip6_active(bool active);
    void set_heartbeat_age_seconds(int seconds);
    // A stopped loader's grace: the heartbeat written `seconds` into the future (leave_with_grace).
    void set_heartbeat_grace_seconds(int seconds);
    // The service IP's source ranges, as the loader writes them (core/desired_state.cpp): "a.b.c.d/len" each.
    // The ranges (either family) of one service address, as desired_state() writes them.
    void set_source_ranges(const std::vector<std::string> &ranges, const std::string &service_ip = world::service_ip);
    void remove_backend();
    // Runs a frame for the state it leaves (a flow the pod opened, say), before the frame a case is about.
    void deliver(Program program, const Bytes &frame) { run(program, frame); }
    void set_backend_mtu(uint16_t mtu);
    // The world's maps, for a change a row's prepare makes that none of the above names.
    DatapathMaps &maps() { return *maps_; }

protected:
    void SetUp() override;
    void TearDown() override;
    void set_active_flag(const std::string &service_ip, bool active);

    RunResult run(Program program, const Bytes &frame);
    std::vector<__u64> counters();
    // Runs check in a child (gtest's death-test fork) in a network namespace of its own, made by `node` (shell
    // commands making the node's links, routes and sysctls there), for the cases that read the node's routing
    // (bpf_fib_lookup): nothing of the machine's routing is read or changed. check returns what went wrong,
    // empty when nothing did; the case fails with it.
    void in_own_namespace(const std::string &node, const std::function<std::string()> &check);
    std::vector<bpfnet_event> drain_events();

    bpfnet_bpf *skel_ = nullptr; // loaded once per process (loaded_datapath.hpp), maps reset per case
    std::optional<DatapathMaps> maps_;
    std::unique_ptr<ring_buffer, void (*)(ring_buffer *)> events_{nullptr, nullptr};
    std::vector<bpfnet_event> received_;
};

} // namespace bpfnet::test
