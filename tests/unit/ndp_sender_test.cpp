// The loader's own NDP frames (core/ndp_sender.cpp) against frames built independently by the packet tables'
// IPv6 builder (tests/bpf/packet6.cpp): the unsolicited advertisement a takeover sends and the solicitation
// that resolves a neighbour miss, checksums included.
#include "core/addresses.hpp"
#include "core/ndp_sender.hpp"
#include "tests/bpf/packet6.hpp"

#include <gtest/gtest.h>

namespace bpfnet {
namespace {

using test::Packet6;

const std::array<uint8_t, 6> kNicMac = {0x02, 0, 0, 0, 0, 0x01};

bpfnet_ip addr(const char *text) {
    return *parse_ip(text);
}

TEST(NdpSender, UnsolicitedAdvertisementOverridesAtAllNodes) {
    const auto want = Packet6::icmp("fd00:1::2", "ff02::1", test::kNeighbourAdvert, 0,
                                    test::na_body("fd00:1::2", test::kNaOverride, kNicMac))
                          .hop_limit(255)
                          .macs(test::mac("33:33:00:00:00:01"), kNicMac)
                          .bytes();
    EXPECT_EQ(unsolicited_advertisement(addr("fd00:1::2"), kNicMac), want);
}

TEST(NdpSender, SolicitationGoesToTheTargetsSolicitedNodeGroup) {
    const std::string group = test::solicited_node("fd00:1::10");
    EXPECT_EQ(format_ip(solicited_node_group(addr("fd00:1::10"))), group);
    EXPECT_EQ(group, "ff02::1:ff00:10");
    const auto want =
        Packet6::icmp("fd00:1::2", group, test::kNeighbourSolicit, 0, test::ns_body("fd00:1::10", kNicMac))
            .hop_limit(255)
            .macs(test::multicast_mac(group), kNicMac)
            .bytes();
    EXPECT_EQ(neighbour_solicitation(addr("fd00:1::2"), kNicMac, addr("fd00:1::10")), want);
}

// The body written out from RFC 4861 4.2 and 4.6.2, field by field.
TEST(NdpSender, RouterAdvertisementAsksForDhcpv6AndMakesThePrefixOnLink) {
    test::Bytes body = {64, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}; // hop limit, M and O, lifetime 0, timers 0
    body.insert(body.end(), {1, 1, 0x02, 0, 0, 0, 0, 0x01});     // source link-layer address
    body.insert(body.end(), {3, 4, 64, 0x80, 0, 0, 0, 30, 0, 0, 0, 30, 0, 0, 0, 0}); // on-link, not autonomous
    const auto prefix = test::ip6("fd00:1::");
    body.insert(body.end(), prefix.begin(), prefix.end());
    const auto want = Packet6::icmp("fe80::1", "ff02::1", 134, 0, body)
                          .hop_limit(255)
                          .macs(test::mac("33:33:00:00:00:01"), kNicMac)
                          .bytes();
    EXPECT_EQ(router_advertisement(addr("fe80::1"), kNicMac, addr("fd00:1::"), 64, 30), want);
}

// The answer to one host's solicitation: the same advertisement, to that host's address and MAC.
TEST(NdpSender, RouterAdvertisementToOneHost) {
    const std::array<uint8_t, 6> host_mac = {0x52, 0x54, 0, 0x12, 0x34, 0x56};
    const Frame multicast = router_advertisement(addr("fe80::1"), kNicMac, addr("fd00:1::"), 64, 30);
    const Frame unicast = router_advertisement(addr("fe80::1"), kNicMac, addr("fd00:1::"), 64, 30,
                                               RaDestination{addr("fe80::5054"), host_mac});
    const auto want =
        Packet6::icmp("fe80::1", "fe80::5054", 134, 0, test::Bytes(multicast.begin() + 14 + 40 + 4, multicast.end()))
            .hop_limit(255)
            .macs(host_mac, kNicMac)
            .bytes();
    EXPECT_EQ(unicast, want);
}

// RFC 4861 4.1 and 6.1.1: what a router takes from a solicitation, and what it discards.
TEST(NdpSender, RouterSolicitationParsedAsRfc4861Says) {
    const test::Bytes with_slla = {133, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0x52, 0x54, 0, 0x12, 0x34, 0x56};
    auto rs = parse_router_solicitation(with_slla.data(), with_slla.size(), addr("fe80::5054"), 255);
    ASSERT_TRUE(rs);
    EXPECT_EQ(format_ip(rs->source), "fe80::5054");
    ASSERT_TRUE(rs->link_layer);
    EXPECT_EQ((*rs->link_layer)[5], 0x56);
    // A host without an address yet: from ::, no option.
    const test::Bytes bare = {133, 0, 0, 0, 0, 0, 0, 0};
    rs = parse_router_solicitation(bare.data(), bare.size(), bpfnet_ip{}, 255);
    ASSERT_TRUE(rs);
    EXPECT_FALSE(rs->link_layer);
    // Discarded: through a router (hop limit), not a solicitation, too short, an option of length 0 or past
    // the end, a link-layer address from ::.
    EXPECT_FALSE(parse_router_solicitation(with_slla.data(), with_slla.size(), addr("fe80::5054"), 254));
    const test::Bytes code1 = {133, 1, 0, 0, 0, 0, 0, 0};
    EXPECT_FALSE(parse_router_solicitation(code1.data(), code1.size(), bpfnet_ip{}, 255));
    EXPECT_FALSE(parse_router_solicitation(bare.data(), 7, bpfnet_ip{}, 255));
    const test::Bytes zero_length = {133, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_FALSE(parse_router_solicitation(zero_length.data(), zero_length.size(), addr("fe80::5054"), 255));
    EXPECT_FALSE(parse_router_solicitation(with_slla.data(), with_slla.size() - 1, addr("fe80::5054"), 255));
    EXPECT_FALSE(parse_router_solicitation(with_slla.data(), with_slla.size(), bpfnet_ip{}, 255));
}

TEST(NdpSender, SolicitedNodeGroupTakesTheLast24Bits) {
    EXPECT_EQ(format_ip(solicited_node_group(addr("2001:db8::abcd:ef12:3456"))), "ff02::1:ff12:3456");
}

// /proc/net/igmp6 lines: ifindex, name, group, users, flags, timer; only the asked interface's count.
TEST(NdpSender, Igmp6ListsTheInterfacesGroups) {
    const std::string text = "1    lo              ff020000000000000000000000000001     1 0000000C 0\n"
                             "4    prov0           ff0200000000000000000001ff000002     1 00000004 0\n"
                             "4    prov0           ff020000000000000000000000000001     1 0000000C 0\n"
                             "5    vethpod         ff0200000000000000000001ff000002     1 00000004 0\n"
                             "4    prov0           not-hex\n";
    const auto groups = parse_igmp6(text, 4);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0], solicited_node_group(addr("fd00:1::2")));
    EXPECT_EQ(format_ip(groups[1]), "ff02::1");
}

} // namespace
} // namespace bpfnet
