// Loads bpfnet's BPF object (no attach, no pins) and runs its programs on test frames through
// BPF_PROG_TEST_RUN, with the maps set to a known "world" before each case.
#pragma once

#include "maps/datapath_maps.hpp"
#include "packet.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <vector>

struct bpfnet_bpf;
struct ring_buffer;

namespace bpfnet::test {

enum class Program { XdpNic, TcNic, TcPod };
const char *name(Program program);

// Verdicts as the kernel returns them.
inline constexpr int kXdpDrop = 1, kXdpPass = 2, kXdpTx = 3;
inline constexpr int kTcOk = 0, kTcShot = 2, kTcRedirect = 7;

// The world every case starts from (addresses from 198.18.0.0/15, the benchmarking range).
namespace world {
inline const Mac nic_mac = mac("02:00:00:00:00:01");
inline const Mac host_mac = mac("02:00:00:00:00:10"); // a bare-metal host the datapath already knows
inline const Mac pod_mac = mac("02:00:00:00:01:02");
inline const Mac veth_mac = mac("02:00:00:00:01:01"); // host side of the pod's veth
inline const Mac broadcast = mac("ff:ff:ff:ff:ff:ff");
inline const Mac zero_mac = mac("00:00:00:00:00:00");
inline const std::string service_ip = "198.18.0.2";
inline const std::string host_ip = "198.18.0.10";
inline const std::string unknown_host_ip = "198.18.0.11"; // on the LAN, never seen
inline const std::string other_lan_ip = "198.18.0.50";    // on the LAN, not a service IP
inline const std::string outside_ip = "198.19.0.1";       // not on the provisioning subnet
inline const std::string pod_ip = "198.18.100.2";
inline const std::string other_pod_ip = "198.18.100.3";
inline constexpr int nic_ifindex = 10;
inline constexpr int veth_ifindex = 20;
// A flow the reverse path recorded earlier: the pod's UDP port 33333 talks to host port 40000.
inline constexpr uint16_t flow_pod_port = 33333;
inline constexpr uint16_t flow_host_port = 40000;
} // namespace world

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
    void set_heartbeat_age_seconds(int seconds);
    void remove_backend();

protected:
    void SetUp() override;
    void TearDown() override;

    RunResult run(Program program, const Bytes &frame);
    std::vector<__u64> counters();
    std::vector<bpfnet_event> drain_events();

    std::unique_ptr<bpfnet_bpf, void (*)(bpfnet_bpf *)> skel_{nullptr, nullptr};
    std::optional<DatapathMaps> maps_;
    std::unique_ptr<ring_buffer, void (*)(ring_buffer *)> events_{nullptr, nullptr};
    std::vector<bpfnet_event> received_;
};

} // namespace bpfnet::test
