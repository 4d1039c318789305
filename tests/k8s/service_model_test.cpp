// bpfnet::k8s service model: Services and EndpointSlices (as JSON from the API) to desired state.
#include "k8s/service_model.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <string>
#include <vector>

using namespace bpfnet;
using namespace bpfnet::k8s;
using json = nlohmann::json;
using Outcome = ServiceDecision::Outcome;

namespace {

uint32_t ip(const char *s) {
    auto v = parse_ipv4_strict(s);
    EXPECT_TRUE(v.has_value()) << s;
    return v.value_or(0);
}

ServicePolicy policy() {
    ServicePolicy p;
    p.allowed_namespaces = {"metal3", "ironic"};
    p.allowed_cidrs = {{ip("198.18.0.0"), 24}, {ip("10.50.0.0"), 16}};
    return p;
}

json make_service(const std::string &ns = "metal3", const std::string &name = "ironic") {
    json s = json::parse(R"({
      "apiVersion": "v1", "kind": "Service",
      "metadata": {"annotations": {"bpfnet.io/ip": "198.18.0.2"}},
      "spec": {
        "type": "LoadBalancer", "loadBalancerClass": "bpfnet.io/provisioning",
        "ports": [
          {"name": "ironic-api", "protocol": "TCP", "port": 6385, "targetPort": 6385},
          {"name": "ipxe-tls", "protocol": "TCP", "port": 443, "targetPort": 8084},
          {"name": "dhcp", "protocol": "UDP", "port": 67},
          {"name": "boot", "protocol": "UDP", "port": 69, "appProtocol": "tftp"}
        ]
      }
    })");
    s["metadata"]["namespace"] = ns;
    s["metadata"]["name"] = name;
    return s;
}

ServiceDecision decide(const json &s) {
    return decide_service(s, policy());
}

void expect_refused(const json &s, const std::string &needle) {
    ServiceDecision d;
    ASSERT_NO_THROW(d = decide(s)) << s.dump();
    EXPECT_EQ(d.outcome, Outcome::Refused) << s.dump();
    EXPECT_NE(d.reason.find(needle), std::string::npos) << "reason: " << d.reason << "\nservice: " << s.dump();
    EXPECT_TRUE(d.ports.empty());
}

} // namespace

TEST(ServiceModel, AcceptsOurServiceAndTranslatesPorts) {
    const auto d = decide(make_service());
    ASSERT_EQ(d.outcome, Outcome::Accepted) << d.reason;
    EXPECT_TRUE(d.reason.empty());
    EXPECT_EQ(d.key(), "metal3/ironic");
    EXPECT_EQ(d.service_ip_be, ip("198.18.0.2"));
    const std::vector<PortRule> want = {
        {"ironic-api", Protocol::Tcp, 6385, 6385, PortKind::Plain},
        {"ipxe-tls", Protocol::Tcp, 443, 8084, PortKind::Plain},
        {"dhcp", Protocol::Udp, 67, 67, PortKind::Dhcp},
        {"boot", Protocol::Udp, 69, 69, PortKind::Tftp},
    };
    EXPECT_EQ(d.ports, want);
}

TEST(ServiceModel, IgnoresOtherTypesAndClasses) {
    for (const char *type : {"ClusterIP", "NodePort", "ExternalName"}) {
        auto s = make_service();
        s["spec"]["type"] = type;
        const auto d = decide(s);
        EXPECT_EQ(d.outcome, Outcome::Ignored) << type;
        EXPECT_TRUE(d.reason.empty());
    }
    auto no_type = make_service();
    no_type["spec"].erase("type");
    EXPECT_EQ(decide(no_type).outcome, Outcome::Ignored);
    auto other = make_service();
    other["spec"]["loadBalancerClass"] = "metallb.io/metallb";
    EXPECT_EQ(decide(other).outcome, Outcome::Ignored);
    auto no_class = make_service();
    no_class["spec"].erase("loadBalancerClass");
    EXPECT_EQ(decide(no_class).outcome, Outcome::Ignored);
    // A different configured class makes ours someone else's.
    auto p = policy();
    p.load_balancer_class = "example.com/other";
    EXPECT_EQ(decide_service(make_service(), p).outcome, Outcome::Ignored);
    // Not ours, so even an invalid IP or disallowed namespace gives no Event.
    auto foreign = make_service("kube-system");
    foreign["spec"]["type"] = "ClusterIP";
    foreign["metadata"]["annotations"]["bpfnet.io/ip"] = "bogus";
    EXPECT_EQ(decide(foreign).outcome, Outcome::Ignored);
}

TEST(ServiceModel, IpFromAnnotationElseLoadBalancerIP) {
    auto s = make_service();
    s["spec"]["loadBalancerIP"] = "198.18.0.9";
    EXPECT_EQ(decide(s).service_ip_be, ip("198.18.0.2")); // annotation wins
    s["metadata"].erase("annotations");
    auto d = decide(s);
    ASSERT_EQ(d.outcome, Outcome::Accepted) << d.reason;
    EXPECT_EQ(d.service_ip_be, ip("198.18.0.9"));
}

