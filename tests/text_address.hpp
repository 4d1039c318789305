// Addresses the C++ tests write as text. Shared by the test programs so that each helper exists once: the tests
// are compiled several sources at a time (tests/CMakeLists.txt), where two files' helpers of one name clash.
#pragma once

#include "core/addresses.hpp"
#include "maps/bpfnet_maps.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

namespace bpfnet::text_address {

// An address of either family as the maps key it. Text that does not parse is the test's own mistake: it fails
// the test where it is written instead of yielding the zero address.
inline bpfnet_ip ip(const char *text) {
    auto address = parse_ip(text);
    EXPECT_TRUE(address.has_value()) << text;
    return address.value_or(bpfnet_ip{});
}

// An IPv4 address in network byte order, as the maps' IPv4 fields hold it.
inline __be32 ipv4(const char *text) {
    in_addr address{};
    EXPECT_EQ(inet_pton(AF_INET, text, &address), 1) << text;
    return address.s_addr;
}

} // namespace bpfnet::text_address
