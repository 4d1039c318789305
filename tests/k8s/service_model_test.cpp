// bpfnet::k8s service model: Services and EndpointSlices (as JSON from the API) to desired state.
#include "k8s/service_model.hpp"
#include "packet.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <string>
#include <vector>

using namespace bpfnet;
using namespace bpfnet::k8s;
using json = nlohmann::json;
using Outcome = ServiceDecision::Outcome;

namespace {

using bpfnet::test::key_ip;

std::vector<bpfnet_ip> ips(std::initializer_list<const char *> texts) {
    std::vector<bpfnet_ip> out;
    for (const char *text : texts)
        out.push_back(key_ip(text));
    return out;
}

ServicePolicy policy() {
    ServicePolicy p;
    p.allowed_namespaces = {"metal3", "ironic"};
    p.allowed_cidrs = {{key_ip("198.18.0.0"), 24}, {key_ip("10.50.0.0"), 16}};
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
    EXPECT_EQ(d.service_ips, ips({"198.18.0.2"}));
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
    EXPECT_EQ(decide(s).service_ips, ips({"198.18.0.2"})); // annotation wins
    s["metadata"].erase("annotations");
    auto d = decide(s);
    ASSERT_EQ(d.outcome, Outcome::Accepted) << d.reason;
    EXPECT_EQ(d.service_ips, ips({"198.18.0.9"}));
}

// The annotation bpfnet.io/pod-delivery picks the node's routing for the Service's pod; auto without it; any
// other word refuses the Service, never serves it the default way.
TEST(ServiceModel, PodDeliveryFromItsAnnotation) {
    auto s = make_service();
    EXPECT_EQ(decide(s).delivery, PodDelivery::Auto);
    EXPECT_EQ(accepted(decide(s)).delivery, PodDelivery::Auto);
    s["metadata"]["annotations"]["bpfnet.io/pod-delivery"] = "route";
    const auto d = decide(s);
    ASSERT_EQ(d.outcome, Outcome::Accepted) << d.reason;
    EXPECT_EQ(d.delivery, PodDelivery::Route);
    EXPECT_EQ(accepted(d).delivery, PodDelivery::Route);
    s["metadata"]["annotations"]["bpfnet.io/pod-delivery"] = "Route";
    expect_refused(s, "annotation bpfnet.io/pod-delivery must be \"auto\" or \"route\"; got \"Route\"");
    s["metadata"]["annotations"]["bpfnet.io/pod-delivery"] = true;
    expect_refused(s, "annotation bpfnet.io/pod-delivery must be");
}

TEST(ServiceModel, RefusesWithoutIp) {
    auto s = make_service();
    s["metadata"].erase("annotations");
    expect_refused(s, "no service IP");
    s["metadata"]["annotations"] = json::object({{"bpfnet.io/ip", ""}});
    expect_refused(s, "no service IP");
}

TEST(ServiceModel, RefusesInvalidAddresses) {
    for (const char *bad :
         {"198.18.0", "198.18.0.256", "198.18.0.02", "198.18.0.2 x", "a.b.c.d", "198.18.0.2/24", "1.2.3.4.5",
          "0x1.2.3.4", "fd00::g", "fd00:::2", "fd00::2/64", "::ffff:198.18.0.2", "fd00::2%eth0"}) {
        auto s = make_service();
        s["metadata"]["annotations"]["bpfnet.io/ip"] = bad;
        expect_refused(s, "is not a valid IPv4 or IPv6 address");
    }
    for (const char *unusable : {"fe80::2", "ff02::1:2", "::", "::1", "255.255.255.255", "224.0.0.5"}) {
        auto s = make_service();
        s["metadata"]["annotations"]["bpfnet.io/ip"] = unusable;
        expect_refused(s, "cannot be a service IP");
    }
    auto s = make_service();
    s["metadata"].erase("annotations");
    s["spec"]["loadBalancerIP"] = "not-an-ip";
    expect_refused(s, "spec.loadBalancerIP \"not-an-ip\" is not a valid IPv4 or IPv6 address");
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
    p.allowed_cidrs = {{key_ip("0.0.0.0"), 0}}; // /0 allows everything
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "203.0.113.5";
    EXPECT_EQ(decide_service(s, p).outcome, Outcome::Accepted);
    p.allowed_cidrs = {{key_ip("203.0.113.5"), 32}};
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
                  {"endpoints", {{{"addresses", json::array({"10.244.1.7"})}, {"nodeName", "node-a"}}}},
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
    const std::vector<SourceRange> want = {{key_ip("198.18.0.0"), 28}, {key_ip("198.18.0.128"), 25}};
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
    expect_refused(s, "spec.loadBalancerSourceRanges: must be a CIDR like 198.18.0.0/24 or fd00:1::/64, got "
                      "\"198.18.0.0\" (no /length)");
    s["spec"]["loadBalancerSourceRanges"] = {"198.18.0.0/33"};
    expect_refused(s, "must be a CIDR like");
    s["spec"]["loadBalancerSourceRanges"] = {"fd00::/129"};
    expect_refused(s, "must be a CIDR like");
    // A range of a family the Service has no address of could never match: a mistake, not a no-op.
    s["spec"]["loadBalancerSourceRanges"] = {"198.18.0.0/24", "fd00::/64"};
    expect_refused(s, "spec.loadBalancerSourceRanges: fd00::/64 is IPv6 but the Service has no IPv6 address");
    s["spec"]["loadBalancerSourceRanges"] = {7};
    expect_refused(s, "spec.loadBalancerSourceRanges has an entry that is not a string");
    s["spec"]["loadBalancerSourceRanges"] = "198.18.0.0/28";
    expect_refused(s, "spec.loadBalancerSourceRanges is not a list");
    s["spec"]["loadBalancerSourceRanges"] = json::array();
    for (int i = 0; i < 64; i++)
        s["spec"]["loadBalancerSourceRanges"].push_back("10.0." + std::to_string(i) + ".0/24");
    expect_refused(s, "has 64 IPv4 ranges; bpfnet takes at most 63 per service IP");

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
    AcceptedService s{ns, name, {key_ip(addr)}, {}, {}, {}};
    for (auto [proto, port] : ports)
        s.ports.push_back({"p" + std::to_string(port), proto, port, port, PortKind::Plain});
    return s;
}
} // namespace