TEST(ServiceModel, RefusesWithoutIp) {
    auto s = make_service();
    s["metadata"].erase("annotations");
    expect_refused(s, "no service IP");
    s["metadata"]["annotations"] = json::object({{"bpfnet.io/ip", ""}});
    expect_refused(s, "no service IP");
}

TEST(ServiceModel, RefusesInvalidIPv4) {
    for (const char *bad : {"198.18.0", "198.18.0.256", "198.18.0.02", "198.18.0.2 ", "fd00::2", "a.b.c.d",
                            "198.18.0.2/24", "1.2.3.4.5", "0x1.2.3.4"}) {
        auto s = make_service();
        s["metadata"]["annotations"]["bpfnet.io/ip"] = bad;
        expect_refused(s, "is not a valid IPv4 address");
    }
    auto s = make_service();
    s["metadata"].erase("annotations");
    s["spec"]["loadBalancerIP"] = "not-an-ip";
    expect_refused(s, "spec.loadBalancerIP \"not-an-ip\" is not a valid IPv4 address");
}

TEST(ServiceModel, RefusesDisallowedNamespace) {
    expect_refused(make_service("default"), "namespace default is not allowed");
    auto p = policy();
    p.allowed_namespaces.clear();
    EXPECT_EQ(decide_service(make_service(), p).outcome, Outcome::Refused);
    EXPECT_EQ(decide(make_service("ironic")).outcome, Outcome::Accepted);
}

TEST(ServiceModel, RefusesIpOutsideAllowedCidrs) {
    auto s = make_service();
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "198.18.1.2";
    expect_refused(s, "198.18.1.2 is outside every allowed CIDR");
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "10.50.200.1"; // second CIDR
    EXPECT_EQ(decide(s).outcome, Outcome::Accepted);
    auto p = policy();
    p.allowed_cidrs = {{0, 0}}; // /0 allows everything
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "203.0.113.5";
    EXPECT_EQ(decide_service(s, p).outcome, Outcome::Accepted);
    p.allowed_cidrs = {{ip("203.0.113.5"), 32}};
    EXPECT_EQ(decide_service(s, p).outcome, Outcome::Accepted);
    p.allowed_cidrs.clear();
    EXPECT_EQ(decide_service(s, p).outcome, Outcome::Refused);
}

TEST(ServiceModel, RefusesProtocolsOtherThanTcpUdp) {
    auto s = make_service();
    s["spec"]["ports"][0]["protocol"] = "SCTP";
    expect_refused(s, "protocol SCTP is not supported");
    s["spec"]["ports"][0]["protocol"] = "tcp"; // the API spells it upper case
    expect_refused(s, "protocol tcp is not supported");
    s["spec"]["ports"][0].erase("protocol"); // absent: TCP
    const auto d = decide(s);
    ASSERT_EQ(d.outcome, Outcome::Accepted) << d.reason;
    EXPECT_EQ(d.ports[0].protocol, Protocol::Tcp);
}

TEST(ServiceModel, RefusesDuplicatePorts) {
    auto s = make_service();
    s["spec"]["ports"].push_back({{"name", "again"}, {"protocol", "TCP"}, {"port", 6385}, {"targetPort", 9999}});
    expect_refused(s, "spec.ports[4] (again): tcp port 6385 is already used by spec.ports[0]");
    // Same number on another protocol is fine.
    auto ok = make_service();
    ok["spec"]["ports"].push_back({{"name", "api-udp"}, {"protocol", "UDP"}, {"port", 6385}});
    EXPECT_EQ(decide(ok).outcome, Outcome::Accepted) << decide(ok).reason;
    auto target = make_service();
    target["spec"]["ports"].push_back({{"name", "x"}, {"protocol", "TCP"}, {"port", 80}, {"targetPort", 8084}});
    expect_refused(target, "spec.ports[4] (x): tcp targetPort 8084 is already used by spec.ports[1]");
}

// The config file's limit too (core/service_rules.hpp): the services map holds BPFNET_MAX_SERVICES entries.
TEST(ServiceModel, AtMostAsManyPortsAsTheServicesMapHolds) {
    auto s = make_service();
    s["spec"]["ports"] = json::array();
    for (int port = 1; port <= BPFNET_MAX_SERVICES + 1; port++)
        s["spec"]["ports"].push_back({{"name", "p" + std::to_string(port)}, {"protocol", "TCP"}, {"port", port}});
    expect_refused(s, "spec.ports: must list at most 256 ports, got 257");
    s["spec"]["ports"].erase(s["spec"]["ports"].size() - 1);
    EXPECT_EQ(decide(s).outcome, Outcome::Accepted) << decide(s).reason;
}

