// Shared addresses (BPFNET_SERVICE_SHARED, docs/design.md "Shared addresses"): an address of the node's that
// bpfnet does not own (the control plane's VIP, the node's own address), off the provisioning subnet, whose
// listed ports are steered to the backend while the node holds it. Its clients come from anywhere (behind
// routers), nothing is learned from them, and the pod's replies leave through the node's routing
// (bpf_redirect_neigh: the frame keeps its MACs here, the kernel addresses it after the program) when the node
// routes them out of the NIC; everything else sent to the address (its other ports, ARP, ICMP, a malformed
// packet) is the node's, and the same pod port's answers to the cluster's own clients are the CNI's. The replies'
// cases read the node's routing: each runs in a child in a network namespace of its own (gtest's death-test
// fork), set up there as a node is, as tests/bpf/route_delivery_test.cpp's do.
#include "packet6.hpp"
#include "table.hpp"

#include "maps/layout.hpp"

#include <functional>
#include <net/if.h>

namespace bpfnet::test {
namespace {

using namespace world;

const std::string vip = "198.19.0.5";      // the control plane's VIP, on the node's other network
const std::string client = "198.19.7.7";   // a BMC behind a router
const std::string vip6 = "2001:2:1::5";    // an IPv6 VIP, off the provisioning subnet
const std::string client6 = "2001:2:7::7"; // an IPv6 client behind a router
constexpr uint16_t kMedia = 6180, kWhoami = 7000, kWhoamiPod = 8080, kNodeApi = 6443;

// The VIP's listed ports (both families): virtual media, and one translated to another pod port.
void share_vip(DatapathMaps &maps) {
    add_shared_port(maps, vip, kMedia, kMedia, pod_ip);
    add_shared_port(maps, vip, kWhoami, kWhoamiPod, pod_ip);
    add_shared_port(maps, vip6, kMedia, kMedia, pod_ip6);
}

const Packet media_request = Packet::tcp({client, 40000}, {vip, kMedia});

std::vector<Row> rows() {
    return {
        {"tc nic: a routed client's request to the VIP's listed port: DNAT into the pod, the client's address kept",
         Program::TcNic,
         from_host(media_request),
         kTcRedirect,
         into_pod(Packet::tcp({client, 40000}, {pod_ip, kMedia})),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: a listed port with a target port: translated",
         Program::TcNic,
         from_host(Packet::tcp({client, 40001}, {vip, kWhoami})),
         kTcRedirect,
         into_pod(Packet::tcp({client, 40001}, {pod_ip, kWhoamiPod})),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: a host of the provisioning LAN to the VIP's listed port: DNAT too",
         Program::TcNic,
         from_host(Packet::tcp({host_ip, 40000}, {vip, kMedia})),
         kTcRedirect,
         into_pod(Packet::tcp({host_ip, 40000}, {pod_ip, kMedia})),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: the VIP's port not listed (the node's API server): the node's, untouched",
         Program::TcNic,
         from_host(Packet::tcp({client, 40000}, {vip, kNodeApi})),
         kTcNext,
         std::nullopt,
         {}},
        {"tc nic: the pod's own port on the VIP, not listed: the node's, untouched",
         Program::TcNic,
         from_host(Packet::tcp({client, 40000}, {vip, kWhoamiPod})),
         kTcNext,
         std::nullopt,
         {}},
        {"tc nic: UDP to the VIP's listed TCP port: the node's",
         Program::TcNic,
         from_host(Packet::udp({client, 40000}, {vip, kMedia})),
         kTcNext,
         std::nullopt,
         {}},
        {"tc nic: ping to the VIP: the node's",
         Program::TcNic,
         from_host(Packet::icmp_echo(client, vip)),
         kTcNext,
         std::nullopt,
         {}},
        {"tc nic: a fragment to the VIP's listed port: the node's (its stack reassembles, or refuses)",
         Program::TcNic,
         from_host(Packet::tcp({client, 40000}, {vip, kMedia}).more_fragments()),
         kTcNext,
         std::nullopt,
         {}},
        {"tc nic: from a loopback source to the VIP's listed port: a martian, the node's (its stack drops it)",
         Program::TcNic,
         from_host(Packet::tcp({"127.0.0.1", 40000}, {vip, kMedia})),
         kTcNext,
         std::nullopt,
         {}},
        {"tc nic: from the VIP itself to its listed port: the node's",
         Program::TcNic,
         from_host(Packet::tcp({vip, 40000}, {vip, kMedia})),
         kTcNext,
         std::nullopt,
         {}},
        {"tc nic: from a multicast source: the node's",
         Program::TcNic,
         from_host(Packet::tcp({"224.0.0.9", 40000}, {vip, kMedia})),
         kTcNext,
         std::nullopt,
         {}},
        {"tc nic: from IPv6 loopback to the IPv6 VIP's listed port: the node's",
         Program::TcNic,
         from_host6(Packet6::tcp({"::1", 40000}, {vip6, kMedia})),
         kTcNext,
         std::nullopt,
         {}},
        {"tc nic: who-has the VIP: the node's kernel answers, the datapath neither answers nor drops",
         Program::TcNic,
         arp(1, broadcast, host_mac, host_ip, zero_mac, vip),
         kTcNext,
         std::nullopt,
         {}},
        {"xdp: a request to the VIP's listed port: passed on to tc",
         Program::XdpNic,
         from_host(media_request),
         kXdpPass,
         std::nullopt,
         {BPFNET_CTR_PASS}},
        {"tc nic: the VIP's listed port (not held): no entries, the node's",
         Program::TcNic,
         from_host(media_request),
         kTcNext,
         std::nullopt,
         {}},
        {"tc nic: IPv6 client to the IPv6 VIP's listed port: NAT66 into the pod",
         Program::TcNic,
         from_host6(Packet6::tcp({client6, 40000}, {vip6, kMedia})),
         kTcRedirect,
         into_pod6(Packet6::tcp({client6, 40000}, {pod_ip6, kMedia})),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: IPv6 VIP's port not listed: the node's",
         Program::TcNic,
         from_host6(Packet6::tcp({client6, 40000}, {vip6, kNodeApi})),
         kTcNext,
         std::nullopt,
         {}},

        {"tc pod: the pod's own connection to a routed host: the CNI's, untouched",
         Program::TcPod,
         from_pod(Packet::tcp({pod_ip, 45000}, {client, kNodeApi})),
         kTcNext,
         std::nullopt,
         {}},
        {"tc pod: the pod's reply from a listed port (not held): the CNI's, untouched",
         Program::TcPod,
         from_pod(Packet::tcp({pod_ip, kMedia}, {client, 40000})),
         kTcNext,
         std::nullopt,
         {}},
    };
}

// Every row but the "(not held)" ones runs with the VIP shared, as the loader writes it while the node holds
// the address; those run without its entries, as when it does not.
std::vector<Row> held_rows() {
    std::vector<Row> all = rows();
    for (Row &row : all)
        if (row.name.find("(not held)") == std::string::npos)
            row.prepare = [](DatapathTest &t) {
                share_vip(t.maps());
            };
    return all;
}

INSTANTIATE_TEST_SUITE_P(Shared, DatapathTable, ::testing::ValuesIn(held_rows()), row_test_name);

// The pod on another node (BPFNET_SERVICE_VIA_NODE): the node holding the VIP hands the listed ports' packets
// to the pod's node as they came, a hop older (bpf_redirect_neigh toward it: the kernel writes the MACs after
// the program); that node steers the VIP's listed ports into the pod as the rows above show, held or not.
const std::string pod_node = "198.19.0.21";   // the pod's node, on the holder's network
const std::string pod_node6 = "2001:2:1::21"; // the same node's IPv6 address

void forward_vip(DatapathMaps &maps) {
    add_shared_port_via_node(maps, vip, kMedia, kMedia, pod_ip, pod_node);
    add_shared_port_via_node(maps, vip, kWhoami, kWhoamiPod, pod_ip, pod_node);
    add_shared_port_via_node(maps, vip6, kMedia, kMedia, pod_ip6, pod_node6);
}

std::vector<Row> via_node_rows() {
    std::vector<Row> forwarded = {
        {"tc nic: the VIP's listed port, its pod on another node: handed to that node as it came, a hop older",
         Program::TcNic,
         from_host(media_request),
         kTcRedirect,
         from_host(Packet(media_request).ttl(63)),
         {BPFNET_CTR_FORWARD_TO_NODE}},
        {"tc nic: a translated port, its pod on another node: handed on untranslated (the pod's node translates)",
         Program::TcNic,
         from_host(Packet::tcp({client, 40001}, {vip, kWhoami})),
         kTcRedirect,
         from_host(Packet::tcp({client, 40001}, {vip, kWhoami}).ttl(63)),
         {BPFNET_CTR_FORWARD_TO_NODE}},
        {"tc nic: to be handed to the pod's node with a TTL of 1: dropped, untouched",
         Program::TcNic,
         from_host(Packet(media_request).ttl(1)),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_HOP_LIMIT}},
        {"tc nic: with a TTL of 0: dropped",
         Program::TcNic,
         from_host(Packet(media_request).ttl(0)),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_HOP_LIMIT}},
        {"tc nic: the IPv6 VIP's listed port, its pod on another node: hop limit lowered, handed on",
         Program::TcNic,
         from_host6(Packet6::tcp({client6, 40000}, {vip6, kMedia})),
         kTcRedirect,
         from_host6(Packet6::tcp({client6, 40000}, {vip6, kMedia}).hop_limit(63)),
         {BPFNET_CTR_FORWARD_TO_NODE}},
        {"tc nic: IPv6 with a hop limit of 1: dropped",
         Program::TcNic,
         from_host6(Packet6::tcp({client6, 40000}, {vip6, kMedia}).hop_limit(1)),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_HOP_LIMIT}},
        {"tc nic: the VIP's port not listed, pods elsewhere: the node's",
         Program::TcNic,
         from_host(Packet::tcp({client, 40000}, {vip, kNodeApi})),
         kTcNext,
         std::nullopt,
         {}},
    };
    for (Row &row : forwarded)
        row.prepare = [](DatapathTest &t) {
            forward_vip(t.maps());
        };
    return forwarded;
}

