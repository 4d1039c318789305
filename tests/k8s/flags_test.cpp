// Kubernetes mode's flags (k8s/flags): the node settings and Service policy they stand for, and the words
// they are refused in. Parsed by CLI11 exactly as bpfnet-loader does.
#include "k8s/flags.hpp"

#include "core/addresses.hpp"
#include "packet.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace bpfnet;
using namespace bpfnet::k8s;

namespace {

std::pair<NodeSettings, KubernetesOptions> settings(std::vector<std::string> args) {
    CLI::App app;
    KubernetesFlags flags;
    add_kubernetes_flags(app, flags);
    std::vector<std::string> argv = {"--kubernetes", "--interface",          "prov0", "--node-name",
                                     "node-a",       "--allowed-namespaces", "metal3"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::reverse(argv.begin(), argv.end()); // CLI11 takes a vector in reverse order
    app.parse(argv);
    return kubernetes_settings(flags);
}

// The message of the std::invalid_argument the flags are refused with ("" when they are not).
std::string refusal(std::vector<std::string> args) {
    try {
        settings(std::move(args));
    } catch (const std::invalid_argument &e) {
        return e.what();
    }
    return "";
}

using bpfnet::test::key_ip;

} // namespace

TEST(KubernetesFlags, Ipv4Lan) {
    const auto [node, options] = settings({"--subnet", "172.22.0.0/24", "--allowed-cidrs", "172.22.0.0/24"});
    EXPECT_EQ(format_prefix(node.subnet_be, node.prefix_len), "172.22.0.0/24");
    EXPECT_EQ(node.prefix6_len, 0);
    EXPECT_TRUE(options.policy.ipv4_lan);
    EXPECT_FALSE(options.policy.ipv6_lan);
    EXPECT_EQ(options.policy.allowed_cidrs, (std::vector<SourceRange>{{key_ip("172.22.0.0"), 24}}));
}

TEST(KubernetesFlags, Ipv6OnlyLanWithRouterAdvertisements) {
    const auto [node, options] =
        settings({"--subnet-v6", "fd00:1::/64", "--allowed-cidrs", "fd00:1::/120", "--router-advertisements",
                  "--ra-interval", "30", "--dhcp-relays", "fd00:1::fe"});
    EXPECT_EQ(node.prefix_len, 0);
    EXPECT_EQ(format_prefix6(node.subnet6, node.prefix6_len), "fd00:1::/64");
    EXPECT_TRUE(node.router_advertisements);
    EXPECT_EQ(node.ra_interval, std::chrono::seconds(30));
    EXPECT_EQ(node.dhcp_relays, std::vector<bpfnet_ip>{key_ip("fd00:1::fe")});
    EXPECT_FALSE(options.policy.ipv4_lan);
    EXPECT_TRUE(options.policy.ipv6_lan);
    EXPECT_EQ(options.policy.allowed_cidrs, (std::vector<SourceRange>{{key_ip("fd00:1::"), 120}}));
}

TEST(KubernetesFlags, DualStackLan) {
    const auto [node, options] = settings({"--subnet", "172.22.0.0/24", "--subnet-v6", "fd00:1::/64", "--allowed-cidrs",
                                           "172.22.0.0/28,fd00:1::/124", "--dhcp-relays", "172.22.0.254,fd00:1::fe"});
    EXPECT_TRUE(options.policy.ipv4_lan);
    EXPECT_TRUE(options.policy.ipv6_lan);
    EXPECT_EQ(options.policy.allowed_cidrs.size(), 2u);
    EXPECT_EQ(node.dhcp_relays, (std::vector<bpfnet_ip>{key_ip("172.22.0.254"), key_ip("fd00:1::fe")}));
    EXPECT_FALSE(node.router_advertisements); // off unless asked for
    EXPECT_EQ(node.ra_interval, kDefaultRouterAdvertisementInterval);
}

TEST(KubernetesFlags, RefusedInWordsThatNameTheFlag) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--allowed-cidrs", "172.22.0.0/24"}, "--subnet: is required (the IPv4 provisioning subnet), or --subnet-v6"},
        {{"--subnet", "fd00:1::/64", "--allowed-cidrs", "fd00:1::/64"}, "an IPv6 subnet goes in --subnet-v6"},
        {{"--subnet", "0.0.0.0/0", "--allowed-cidrs", "0.0.0.0/0"}, "--subnet: prefix length must be between 8 and 30"},
        {{"--subnet", "172.22.0.0/31", "--allowed-cidrs", "172.22.0.0/24"}, "between 8 and 30, got 31"},
        {{"--subnet-v6", "172.22.0.0/24", "--allowed-cidrs", "172.22.0.0/24"},
         "--subnet-v6: must be an IPv6 CIDR like fd00:1::/64, got \"172.22.0.0/24\""},
        {{"--subnet-v6", "fd00:1::1/64", "--allowed-cidrs", "fd00:1::/64"}, "has host bits set"},
        {{"--subnet-v6", "fd00::/8", "--allowed-cidrs", "fd00::/8"}, "prefix length must be between 16 and 124"},
        {{"--subnet-v6", "fe80::/64", "--allowed-cidrs", "fe80::/64"}, "must be a unicast prefix"},
        {{"--subnet-v6", "::/80", "--allowed-cidrs", "::/80"}, "the unspecified address"},
        {{"--subnet-v6", "::ffff:0:0/96", "--allowed-cidrs", "fd00::/64"}, "--subnet-v6: must be a CIDR like"},
        {{"--subnet", "172.22.0.0/24", "--allowed-cidrs", "172.22.0.1/24"}, "--allowed-cidrs: has host bits set"},
        {{"--subnet", "172.22.0.0/24", "--allowed-cidrs", "fd00:1::/64"},
         "fd00:1::/64 is IPv6, and there is no "
         "--subnet-v6"},
        {{"--subnet-v6", "fd00:1::/64", "--allowed-cidrs", "172.22.0.0/24"}, "is IPv4, and there is no --subnet"},
        {{"--subnet", "172.22.0.0/24", "--allowed-cidrs", "172.22.0.0/24", "--dhcp-relays", "fd00:1::fe"},
         "--dhcp-relays: fd00:1::fe is IPv6, and there is no --subnet-v6"},
        {{"--subnet-v6", "fd00:1::/64", "--allowed-cidrs", "fd00:1::/64", "--dhcp-relays", "fd00:2::fe"},
         "--dhcp-relays: "},
        {{"--subnet-v6", "fd00:1::/64", "--allowed-cidrs", "fd00:1::/64", "--dhcp-relays", "fd00:1::fe,fd00:1::fe"},
         "listed twice"},
        {{"--subnet", "172.22.0.0/24", "--allowed-cidrs", "172.22.0.0/24", "--router-advertisements"},
         "--router-advertisements: router advertisements are for an IPv6 LAN: give --subnet-v6"},
        {{"--subnet-v6", "fd00:1::/64", "--allowed-cidrs", "fd00:1::/64", "--ra-interval", "3"},
         "--ra-interval: must be between 4 and 1800, got 3"},
    };
    for (const auto &[args, words] : cases) {
        const std::string got = refusal(args);
        EXPECT_NE(got.find(words), std::string::npos) << "got: '" << got << "', want: '" << words << "'";
    }
}

