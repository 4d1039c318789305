// Delivery through the node's routing (BPFNET_BACKEND_ROUTE): the listed port's packet, rewritten to the pod's
// address, goes where the node's FIB says. The FIB is the test's own: each case runs in a child process in a
// network namespace of its own (gtest's death-test fork), set up there with `ip` and sysctl as a node would
// be, so nothing of the machine's (or of the other cases') routing is read or changed. The packet enters by
// the namespace's loopback, as BPF_PROG_TEST_RUN's packets do. The pod, where a case needs one, is an address
// in a namespace of a process the case starts, behind a veth, its MAC learned by the node's kernel through
// ARP.
#include "maps/layout.hpp"
#include "packet6.hpp"
#include "table.hpp"

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

    // check in a namespace of its own made by `node`, the world's backend delivered through the node's routing.
    void routed(const std::string &node, const std::function<std::string()> &check) {
        in_own_namespace(node, [this, &check] {
            deliver_by_route();
            return check();
        });
    }

    // What a run left that the case did not expect, in words; empty when it is all as expected. counted: each
    // went up by one; uncounted: each stayed at 0.
    std::string expect_run(Program program, const Bytes &frame, int verdict, const std::optional<Bytes> &out,
                           const std::vector<bpfnet_counter> &counted,
                           const std::vector<bpfnet_counter> &uncounted = {}) {
        const RunResult result = run(program, frame);
        if (result.retval != verdict)
            return "verdict " + std::to_string(result.retval) + ", want " + std::to_string(verdict);
        if (out && result.out != *out)
            return "the frame out differs: " + describe_difference(result.out, *out);
        const std::vector<__u64> c = counters();
        for (bpfnet_counter counter : counted)
            if (c[counter] != 1)
                return std::string(counter_names[counter]) + " is " + std::to_string(c[counter]) + ", want 1";
        for (bpfnet_counter counter : uncounted)
            if (c[counter] != 0)
                return std::string(counter_names[counter]) + " is " + std::to_string(c[counter]) + ", want 0";
        return "";
    }
};

// A node that forwards (its IPv4 forwarding said explicitly: a new namespace may inherit the machine's), with
// the pod network on a veth whose host side holds the gateway address.
const std::string kForwardingNode = "ip link set lo up; "
                                    "sysctl -qw net.ipv4.conf.all.forwarding=1 net.ipv4.conf.lo.forwarding=1 "
                                    "net.ipv6.conf.all.forwarding=1; "
                                    "ip link add rt0 address 02:00:00:00:01:01 type veth peer name rt1; "
                                    "ip addr add 198.18.100.1/24 dev rt0; ip -6 addr add 2001:2:0:100::1/64 dev rt0 "
                                    "nodad; ip link set rt0 up; ";
// ... the pod's end of the veth down: its next hop never resolves (the first packets to a pod after it moved).
const std::string kUnresolvedPod = kForwardingNode + "ip link set rt1 up";
// ... the pod's end in a namespace of its own (a process the case starts, gone within 120 s), with the world's
// pod address and MAC, resolved by the node's kernel: a datagram to it makes the kernel ask by ARP. The process
// must outlive the case: when it goes, so do its namespace and the veth (10 s was once too short for this
// set-up at nice 19 beside CI's e2e suites: the route was gone before the datagram, "Network is unreachable").
const std::string kResolvedPod =
    kForwardingNode +
    "unshare --net sleep 120 </dev/null >/dev/null 2>&1 & pod=$!; "
    // its namespace exists once the process's differs from ours (a fixed pause raced under emulation)
    "for try in $(seq 100); do [ \"$(readlink /proc/$pod/ns/net)\" != \"$(readlink /proc/self/ns/net)\" ] && break; "
    "sleep 0.05; done; ip link set rt1 netns $pod; "
    "nsenter -t $pod -n sh -c 'ip link set rt1 address 02:00:00:00:01:02 up; ip addr add 198.18.100.2/24 dev rt1'; "
    "for try in $(seq 50); do echo > /dev/udp/198.18.100.2/9; ip neigh show 198.18.100.2 | grep -q lladdr && exit 0; "
    "sleep 0.1; done; exit 1";