TEST(ServiceModel, TargetPortNumberDefaultOrName) {
    auto s = make_service();
    s["spec"]["ports"][0].erase("targetPort");
    auto d = decide(s);
    ASSERT_EQ(d.outcome, Outcome::Accepted);
    EXPECT_EQ(d.ports[0].target_port, 6385);
    EXPECT_TRUE(d.target_port_names.empty()); // no port is named: nothing to resolve
    s["spec"]["ports"][0]["targetPort"] = 0;
    expect_refused(s, "targetPort must be an integer between 1 and 65535");
    s["spec"]["ports"][0]["targetPort"] = 70000;
    expect_refused(s, "targetPort must be an integer between 1 and 65535");
    for (const char *bad : {"", "HTTP", "-api", "api-", "a--b", "1234", "ironic-api-port-x", "api_1"}) {
        s["spec"]["ports"][0]["targetPort"] = bad;
        expect_refused(s, "is not a port name");
    }
}

// The Ironic Standalone Operator's Services name their target ports: the number comes from the EndpointSlice,
// whose ports carry the Service port's name and the pod's number for it.
TEST(ServiceModel, NamedTargetPortsResolveFromTheEndpointsSlice) {
    auto s = make_service();
    s["spec"]["ports"][0]["targetPort"] = "ironic-api";
    s["spec"]["ports"][1]["targetPort"] = "ipxe-tls";
    const auto d = decide(s);
    ASSERT_EQ(d.outcome, Outcome::Accepted) << d.reason;
    EXPECT_EQ(d.ports[0].target_port, 0);
    EXPECT_EQ(d.target_port_names, (std::vector<std::string>{"ironic-api", "ipxe-tls", "", ""}));

    json slice = {{"addressType", "IPv4"},
                  {"endpoints", {{{"addresses", {"10.244.1.7"}}, {"nodeName", "node-a"}}}},
                  {"ports",
                   {{{"name", "ironic-api"}, {"protocol", "TCP"}, {"port", 6388}},
                    {{"name", "ipxe-tls"}, {"protocol", "TCP"}, {"port", 8443}},
                    {{"name", "dhcp"}, {"protocol", "UDP"}, {"port", 67}},
                    {{"name", "boot"}, {"protocol", "UDP"}, {"port", 69}}}}};
    const auto endpoint = ready_endpoint(json::array({slice}), "node-a");
    ASSERT_TRUE(endpoint);
    const ResolvedPorts resolved = resolve_target_ports(accepted(d), endpoint);
    EXPECT_TRUE(resolved.missing.empty());
    ASSERT_EQ(resolved.ports.size(), 4u);
    EXPECT_EQ(resolved.ports[0].target_port, 6388);
    EXPECT_EQ(resolved.ports[1].target_port, 8443);
    EXPECT_EQ(resolved.ports[2].target_port, 67); // numbers stay as the Service says
    EXPECT_EQ(resolved.ports[3].target_port, 69);

    // A slice without the port (the pod declares no such container port), or no endpoint at all: the named
    // ports are missing and left out; the others stay listed.
    slice["ports"].erase(1);
    const ResolvedPorts partial = resolve_target_ports(accepted(d), ready_endpoint(json::array({slice}), "node-a"));
    EXPECT_EQ(partial.missing, (std::vector<std::string>{"spec.ports[1] (ipxe-tls): targetPort \"ipxe-tls\""}));
    EXPECT_EQ(partial.ports.size(), 3u);
    const ResolvedPorts none = resolve_target_ports(accepted(d), std::nullopt);
    EXPECT_EQ(none.missing.size(), 2u);
    ASSERT_EQ(none.ports.size(), 2u);
    EXPECT_EQ(none.ports[0].name, "dhcp");
    // A slice port of the other protocol does not resolve a TCP port.
    slice["ports"][0]["protocol"] = "UDP";
    EXPECT_EQ(resolve_target_ports(accepted(d), ready_endpoint(json::array({slice}), "node-a")).missing.size(), 2u);
}

TEST(ServiceModel, TwoPortsNamingOneContainerPortAreRefused) {
    auto s = make_service();
    s["spec"]["ports"][0]["targetPort"] = "api";
    s["spec"]["ports"][1]["targetPort"] = "api";
    expect_refused(s, "spec.ports[1]: tcp targetPort \"api\" is already used by spec.ports[0]");
}

