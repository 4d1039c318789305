// Delivery through the node's routing (BPFNET_BACKEND_ROUTE): the listed port's packet, rewritten to the pod's
// address, goes where the node's FIB says. The FIB is the test's own: each case runs in a child process in a
// network namespace of its own (gtest's death-test fork), set up there with `ip` and sysctl as a node would
// be, so nothing of the machine's (or of the other cases') routing is read or changed. The packet enters by
// the namespace's loopback, as BPF_PROG_TEST_RUN's packets do. The resolved next hop (a frame addressed by
// the FIB and redirected) is path_cost's route path, which refuses to measure any other verdict, and the
// e2e walk's (e2e_pxe_walk_bridge_route).
#include "maps/layout.hpp"
#include "packet6.hpp"
#include "table.hpp"

#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace bpfnet::test {
namespace {

using namespace world;

class RouteDeliveryTest : public DatapathTest {
protected:
    // The world's backend (both families) delivered through the node's routing, as the loader writes a backend
    // whose delivery is route (its entry's flag, and each listed port's copy of it).
    void deliver_by_route() {
        for (const std::string &pod : {pod_ip, pod_ip6}) {
            bpfnet_backend backend = maps_->backends.lookup(key_ip(pod)).value();
            backend.flags = BPFNET_BACKEND_ROUTE;
            maps_->backends.update(key_ip(pod), backend);
        }
        derive_loader_fields(*maps_);
    }

    // Runs check in a child in a network namespace of its own, after `node` (shell commands making the node's
    // routing there); check returns what went wrong, empty when nothing did.
    void in_own_namespace(const std::string &node, const std::function<std::string()> &check) {
        GTEST_FLAG_SET(death_test_style, "fast");
        EXPECT_EXIT(
            {
                if (unshare(CLONE_NEWNET) != 0 || std::system(("set -e; " + node).c_str()) != 0) {
                    std::fprintf(stderr, "cannot make the node's namespace\n");
                    std::_Exit(2);
                }
                deliver_by_route();
                const std::string problem = check();
                if (!problem.empty())
                    std::fprintf(stderr, "%s\n", problem.c_str());
                std::_Exit(problem.empty() ? 0 : 1);
            },
            ::testing::ExitedWithCode(0), "");
    }

    // What a run left that the case did not expect, in words; empty when it is all as expected.
    std::string expect_run(Program program, const Bytes &frame, int verdict, const std::optional<Bytes> &out,
                           const std::vector<bpfnet_counter> &counted) {
        const RunResult result = run(program, frame);
        if (result.retval != verdict)
            return "verdict " + std::to_string(result.retval) + ", want " + std::to_string(verdict);
        if (out && result.out != *out)
            return "the frame out differs: " + describe_difference(result.out, *out);
        const std::vector<__u64> c = counters();
        for (bpfnet_counter counter : counted)
            if (c[counter] != 1)
                return std::string(counter_names[counter]) + " is " + std::to_string(c[counter]) + ", want 1";
        return "";
    }
};

constexpr int kTcOk = 0;
// A node that forwards, with the pod network on a veth (its host side holding the gateway address) whose next
// hop for the pod is not resolved yet: the first packets to a pod after it moved.
const std::string kForwardingNode = "ip link set lo up; "
                                    "sysctl -qw net.ipv4.conf.all.forwarding=1 net.ipv4.conf.lo.forwarding=1 "
                                    "net.ipv6.conf.all.forwarding=1; "
                                    "ip link add rt0 type veth peer name rt1; "
                                    "ip addr add 198.18.100.1/24 dev rt0; ip -6 addr add 2001:2:0:100::1/64 dev rt0 "
                                    "nodad; ip link set rt1 up; ip link set rt0 up";

// Forwarding off (a new namespace's default): the kernel would drop the rewritten packet without a word, so the
// datapath drops it and says why.
TEST_F(RouteDeliveryTest, ForwardingOffIsDroppedAndCounted) {
    in_own_namespace("ip link set lo up", [this] {
        return expect_run(Program::TcNic, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385})), kTcShot,
                          std::nullopt, {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_DROP_NO_ROUTE});
    });
}

TEST_F(RouteDeliveryTest, ForwardingOffIsDroppedAndCountedIpv6) {
    in_own_namespace("ip link set lo up", [this] {
        return expect_run(Program::TcNic,
                          Packet6::tcp({host_ip6, 40000}, {service_ip6, 6385}).macs(nic_mac, host_mac).bytes(), kTcShot,
                          std::nullopt, {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_DROP_NO_ROUTE});
    });
}

// The route's next hop not resolved: the rewritten packet goes to the stack, which resolves it and forwards.
TEST_F(RouteDeliveryTest, UnresolvedNextHopGoesToTheStackRewritten) {
    in_own_namespace(kForwardingNode, [this] {
        return expect_run(Program::TcNic, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 80})), kTcOk,
                          into_pod(Packet::tcp({host_ip, 40000}, {pod_ip, 8080})),
                          {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_ROUTE_TO_STACK});
    });
}

TEST_F(RouteDeliveryTest, UnresolvedNextHopGoesToTheStackRewrittenIpv6) {
    in_own_namespace(kForwardingNode, [this] {
        return expect_run(Program::TcNic,
                          Packet6::tcp({host_ip6, 40000}, {service_ip6, 80}).macs(nic_mac, host_mac).bytes(), kTcOk,
                          Packet6::tcp({host_ip6, 40000}, {pod_ip6, 8080}).macs(pod_mac, veth_mac).bytes(),
                          {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_ROUTE_TO_STACK});
    });
}

// A route that refuses the pod's address (unreachable; blackhole and prohibit alike): dropped and counted. (With
// no route at all the lookup cannot tell, and the stack answers: ICMP network unreachable.)
TEST_F(RouteDeliveryTest, NoRouteIsDroppedAndCounted) {
    in_own_namespace("ip link set lo up; sysctl -qw net.ipv4.conf.all.forwarding=1 net.ipv4.conf.lo.forwarding=1; "
                     "ip route add unreachable 198.18.100.0/24",
                     [this] {
                         return expect_run(Program::TcNic, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385})),
                                           kTcShot, std::nullopt, {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_DROP_NO_ROUTE});
                     });
}

} // namespace
} // namespace bpfnet::test
