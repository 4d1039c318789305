// What a frame on the NIC says about an address (core/address_prober.hpp): the probe of a claim that starts is
// answered by another MAC through these.
#include "core/address_prober.hpp"
#include "core/addresses.hpp"
#include "core/ndp_sender.hpp"

#include <gtest/gtest.h>

namespace bpfnet {
namespace {

using Mac = std::array<uint8_t, 6>;
const Mac kOwn = {0x02, 0, 0, 0, 0, 0x01};
const Mac kOther = {0x02, 0, 0, 0, 0, 0x66};
const bpfnet_ip kServiceIp = *parse_ip("198.18.0.2");
const bpfnet_ip kServiceIp6 = *parse_ip("fd00:1::2");

Frame arp(uint16_t op, const Mac &from, const char *sender_ip, const char *target_ip) {
    Frame f = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    f.insert(f.end(), from.begin(), from.end());
    Frame body = {0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, static_cast<uint8_t>(op)};
    f.insert(f.end(), body.begin(), body.end());
    f.insert(f.end(), from.begin(), from.end());
    const __be32 sender = v4_of(*parse_ip(sender_ip)), target = v4_of(*parse_ip(target_ip));
    const auto *s = reinterpret_cast<const uint8_t *>(&sender);
    f.insert(f.end(), s, s + 4);
    f.insert(f.end(), 6, 0);
    const auto *t = reinterpret_cast<const uint8_t *>(&target);
    f.insert(f.end(), t, t + 4);
    return f;
}

void expect_claim(const Frame &frame, const bpfnet_ip &ip, const Mac &mac) {
    const auto claim = address_claim_in(frame, kOwn);
    ASSERT_TRUE(claim);
    EXPECT_EQ(format_ip(claim->ip), format_ip(ip));
    EXPECT_EQ(claim->mac, mac);
}

TEST(AddressClaim, ArpReplyOrRequestFromTheAddress) {
    expect_claim(arp(2, kOther, "198.18.0.2", "0.0.0.0"), kServiceIp, kOther);
    expect_claim(arp(1, kOther, "198.18.0.2", "198.18.0.2"), kServiceIp, kOther); // an announcement
}

TEST(AddressClaim, ArpProbeForTheAddressIsAnotherNodeProbing) {
    expect_claim(arp(1, kOther, "0.0.0.0", "198.18.0.2"), kServiceIp, kOther);
}

TEST(AddressClaim, OwnFramesAndOtherOpcodesSayNothing) {
    EXPECT_FALSE(address_claim_in(arp(2, kOwn, "198.18.0.2", "198.18.0.9"), kOwn));
    EXPECT_FALSE(address_claim_in(arp(1, kOwn, "0.0.0.0", "198.18.0.2"), kOwn));
    EXPECT_FALSE(address_claim_in(arp(3, kOther, "198.18.0.2", "198.18.0.9"), kOwn));
    EXPECT_FALSE(address_claim_in(arp(2, kOther, "0.0.0.0", "198.18.0.2"), kOwn)); // a reply from nobody
    Frame truncated = arp(2, kOther, "198.18.0.2", "0.0.0.0");
    truncated.resize(40);
    EXPECT_FALSE(address_claim_in(truncated, kOwn));
}

TEST(AddressClaim, NeighbourAdvertisementAtItsTargetLinkLayerAddress) {
    const Mac announced = {0x02, 0, 0, 0, 0, 0x77};
    Frame advertisement = unsolicited_advertisement(kServiceIp6, announced);
    std::copy(kOther.begin(), kOther.end(), advertisement.begin() + 6); // the frame from another MAC
    expect_claim(advertisement, kServiceIp6, announced);
}

TEST(AddressClaim, DuplicateAddressProbeIsAnotherNodeProbing) {
    expect_claim(duplicate_address_probe(kOther, kServiceIp6), kServiceIp6, kOther);
    EXPECT_FALSE(address_claim_in(duplicate_address_probe(kOwn, kServiceIp6), kOwn));
}

TEST(AddressClaim, SolicitationFromAnAddressIsNoClaimOfItsTarget) {
    EXPECT_FALSE(address_claim_in(neighbour_solicitation(*parse_ip("fd00:1::9"), kOther, kServiceIp6), kOwn));
}

TEST(AddressClaim, DuplicateAddressProbeHasNoLinkLayerOption) {
    const Frame probe = duplicate_address_probe(kOwn, kServiceIp6);
    EXPECT_EQ(probe.size(), 14u + 40 + 24); // RFC 4862 5.4.2: no source link-layer option from ::
    EXPECT_EQ(probe[14 + 40], 135);
    EXPECT_EQ(probe[0], 0x33); // to the target's solicited-node group
    EXPECT_EQ(probe[5], 0x02);
}

} // namespace
} // namespace bpfnet
