// The trace of steering decisions: off, nothing is recorded; on, one record per decision with the packet's
// addresses, where it was steered, and the DHCP and TFTP details an operator asks for.
#include "bpfnet.skel.h"
#include "packet6.hpp"
#include "table.hpp"

#include <arpa/inet.h>
#include <bpf/libbpf.h>

#include <cstring>

namespace bpfnet::test {
namespace {

using namespace world;

class TraceTest : public DatapathTest {
protected:
    void SetUp() override {
        DatapathTest::SetUp();
        if (IsSkipped())
            return;
        trace_.reset(ring_buffer__new(bpf_map__fd(skel_->maps.trace), on_record, this, nullptr));
        ASSERT_NE(trace_, nullptr);
        records(); // what earlier cases left in the ring is theirs
    }
    void TearDown() override {
        trace_.reset();
        DatapathTest::TearDown();
    }

    void set_tracing(bool on) { maps_->trace_control.update(0, bpfnet_trace_control{on ? 1u : 0u, 0}); }
    std::vector<bpfnet_trace> records() {
        records_.clear();
        ring_buffer__consume(trace_.get());
        return records_;
    }
    static int on_record(void *ctx, void *data, size_t size) {
        if (size >= sizeof(bpfnet_trace))
            static_cast<TraceTest *>(ctx)->records_.push_back(*static_cast<bpfnet_trace *>(data));
        return 0;
    }

    std::unique_ptr<ring_buffer, void (*)(ring_buffer *)> trace_{nullptr, ring_buffer__free};
    std::vector<bpfnet_trace> records_;
};

Bytes discover_frame() {
    Dhcp d;
    d.xid = 0xabcdef01;
    d.chaddr = client_mac;
    d.option(53, Bytes{1});
    return Packet::udp({"0.0.0.0", 68}, {broadcast_ip, 67}).payload(d.bytes()).macs(broadcast, client_mac).bytes();
}

Bytes tftp_read_request(const std::string &file) {
    // RFC 1350: opcode 1 (RRQ), file name, NUL, mode, NUL.
    std::string request = std::string("\0\1", 2) + file + '\0' + "octet" + '\0';
    return from_host(Packet::udp({host_ip, 2070}, {service_ip, 69}).payload(request));
}

TEST_F(TraceTest, OffRecordsNothing) {
    run(Program::TcNic, discover_frame());
    run(Program::XdpNic, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 22})));
    EXPECT_TRUE(records().empty());
}

TEST_F(TraceTest, DhcpRequestShowsTypeXidAndClient) {
    set_tracing(true);
    run(Program::TcNic, discover_frame());
    auto got = records();
    ASSERT_EQ(got.size(), 1u);
    const bpfnet_trace &r = got[0];
    EXPECT_EQ(r.hook, BPFNET_HOOK_TC_NIC_INGRESS);
    EXPECT_EQ(r.decision, BPFNET_CTR_DHCP_REQUEST_RELAYED);
    EXPECT_EQ(r.proto, kUdp);
    EXPECT_EQ(r.dhcp_type, 1); // DISCOVER
    EXPECT_EQ(ntohl(r.dhcp_xid_be), 0xabcdef01u);
    EXPECT_EQ(0, std::memcmp(r.mac, client_mac.data(), 6));
    EXPECT_EQ(r.daddr, key_ip(broadcast_ip)) << "addresses as the packet arrived";
    EXPECT_EQ(r.to_addr, key_ip(pod_ip));
    EXPECT_EQ(ntohs(r.to_port_be), 67);
    EXPECT_NE(r.time_ns, 0u);
}

TEST_F(TraceTest, TftpReadRequestShowsTheFileName) {
    set_tracing(true);
    run(Program::TcNic, tftp_read_request("pxelinux.0"));
    auto got = records();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].decision, BPFNET_CTR_DNAT_SERVICE);
    EXPECT_EQ(got[0].tftp_op, 1);
    EXPECT_STREQ(got[0].tftp_file, "pxelinux.0");
    EXPECT_EQ(got[0].saddr, key_ip(host_ip));
    EXPECT_EQ(ntohs(got[0].sport_be), 2070);
}

// IPv6 records carry the whole addresses, and a TFTP read request over IPv6 its file name.
TEST_F(TraceTest, Ipv6DecisionsCarryTheirAddresses) {
    set_tracing(true);
    run(Program::TcNic, Packet6::udp({host_ip6, 2070}, {service_ip6, 69})
                            .payload(std::string("\0\1pxelinux.0\0octet\0", 19))
                            .macs(nic_mac, host_mac)
                            .bytes());
    auto got = records();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].decision, BPFNET_CTR_DNAT_SERVICE);
    EXPECT_EQ(got[0].saddr, key_ip(host_ip6));
    EXPECT_EQ(got[0].daddr, key_ip(service_ip6));
    EXPECT_EQ(got[0].to_addr, key_ip(pod_ip6));
    EXPECT_EQ(got[0].tftp_op, 1);
    EXPECT_STREQ(got[0].tftp_file, "pxelinux.0");
}