// loadBalancerSourceRanges (else the annotation) become the IP's source ranges: host bits cleared, sorted,
// without duplicates; what cannot be read refuses the Service (a security setting is never ignored). The
// fields that one backend steered to on its own node satisfies by construction are accepted.
TEST(ServiceModel, SourceRangesReadOtherTrafficFieldsAccepted) {
    auto s = make_service();
    s["spec"]["loadBalancerSourceRanges"] = {"198.18.0.128/25", "198.18.0.5/28", "198.18.0.0/28"};
    auto d = decide(s);
    ASSERT_EQ(d.outcome, Outcome::Accepted) << d.reason;
    const std::vector<std::pair<uint32_t, uint8_t>> want = {{ip("198.18.0.0"), 28}, {ip("198.18.0.128"), 25}};
    EXPECT_EQ(d.source_ranges, want);
    EXPECT_EQ(accepted(d).source_ranges, want);
    // The field wins over the annotation; an empty field leaves it to the annotation.
    s["metadata"]["annotations"]["service.beta.kubernetes.io/load-balancer-source-ranges"] = "10.0.0.0/8";
    EXPECT_EQ(decide(s).source_ranges, want);
    s["spec"]["loadBalancerSourceRanges"] = json::array();
    s["metadata"]["annotations"]["service.beta.kubernetes.io/load-balancer-source-ranges"] =
        " 198.18.0.0/28 , 198.18.0.128/25";
    EXPECT_EQ(decide(s).source_ranges, want);
    s["metadata"]["annotations"].erase("service.beta.kubernetes.io/load-balancer-source-ranges");
    EXPECT_TRUE(decide(s).source_ranges.empty());

    s["spec"]["loadBalancerSourceRanges"] = {"198.18.0.0"};
    expect_refused(s, "spec.loadBalancerSourceRanges: \"198.18.0.0\" is not an IPv4 CIDR");
    s["spec"]["loadBalancerSourceRanges"] = {"198.18.0.0/33"};
    expect_refused(s, "is not an IPv4 CIDR");
    s["spec"]["loadBalancerSourceRanges"] = {"fd00::/64"};
    expect_refused(s, "(bpfnet serves IPv4 only)");
    s["spec"]["loadBalancerSourceRanges"] = {7};
    expect_refused(s, "spec.loadBalancerSourceRanges has an entry that is not a string");
    s["spec"]["loadBalancerSourceRanges"] = "198.18.0.0/28";
    expect_refused(s, "spec.loadBalancerSourceRanges is not a list");
    s["spec"]["loadBalancerSourceRanges"] = json::array();
    for (int i = 0; i < 64; i++)
        s["spec"]["loadBalancerSourceRanges"].push_back("10.0." + std::to_string(i) + ".0/24");
    expect_refused(s, "has 64 ranges; bpfnet takes at most 63");

    auto t = make_service();
    t["spec"]["externalTrafficPolicy"] = "Local";
    t["spec"]["sessionAffinity"] = "ClientIP";
    t["spec"]["internalTrafficPolicy"] = "Local";
    t["spec"]["allocateLoadBalancerNodePorts"] = false;
    EXPECT_EQ(decide(t).outcome, Outcome::Accepted) << decide(t).reason;
}

TEST(ServiceModel, PortKindsFromNameOrAppProtocol) {
    auto s = make_service();
    s["spec"]["ports"] = json::parse(R"([
      {"name": "boot-dhcp", "protocol": "UDP", "port": 67, "appProtocol": "dhcp"},
      {"name": "tftp", "protocol": "UDP", "port": 69},
      {"name": "web", "protocol": "TCP", "port": 80, "appProtocol": "http"}
    ])");
    const auto d = decide(s);
    ASSERT_EQ(d.outcome, Outcome::Accepted) << d.reason;
    EXPECT_EQ(d.ports[0].kind, PortKind::Dhcp);
    EXPECT_EQ(d.ports[1].kind, PortKind::Tftp);
    EXPECT_EQ(d.ports[2].kind, PortKind::Plain);
}

TEST(ServiceModel, DhcpMustBeUdp67) {
    auto s = make_service();
    s["spec"]["ports"][2]["port"] = 68;
    expect_refused(s, "spec.ports[2] (dhcp): dhcp requires port 67, got 68");
    s["spec"]["ports"][2]["port"] = 67;
    s["spec"]["ports"][2]["protocol"] = "TCP";
    expect_refused(s, "spec.ports[2] (dhcp): dhcp requires protocol udp, got tcp");
    auto app = make_service();
    app["spec"]["ports"][0]["appProtocol"] = "dhcp"; // TCP 6385 marked dhcp
    expect_refused(app, "spec.ports[0] (ironic-api): dhcp requires protocol udp, got tcp");
}

// Kubernetes mode serves IPv4 service IPs only: a DHCPv6 port is refused with the reason, never steered as plain.
TEST(ServiceModel, Dhcpv6PortIsRefusedInKubernetesMode) {
    auto s = make_service();
    s["spec"]["ports"][2]["appProtocol"] = "dhcpv6";
    s["spec"]["ports"][2]["port"] = 547;
    expect_refused(s, "spec.ports[2] (dhcp): dhcpv6 relays DHCPv6 for an IPv6 service address");
}

