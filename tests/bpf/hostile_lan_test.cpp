// A hostile LAN (docs/design.md, "Trust model"): any host may send any frame, and none may change where the
// datapath sends another host's traffic. Each case is a frame a host on the LAN can send, with what it
// must not achieve; the rows check verdicts and counters, the sequences what the maps remember afterwards.
#include "packet6.hpp"
#include "table.hpp"

#include <arpa/inet.h>

#include <algorithm>

namespace bpfnet::test {
namespace {

using namespace world;

const Mac spoofer_mac = mac("02:00:00:00:00:66");

// The frame of the report: a TCP SYN from "198.18.0.10" (the known host) to port 22 of the service IP (not
// listed), sent by another machine (02:00:00:00:00:66).
const char *const kSpoofedSynToUnlistedPort =
    "02000000000102000000006608004500002e4242400040066c57c612000ac61200029c40001600001000000020005002ffff2902"
    "00006270666e6574";

// Issue 33's frames where the code and docs/design.md parted ways. A port unreachable from 203.0.113.1 (off the
// provisioning subnet, another MAC) quoting the recorded flow's datagram: dropped as off-subnet, never into the
// pod.
const char *const kOffSubnetIcmpErrorAboutFlow =
    "020000000001020000000066080045000048424200004001365dcb007101c612000203038957000000004500002c4242400040116c4e"
    "c6120002c612000a82359c4000184b0d41414141414141414141414141414141";
// The pod's port unreachable addressed to the service IP, quoting a host's segment to port 6385 (on the pod's
// veth): a hairpin, not a neighbour miss.
const char *const kPodIcmpErrorToServiceIp =
    "020000000101020000000102080045000054424200004001483ec6126402c61200020303ed580000000045000038424240004006084d"
    "c612000ac61264029c4018f100001000000020005010ffffd057000041414141414141414141414141414141";

Bytes tftp_read_request(const std::string &from_ip, const Mac &from_mac, uint16_t port = 2070) {
    std::string request = std::string("\0\1", 2) + "pxelinux.0" + '\0' + "octet" + '\0';
    return Packet::udp({from_ip, port}, {service_ip, 69}).payload(request).macs(nic_mac, from_mac).bytes();
}

Bytes renewal_from(const std::string &client) {
    Dhcp d;
    d.chaddr = client_mac;
    d.ciaddr = client;
    d.option(53, Bytes{3});
    return Packet::udp({client, 68}, {service_ip, 67}).payload(d.bytes()).macs(nic_mac, client_mac).bytes();
}

Bytes discover() {
    Dhcp d;
    d.chaddr = client_mac;
    d.option(53, Bytes{1});
    return Packet::udp({"0.0.0.0", 68}, {broadcast_ip, 67}).payload(d.bytes()).macs(broadcast, client_mac).bytes();
}

void stale_heartbeat(DatapathTest &d) {
    d.set_heartbeat_age_seconds(60);
}

std::vector<Row> rows() {
    const Bytes from_outside = from_host(Packet::tcp({outside_ip, 40000}, {service_ip, 6385}).tcp_flags(0x02));
    return {
        {"the report's spoofed SYN to an unlisted port is dropped by xdp",
         Program::XdpNic,
         from_hex(kSpoofedSynToUnlistedPort),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_NOT_ALLOWED}},
        {"the report's spoofed SYN to an unlisted port is dropped by tc",
         Program::TcNic,
         from_hex(kSpoofedSynToUnlistedPort),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_NOT_ALLOWED}},
        {"xdp: the report's ICMP error from off the subnet about a recorded flow is dropped (off subnet)",
         Program::XdpNic,
         from_hex(kOffSubnetIcmpErrorAboutFlow),
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_OFF_SUBNET}},
        {"tc nic: the report's ICMP error from off the subnet about a recorded flow is dropped (off subnet)",
         Program::TcNic,
         from_hex(kOffSubnetIcmpErrorAboutFlow),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_OFF_SUBNET}},
        {"tc pod: the report's pod ICMP error to the service IP is a hairpin drop, no neighbour miss",
         Program::TcPod,
         from_hex(kPodIcmpErrorToServiceIp),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_HAIRPIN}},
        {"a spoofed TFTP request from a known host's address is served, the host's MAC is kept",
         Program::TcNic,
         tftp_read_request(host_ip, spoofer_mac),
         kTcRedirect,
         into_pod(Packet::udp({host_ip, 2070}, {pod_ip, 69})
                      .payload(std::string("\0\1", 2) + "pxelinux.0" + '\0' + "octet" + '\0')),
         {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_NEIGHBOUR_KEPT}},
        {"a TFTP request from a broadcast source MAC is served, the MAC never learned",
         Program::TcNic,
         tftp_read_request(unknown_host_ip, broadcast),
         kTcRedirect,
         into_pod(Packet::udp({unknown_host_ip, 2070}, {pod_ip, 69})
                      .payload(std::string("\0\1", 2) + "pxelinux.0" + '\0' + "octet" + '\0')),
         {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_NEIGHBOUR_REFUSED}},
        {"xdp: from off the provisioning subnet to a listed port: dropped, there is no way back",
         Program::XdpNic,
         from_outside,
         kXdpDrop,
         std::nullopt,
         {BPFNET_CTR_DROP_OFF_SUBNET}},
        {"tc nic: from off the provisioning subnet to a listed port: dropped",
         Program::TcNic,
         from_outside,
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DROP_OFF_SUBNET}},
        {"broadcast DISCOVER while the loader's heartbeat is stale: not relayed",
         Program::TcNic,
         discover(),
         kTcNext,
         std::nullopt,
         {BPFNET_CTR_DHCP_STALE_HEARTBEAT},
         stale_heartbeat},
        {"unicast renewal while the loader's heartbeat is stale: not relayed",
         Program::TcNic,
         renewal_from(client_ip),
         kTcShot,
         std::nullopt,
         {BPFNET_CTR_DHCP_STALE_HEARTBEAT},
         stale_heartbeat},
    };
}