// Past the datapath's tables the later Services are refused, whole; an address shared counts once, and a
// later Service that fits after a refused one is still taken.
TEST(OverCapacity, TheServicesPastTheTablesAreRefusedInTheOrderGiven) {
    // Services with no port of their own take an address each and no room in the ports' table.
    std::vector<AcceptedService> in;
    for (int i = 0; i < BPFNET_MAX_SERVICE_IPS; ++i)
        in.push_back(svc("metal3", "s" + std::to_string(i),
                         ("198.18." + std::to_string(i / 200) + "." + std::to_string(i % 200 + 1)).c_str(), {}));
    EXPECT_TRUE(over_capacity(in).empty());
    in.push_back(svc("metal3", "new-ip", "198.19.0.1", {{Protocol::Tcp, 80}}));
    in.push_back(svc("metal3", "shares-s0", "198.18.0.1", {{Protocol::Tcp, 81}})); // no new IP: fits
    const std::vector<OverCapacity> refused = over_capacity(in);
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_EQ(refused[0].key, "metal3/new-ip");
    EXPECT_NE(refused[0].reason.find("service IPs"), std::string::npos) << refused[0].reason;
}

TEST(OverCapacity, ListedPortsCountOverEveryServiceIp) {
    std::vector<std::pair<Protocol, uint16_t>> ports;
    for (uint16_t port = 1; port <= BPFNET_MAX_SERVICES - 1; ++port)
        ports.push_back({Protocol::Tcp, port});
    std::vector<AcceptedService> in = {
        svc("metal3", "big", "198.18.0.2", ports),
        svc("metal3", "two-more", "198.18.0.3", {{Protocol::Tcp, 1}, {Protocol::Tcp, 2}}),
        svc("metal3", "one-more", "198.18.0.4", {{Protocol::Udp, 69}})};
    const std::vector<OverCapacity> refused = over_capacity(in);
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_EQ(refused[0].key, "metal3/two-more");
    EXPECT_NE(refused[0].reason.find("listed ports"), std::string::npos) << refused[0].reason;
}

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
    a.source_ranges = {{key_ip("198.18.0.0"), 24}};
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
    EXPECT_EQ(got[0].service_ip, key_ip("198.18.0.2"));
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
    images.service_ips = {key_ip("198.18.0.3")};
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
    json e = {{"addresses", json::array({addr})}, {"conditions", {{"ready", ready}}}};
    if (node)
        e["nodeName"] = node;
    return e;
}
// A slice whose "endpoints" is any value (the malformed ones below).
json slice_with(json endpoints, const char *type = "IPv4") {
    return {{"apiVersion", "discovery.k8s.io/v1"},
            {"kind", "EndpointSlice"},
            {"addressType", type},
            {"endpoints", std::move(endpoints)}};
}
// The endpoints as a vector: a braced list of one endpoint would make that object itself under clang
// (nlohmann::json's brace initialization differs between compilers), not an array of it.
json slice(const std::vector<json> &endpoints, const char *type = "IPv4") {
    return slice_with(json(endpoints), type);
}
} // namespace

TEST(ReadyEndpoint, NoneWhenEmptyOrNotReady) {
    EXPECT_FALSE(ready_endpoint(json::array(), "node-a"));
    EXPECT_FALSE(ready_endpoint(json::array({slice({})}), "node-a"));
    const json slices = json::array({slice({endpoint("10.244.1.7", "node-a", false)})});
    EXPECT_FALSE(ready_endpoint(slices, "node-a"));
}