TEST(ServiceModel, TftpMustBeUdp) {
    auto s = make_service();
    s["spec"]["ports"][3]["protocol"] = "TCP";
    expect_refused(s, "spec.ports[3] (boot): tftp requires protocol udp, got tcp");
    auto named = make_service();
    named["spec"]["ports"][0]["name"] = "tftp"; // TCP 6385 named tftp
    expect_refused(named, "spec.ports[0] (tftp): tftp requires protocol udp, got tcp");
}

TEST(ServiceModel, MalformedServicesAreRefusedNeverThrow) {
    // The whole object.
    for (const json &bad : {json(nullptr), json(42), json("svc"), json::array()})
        expect_refused(bad, "not a JSON object");
    // Wrong types at every level we read.
    struct Case {
        json::json_pointer where;
        json value;
        std::string needle;
    };
    const std::vector<Case> cases = {
        {"/metadata"_json_pointer, 1, "metadata is not an object"},
        {"/spec"_json_pointer, "LoadBalancer", "spec is not an object"},
        {"/spec/type"_json_pointer, json::array({"LoadBalancer"}), "spec.type is not a string"},
        {"/spec/loadBalancerClass"_json_pointer, 7, "spec.loadBalancerClass is not a string"},
        {"/metadata/name"_json_pointer, 5, "metadata.name"},
        {"/metadata/namespace"_json_pointer, json::object(), "metadata.namespace"},
        {"/metadata/annotations"_json_pointer, json::array(), "metadata.annotations is not an object"},
        {"/metadata/annotations/bpfnet.io~1ip"_json_pointer, 3232235778u, "annotation bpfnet.io/ip is not a string"},
        {"/spec/ports"_json_pointer, json::object(), "spec.ports is not a list"},
        {"/spec/ports"_json_pointer, json::array(), "spec.ports is empty"},
        {"/spec/ports/0"_json_pointer, "6385/TCP", "spec.ports[0] is not an object"},
        {"/spec/ports/0/name"_json_pointer, 1, "spec.ports[0].name is not a string"},
        {"/spec/ports/0/protocol"_json_pointer, 6, "protocol is not a string"},
        {"/spec/ports/0/port"_json_pointer, "6385", "port must be an integer"},
        {"/spec/ports/0/port"_json_pointer, 6385.0, "port must be an integer"},
        {"/spec/ports/0/port"_json_pointer, -1, "port must be an integer"},
        {"/spec/ports/0/port"_json_pointer, 18446744073709551615ull, "port must be an integer"},
        {"/spec/ports/0/port"_json_pointer, true, "port must be an integer"},
        {"/spec/ports/0/targetPort"_json_pointer, json::array({1}), "targetPort must be an integer"},
        {"/spec/ports/0/appProtocol"_json_pointer, json::object(), "appProtocol is not a string"},
    };
    for (const auto &c : cases) {
        auto s = make_service();
        s[c.where] = c.value;
        expect_refused(s, c.needle);
    }
    auto no_meta = make_service();
    no_meta.erase("metadata");
    expect_refused(no_meta, "metadata is missing");
    auto no_port = make_service();
    no_port["spec"]["ports"][1].erase("port");
    expect_refused(no_port, "spec.ports[1] (ipxe-tls): port is missing");
    auto no_ports = make_service();
    no_ports["spec"].erase("ports");
    expect_refused(no_ports, "spec.ports is missing");
    auto lb_ip = make_service();
    lb_ip["metadata"].erase("annotations");
    lb_ip["spec"]["loadBalancerIP"] = json::array();
    expect_refused(lb_ip, "spec.loadBalancerIP is not a string");
}

namespace {
AcceptedService svc(const std::string &ns, const std::string &name, const char *addr,
                    std::vector<std::pair<Protocol, uint16_t>> ports) {
    AcceptedService s{ns, name, ip(addr), {}, {}, {}};
    for (auto [proto, port] : ports)
        s.ports.push_back({"p" + std::to_string(port), proto, port, port, PortKind::Plain});
    return s;
}
} // namespace

TEST(SharedIps, DisjointPortsMayShareAnIp) {
    const std::vector<AcceptedService> in = {
        svc("metal3", "ironic", "198.18.0.2", {{Protocol::Tcp, 6385}, {Protocol::Udp, 67}}),
        svc("metal3", "images", "198.18.0.2", {{Protocol::Tcp, 6180}, {Protocol::Tcp, 67}}),
        svc("metal3", "other", "198.18.0.3", {{Protocol::Tcp, 6385}}), // same port, other IP
    };
    EXPECT_TRUE(check_shared_ips(in).empty());
    EXPECT_TRUE(check_shared_ips({}).empty());
}