INSTANTIATE_TEST_SUITE_P(HostileLan, DatapathTable, ::testing::ValuesIn(rows()), row_test_name);

class HostileLan : public DatapathTest {
protected:
    std::optional<Mac> neighbour(const std::string &address) {
        auto entry = maps_->neighbours.lookup(key_ip(address));
        if (!entry)
            return std::nullopt;
        Mac out;
        std::copy(entry->mac, entry->mac + 6, out.begin());
        return out;
    }
    bool confirmed(const bpfnet_flow_key &key) { return maps_->flows.lookup(key).has_value(); }
    bool unconfirmed(const bpfnet_flow_key &key) { return maps_->flows_unconfirmed.lookup(key).has_value(); }
};

// The report's frame, through both NIC programs: dropped, and the host it names still has its own MAC.
TEST_F(HostileLan, ADroppedFrameChangesNoNeighbour) {
    Bytes frame = from_hex(kSpoofedSynToUnlistedPort);
    EXPECT_EQ(run(Program::XdpNic, frame).retval, kXdpDrop);
    EXPECT_EQ(run(Program::TcNic, frame).retval, kTcShot);
    EXPECT_EQ(neighbour(host_ip), host_mac);
}

// An accepted packet may add a host the datapath has not seen, never move one it knows: a spoofed TFTP
// request in the name of 198.18.0.10 must not send the pod's answers (the transfer) to the spoofer.
TEST_F(HostileLan, AnAcceptedPacketAddsANewHostButNeverMovesAKnownOne) {
    EXPECT_EQ(run(Program::TcNic, tftp_read_request(host_ip, spoofer_mac)).retval, kTcRedirect);
    EXPECT_EQ(neighbour(host_ip), host_mac);
    auto data = run(Program::TcPod, from_pod(Packet::udp({pod_ip, 51000}, {host_ip, 2070})));
    EXPECT_EQ(data.retval, kTcRedirect);
    Bytes want = to_host(Packet::udp({service_ip, 51000}, {host_ip, 2070}), host_mac);
    EXPECT_EQ(data.out, want) << describe_difference(data.out, want);

    EXPECT_TRUE(drain_events().empty()) << "nothing new learned, nothing to check";

    // A host never seen is added, and the loader is asked to check it by ARP: the host's answer (ARP may
    // change an entry) corrects a packet sent in its name by another machine.
    Mac newcomer = mac("02:00:00:00:00:77");
    EXPECT_EQ(run(Program::TcNic, tftp_read_request(unknown_host_ip, newcomer)).retval, kTcRedirect);
    EXPECT_EQ(neighbour(unknown_host_ip), newcomer);
    auto events = drain_events();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, BPFNET_EVENT_NEIGHBOUR_VERIFY);
    EXPECT_EQ(events[0].ip, key_ip(unknown_host_ip));
    EXPECT_EQ(events[0].service_ip, key_ip(service_ip));
    Mac real = mac("02:00:00:00:00:78");
    run(Program::XdpNic, arp(2, nic_mac, real, unknown_host_ip, nic_mac, service_ip)); // the check's answer
    EXPECT_EQ(neighbour(unknown_host_ip), real);
}