// A DHCPv6 Solicit the relay wrapped: its msg-type and transaction id (read behind the Relay-Forward header
// the relay added), and a Relay-Reply unwrapped: the Advertise it carried.
TEST_F(TraceTest, Dhcpv6MessagesShowTheirTypeAndTransactionId) {
    set_tracing(true);
    const Bytes solicit = {1, 0x12, 0x34, 0x56, 0, 8, 0, 2, 0, 0}; // Solicit, xid 0x123456, elapsed time
    run(Program::TcNic, Packet6::udp({client_link_local, 546}, {"ff02::1:2", 547})
                            .payload(solicit)
                            .macs(mac("33:33:00:01:00:02"), client_mac)
                            .bytes());
    auto got = records();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].decision, BPFNET_CTR_DHCP6_REQUEST_RELAYED);
    EXPECT_EQ(got[0].dhcp_type, 1);
    EXPECT_EQ(ntohl(got[0].dhcp_xid_be), 0x123456u);
    EXPECT_EQ(0, std::memcmp(got[0].mac, client_mac.data(), 6));
    EXPECT_EQ(got[0].to_addr, key_ip(pod_ip6));

    Bytes reply = {13, 0};
    const auto link = ip6(service_ip6), peer = ip6(client_link_local);
    reply.insert(reply.end(), link.begin(), link.end());
    reply.insert(reply.end(), peer.begin(), peer.end());
    reply.insert(reply.end(), {0, 18, 0, 6});
    reply.insert(reply.end(), client_mac.begin(), client_mac.end());
    reply.insert(reply.end(), {0, 9, 0, 4, 2, 0x12, 0x34, 0x56}); // Advertise, xid 0x123456
    run(Program::TcPod,
        Packet6::udp({pod_ip6, 547}, {service_ip6, 547}).payload(reply).macs(veth_mac, pod_mac).bytes());
    got = records();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].decision, BPFNET_CTR_DHCP6_REPLY_RELAYED);
    EXPECT_EQ(got[0].dhcp_type, 2);
    EXPECT_EQ(ntohl(got[0].dhcp_xid_be), 0x123456u);
    EXPECT_EQ(got[0].to_addr, key_ip(client_link_local));
    EXPECT_EQ(ntohs(got[0].to_port_be), 546);
}

TEST_F(TraceTest, DropsAreTracedWithTheirReason) {
    set_tracing(true);
    run(Program::XdpNic, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 22})));
    auto got = records();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].hook, BPFNET_HOOK_XDP_NIC);
    EXPECT_EQ(got[0].decision, BPFNET_CTR_DROP_NOT_ALLOWED);
    EXPECT_EQ(ntohs(got[0].dport_be), 22);
}

TEST_F(TraceTest, PassThroughTrafficIsNotTraced) {
    set_tracing(true);
    run(Program::XdpNic, from_host(Packet::tcp({host_ip, 40000}, {other_lan_ip, 80})));
    run(Program::TcNic, from_host(Packet::tcp({host_ip, 40000}, {other_lan_ip, 80})));
    EXPECT_TRUE(records().empty());
}

// A frame that begins no record (ARP that asks for no service IP, on either NIC program) never sends the
// last packet's record again, with tracing on or switched off since.
TEST_F(TraceTest, AFrameThatBeginsNoRecordNeverResendsTheLastOne) {
    set_tracing(true);
    run(Program::TcNic, tftp_read_request("pxelinux.0"));
    ASSERT_EQ(records().size(), 1u);
    Bytes other_arp = arp(1, broadcast, host_mac, host_ip, zero_mac, other_lan_ip);
    run(Program::XdpNic, other_arp);
    run(Program::TcNic, other_arp);
    EXPECT_TRUE(records().empty());

    run(Program::TcNic, tftp_read_request("pxelinux.0"));
    ASSERT_EQ(records().size(), 1u);
    set_tracing(false);
    run(Program::XdpNic, other_arp);
    run(Program::TcNic, other_arp);
    run(Program::TcNic, tftp_read_request("pxelinux.0"));
    EXPECT_TRUE(records().empty());
}

TEST_F(TraceTest, ReplyToTheHostIsTracedWithItsServiceAddress) {
    set_tracing(true);
    run(Program::TcPod, from_pod(Packet::tcp({pod_ip, 8080}, {host_ip, 40000})));
    auto got = records();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].hook, BPFNET_HOOK_TC_POD_INGRESS);
    EXPECT_EQ(got[0].decision, BPFNET_CTR_SNAT_REPLY);
    EXPECT_EQ(got[0].to_addr, key_ip(service_ip));
    EXPECT_EQ(ntohs(got[0].to_port_be), 80);
}

} // namespace
} // namespace bpfnet::test
