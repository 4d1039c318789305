// The provisioning NIC's carrier as link notifications tell it (core/link_watch.hpp): the messages the
// kernel sends on a cable pulled, a link set down, a link deleted.
#include "core/link_watch.hpp"

#include <gtest/gtest.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <array>
#include <cstring>

namespace bpfnet {
namespace {

constexpr unsigned kLowerUp = 1U << 16; // IFF_LOWER_UP

struct LinkMessage {
    alignas(nlmsghdr) std::array<char, NLMSG_SPACE(sizeof(ifinfomsg))> bytes{};

    LinkMessage(uint16_t type, int ifindex, unsigned flags, size_t length = NLMSG_LENGTH(sizeof(ifinfomsg))) {
        auto *header = reinterpret_cast<nlmsghdr *>(bytes.data());
        header->nlmsg_type = type;
        header->nlmsg_len = static_cast<uint32_t>(length);
        auto *link = static_cast<ifinfomsg *>(NLMSG_DATA(header));
        link->ifi_index = ifindex;
        link->ifi_flags = flags;
    }
    const nlmsghdr &header() const { return *reinterpret_cast<const nlmsghdr *>(bytes.data()); }
};

TEST(LinkWatch, AnUpLinkWithCarrierHasIt) {
    auto change = link_change_of(LinkMessage(RTM_NEWLINK, 7, IFF_UP | IFF_RUNNING | kLowerUp).header());
    ASSERT_TRUE(change);
    EXPECT_EQ(change->ifindex, 7);
    EXPECT_TRUE(change->carrier);
}

TEST(LinkWatch, ACablePulledLeavesTheLinkUpWithoutCarrier) {
    auto change = link_change_of(LinkMessage(RTM_NEWLINK, 7, IFF_UP).header());
    ASSERT_TRUE(change);
    EXPECT_FALSE(change->carrier);
    EXPECT_FALSE(change->gone);
}

TEST(LinkWatch, ALinkSetDownHasNoCarrierWhateverTheDriverSays) {
    auto change = link_change_of(LinkMessage(RTM_NEWLINK, 7, kLowerUp).header());
    ASSERT_TRUE(change);
    EXPECT_FALSE(change->carrier);
}

TEST(LinkWatch, ADeletedLinkHasNoCarrier) {
    auto change = link_change_of(LinkMessage(RTM_DELLINK, 7, IFF_UP | kLowerUp).header());
    ASSERT_TRUE(change);
    EXPECT_TRUE(change->gone);
    EXPECT_FALSE(change->carrier);
}

TEST(LinkWatch, OtherMessagesAndShortOnesSayNothing) {
    EXPECT_FALSE(link_change_of(LinkMessage(RTM_NEWADDR, 7, IFF_UP | kLowerUp).header()));
    EXPECT_FALSE(link_change_of(LinkMessage(RTM_NEWLINK, 7, IFF_UP | kLowerUp, NLMSG_LENGTH(4)).header()));
}

} // namespace
} // namespace bpfnet