// Only requests and replies tell where a host is, as for the kernel's ARP: a frame of another opcode (RARP's
// 3 and 4, or nonsense), which the kernel ignores, moves nobody and claims nothing. Found by the fuzzer.
TEST_F(HostileLan, OnlyArpRequestsAndRepliesMoveAHost) {
    Mac spoofer = mac("02:00:00:00:00:66");
    for (int op : {0, 3, 4, 8, 0x2000}) {
        auto opcode = static_cast<uint16_t>(op);
        EXPECT_EQ(run(Program::XdpNic, arp(opcode, broadcast, spoofer, host_ip, zero_mac, service_ip)).retval,
                  kXdpPass);
        EXPECT_EQ(neighbour(host_ip), host_mac) << "ARP opcode " << op;
        run(Program::XdpNic, arp(opcode, broadcast, spoofer, service_ip, zero_mac, service_ip));
    }
    EXPECT_FALSE(neighbour(unknown_host_ip).has_value());
    run(Program::XdpNic, arp(3, broadcast, spoofer, unknown_host_ip, zero_mac, service_ip));
    EXPECT_FALSE(neighbour(unknown_host_ip).has_value());
    EXPECT_EQ(counters()[BPFNET_CTR_ARP_CONFLICT], 0u);
    EXPECT_EQ(counters()[BPFNET_CTR_NEIGHBOUR_LEARNED], 0u);
    EXPECT_FALSE(maps_->conflicts.lookup(key_ip(service_ip)).has_value());
}

// ARP is how a host moves (a new NIC, a failover): it may change an entry, but only to a unicast MAC.
TEST_F(HostileLan, ArpMovesAHostOnlyToAUnicastMac) {
    Mac moved = mac("02:00:00:00:00:12");
    run(Program::XdpNic, arp(1, broadcast, moved, host_ip, zero_mac, service_ip));
    EXPECT_EQ(neighbour(host_ip), moved);
    for (const Mac &group : {broadcast, mac("01:00:5e:00:00:01"), mac("33:33:00:00:00:01"), zero_mac}) {
        run(Program::XdpNic, arp(1, broadcast, group, host_ip, zero_mac, service_ip));
        EXPECT_EQ(neighbour(host_ip), moved) << hex(Bytes(group.begin(), group.end()));
    }
    EXPECT_EQ(counters()[BPFNET_CTR_NEIGHBOUR_REFUSED], 4u);
}

// Addresses that are never a host: the subnet's network and broadcast addresses, a service IP.
TEST_F(HostileLan, NetworkBroadcastAndServiceAddressesAreNeverLearned) {
    Mac someone = mac("02:00:00:00:00:13");
    for (const char *address : {"198.18.0.0", "198.18.0.255"}) {
        run(Program::XdpNic, arp(1, broadcast, someone, address, zero_mac, service_ip));
        run(Program::TcNic, tftp_read_request(address, someone));
        EXPECT_FALSE(neighbour(address).has_value()) << address;
    }
    run(Program::XdpNic, arp(2, nic_mac, someone, service_ip, nic_mac, host_ip));
    EXPECT_FALSE(neighbour(service_ip).has_value());
}