INSTANTIATE_TEST_SUITE_P(SharedViaNode, DatapathTable, ::testing::ValuesIn(via_node_rows()), row_test_name);

class SharedAddressTest : public DatapathTest {
protected:
    // check in a namespace of its own made by `node`, with the world's NIC there being the link nic0 (its
    // ifindex written to the iface entry) and the VIP shared.
    void shared_in(const std::string &node, const std::function<std::string()> &check) {
        in_own_namespace(node, [this, &check] {
            bpfnet_iface iface = maps_->iface.lookup(0).value();
            iface.nic_ifindex = if_nametoindex("nic0");
            maps_->iface.update(0, iface);
            share_vip(*maps_);
            return check();
        });
    }

    // What a run left that the case did not expect, in words; empty when it is all as expected.
    std::string expect_run(const Bytes &frame, int verdict, const std::optional<Bytes> &out,
                           const std::vector<bpfnet_counter> &counted) {
        const std::vector<__u64> before = counters();
        const RunResult result = run(Program::TcPod, frame);
        if (result.retval != verdict)
            return "verdict " + std::to_string(result.retval) + ", want " + std::to_string(verdict);
        if (result.out != (out ? *out : frame))
            return "the frame out differs: " + describe_difference(result.out, out ? *out : frame);
        const std::vector<__u64> after = counters();
        for (size_t i = 0; i < after.size(); i++) {
            const __u64 want =
                std::find(counted.begin(), counted.end(), static_cast<bpfnet_counter>(i)) != counted.end() ? 1 : 0;
            if (after[i] - before[i] != want)
                return std::string(counter_names[i]) + " moved by " + std::to_string(after[i] - before[i]) + ", want " +
                       std::to_string(want);
        }
        return "";
    }
};