TEST(ReadyEndpoint, ReadyOnThisNodeMakesItEligible) {
    const json slices = json::array({slice({endpoint("10.244.1.7", "node-a")})});
    const auto a = ready_endpoint(slices, "node-a");
    ASSERT_TRUE(a);
    EXPECT_EQ(*a, (ReadyEndpoint{key_ip("10.244.1.7"), "node-a", true, false, {}}));
    // Also accepted as an EndpointSliceList.
    EXPECT_EQ(ready_endpoint(json{{"kind", "EndpointSliceList"}, {"items", slices}}, "node-a"), a);
}

TEST(ReadyEndpoint, ReadyOnOtherNodeIsNotEligible) {
    const json slices = json::array({slice({endpoint("10.244.2.9", "node-b")})});
    const auto b = ready_endpoint(slices, "node-a");
    ASSERT_TRUE(b);
    EXPECT_EQ(*b, (ReadyEndpoint{key_ip("10.244.2.9"), "node-b", false, false, {}}));
    // No nodeName: not on any node we know.
    const auto none = ready_endpoint(json::array({slice({endpoint("10.244.2.9", nullptr)})}), "node-a");
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->on_this_node);
    EXPECT_EQ(none->node_name, "");
    EXPECT_FALSE(ready_endpoint(json::array({slice({endpoint("10.244.2.9", nullptr)})}), "")->on_this_node);
}

TEST(ReadyEndpoint, AbsentReadyMeansReady) {
    json e = {{"addresses", json::array({"10.244.1.7"})}, {"nodeName", "node-a"}};
    auto got = ready_endpoint(json::array({slice({e})}), "node-a");
    ASSERT_TRUE(got);
    EXPECT_TRUE(got->on_this_node);
    e["conditions"] = json::object();
    EXPECT_TRUE(ready_endpoint(json::array({slice({e})}), "node-a"));
}

