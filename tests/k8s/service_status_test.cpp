// status.loadBalancer.ingress as the owner reads and writes it (k8s/service_status).
#include "k8s/service_status.hpp"

#include "core/addresses.hpp"
#include "packet.hpp"

#include <gtest/gtest.h>

using namespace bpfnet::k8s;
using nlohmann::json;

namespace {
using bpfnet::test::key_ip;
const std::vector<bpfnet_ip> kIp = {key_ip("198.18.0.2")};
const std::vector<bpfnet_ip> kDual = {key_ip("198.18.0.2"), key_ip("fd00:1::2")};

json with_ingress(json ingress) {
    return {{"metadata", {{"name", "ironic"}}}, {"status", {{"loadBalancer", {{"ingress", std::move(ingress)}}}}}};
}
} // namespace

TEST(ServiceStatus, TheServersDefaultedIpModeReadsAsTheSameIngress) {
    EXPECT_TRUE(ingress_announces(with_ingress({{{"ip", "198.18.0.2"}}}), kIp));
    EXPECT_TRUE(ingress_announces(with_ingress({{{"ip", "198.18.0.2"}, {"ipMode", "VIP"}}}), kIp));
}

TEST(ServiceStatus, AnythingElseIsNotWhatTheOwnerWrites) {
    EXPECT_FALSE(ingress_announces(json::object(), kIp));
    EXPECT_FALSE(ingress_announces(with_ingress(json::array()), kIp));
    EXPECT_FALSE(ingress_announces(with_ingress({{{"ip", "198.18.0.3"}}}), kIp));
    // Proxy mode means traffic reaches the pod through a proxy: not what bpfnet does.
    EXPECT_FALSE(ingress_announces(with_ingress({{{"ip", "198.18.0.2"}, {"ipMode", "Proxy"}}}), kIp));
    EXPECT_FALSE(ingress_announces(with_ingress({{{"ip", "198.18.0.2"}, {"hostname", "lb.example"}}}), kIp));
    EXPECT_FALSE(ingress_announces(with_ingress({{{"ip", "198.18.0.2"}}, {{"ip", "198.18.0.9"}}}), kIp));
    EXPECT_FALSE(ingress_announces(with_ingress("198.18.0.2"), kIp));
}

TEST(ServiceStatus, ADualStackIngressListsBothFamiliesInAnyOrder) {
    EXPECT_TRUE(ingress_announces(with_ingress({{{"ip", "198.18.0.2"}}, {{"ip", "fd00:1::2"}}}), kDual));
    EXPECT_TRUE(
        ingress_announces(with_ingress({{{"ip", "fd00:1::2"}, {"ipMode", "VIP"}}, {{"ip", "198.18.0.2"}}}), kDual));
    // One family missing, or one address twice, is not the list.
    EXPECT_FALSE(ingress_announces(with_ingress({{{"ip", "198.18.0.2"}}}), kDual));
    EXPECT_FALSE(ingress_announces(with_ingress({{{"ip", "198.18.0.2"}}, {{"ip", "198.18.0.2"}}}), kDual));
    EXPECT_FALSE(ingress_announces(with_ingress({{{"ip", "198.18.0.2"}}, {{"ip", "fd00:1::2"}}}), kIp));
    // The API's spelling of an IPv6 address may differ from ours: compared as addresses.
    EXPECT_TRUE(ingress_announces(with_ingress({{{"ip", "198.18.0.2"}}, {{"ip", "FD00:1:0::2"}}}), kDual));
}

TEST(ServiceStatus, AddressesAreReadFromEveryEntryThatHasOne) {
    EXPECT_EQ(ingress_addresses(with_ingress({{{"ip", "fd00:1::2"}}, {{"hostname", "x"}}, {{"ip", "198.18.0.9"}}})),
              (std::vector<bpfnet_ip>{key_ip("fd00:1::2"), key_ip("198.18.0.9")}));
    EXPECT_TRUE(ingress_addresses(with_ingress({1, "x", nullptr})).empty());
    EXPECT_TRUE(ingress_addresses(json::object()).empty());
}

TEST(ServiceStatus, PatchesTouchOnlyTheIngress) {
    EXPECT_EQ(ingress_patch(kIp), json::parse(R"({"status": {"loadBalancer": {"ingress": [{"ip": "198.18.0.2"}]}}})"));
    EXPECT_EQ(ingress_patch(kDual),
              json::parse(R"({"status": {"loadBalancer": {"ingress": [{"ip": "198.18.0.2"}, {"ip": "fd00:1::2"}]}}})"));
    EXPECT_EQ(ingress_removal_patch(), json::parse(R"({"status": {"loadBalancer": {"ingress": null}}})"));
    EXPECT_EQ(ingress_patch({}), ingress_removal_patch());
}