// A flow the pod opens waits in flows_unconfirmed; the host's first accepted answer moves it to flows.
TEST_F(HostileLan, AFlowIsConfirmedByTheHostsAcceptedAnswer) {
    auto key = flow_key(host_ip, 2070, 51000, kUdp);
    run(Program::TcPod, from_pod(Packet::udp({pod_ip, 51000}, {host_ip, 2070})));
    EXPECT_TRUE(unconfirmed(key));
    EXPECT_FALSE(confirmed(key));

    Bytes ack = from_host(Packet::udp({host_ip, 2070}, {service_ip, 51000}));
    EXPECT_EQ(run(Program::XdpNic, ack).retval, kXdpPass);
    EXPECT_TRUE(unconfirmed(key)) << "XDP only filters; TC decides";

    remove_backend(); // an answer that is dropped confirms nothing
    EXPECT_EQ(run(Program::TcNic, ack).retval, kTcShot);
    EXPECT_TRUE(unconfirmed(key));
    fill_world(*maps_);

    auto in = run(Program::TcNic, ack);
    EXPECT_EQ(in.retval, kTcRedirect);
    Bytes want = into_pod(Packet::udp({host_ip, 2070}, {pod_ip, 51000}));
    EXPECT_EQ(in.out, want) << describe_difference(in.out, want);
    EXPECT_TRUE(confirmed(key));
    EXPECT_FALSE(unconfirmed(key));
    EXPECT_EQ(counters()[BPFNET_CTR_FLOW_CONFIRMED], 1u);
}

// Spoofed requests make the pod open flows to hosts that never answer: however many, they churn the
// unconfirmed table and leave the confirmed flows (the honest transfers) where they are.
TEST_F(HostileLan, UnansweredFlowsNeverEvictConfirmedOnes) {
    auto honest = flow_key(host_ip, flow_host_port, flow_pod_port, kUdp); // the world's confirmed flow
    ASSERT_TRUE(confirmed(honest));
    const int flood = BPFNET_MAX_FLOWS + BPFNET_MAX_UNCONFIRMED_FLOWS; // more than both tables hold
    for (int i = 0; i < flood; i++) {
        uint16_t pod_port = static_cast<uint16_t>(1024 + i % 60000);
        uint16_t host_port = static_cast<uint16_t>(1024 + i / 60000);
        run(Program::TcPod, from_pod(Packet::udp({pod_ip, pod_port}, {host_ip, host_port})));
    }
    EXPECT_TRUE(confirmed(honest));
    auto in = run(Program::TcNic, from_host(Packet::udp({host_ip, flow_host_port}, {service_ip, flow_pod_port})));
    EXPECT_EQ(in.retval, kTcRedirect);
    EXPECT_LE(maps_->flows_unconfirmed.entries().size(), size_t{BPFNET_MAX_UNCONFIRMED_FLOWS});
}

// Frames in a host's name cannot fill its share: an answer on a flow the pod opened to the host, from another
// MAC than the host's, is steered (it may be the host's) but confirms nothing; the host's own answer does.
TEST_F(HostileLan, AnAnswerFromAnotherMacConfirmsNoFlow) {
    auto key = flow_key(host_ip, 2070, 51000, kUdp);
    run(Program::TcPod, from_pod(Packet::udp({pod_ip, 51000}, {host_ip, 2070})));
    Bytes forged = Packet::udp({host_ip, 2070}, {service_ip, 51000}).macs(nic_mac, spoofer_mac).bytes();
    EXPECT_EQ(run(Program::TcNic, forged).retval, kTcRedirect);
    EXPECT_TRUE(unconfirmed(key));
    EXPECT_FALSE(confirmed(key));
    EXPECT_FALSE(maps_->flow_shares.lookup(key_ip(host_ip)).has_value());
    EXPECT_EQ(counters()[BPFNET_CTR_FLOW_FOREIGN_ANSWER], 1u);

    EXPECT_EQ(run(Program::TcNic, from_host(Packet::udp({host_ip, 2070}, {service_ip, 51000}))).retval, kTcRedirect);
    EXPECT_TRUE(confirmed(key));
    EXPECT_EQ(maps_->flow_shares.lookup(key_ip(host_ip))->confirmed, 1u);
}