// An endpoint of a pod being replaced (rolling update, drain): ready false, serving and terminating true.
namespace {
json terminating_endpoint(const std::string &address, const std::string &node, bool serving = true) {
    return {{"addresses", json::array({address})},
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
    EXPECT_EQ(*got, (ReadyEndpoint{key_ip("10.244.1.7"), "node-a", true, true, {}}));
    // node-b's loader agrees that the endpoint is on node-a.
    EXPECT_EQ(ready_endpoint(json::array({slice({old_pod, new_pod})}), "node-b"),
              (ReadyEndpoint{key_ip("10.244.1.7"), "node-a", false, true, {}}));
    // The new pod becomes ready: it wins, on every node, over the terminating one here.
    new_pod = endpoint("10.244.2.9", "node-b");
    EXPECT_EQ(ready_endpoint(json::array({slice({old_pod, new_pod})}), "node-a"),
              (ReadyEndpoint{key_ip("10.244.2.9"), "node-b", false, false, {}}));
}

TEST(ReadyEndpoint, ServingAbsentMeansServingOtherwiseNotReadyCannotServe) {
    EXPECT_FALSE(ready_endpoint(json::array({slice({terminating_endpoint("10.244.1.7", "node-a", false)})}), "node-a"));
    // Serving but not terminating and not ready: a pod that has not passed its readiness probe yet.
    json starting = {{"addresses", json::array({"10.244.1.7"})},
                     {"nodeName", "node-a"},
                     {"conditions", {{"ready", false}, {"serving", true}}}};
    EXPECT_FALSE(ready_endpoint(json::array({slice({starting})}), "node-a"));
    // serving absent on a terminating endpoint: nil means serving, as kube-proxy reads it.
    json no_serving = {{"addresses", json::array({"10.244.1.7"})},
                       {"nodeName", "node-a"},
                       {"conditions", {{"ready", false}, {"terminating", true}}}};
    EXPECT_EQ(ready_endpoint(json::array({slice({no_serving})}), "node-a"),
              (ReadyEndpoint{key_ip("10.244.1.7"), "node-a", true, true, {}}));
    // Conditions of the wrong type: the endpoint is not used.
    json bad = terminating_endpoint("10.244.1.7", "node-a");
    bad["conditions"]["serving"] = "yes";
    EXPECT_FALSE(ready_endpoint(json::array({slice({bad})}), "node-a"));
}

// Each family reads the slices of its addressType only: a dual-stack Service's IPv4 address is steered to the
// pod's IPv4 address, its IPv6 one to the pod's IPv6 address.
TEST(ReadyEndpoint, EachFamilyReadsItsOwnSlicesFqdnNever) {
    const json slices = json::array({
        slice({endpoint("fd00:10:244:1::7", "node-a"), endpoint("fd00:10:244::9", "node-b")}, "IPv6"),
        slice({endpoint("ironic.example", "node-a")}, "FQDN"),
        slice({endpoint("10.244.2.9", "node-b")}),
        // A slice saying IPv4 with an IPv6 address in it (or the reverse) contributes nothing of the other family.
        slice({endpoint("fd00:10:244::1", "node-a")}, "IPv4"),
        slice({endpoint("10.244.0.1", "node-a")}, "IPv6"),
    });
    const auto got = ready_endpoint(slices, "node-a");
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, (ReadyEndpoint{key_ip("10.244.2.9"), "node-b", false, false, {}}));
    EXPECT_EQ(ready_endpoint(slices, "node-a", IpFamily::V6),
              (ReadyEndpoint{key_ip("fd00:10:244:1::7"), "node-a", true, false, {}}));
    // Lowest by value, as for IPv4: fd00:10:244::9 < fd00:10:244:1::7.
    EXPECT_EQ(ready_endpoint(slices, "node-x", IpFamily::V6),
              (ReadyEndpoint{key_ip("fd00:10:244::9"), "node-b", false, false, {}}));
    EXPECT_FALSE(ready_endpoint(json::array({slices[0], slices[1]}), "node-a"));
    EXPECT_FALSE(ready_endpoint(json::array({slices[1], slices[2]}), "node-a", IpFamily::V6));
    // Link-local or IPv4-mapped text is not a pod address either.
    EXPECT_FALSE(ready_endpoint(json::array({slice({endpoint("::ffff:10.244.0.1", "node-a")}, "IPv6")}), "node-a",
                                IpFamily::V6));
}

TEST(ReadyEndpoint, SeveralReadyPickLowestDeterministically) {
    const json slices = json::array({
        slice({endpoint("10.244.3.1", "node-c"), endpoint("10.244.1.200", "node-b", false)}),
        slice({endpoint("10.244.10.1", "node-a"), endpoint("10.244.2.1", "node-b"), endpoint("10.244.9.1", "node-a")}),
    });
    // Numerically lowest ("10.244.10.1" is not lower than "10.244.2.1" just because it sorts first as text).
    EXPECT_EQ(ready_endpoint(slices, "node-x"), (ReadyEndpoint{key_ip("10.244.2.1"), "node-b", false, false, {}}));
    // A ready endpoint on this node makes it eligible; the lowest local one is chosen.
    EXPECT_EQ(ready_endpoint(slices, "node-a"), (ReadyEndpoint{key_ip("10.244.9.1"), "node-a", true, false, {}}));
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
        slice_with(json::object()),
        slice_with("x"),
        slice_with(json::array({1, "e", nullptr})),
        slice({json{{"addresses", "10.244.1.1"}, {"nodeName", "node-a"}}}),
        slice({json{{"addresses", {1, nullptr, json::array()}}, {"nodeName", "node-a"}}}),
        slice({json{{"addresses", json::array({"10.244.1.1"})}, {"nodeName", 7}}}),
        slice({json{{"addresses", json::array({"10.244.1.1"})}, {"nodeName", "node-a"}, {"conditions", "ready"}}}),
        slice({endpoint("10.244.1.1", "node-a", "true")}), // ready must be a boolean
        slice({endpoint("10.244.1.001", "node-a")}),
        slice({endpoint("10.244.1.1/32", "node-a")}),
    };
    for (const auto &b : bad) {
        std::optional<ReadyEndpoint> got;
        ASSERT_NO_THROW(got = ready_endpoint(json::array({b, good}), "node-a")) << b.dump();
        ASSERT_TRUE(got) << b.dump();
        EXPECT_EQ(*got, (ReadyEndpoint{key_ip("10.244.5.5"), "node-b", false, false, {}})) << b.dump();
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

// ---- IPv6 and dual stack ----

namespace {

ServicePolicy dual_policy() {
    ServicePolicy p = policy();
    p.allowed_cidrs.push_back({key_ip("fd00:1::"), 64});
    return p;
}

// The Ironic Service on a dual-stack LAN: an address of each family, DHCP and DHCPv6 beside the HTTP ports.
json dual_service() {
    json s = make_service();
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "fd00:1::2, 198.18.0.2";
    s["spec"]["ipFamilyPolicy"] = "RequireDualStack";
    s["spec"]["ipFamilies"] = {"IPv6", "IPv4"};
    s["spec"]["ports"].push_back({{"name", "dhcpv6"}, {"protocol", "UDP"}, {"port", 547}});
    return s;
}

} // namespace

TEST(ServiceModelIpv6, OneAddressPerFamilyIpv4First) {
    const auto d = decide_service(dual_service(), dual_policy());
    ASSERT_EQ(d.outcome, Outcome::Accepted) << d.reason;
    EXPECT_EQ(d.service_ips, ips({"198.18.0.2", "fd00:1::2"}));
    ASSERT_EQ(d.ports.size(), 5u);
    EXPECT_EQ(d.ports[4].kind, PortKind::Dhcp6);

    // An IPv6-only Service, from the annotation or from spec.loadBalancerIP.
    json v6 = dual_service();
    v6["metadata"]["annotations"]["bpfnet.io/ip"] = "fd00:1::2";
    v6["spec"]["ipFamilyPolicy"] = "SingleStack";
    v6["spec"]["ipFamilies"] = {"IPv6"};
    v6["spec"]["ports"].erase(2); // DHCP (v4)
    const auto d6 = decide_service(v6, dual_policy());
    ASSERT_EQ(d6.outcome, Outcome::Accepted) << d6.reason;
    EXPECT_EQ(d6.service_ips, ips({"fd00:1::2"}));
    v6["metadata"].erase("annotations");
    v6["spec"]["loadBalancerIP"] = "fd00:1::3";
    EXPECT_EQ(decide_service(v6, dual_policy()).service_ips, ips({"fd00:1::3"}));
}

TEST(ServiceModelIpv6, TwoAddressesOfOneFamilyAreRefused) {
    json s = dual_service();
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "198.18.0.2,198.18.0.3";
    EXPECT_NE(decide_service(s, dual_policy()).reason.find("lists two IPv4 addresses: one address per family"),
              std::string::npos);
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "fd00:1::2,fd00:1::3,198.18.0.2";
    EXPECT_NE(decide_service(s, dual_policy()).reason.find("lists two IPv6 addresses"), std::string::npos);
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "198.18.0.2,fd00:1::2/64";
    EXPECT_EQ(decide_service(s, dual_policy()).outcome, Outcome::Refused);
}

// spec.ipFamilies is what the cluster gave the Service: an address of a family it does not list means the
// Service is not what its owner thinks (a single-stack Service on a dual-stack cluster).
TEST(ServiceModelIpv6, AddressesMustBeOfTheServicesFamilies) {
    const auto refused = [](const json &s) {
        return decide_service(s, dual_policy());
    };
    json s = dual_service();
    s["spec"]["ipFamilies"] = {"IPv4"};
    s["spec"]["ipFamilyPolicy"] = "SingleStack";
    auto d = refused(s);
    EXPECT_EQ(d.outcome, Outcome::Refused);
    EXPECT_NE(d.reason.find("service IP fd00:1::2 is IPv6, and spec.ipFamilies does not list it"), std::string::npos)
        << d.reason;
    s["spec"]["ipFamilies"] = "IPv4";
    EXPECT_NE(refused(s).reason.find("spec.ipFamilies is not a list"), std::string::npos);
    s["spec"]["ipFamilies"] = {"IPv4", 6};
    EXPECT_NE(refused(s).reason.find("spec.ipFamilies is not a list"), std::string::npos);
    // Absent (an object written by hand, not read back from the API): the annotation decides.
    s["spec"].erase("ipFamilies");
    s["spec"].erase("ipFamilyPolicy");
    EXPECT_EQ(refused(s).outcome, Outcome::Accepted) << refused(s).reason;
    // RequireDualStack asks for both families.
    s = dual_service();
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "198.18.0.2";
    s["spec"]["ports"].erase(4); // DHCPv6
    d = refused(s);
    EXPECT_NE(d.reason.find("RequireDualStack: the annotation bpfnet.io/ip needs an IPv4 and an IPv6 address"),
              std::string::npos)
        << d.reason;
    s["spec"]["ipFamilyPolicy"] = "PreferDualStack"; // one family is what was asked for
    EXPECT_EQ(refused(s).outcome, Outcome::Accepted) << refused(s).reason;
    s["spec"]["ipFamilyPolicy"] = 3;
    EXPECT_NE(refused(s).reason.find("spec.ipFamilyPolicy is not a string"), std::string::npos);
}

TEST(ServiceModelIpv6, AFamilyTheLanDoesNotHaveIsRefused) {
    ServicePolicy p = dual_policy();
    p.ipv6_lan = false;
    auto d = decide_service(dual_service(), p);
    EXPECT_NE(d.reason.find("fd00:1::2 is IPv6, and the loader has no IPv6 provisioning subnet (--subnet-v6)"),
              std::string::npos)
        << d.reason;
    p = dual_policy();
    p.ipv4_lan = false;
    d = decide_service(dual_service(), p);
    EXPECT_NE(d.reason.find("198.18.0.2 is IPv4, and the loader has no IPv4 provisioning subnet (--subnet)"),
              std::string::npos)
        << d.reason;
}

TEST(ServiceModelIpv6, EachAddressMustLieInAnAllowedCidrOfItsFamily) {
    json s = dual_service();
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "198.18.0.2,fd00:2::2";
    EXPECT_NE(decide_service(s, dual_policy()).reason.find("fd00:2::2 is outside every allowed CIDR"),
              std::string::npos);
    // ::/0 admits every IPv6 address and no IPv4 one.
    ServicePolicy p = policy();
    p.allowed_cidrs = {{key_ip("::"), 0}};
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "fd00:2::2";
    s["spec"]["ipFamilyPolicy"] = "SingleStack";
    s["spec"]["ports"].erase(2);
    EXPECT_EQ(decide_service(s, p).outcome, Outcome::Accepted) << decide_service(s, p).reason;
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "198.18.0.2";
    s["spec"]["ipFamilies"] = {"IPv4"};
    s["spec"]["ports"].erase(3); // DHCPv6
    EXPECT_NE(decide_service(s, p).reason.find("198.18.0.2 is outside every allowed CIDR"), std::string::npos);
}

// DHCP is relayed for the IPv4 address, DHCPv6 for the IPv6 one: each needs its family.
TEST(ServiceModelIpv6, RelayedPortsNeedTheirFamily) {
    json s = make_service(); // IPv4 only, with a DHCPv6 port added
    s["spec"]["ports"].push_back({{"name", "dhcpv6"}, {"protocol", "UDP"}, {"port", 547}});
    auto d = decide_service(s, dual_policy());
    EXPECT_NE(d.reason.find("spec.ports[4] (dhcpv6): dhcpv6 relays DHCPv6 for an IPv6 service address, and the "
                            "Service has none"),
              std::string::npos)
        << d.reason;
    s["metadata"]["annotations"]["bpfnet.io/ip"] = "fd00:1::2";
    d = decide_service(s, dual_policy());
    EXPECT_NE(d.reason.find("spec.ports[2] (dhcp): dhcp relays DHCPv4 for an IPv4 service address"), std::string::npos)
        << d.reason;
    json wrong_port = dual_service();
    wrong_port["spec"]["ports"][4]["port"] = 546;
    EXPECT_NE(decide_service(wrong_port, dual_policy()).reason.find("dhcpv6 requires port 547"), std::string::npos);
}

TEST(ServiceModelIpv6, EachAddressTakesTheRangesOfItsFamily) {
    json s = dual_service();
    s["spec"]["loadBalancerSourceRanges"] = {"198.18.0.0/24", "fd00:1::8/125", "fd00:1::/64"};
    auto d = decide_service(s, dual_policy());
    ASSERT_EQ(d.outcome, Outcome::Accepted) << d.reason;
    const std::vector<SourceRange> v4 = {{key_ip("198.18.0.0"), 24}};
    const std::vector<SourceRange> v6 = {{key_ip("fd00:1::"), 64}, {key_ip("fd00:1::8"), 125}};
    EXPECT_EQ(ranges_of_family(d.source_ranges, IpFamily::V4), v4);
    EXPECT_EQ(ranges_of_family(d.source_ranges, IpFamily::V6), v6);
    // Host bits are cleared in IPv6 ranges too, as Kubernetes does.
    s["spec"]["loadBalancerSourceRanges"] = {"198.18.0.0/24", "fd00:1::9/125"};
    d = decide_service(s, dual_policy());
    ASSERT_EQ(d.outcome, Outcome::Accepted) << d.reason;
    EXPECT_EQ(ranges_of_family(d.source_ranges, IpFamily::V6), (std::vector<SourceRange>{{key_ip("fd00:1::8"), 125}}));
    // A list that leaves a family out would close that address to every host: refused, saying how to open it.
    s["spec"]["loadBalancerSourceRanges"] = {"198.18.0.0/24"};
    d = decide_service(s, dual_policy());
    EXPECT_NE(d.reason.find("lists no IPv6 range for service IP fd00:1::2: add the IPv6 ranges that may reach it "
                            "(::/0: every host)"),
              std::string::npos)
        << d.reason;
    s["spec"]["loadBalancerSourceRanges"] = {"::/0"};
    EXPECT_NE(decide_service(s, dual_policy()).reason.find("lists no IPv4 range for service IP 198.18.0.2"),
              std::string::npos);
}

// Per address: DHCP only on the IPv4 one, DHCPv6 only on the IPv6 one, the rest on both; named target ports
// follow their ports.
TEST(ServiceModelIpv6, EachAddressListsTheFamilysPorts) {
    json s = dual_service();
    s["spec"]["ports"][0]["targetPort"] = "api";
    const auto d = decide_service(s, dual_policy());
    ASSERT_EQ(d.outcome, Outcome::Accepted) << d.reason;
    const AcceptedService v4 = ports_for_family(accepted(d), IpFamily::V4);
    const AcceptedService v6 = ports_for_family(accepted(d), IpFamily::V6);
    const auto names = [](const AcceptedService &a) {
        std::vector<std::string> out;
        for (const PortRule &p : a.ports)
            out.push_back(p.name);
        return out;
    };
    EXPECT_EQ(names(v4), (std::vector<std::string>{"ironic-api", "ipxe-tls", "dhcp", "boot"}));
    EXPECT_EQ(names(v6), (std::vector<std::string>{"ironic-api", "ipxe-tls", "boot", "dhcpv6"}));
    EXPECT_EQ(v6.target_port_names, (std::vector<std::string>{"api", "", "", ""}));
    EXPECT_EQ(v4.service_ips, d.service_ips); // the Service's addresses stay whole (its status lists both)
}

TEST(SharedIpsIpv6, AnIpv6AddressIsSharedLikeAnIpv4One) {
    auto dual = svc("metal3", "ironic", "198.18.0.2", {{Protocol::Tcp, 6385}});
    dual.service_ips.push_back(key_ip("fd00:1::2"));
    auto images = svc("metal3", "images", "fd00:1::2", {{Protocol::Tcp, 6385}});
    auto got = check_shared_ips({dual, images});
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].refused, "metal3/ironic"); // "metal3/images" sorts first
    EXPECT_EQ(got[0].service_ip, key_ip("fd00:1::2"));
    EXPECT_NE(got[0].reason.find("service IP fd00:1::2 is shared with Service metal3/images"), std::string::npos);
    images.ports[0].port = 6180;
    images.ports[0].target_port = 6180;
    EXPECT_TRUE(check_shared_ips({dual, images}).empty());
    // Only the ranges of the shared address's family must agree.
    dual.source_ranges = {{key_ip("198.18.0.0"), 24}, {key_ip("fd00:1::"), 64}};
    images.source_ranges = {{key_ip("fd00:1::"), 64}};
    EXPECT_TRUE(check_shared_ips({dual, images}).empty());
    images.source_ranges = {{key_ip("fd00:1::"), 65}};
    got = check_shared_ips({dual, images});
    ASSERT_EQ(got.size(), 1u);
    EXPECT_NE(got[0].reason.find("other loadBalancerSourceRanges"), std::string::npos);
}