// A node as Kubernetes makes one: forwarding on; its NIC nic0 with its address on the node's network and the
// routed clients' networks behind it; its pod network on another link (pod0) with another pod there.
const std::string kNode =
    "ip link set lo up; "
    "sysctl -qw net.ipv4.conf.all.forwarding=1 net.ipv4.conf.lo.forwarding=1 "
    "net.ipv6.conf.all.forwarding=1; "
    "ip link add nic0 type veth peer name nic1; ip link set nic0 up; ip link set nic1 up; "
    "ip addr add 198.19.0.20/24 dev nic0; ip route add 198.19.7.0/24 via 198.19.0.1; "
    "ip -6 addr add 2001:2:1::20/64 dev nic0 nodad; ip -6 route add 2001:2:7::/64 via 2001:2:1::1; "
    "ip link add pod0 type veth peer name pod1; ip link set pod0 up; ip link set pod1 up; "
    "ip addr add 198.18.200.1/24 dev pod0; ";

// The pod's answer to a client that called the VIP from behind a router: SNATed to the VIP and handed to the
// node's routing and neighbour table (TC_ACT_REDIRECT of bpf_redirect_neigh; the kernel addresses the frame).
TEST_F(SharedAddressTest, ReplyToARoutedClientLeavesAsTheVip) {
    shared_in(kNode, [this] {
        return expect_run(from_pod(Packet::tcp({pod_ip, kMedia}, {client, 40000})), kTcRedirect,
                          from_pod(Packet::tcp({vip, kMedia}, {client, 40000})), {BPFNET_CTR_SNAT_REPLY});
    });
}