// The datapath filters sources per service IP: Services sharing one need the same ranges.
TEST(SharedIps, DifferentSourceRangesRefuseTheLater) {
    auto a = svc("metal3", "ironic", "198.18.0.2", {{Protocol::Tcp, 6385}});
    auto b = svc("metal3", "images", "198.18.0.2", {{Protocol::Tcp, 6180}});
    a.source_ranges = {{ip("198.18.0.0"), 24}};
    auto conflicts = check_shared_ips({a, b});
    ASSERT_EQ(conflicts.size(), 1u);
    EXPECT_EQ(conflicts[0].refused, "metal3/ironic");
    EXPECT_NE(conflicts[0].reason.find("other loadBalancerSourceRanges"), std::string::npos);
    b.source_ranges = a.source_ranges;
    EXPECT_TRUE(check_shared_ips({a, b}).empty());
}

TEST(SharedIps, OverlapRefusesTheLaterByNamespaceName) {
    // Input order is irrelevant: "ironic/b" < "metal3/a" < "metal3/c".
    const std::vector<AcceptedService> in = {
        svc("metal3", "c", "198.18.0.2", {{Protocol::Tcp, 443}}),
        svc("metal3", "a", "198.18.0.2", {{Protocol::Tcp, 443}, {Protocol::Udp, 69}, {Protocol::Tcp, 80}}),
        svc("ironic", "b", "198.18.0.2", {{Protocol::Udp, 69}, {Protocol::Tcp, 80}, {Protocol::Tcp, 6385}}),
    };
    const auto got = check_shared_ips(in);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].refused, "metal3/a");
    EXPECT_EQ(got[0].other, "ironic/b");
    EXPECT_EQ(got[0].service_ip_be, ip("198.18.0.2"));
    const std::vector<std::pair<Protocol, uint16_t>> overlap = {{Protocol::Tcp, 80}, {Protocol::Udp, 69}};
    EXPECT_EQ(got[0].overlap, overlap);
    EXPECT_NE(got[0].reason.find("Service ironic/b"), std::string::npos) << got[0].reason;
    EXPECT_NE(got[0].reason.find("198.18.0.2"), std::string::npos) << got[0].reason;
    EXPECT_NE(got[0].reason.find("UDP 69"), std::string::npos) << got[0].reason;
    EXPECT_EQ(got[1].refused, "metal3/c");
    EXPECT_EQ(got[1].other, "metal3/a");
    EXPECT_NE(got[1].reason.find("Service metal3/a"), std::string::npos) << got[1].reason;

    // Reversed input gives the same answer.
    const std::vector<AcceptedService> rev(in.rbegin(), in.rend());
    EXPECT_EQ(check_shared_ips(rev), got);
}

TEST(SharedIps, SameTargetPortOnSharedIpRefused) {
    // Different service ports, but both lead to pod port 8080: replies could not be told apart.
    AcceptedService ironic = svc("metal3", "ironic", "198.18.0.2", {{Protocol::Tcp, 80}});
    ironic.ports[0].target_port = 8080;
    AcceptedService images = svc("metal3", "images", "198.18.0.2", {{Protocol::Tcp, 6180}});
    images.ports[0].target_port = 8080;
    const auto got = check_shared_ips({ironic, images});
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].refused, "metal3/ironic"); // "metal3/images" sorts first
    const std::vector<std::pair<Protocol, uint16_t>> overlap = {{Protocol::Tcp, 8080}};
    EXPECT_EQ(got[0].overlap, overlap);
    EXPECT_NE(got[0].reason.find("target ports (TCP 8080)"), std::string::npos) << got[0].reason;
    // Another target port, or the same target port on another protocol or another IP, is fine.
    images.ports[0].target_port = 8081;
    EXPECT_TRUE(check_shared_ips({ironic, images}).empty());
    images.ports[0].target_port = 8080;
    images.ports[0].protocol = Protocol::Udp;
    EXPECT_TRUE(check_shared_ips({ironic, images}).empty());
    images.ports[0].protocol = Protocol::Tcp;
    images.service_ip_be = ip("198.18.0.3");
    EXPECT_TRUE(check_shared_ips({ironic, images}).empty());
}

TEST(SharedIps, AcceptedFromDecision) {
    const auto d = decide(make_service());
    const auto a = accepted(d);
    EXPECT_EQ(a.key(), "metal3/ironic");
    EXPECT_EQ(a.ports, d.ports);
    const auto b = accepted(decide(make_service("ironic", "dup")));
    const auto got = check_shared_ips({a, b});
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].refused, "metal3/ironic"); // "ironic/dup" sorts first
    EXPECT_EQ(got[0].overlap.size(), 4u);
}

namespace {
json endpoint(const char *addr, const char *node, json ready = true) {
    json e = {{"addresses", {addr}}, {"conditions", {{"ready", ready}}}};
    if (node)
        e["nodeName"] = node;
    return e;
}
json slice(json endpoints, const char *type = "IPv4") {
    return {{"apiVersion", "discovery.k8s.io/v1"},
            {"kind", "EndpointSlice"},
            {"addressType", type},
            {"endpoints", std::move(endpoints)}};
}
} // namespace