// A Service on a shared address (annotation bpfnet.io/shared-address): one of the loaders' --shared-addresses,
// the VIP or "node", with plain ports and no service IP of its own.
namespace {

ServicePolicy shared_policy() {
    ServicePolicy p = policy();
    p.shared_addresses = {key_ip("192.0.2.10"), std::nullopt}; // the control plane's VIP, and "node"
    p.shared_ports = {6180, 6183, 6385};
    return p;
}

json media_service(const std::string &address) {
    json s = json::parse(R"({
      "apiVersion": "v1", "kind": "Service",
      "metadata": {"namespace": "metal3", "name": "ironic-media", "annotations": {}},
      "spec": {
        "type": "LoadBalancer", "loadBalancerClass": "bpfnet.io/provisioning",
        "ports": [
          {"name": "ironic-api", "protocol": "TCP", "port": 6385, "targetPort": 6385},
          {"name": "virtual-media", "protocol": "TCP", "port": 6183, "targetPort": "media"}
        ]
      }
    })");
    s["metadata"]["annotations"]["bpfnet.io/shared-address"] = address;
    return s;
}

void expect_shared_refused(const json &s, const std::string &needle) {
    const ServiceDecision d = decide_service(s, shared_policy());
    EXPECT_EQ(d.outcome, Outcome::Refused) << s.dump();
    EXPECT_NE(d.reason.find(needle), std::string::npos) << "reason: " << d.reason << "\nservice: " << s.dump();
}

} // namespace