// A host that answers every flow it makes the pod open (a TFTP read request each, 70,000 of them, more than
// flows holds) fills its own share of flows only: another host's idle confirmed flow stays, and the host's
// flows beyond its share still steer, from flows_unconfirmed.
TEST_F(HostileLan, AHostAnsweringItsOwnFlowsEvictsNoOtherHostsFlow) {
    const Mac greedy_mac = mac("02:00:00:00:00:66");
    const std::string &greedy = unknown_host_ip;
    auto honest = flow_key(host_ip, flow_host_port, flow_pod_port, kUdp); // the world's confirmed flow
    ASSERT_TRUE(confirmed(honest));
    run(Program::XdpNic, arp(1, broadcast, greedy_mac, greedy, zero_mac, service_ip)); // so the pod reaches it

    const int flood = BPFNET_MAX_FLOWS + 4464;
    auto ports = [](int i) {
        return std::pair{static_cast<uint16_t>(1024 + i % 60000), static_cast<uint16_t>(2070 + i / 60000)};
    };
    int answered = 0;
    for (int i = 0; i < flood; i++) {
        auto [pod_port, host_port] = ports(i);
        run(Program::TcPod, from_pod(Packet::udp({pod_ip, pod_port}, {greedy, host_port})));
        Bytes answer = Packet::udp({greedy, host_port}, {service_ip, pod_port}).macs(nic_mac, greedy_mac).bytes();
        answered += run(Program::TcNic, answer).retval == kTcRedirect;
    }
    EXPECT_EQ(answered, flood) << "every answer is steered, within the share or beyond it";
    EXPECT_TRUE(confirmed(honest)) << "another host's idle flow was evicted";
    auto in = run(Program::TcNic, from_host(Packet::udp({host_ip, flow_host_port}, {service_ip, flow_pod_port})));
    EXPECT_EQ(in.retval, kTcRedirect);

    size_t greedy_confirmed = 0;
    for (const auto &[key, flow] : maps_->flows.entries())
        greedy_confirmed += key.remote_ip == key_ip(greedy);
    EXPECT_EQ(greedy_confirmed, size_t{BPFNET_MAX_FLOWS_PER_HOST});
    auto share = maps_->flow_shares.lookup(key_ip(greedy));
    ASSERT_TRUE(share.has_value());
    EXPECT_EQ(share->confirmed, __u32{BPFNET_MAX_FLOWS_PER_HOST});
    EXPECT_EQ(counters()[BPFNET_CTR_FLOW_OVER_SHARE], __u64(flood - BPFNET_MAX_FLOWS_PER_HOST));
    auto [last_pod_port, last_host_port] = ports(flood - 1);
    EXPECT_TRUE(unconfirmed(flow_key(greedy, last_host_port, last_pod_port, kUdp)));
}

// The pod called a host from port 80, which is also a listed service port (80 -> 8080): the host's answer
// to service:80 belongs to that call, not to the listed port's backend.
TEST_F(HostileLan, AListedPortDoesNotShadowThePodsOwnCall) {
    auto out = run(Program::TcPod, from_pod(Packet::tcp({pod_ip, 80}, {host_ip, 9999}).tcp_flags(0x02)));
    EXPECT_EQ(out.retval, kTcRedirect);
    auto in = run(Program::TcNic, from_host(Packet::tcp({host_ip, 9999}, {service_ip, 80}).tcp_flags(0x12)));
    EXPECT_EQ(in.retval, kTcRedirect);
    Bytes want = into_pod(Packet::tcp({host_ip, 9999}, {pod_ip, 80}).tcp_flags(0x12));
    EXPECT_EQ(in.out, want) << describe_difference(in.out, want);

    // Another host's connection to the listed port still reaches its backend port.
    auto listed = run(Program::TcNic, from_host(Packet::tcp({unknown_host_ip, 9999}, {service_ip, 80})));
    want = into_pod(Packet::tcp({unknown_host_ip, 9999}, {pod_ip, 8080}));
    EXPECT_EQ(listed.out, want) << describe_difference(listed.out, want);
}