// With a route and a resolved next hop: the frame gets the MACs the FIB gives (the pod's, the node's end of the
// veth: here the world's pod and veth MACs) and leaves by the route's device.
TEST_F(RouteDeliveryTest, ResolvedNextHopIsAddressedByTheFibAndRedirected) {
    routed(kResolvedPod, [this] {
        return expect_run(Program::TcNic, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 80})), kTcRedirect,
                          into_pod(Packet::tcp({host_ip, 40000}, {pod_ip, 8080})), {BPFNET_CTR_DNAT_SERVICE},
                          {BPFNET_CTR_ROUTE_TO_STACK, BPFNET_CTR_DROP_NO_ROUTE});
    });
}

// Forwarding off: the kernel would drop the rewritten packet without a word, so the datapath drops it and says
// why, and counts it as no steering.
TEST_F(RouteDeliveryTest, ForwardingOffIsDroppedAndCounted) {
    routed("ip link set lo up; sysctl -qw net.ipv4.conf.all.forwarding=0 net.ipv4.conf.lo.forwarding=0", [this] {
        return expect_run(Program::TcNic, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385})), kTcShot,
                          std::nullopt, {BPFNET_CTR_DROP_NO_ROUTE}, {BPFNET_CTR_DNAT_SERVICE});
    });
}

TEST_F(RouteDeliveryTest, ForwardingOffIsDroppedAndCountedIpv6) {
    routed("ip link set lo up; sysctl -qw net.ipv6.conf.all.forwarding=0 net.ipv6.conf.lo.forwarding=0", [this] {
        return expect_run(Program::TcNic,
                          Packet6::tcp({host_ip6, 40000}, {service_ip6, 6385}).macs(nic_mac, host_mac).bytes(), kTcShot,
                          std::nullopt, {BPFNET_CTR_DROP_NO_ROUTE}, {BPFNET_CTR_DNAT_SERVICE});
    });
}

// The route's next hop not resolved: the rewritten packet is handed on (the next program, then the stack, which
// resolves it and forwards), and what it teaches is learned as from any accepted packet.
TEST_F(RouteDeliveryTest, UnresolvedNextHopIsHandedOnRewritten) {
    routed(kUnresolvedPod, [this] {
        return expect_run(Program::TcNic, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 80})), kTcNext,
                          into_pod(Packet::tcp({host_ip, 40000}, {pod_ip, 8080})),
                          {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_ROUTE_TO_STACK});
    });
}

TEST_F(RouteDeliveryTest, UnresolvedNextHopIsHandedOnRewrittenIpv6) {
    routed(kUnresolvedPod, [this] {
        return expect_run(Program::TcNic,
                          Packet6::tcp({host_ip6, 40000}, {service_ip6, 80}).macs(nic_mac, host_mac).bytes(), kTcNext,
                          Packet6::tcp({host_ip6, 40000}, {pod_ip6, 8080}).macs(pod_mac, veth_mac).bytes(),
                          {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_ROUTE_TO_STACK});
    });
}

// A route that refuses the pod's address (unreachable; blackhole and prohibit alike): dropped and counted. (With
// no route at all the lookup cannot tell, and the stack answers: ICMP network unreachable.)
TEST_F(RouteDeliveryTest, RefusingRouteIsDroppedAndCounted) {
    routed("ip link set lo up; sysctl -qw net.ipv4.conf.all.forwarding=1 net.ipv4.conf.lo.forwarding=1; "
           "ip route add unreachable 198.18.100.0/24",
           [this] {
               return expect_run(Program::TcNic, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385})), kTcShot,
                                 std::nullopt, {BPFNET_CTR_DROP_NO_ROUTE}, {BPFNET_CTR_DNAT_SERVICE});
           });
}

// A route that leads back out of the device the packet came in by (the NIC: onto the LAN it came from) is no
// way to the pod: dropped and counted, never sent back.
TEST_F(RouteDeliveryTest, RouteBackOutOfTheNicIsDropped) {
    routed(kForwardingNode + "ip link set rt1 up; ip route add 198.18.100.2/32 dev lo", [this] {
        return expect_run(Program::TcNic, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385})), kTcShot,
                          std::nullopt, {BPFNET_CTR_DROP_NO_ROUTE}, {BPFNET_CTR_DNAT_SERVICE});
    });
}

} // namespace
} // namespace bpfnet::test