TEST(ServiceModelShared, TheVipOrTheNodesAddressIsAccepted) {
    ServiceDecision vip = decide_service(media_service("192.0.2.10"), shared_policy());
    ASSERT_EQ(vip.outcome, Outcome::Accepted) << vip.reason;
    EXPECT_TRUE(vip.shared);
    EXPECT_FALSE(vip.node_address);
    EXPECT_EQ(vip.service_ips, ips({"192.0.2.10"})); // outside every allowed CIDR: named by the loaders instead
    ASSERT_EQ(vip.ports.size(), 2u);
    EXPECT_EQ(vip.target_port_names, (std::vector<std::string>{"", "media"}));
    EXPECT_TRUE(accepted(vip).shared);

    ServiceDecision node = decide_service(media_service("node"), shared_policy());
    ASSERT_EQ(node.outcome, Outcome::Accepted) << node.reason;
    EXPECT_TRUE(node.shared);
    EXPECT_TRUE(node.node_address);
    EXPECT_TRUE(node.service_ips.empty()); // each node's own, found where it runs
    EXPECT_TRUE(accepted(node).node_address);

    // A Service with a service IP is no shared one.
    EXPECT_FALSE(decide_service(make_service(), shared_policy()).shared);
}

TEST(ServiceModelShared, RefusedWhereTheAddressIsNotOneTheLoadersShare) {
    expect_shared_refused(media_service("192.0.2.11"), "\"192.0.2.11\" is not one of the addresses the loaders share "
                                                       "(--shared-addresses: 192.0.2.10, node)");
    expect_shared_refused(media_service("vip"), "is neither \"node\" nor an IPv4 or IPv6 address");
    json not_text = media_service("node");
    not_text["metadata"]["annotations"]["bpfnet.io/shared-address"] = 7;
    expect_shared_refused(not_text, "bpfnet.io/shared-address is not a string");
    // A loader given no shared address refuses every Service naming one.
    const ServiceDecision none = decide_service(media_service("node"), policy());
    EXPECT_EQ(none.outcome, Outcome::Refused);
    EXPECT_NE(none.reason.find("(--shared-addresses: none given)"), std::string::npos) << none.reason;
}