// A flood of forged claims on the service IP (4,000 ARP replies, each from another MAC) is reported only
// until half of the events ring is used: the neighbour miss that follows still reaches the loader.
TEST_F(HostileLan, AConflictFloodNeverCrowdsOutANeighbourMiss) {
    for (int i = 0; i < 4000; i++) {
        Mac claimer = {0x02, 0x00, 0x00, 0x01, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
        run(Program::XdpNic, arp(2, broadcast, claimer, service_ip, zero_mac, service_ip));
    }
    EXPECT_EQ(counters()[BPFNET_CTR_ARP_CONFLICT], 4000u);
    EXPECT_GT(counters()[BPFNET_CTR_EVENT_LOST], 0u) << "the flood was larger than the conflicts' half";

    run(Program::TcPod, from_pod(Packet::tcp({pod_ip, 45000}, {unknown_host_ip, 9999}).tcp_flags(0x02)));
    auto events = drain_events();
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().type, BPFNET_EVENT_NEIGHBOUR_MISS);
    EXPECT_EQ(events.back().ip, key_ip(unknown_host_ip));
    EXPECT_LE(events.size() - 1, BPFNET_EVENTS_BYTES / 2 / (8 + sizeof(bpfnet_event)) + 1);
}

// One claimer repeating itself is reported once per second, however often it sends.
TEST_F(HostileLan, ARepeatedClaimIsReportedOncePerSecond) {
    Mac claimer = mac("02:00:00:00:00:99");
    for (int i = 0; i < 4000; i++)
        run(Program::XdpNic, arp(2, broadcast, claimer, service_ip, zero_mac, service_ip));
    size_t conflicts = 0;
    for (const bpfnet_event &ev : drain_events())
        conflicts += ev.type == BPFNET_EVENT_CONFLICT;
    EXPECT_GE(conflicts, 1u);
    EXPECT_LE(conflicts, 3u) << "one per second; the loop may cross a second boundary or two";
    EXPECT_EQ(counters()[BPFNET_CTR_ARP_CONFLICT], 4000u);
}

// ---- the neighbour tables under a flood of new senders ----