TEST(ReadyEndpoint, NoneWhenEmptyOrNotReady) {
    EXPECT_FALSE(ready_endpoint(json::array(), "node-a"));
    EXPECT_FALSE(ready_endpoint(json::array({slice(json::array())}), "node-a"));
    const json slices = json::array({slice({endpoint("10.244.1.7", "node-a", false)})});
    EXPECT_FALSE(ready_endpoint(slices, "node-a"));
}

TEST(ReadyEndpoint, ReadyOnThisNodeMakesItEligible) {
    const json slices = json::array({slice({endpoint("10.244.1.7", "node-a")})});
    const auto a = ready_endpoint(slices, "node-a");
    ASSERT_TRUE(a);
    EXPECT_EQ(*a, (ReadyEndpoint{ip("10.244.1.7"), "node-a", true, false, {}}));
    // Also accepted as an EndpointSliceList.
    EXPECT_EQ(ready_endpoint(json{{"kind", "EndpointSliceList"}, {"items", slices}}, "node-a"), a);
}

TEST(ReadyEndpoint, ReadyOnOtherNodeIsNotEligible) {
    const json slices = json::array({slice({endpoint("10.244.2.9", "node-b")})});
    const auto b = ready_endpoint(slices, "node-a");
    ASSERT_TRUE(b);
    EXPECT_EQ(*b, (ReadyEndpoint{ip("10.244.2.9"), "node-b", false, false, {}}));
    // No nodeName: not on any node we know.
    const auto none = ready_endpoint(json::array({slice({endpoint("10.244.2.9", nullptr)})}), "node-a");
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->on_this_node);
    EXPECT_EQ(none->node_name, "");
    EXPECT_FALSE(ready_endpoint(json::array({slice({endpoint("10.244.2.9", nullptr)})}), "")->on_this_node);
}

TEST(ReadyEndpoint, AbsentReadyMeansReady) {
    json e = {{"addresses", {"10.244.1.7"}}, {"nodeName", "node-a"}};
    auto got = ready_endpoint(json::array({slice({e})}), "node-a");
    ASSERT_TRUE(got);
    EXPECT_TRUE(got->on_this_node);
    e["conditions"] = json::object();
    EXPECT_TRUE(ready_endpoint(json::array({slice({e})}), "node-a"));
}

// An endpoint of a pod being replaced (rolling update, drain): ready false, serving and terminating true.
namespace {
json terminating_endpoint(const std::string &address, const std::string &node, bool serving = true) {
    return {{"addresses", {address}},
            {"nodeName", node},
            {"conditions", {{"ready", false}, {"serving", serving}, {"terminating", true}}}};
}
} // namespace

TEST(ReadyEndpoint, TerminatingPodThatStillServesKeepsTheTrafficUntilANewOneIsReady) {
    // The old pod on node-a terminates while the new one on node-b is not ready yet: node-a keeps serving.
    json old_pod = terminating_endpoint("10.244.1.7", "node-a");
    json new_pod = endpoint("10.244.2.9", "node-b", false);
    auto got = ready_endpoint(json::array({slice({old_pod, new_pod})}), "node-a");
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, (ReadyEndpoint{ip("10.244.1.7"), "node-a", true, true, {}}));
    // node-b's loader agrees that the endpoint is on node-a.
    EXPECT_EQ(ready_endpoint(json::array({slice({old_pod, new_pod})}), "node-b"),
              (ReadyEndpoint{ip("10.244.1.7"), "node-a", false, true, {}}));
    // The new pod becomes ready: it wins, on every node, over the terminating one here.
    new_pod = endpoint("10.244.2.9", "node-b");
    EXPECT_EQ(ready_endpoint(json::array({slice({old_pod, new_pod})}), "node-a"),
              (ReadyEndpoint{ip("10.244.2.9"), "node-b", false, false, {}}));
}

TEST(ReadyEndpoint, ServingAbsentMeansServingOtherwiseNotReadyCannotServe) {
    EXPECT_FALSE(ready_endpoint(json::array({slice({terminating_endpoint("10.244.1.7", "node-a", false)})}), "node-a"));
    // Serving but not terminating and not ready: a pod that has not passed its readiness probe yet.
    json starting = {
        {"addresses", {"10.244.1.7"}}, {"nodeName", "node-a"}, {"conditions", {{"ready", false}, {"serving", true}}}};
    EXPECT_FALSE(ready_endpoint(json::array({slice({starting})}), "node-a"));
    // serving absent on a terminating endpoint: nil means serving, as kube-proxy reads it.
    json no_serving = {{"addresses", {"10.244.1.7"}},
                       {"nodeName", "node-a"},
                       {"conditions", {{"ready", false}, {"terminating", true}}}};
    EXPECT_EQ(ready_endpoint(json::array({slice({no_serving})}), "node-a"),
              (ReadyEndpoint{ip("10.244.1.7"), "node-a", true, true, {}}));
    // Conditions of the wrong type: the endpoint is not used.
    json bad = terminating_endpoint("10.244.1.7", "node-a");
    bad["conditions"]["serving"] = "yes";
    EXPECT_FALSE(ready_endpoint(json::array({slice({bad})}), "node-a"));
}