TEST(ServiceModelShared, RefusedBesideAServiceIpOfItsOwn) {
    json with_ip = media_service("192.0.2.10");
    with_ip["metadata"]["annotations"]["bpfnet.io/ip"] = "198.18.0.2";
    expect_shared_refused(with_ip, "annotation bpfnet.io/shared-address and annotation bpfnet.io/ip are both set");
    json with_lb = media_service("192.0.2.10");
    with_lb["spec"]["loadBalancerIP"] = "198.18.0.2";
    expect_shared_refused(with_lb, "and spec.loadBalancerIP are both set");
    with_lb["spec"]["loadBalancerIP"] = ""; // an empty one says nothing
    EXPECT_EQ(decide_service(with_lb, shared_policy()).outcome, Outcome::Accepted);
}

TEST(ServiceModelShared, RefusedForWhatASharedAddressCannotCarry) {
    // Only the ports the loaders share: the address's others are the node's, whoever writes the Service.
    json api_server = media_service("192.0.2.10");
    api_server["spec"]["ports"].push_back({{"name", "kube-api"}, {"protocol", "TCP"}, {"port", 6443}});
    expect_shared_refused(api_server, "spec.ports[2] (kube-api): port 6443 is not one the loaders steer on a "
                                      "shared address (--shared-ports: 6180, 6183, 6385)");
    json dhcp = media_service("192.0.2.10");
    dhcp["spec"]["ports"].push_back({{"name", "dhcp"}, {"protocol", "UDP"}, {"port", 67}});
    expect_shared_refused(dhcp, "spec.ports[2] (dhcp): dhcp needs the provisioning LAN");
    json tftp = media_service("node");
    tftp["spec"]["ports"].push_back({{"name", "boot"}, {"protocol", "UDP"}, {"port", 69}, {"appProtocol", "tftp"}});
    expect_shared_refused(tftp, "tftp needs the provisioning LAN");
    json ranges = media_service("192.0.2.10");
    ranges["spec"]["loadBalancerSourceRanges"] = {"10.0.0.0/8"};
    expect_shared_refused(ranges, "source ranges are not applied on a shared address");
    json families = media_service("node");
    families["spec"]["ipFamilies"] = {"IPv6"};
    expect_shared_refused(families, "the shared address is IPv4, and spec.ipFamilies does not list it");
    json dual = media_service("192.0.2.10");
    dual["spec"]["ipFamilyPolicy"] = "RequireDualStack";
    expect_shared_refused(dual, "RequireDualStack");
    json other_ns = media_service("192.0.2.10");
    other_ns["metadata"]["namespace"] = "tenant";
    expect_shared_refused(other_ns, "namespace tenant is not allowed");
}