// --shared-addresses: the addresses Services may share (the control plane's VIP, "node"); with them alone, the
// loader needs no provisioning LAN (virtual media only).
TEST(KubernetesFlags, SharedAddresses) {
    const auto [beside, policy] = settings(
        {"--subnet", "172.22.0.0/24", "--allowed-cidrs", "172.22.0.0/24", "--shared-addresses", "192.0.2.10,node"});
    EXPECT_EQ(policy.policy.shared_addresses, (std::vector<SharedChoice>{test::key_ip("192.0.2.10"), std::nullopt}));
    // Ironic's ramdisk ports unless told otherwise: its image server, virtual media over TLS, its API.
    EXPECT_EQ(policy.policy.shared_ports, (std::vector<uint16_t>{6180, 6183, 6385}));
    const auto [node, told] = settings({"--shared-addresses", "node", "--shared-ports", "6385,8443"});
    EXPECT_EQ(told.policy.shared_ports, (std::vector<uint16_t>{6385, 8443}));

    const auto [alone, only] = settings({"--shared-addresses", "node"});
    EXPECT_EQ(alone.prefix_len, 0);
    EXPECT_EQ(alone.prefix6_len, 0);
    EXPECT_EQ(only.policy.shared_addresses, (std::vector<SharedChoice>{std::nullopt}));
    EXPECT_TRUE(only.policy.allowed_cidrs.empty());
}

TEST(KubernetesFlags, SharedAddressesRefusedInTheirWords) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--shared-addresses", "vip"}, "--shared-addresses: must be an IP address of the node's"},
        {{"--shared-addresses", "224.0.0.9"}, "--shared-addresses: must be a unicast address"},
        {{"--shared-addresses", "node,node"}, "--shared-addresses: lists node twice"},
        {{"--subnet", "172.22.0.0/24", "--allowed-cidrs", "172.22.0.0/24", "--shared-addresses", "172.22.0.9"},
         "--shared-addresses: 172.22.0.9 is inside the provisioning subnet"},
        {{"--subnet", "172.22.0.0/24", "--allowed-cidrs", "172.22.0.0/24,192.0.2.0/24", "--shared-addresses",
          "192.0.2.10"},
         "--shared-addresses: 192.0.2.10 is inside --allowed-cidrs 192.0.2.0/24"},
        {{"--shared-addresses", "192.0.2.1,192.0.2.2,192.0.2.3,192.0.2.4,192.0.2.5,192.0.2.6,192.0.2.7,192.0.2.8,"
                                "192.0.2.9"},
         "--shared-addresses: at most 8 addresses, got 9"},
        // A provisioning LAN still needs its service IPs' CIDRs.
        {{"--subnet", "172.22.0.0/24", "--shared-addresses", "node"}, "--allowed-cidrs is required"},
        // Without a LAN, nothing but shared addresses.
        {{}, "--allowed-cidrs is required"},
    };
    for (const auto &[args, words] : cases) {
        const std::string got = refusal(args);
        EXPECT_NE(got.find(words), std::string::npos) << "got: '" << got << "', want: '" << words << "'";
    }
}
