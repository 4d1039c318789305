// status.loadBalancer.ingress as the owner reads and writes it (k8s/service_status).
#include "k8s/service_status.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>

using namespace bpfnet::k8s;
using nlohmann::json;

namespace {
const uint32_t kIp = htonl(0xc6120002); // 198.18.0.2

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

TEST(ServiceStatus, NamesFindsTheIpAmongOthers) {
    EXPECT_TRUE(ingress_names(with_ingress({{{"ip", "198.18.0.9"}}, {{"ip", "198.18.0.2"}}}), kIp));
    EXPECT_FALSE(ingress_names(with_ingress({{{"ip", "198.18.0.9"}}}), kIp));
    EXPECT_FALSE(ingress_names(with_ingress({1, "x", nullptr}), kIp));
}

TEST(ServiceStatus, PatchesTouchOnlyTheIngress) {
    EXPECT_EQ(ingress_patch(kIp), json::parse(R"({"status": {"loadBalancer": {"ingress": [{"ip": "198.18.0.2"}]}}})"));
    EXPECT_EQ(ingress_removal_patch(), json::parse(R"({"status": {"loadBalancer": {"ingress": null}}})"));
}