// A shared address counts against the datapath's shared addresses, not its service IPs; and an address is
// either kind, never both.
TEST(OverCapacity, SharedAddressesCountApartFromServiceIps) {
    std::vector<AcceptedService> in;
    for (int i = 0; i < BPFNET_MAX_SERVICE_IPS; ++i)
        in.push_back(svc("metal3", "s" + std::to_string(i),
                         ("198.18." + std::to_string(i / 200) + "." + std::to_string(i % 200 + 1)).c_str(), {}));
    for (int i = 0; i <= BPFNET_MAX_SHARED_ADDRESSES; ++i) {
        AcceptedService shared =
            svc("metal3", "shared" + std::to_string(i), ("192.0.2." + std::to_string(i + 1)).c_str(), {});
        shared.shared = true;
        in.push_back(shared);
    }
    const std::vector<OverCapacity> refused = over_capacity(in);
    ASSERT_EQ(refused.size(), 1u); // every service IP and all but the last shared address fit
    EXPECT_EQ(refused[0].key, "metal3/shared" + std::to_string(BPFNET_MAX_SHARED_ADDRESSES));
    EXPECT_NE(refused[0].reason.find("shared addresses"), std::string::npos) << refused[0].reason;
}

TEST(SharedIps, AnAddressIsEitherAServiceIpOrASharedOne) {
    auto service_ip = svc("metal3", "ironic", "192.0.2.10", {{Protocol::Tcp, 6385}});
    auto shared = svc("metal3", "media", "192.0.2.10", {{Protocol::Tcp, 6183}});
    shared.shared = true;
    auto conflicts = check_shared_ips({service_ip, shared});
    ASSERT_EQ(conflicts.size(), 1u);
    EXPECT_EQ(conflicts[0].refused, "metal3/media");
    EXPECT_NE(conflicts[0].reason.find("is a service IP of Service metal3/ironic"), std::string::npos)
        << conflicts[0].reason;
    auto also_shared = svc("metal3", "api", "192.0.2.10", {{Protocol::Tcp, 6385}});
    also_shared.shared = true;
    EXPECT_TRUE(check_shared_ips({shared, also_shared}).empty()); // two shared ones: disjoint ports
}