// The address of the i-th host of a range of a /16: 198.18.<base + i / 256>.<i % 256>.
std::string host_of_16(int base, int i) {
    return "198.18." + std::to_string(base + i / 256) + "." + std::to_string(i % 256);
}
Mac mac_of(uint8_t tag, int i) {
    return {0x02, tag, 0x00, 0x00, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
}

class NeighbourFlood : public HostileLan {
protected:
    // The provisioning subnet a /16, as in the report: room for thousands of made-up senders.
    void widen_ipv4_subnet() {
        bpfnet_iface iface = maps_->iface.lookup(0).value();
        iface.subnet = prefix_of(key_ip("198.18.0.0"), 96 + 16);
        maps_->iface.update(0, iface);
    }
    // n hosts the datapath accepted packets from, written as earlier traffic would have left them.
    void confirm_hosts(int n) {
        for (int i = 0; i < n; i++) {
            bpfnet_neighbour entry{};
            const Mac m = mac_of(0xaa, i);
            std::copy(m.begin(), m.end(), entry.mac);
            maps_->neighbours.update(key_ip(host_of_16(1, i)), entry);
        }
    }
    // How many of those hosts still have their entry at their own MAC.
    int confirmed_hosts_kept(int n) {
        int kept = 0;
        for (int i = 0; i < n; i++)
            kept += neighbour(host_of_16(1, i)) == mac_of(0xaa, i);
        return kept;
    }
};

constexpr int kConfirmedHosts = 3000;
// More made-up senders than the unconfirmed table holds, and than the room left in neighbours.
constexpr int kFloodSenders = 5000;

// About 5,000 ARP requests, each from another made-up address of the /16 and another MAC, against a
// neighbours table holding 3,000 hosts: the flood fills the unconfirmed table (churning it) and takes no
// place in neighbours, so every host keeps its entry. Before the tables were split, the flood's entries
// went into neighbours and its LRU evicted the hosts'.
TEST_F(NeighbourFlood, AnArpFloodFromNewSendersEvictsNoConfirmedHost) {
    widen_ipv4_subnet();
    confirm_hosts(kConfirmedHosts);
    const size_t before = maps_->neighbours.entries().size();
    for (int i = 0; i < kFloodSenders; i++)
        run(Program::XdpNic, arp(1, broadcast, mac_of(0xbb, i), host_of_16(100, i), zero_mac, service_ip));
    EXPECT_EQ(counters()[BPFNET_CTR_NEIGHBOUR_LEARNED], static_cast<__u64>(kFloodSenders));
    EXPECT_EQ(confirmed_hosts_kept(kConfirmedHosts), kConfirmedHosts);
    EXPECT_EQ(maps_->neighbours.entries().size(), before);
    const size_t unconfirmed = maps_->neighbours_unconfirmed.entries().size();
    EXPECT_GT(unconfirmed, 0u);
    EXPECT_LE(unconfirmed, static_cast<size_t>(BPFNET_MAX_UNCONFIRMED_NEIGHBOURS));
    // The pod still reaches a confirmed host with no neighbour miss.
    auto out = run(Program::TcPod, from_pod(Packet::tcp({pod_ip, 6385}, {host_of_16(1, 7), 40000})));
    EXPECT_EQ(out.retval, kTcRedirect);
    EXPECT_EQ(counters()[BPFNET_CTR_NEIGHBOUR_MISS], 0u);
}

// The same with neighbour solicitations from made-up addresses of the IPv6 /64, each with its own link-layer
// address: the known host keeps its entry, and the solicitations' senders wait in the unconfirmed table.
TEST_F(NeighbourFlood, AnNdpFloodFromNewSendersEvictsNoConfirmedHost) {
    confirm_hosts(kConfirmedHosts); // IPv4 hosts share the table with IPv6 ones
    const size_t before = maps_->neighbours.entries().size();
    const std::string target = "2001:2::50";
    for (int i = 0; i < kFloodSenders; i++) {
        char sender[64];
        std::snprintf(sender, sizeof(sender), "2001:2::1:%x", i + 1);
        run(Program::XdpNic,
            Packet6::icmp(sender, solicited_node(target), kNeighbourSolicit, 0, ns_body(target, mac_of(0xcc, i)))
                .hop_limit(255)
                .macs(multicast_mac(solicited_node(target)), mac_of(0xcc, i))
                .bytes());
    }
    EXPECT_EQ(counters()[BPFNET_CTR_NEIGHBOUR_LEARNED], static_cast<__u64>(kFloodSenders));
    EXPECT_EQ(confirmed_hosts_kept(kConfirmedHosts), kConfirmedHosts);
    EXPECT_EQ(maps_->neighbours.entries().size(), before);
    EXPECT_TRUE(maps_->neighbours.lookup(key_ip(host_ip6)).has_value());
    EXPECT_LE(maps_->neighbours_unconfirmed.entries().size(), static_cast<size_t>(BPFNET_MAX_UNCONFIRMED_NEIGHBOURS));
}

// A host known from ARP only takes its place in neighbours with its first packet the datapath accepts, at the
// MAC its ARP told (only ARP moves a host: a packet in its name with another MAC changes nothing).
TEST_F(HostileLan, AnAcceptedPacketConfirmsAHostKnownFromArp) {
    const Mac arp_mac = mac("02:00:00:00:00:30");
    run(Program::XdpNic, arp(1, broadcast, arp_mac, unknown_host_ip, zero_mac, service_ip));
    EXPECT_FALSE(neighbour(unknown_host_ip).has_value());
    ASSERT_TRUE(maps_->neighbours_unconfirmed.lookup(key_ip(unknown_host_ip)).has_value());

    EXPECT_EQ(run(Program::TcNic, tftp_read_request(unknown_host_ip, spoofer_mac)).retval, kTcRedirect);
    EXPECT_EQ(neighbour(unknown_host_ip), arp_mac);
    EXPECT_FALSE(maps_->neighbours_unconfirmed.lookup(key_ip(unknown_host_ip)).has_value());
    EXPECT_EQ(counters()[BPFNET_CTR_NEIGHBOUR_CONFIRMED], 1u);
    EXPECT_EQ(counters()[BPFNET_CTR_NEIGHBOUR_KEPT], 1u);
    EXPECT_TRUE(drain_events().empty()) << "ARP told where the host is: nothing for the loader to check";
}

} // namespace
} // namespace bpfnet::test