TEST(ReadyEndpoint, Ipv6AndFqdnSlicesIgnored) {
    const json slices = json::array({
        slice({endpoint("fd00::7", "node-a")}, "IPv6"),
        slice({endpoint("ironic.example", "node-a")}, "FQDN"),
        slice({endpoint("10.244.2.9", "node-b")}),
    });
    const auto got = ready_endpoint(slices, "node-a");
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, (ReadyEndpoint{ip("10.244.2.9"), "node-b", false, false, {}}));
    EXPECT_FALSE(ready_endpoint(json::array({slices[0], slices[1]}), "node-a"));
}

TEST(ReadyEndpoint, SeveralReadyPickLowestDeterministically) {
    const json slices = json::array({
        slice({endpoint("10.244.3.1", "node-c"), endpoint("10.244.1.200", "node-b", false)}),
        slice({endpoint("10.244.10.1", "node-a"), endpoint("10.244.2.1", "node-b"), endpoint("10.244.9.1", "node-a")}),
    });
    // Numerically lowest ("10.244.10.1" is not lower than "10.244.2.1" just because it sorts first as text).
    EXPECT_EQ(ready_endpoint(slices, "node-x"), (ReadyEndpoint{ip("10.244.2.1"), "node-b", false, false, {}}));
    // A ready endpoint on this node makes it eligible; the lowest local one is chosen.
    EXPECT_EQ(ready_endpoint(slices, "node-a"), (ReadyEndpoint{ip("10.244.9.1"), "node-a", true, false, {}}));
    // Order of slices and endpoints does not matter.
    const json reversed = json::array({slices[1], slices[0]});
    EXPECT_EQ(ready_endpoint(reversed, "node-x"), ready_endpoint(slices, "node-x"));
}

TEST(ReadyEndpoint, MalformedSlicesContributeNothingNeverThrow) {
    const json good = slice({endpoint("10.244.5.5", "node-b")});
    const std::vector<json> bad = {
        json(nullptr),
        json(1),
        json("slice"),
        json::array(),
        json{{"addressType", 4}, {"endpoints", {endpoint("10.244.1.1", "node-a")}}},
        json{{"endpoints", {endpoint("10.244.1.1", "node-a")}}}, // no addressType
        slice(json::object()),
        slice("x"),
        slice(json::array({1, "e", nullptr})),
        slice({json{{"addresses", "10.244.1.1"}, {"nodeName", "node-a"}}}),
        slice({json{{"addresses", {1, nullptr, json::array()}}, {"nodeName", "node-a"}}}),
        slice({json{{"addresses", {"10.244.1.1"}}, {"nodeName", 7}}}),
        slice({json{{"addresses", {"10.244.1.1"}}, {"nodeName", "node-a"}, {"conditions", "ready"}}}),
        slice({endpoint("10.244.1.1", "node-a", "true")}), // ready must be a boolean
        slice({endpoint("10.244.1.001", "node-a")}),
        slice({endpoint("10.244.1.1/32", "node-a")}),
    };
    for (const auto &b : bad) {
        std::optional<ReadyEndpoint> got;
        ASSERT_NO_THROW(got = ready_endpoint(json::array({b, good}), "node-a")) << b.dump();
        ASSERT_TRUE(got) << b.dump();
        EXPECT_EQ(*got, (ReadyEndpoint{ip("10.244.5.5"), "node-b", false, false, {}})) << b.dump();
    }
    for (const json &top : {json(nullptr), json(3), json("x"), json::object(), json{{"items", 5}}})
        EXPECT_NO_THROW(EXPECT_FALSE(ready_endpoint(top, "node-a"))) << top.dump();
}

TEST(ParseIpv4, StrictDottedQuad) {
    EXPECT_EQ(parse_ipv4_strict("198.18.0.2"), htonl(0xc6120002u));
    EXPECT_EQ(parse_ipv4_strict("0.0.0.0"), 0u);
    EXPECT_EQ(parse_ipv4_strict("255.255.255.255"), 0xffffffffu);
    for (const char *bad : {"", "1", "1.2.3", "1.2.3.4.", ".1.2.3", "1..2.3", "01.2.3.4", "1.2.3.1000", "256.1.1.1",
                            "1.2.3.-4", "+1.2.3.4", " 1.2.3.4"})
        EXPECT_FALSE(parse_ipv4_strict(bad)) << bad;
}