TEST_F(SharedAddressTest, ReplyFromATranslatedPortLeavesAsTheListedPort) {
    shared_in(kNode, [this] {
        return expect_run(from_pod(Packet::tcp({pod_ip, kWhoamiPod}, {client, 40001})), kTcRedirect,
                          from_pod(Packet::tcp({vip, kWhoami}, {client, 40001})), {BPFNET_CTR_SNAT_REPLY});
    });
}

TEST_F(SharedAddressTest, ReplyToAHostOfTheNodesNetworkLeavesAsTheVip) {
    shared_in(kNode, [this] {
        return expect_run(from_pod(Packet::tcp({pod_ip, kMedia}, {"198.19.0.77", 40000})), kTcRedirect,
                          from_pod(Packet::tcp({vip, kMedia}, {"198.19.0.77", 40000})), {BPFNET_CTR_SNAT_REPLY});
    });
}

TEST_F(SharedAddressTest, Ipv6ReplyLeavesAsTheIpv6Vip) {
    shared_in(kNode, [this] {
        return expect_run(from_pod6(Packet6::tcp({pod_ip6, kMedia}, {client6, 40000})), kTcRedirect,
                          from_pod6(Packet6::tcp({vip6, kMedia}, {client6, 40000})), {BPFNET_CTR_SNAT_REPLY});
    });
}

// The same pod port answering the cluster's own clients: another pod (baremetal-operator through Ironic's
// ClusterIP Service) and the node itself (kubelet's probes) never came through the NIC: the CNI's, untouched.
TEST_F(SharedAddressTest, AnswersToAnotherPodAreTheCnis) {
    shared_in(kNode, [this] {
        return expect_run(from_pod(Packet::tcp({pod_ip, kMedia}, {"198.18.200.5", 40000})), kTcNext, std::nullopt, {});
    });
}

TEST_F(SharedAddressTest, AnswersToTheNodeItselfAreTheCnis) {
    shared_in(kNode, [this] {
        return expect_run(from_pod(Packet::tcp({pod_ip, kMedia}, {"198.19.0.20", 40000})), kTcNext, std::nullopt, {});
    });
}

// Forwarding off on the pod's side: the node would not route the answer, so it is not taken.
TEST_F(SharedAddressTest, NoRouteOutOfTheNicIsNotTaken) {
    shared_in("ip link set lo up; ip link add nic0 type veth peer name nic1; ip link set nic0 up", [this] {
        return expect_run(from_pod(Packet::tcp({pod_ip, kMedia}, {client, 40000})), kTcNext, std::nullopt, {});
    });
}

// A request accepted on a shared address teaches the datapath nothing: the way back is the node's routing.
TEST_F(SharedAddressTest, AcceptedRequestTeachesNothing) {
    share_vip(*maps_);
    const RunResult result = run(Program::TcNic, from_host(media_request));
    ASSERT_EQ(result.retval, kTcRedirect);
    EXPECT_FALSE(maps_->neighbours.lookup(key_ip(client)).has_value());
    EXPECT_FALSE(maps_->neighbours_unconfirmed.lookup(key_ip(client)).has_value());
}

// The same listed port on the provisioning service IP keeps its own way: the shared flag is per entry.
TEST_F(SharedAddressTest, ServiceIpPortsKeepTheirWay) {
    share_vip(*maps_);
    const RunResult result = run(Program::TcNic, from_host(Packet::tcp({client, 40000}, {service_ip, 6385})));
    EXPECT_EQ(result.retval, kTcShot) << "a routed client to the provisioning service IP stays refused";
}

} // namespace
} // namespace bpfnet::test
