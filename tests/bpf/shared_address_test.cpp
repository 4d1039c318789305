// Shared addresses (BPFNET_SERVICE_SHARED, docs/design.md "Shared addresses"): an address of the node's that
// bpfnet does not own (the control plane's VIP, the node's own address), off the provisioning subnet, whose
// listed ports are steered to the backend while the node holds it. Its clients come from anywhere (behind
// routers), nothing is learned from them, and the pod's replies leave through the node's routing
// (bpf_redirect_neigh: the frame keeps its MACs here, the kernel addresses it after the program); everything
// else sent to the address (its other ports, ARP, ICMP, a malformed packet) is the node's.
#include "packet6.hpp"
#include "table.hpp"

#include "maps/layout.hpp"

namespace bpfnet::test {
namespace {

using namespace world;

const std::string vip = "198.19.0.5";      // the control plane's VIP, on the node's other network
const std::string client = "198.19.7.7";   // a BMC behind a router
const std::string vip6 = "2001:2:1::5";    // an IPv6 VIP, off the provisioning subnet
const std::string client6 = "2001:2:7::7"; // an IPv6 client behind a router
constexpr uint16_t kMedia = 6180, kWhoami = 7000, kWhoamiPod = 8080, kNodeApi = 6443;

// The VIP's listed ports (both families): virtual media, and one translated to another pod port.
void share_vip(DatapathTest &, DatapathMaps &maps) {
    add_shared_port(maps, vip, kMedia, kMedia, pod_ip);
    add_shared_port(maps, vip, kWhoami, kWhoamiPod, pod_ip);
    add_shared_port(maps, vip6, kMedia, kMedia, pod_ip6);
}

Bytes from_host6(Packet6 p) {
    return p.macs(nic_mac, host_mac).bytes();
}
Bytes into_pod6(Packet6 p) {
    return p.macs(pod_mac, veth_mac).bytes();
}
Bytes from_pod6(Packet6 p) {
    return p.macs(veth_mac, pod_mac).bytes();
}

class SharedTable : public DatapathTable {
protected:
    void SetUp() override {
        DatapathTable::SetUp();
        if (!IsSkipped() && GetParam().name.find("(not held)") == std::string::npos)
            share_vip(*this, *maps_);
    }
};

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

        {"tc pod: the pod's reply from a listed port: SNAT to the VIP, out by the node's routing",
         Program::TcPod,
         from_pod(Packet::tcp({pod_ip, kMedia}, {client, 40000})),
         kTcRedirect,
         from_pod(Packet::tcp({vip, kMedia}, {client, 40000})),
         {BPFNET_CTR_SNAT_REPLY}},
        {"tc pod: the reply from a translated port: SNAT to the VIP's listed port",
         Program::TcPod,
         from_pod(Packet::tcp({pod_ip, kWhoamiPod}, {client, 40001})),
         kTcRedirect,
         from_pod(Packet::tcp({vip, kWhoami}, {client, 40001})),
         {BPFNET_CTR_SNAT_REPLY}},
        {"tc pod: the reply to a host of the provisioning LAN: out by the node's routing too, nothing learned needed",
         Program::TcPod,
         from_pod(Packet::tcp({pod_ip, kMedia}, {unknown_host_ip, 40000})),
         kTcRedirect,
         from_pod(Packet::tcp({vip, kMedia}, {unknown_host_ip, 40000})),
         {BPFNET_CTR_SNAT_REPLY}},
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
        {"tc pod: IPv6 reply from a listed port: SNAT to the IPv6 VIP, out by the node's routing",
         Program::TcPod,
         from_pod6(Packet6::tcp({pod_ip6, kMedia}, {client6, 40000})),
         kTcRedirect,
         from_pod6(Packet6::tcp({vip6, kMedia}, {client6, 40000})),
         {BPFNET_CTR_SNAT_REPLY}},
    };
}

TEST_P(SharedTable, Row) {
    const Row &row = GetParam();
    if (row.prepare)
        row.prepare(*this);
    auto before = counters();
    RunResult result = run(row.program, row.input);
    if (result.refused)
        GTEST_SKIP() << "this kernel's BPF_PROG_TEST_RUN refuses a " << row.input.size() << "-byte frame";
    EXPECT_EQ(result.retval, row.verdict) << name(row.program);
    const Bytes &want = row.output ? *row.output : row.input;
    EXPECT_EQ(result.out, want) << describe_difference(result.out, want);
    auto after = counters();
    for (size_t i = 0; i < after.size(); i++) {
        uint64_t expected = row.counted.contains(static_cast<bpfnet_counter>(i)) ? 1 : 0;
        EXPECT_EQ(after[i] - before[i], expected) << "counter " << counter_names[i];
    }
}

INSTANTIATE_TEST_SUITE_P(Shared, SharedTable, ::testing::ValuesIn(rows()), row_test_name);

class SharedAddressTest : public DatapathTest {};

// A request accepted on a shared address teaches the datapath nothing: the way back is the node's routing.
TEST_F(SharedAddressTest, AcceptedRequestTeachesNothing) {
    share_vip(*this, *maps_);
    const RunResult result = run(Program::TcNic, from_host(media_request));
    ASSERT_EQ(result.retval, kTcRedirect);
    EXPECT_FALSE(maps_->neighbours.lookup(key_ip(client)).has_value());
    EXPECT_FALSE(maps_->neighbours_unconfirmed.lookup(key_ip(client)).has_value());
}

// The same listed port on the provisioning service IP keeps its own way: the shared flag is per entry.
TEST_F(SharedAddressTest, ServiceIpPortsKeepTheirWay) {
    share_vip(*this, *maps_);
    const RunResult result = run(Program::TcNic, from_host(Packet::tcp({client, 40000}, {service_ip, 6385})));
    EXPECT_EQ(result.retval, kTcShot) << "a routed client to the provisioning service IP stays refused";
}

} // namespace
} // namespace bpfnet::test
