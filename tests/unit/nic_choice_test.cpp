// The provisioning NIC named by MAC address (core/nic_choice.hpp): one DaemonSet for nodes whose NICs are
// named differently.
#include "core/nic_choice.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace bpfnet;

namespace {

LinkInfo link(const char *name, MacAddress mac, const char *kind = "") {
    return LinkInfo{.ifindex = 1,
                    .name = name,
                    .mac = mac,
                    .is_veth = false,
                    .peer_ifindex = -1,
                    .peer_netnsid = -1,
                    .up = true,
                    .carrier = true,
                    .mtu = 1500,
                    .kind = kind};
}

const std::vector<LinkInfo> kNode = {
    link("lo", {}),
    link("eno1", {0x52, 0x54, 0x00, 0x00, 0x00, 0x01}),
    link("enp2s0", {0x52, 0x54, 0x00, 0xab, 0xcd, 0xef}),
    link("veth1234", {0x0a, 0x58, 0x0a, 0x80, 0x00, 0x07}, "veth"),
};

std::string refusal(std::string_view macs, const std::vector<LinkInfo> &links) {
    try {
        link_with_mac(macs, links);
    } catch (const std::invalid_argument &e) {
        return e.what();
    }
    return "";
}

TEST(NicChoice, ANameIsANameAndAValueWithAColonListsMacs) {
    EXPECT_FALSE(lists_macs("enp2s0"));
    EXPECT_FALSE(lists_macs("prov0.100"));
    EXPECT_TRUE(lists_macs("52:54:00:ab:cd:ef"));
    EXPECT_TRUE(lists_macs("52:54:00:ab:cd:ef,52:54:00:00:00:09"));
}

// One list for every node: each has one of the MACs, on a NIC named its own way.
TEST(NicChoice, TheLinkWithOneOfTheMacsEitherCase) {
    EXPECT_EQ(link_with_mac("52:54:00:AB:CD:EF", kNode), "enp2s0");
    EXPECT_EQ(link_with_mac("52:54:00:00:00:09,52:54:00:ab:cd:ef", kNode), "enp2s0");
    EXPECT_EQ(link_with_mac("52:54:00:00:00:01", kNode), "eno1");
    // Groups of one digit, as some tools write them (core/addresses.hpp's parse_mac, which bpfnetctl trace
    // --mac takes too).
    EXPECT_EQ(link_with_mac("52:54:0:ab:cd:ef", kNode), "enp2s0");
}

TEST(NicChoice, NoLinkWithOneIsRefusedNamingTheLinksThereAre) {
    EXPECT_EQ(refusal("52:54:00:00:00:09", kNode),
              "--interface: no link of this node has one of the MACs 52:54:00:00:00:09 (links: eno1 "
              "52:54:00:00:00:01, enp2s0 52:54:00:ab:cd:ef, veth1234 0a:58:0a:80:00:07)");
}

// A VLAN (or a bridge, a bond) has its port's MAC: which one is meant only a name says.
TEST(NicChoice, SeveralLinksWithOneAreRefused) {
    std::vector<LinkInfo> links = kNode;
    links.push_back(link("enp2s0.100", {0x52, 0x54, 0x00, 0xab, 0xcd, 0xef}, "vlan"));
    EXPECT_EQ(refusal("52:54:00:ab:cd:ef", links),
              "--interface: several links have one of the MACs 52:54:00:ab:cd:ef (enp2s0, enp2s0.100): name the "
              "interface instead");
}

TEST(NicChoice, WhatIsNotAMacIsRefused) {
    for (const char *bad : {"52:54:00:ab:cd", "52:54:00:ab:cd:ef:00", "52-54-00-ab-cd-ef", "52:54:00:ab:cd:eg",
                            "52:54:00:ab:cd:ef,", ":"}) {
        EXPECT_NE(refusal(bad, kNode).find("is not a MAC address"), std::string::npos) << bad;
    }
}

} // namespace
