// What the loader wants in the maps for a given configuration, and the diff that gets it there.
#include "core/desired_state.hpp"
#include "standalone/config.hpp"
#include "tests/bpf/packet.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

namespace bpfnet {
namespace {

using test::ip;
using test::key_ip;

Config sample_config() {
    return parse_config(R"(
interface: prov0
serviceIP: 198.18.0.2
subnet: 198.18.0.0/24
ports:
  - {name: ironic-api, protocol: tcp, port: 6385}
  - {name: http, protocol: tcp, port: 80, targetPort: 8080}
  - {name: tftp, protocol: udp, port: 69, kind: tftp}
backend:
  ip: 198.18.100.2
)",
                        "test.yaml");
}

BackendLocation sample_location() {
    BackendLocation where;
    where.ifindex = 20;
    where.pod_mac = {2, 0, 0, 0, 1, 2};
    where.veth_mac = {2, 0, 0, 0, 1, 1};
    where.redirect_peer = true;
    return where;
}

TEST(DesiredState, BackendHereMakesTheServiceIpActiveAndListsEveryPort) {
    DesiredState state = desired_state(sample_config(), sample_location());
    ASSERT_EQ(state.service_ips.size(), 1u);
    EXPECT_EQ(state.service_ips.at(key_ip("198.18.0.2")).flags, BPFNET_SERVICE_IP_ACTIVE);
    EXPECT_EQ(state.services.size(), 3u);
    EXPECT_EQ(state.backend_ports.size(), 3u);

    bpfnet_service_key http{};
    http.service_ip = key_ip("198.18.0.2");
    http.port_be = htons(80);
    http.proto = BPFNET_PROTO_TCP;
    const bpfnet_service &service = state.services.at(http);
    EXPECT_EQ(service.backend_ip, key_ip("198.18.100.2"));
    EXPECT_EQ(ntohs(service.backend_port_be), 8080);

    bpfnet_backend_port_key reverse{};
    reverse.backend_ip = key_ip("198.18.100.2");
    reverse.port_be = htons(8080);
    reverse.proto = BPFNET_PROTO_TCP;
    EXPECT_EQ(ntohs(state.backend_ports.at(reverse).service_port_be), 80);

    const bpfnet_backend &backend = state.backends.at(key_ip("198.18.100.2"));
    EXPECT_EQ(backend.ifindex, 20u);
    EXPECT_EQ(backend.service_ip, key_ip("198.18.0.2"));
    EXPECT_EQ(backend.flags, BPFNET_BACKEND_REDIRECT_PEER);
    EXPECT_EQ(backend.pod_mac[5], 2);

    // Each listed port carries where its pod is, so that its packets need no backends lookup.
    for (const auto &[key, port] : state.services) {
        EXPECT_EQ(port.link.ifindex, backend.ifindex);
        EXPECT_EQ(port.link.flags, BPFNET_BACKEND_REDIRECT_PEER);
        EXPECT_EQ(port.link.mtu, backend.mtu);
        EXPECT_TRUE(std::equal(std::begin(port.link.pod_mac), std::end(port.link.pod_mac), backend.pod_mac));
        EXPECT_TRUE(std::equal(std::begin(port.link.veth_mac), std::end(port.link.veth_mac), backend.veth_mac));
        EXPECT_EQ(port.flags, 0u) << "no source ranges";
    }
}

// A backend delivered through the node's routing says so in its entry and in every listed port's copy, and only
// that: the datapath takes one delivery per backend, never redirect_peer beside it.
TEST(DesiredState, RouteDeliveryIsTheBackendsOneFlag) {
    BackendLocation where = sample_location();
    where.route = true;
    DesiredState state = desired_state(sample_config(), where);
    EXPECT_EQ(state.backends.at(key_ip("198.18.100.2")).flags, BPFNET_BACKEND_ROUTE);
    for (const auto &[key, port] : state.services)
        EXPECT_EQ(port.link.flags, BPFNET_BACKEND_ROUTE);
}

// Two specs of one pod, one of them delivered through the node's routing (two Services, one annotated): the pod
// has one delivery in every entry, the routing's, whichever spec comes first.
TEST(DesiredState, APodRoutedForOneSpecIsRoutedForAll) {
    const auto ports = [](uint16_t port) {
        return std::vector<PortRule>{{"p", Protocol::Tcp, port, port, PortKind::Plain}};
    };
    BackendLocation peer = sample_location();
    BackendLocation routed = peer;
    routed.route = true;
    for (const bool routed_first : {true, false}) {
        std::vector<ServiceSpec> specs = {
            {key_ip("198.18.0.2"), ports(80), key_ip("198.18.100.2"), routed_first ? routed : peer, {}},
            {key_ip("198.18.0.2"), ports(443), key_ip("198.18.100.2"), routed_first ? peer : routed, {}}};
        const DesiredState state = desired_state(specs);
        EXPECT_EQ(state.backends.at(key_ip("198.18.100.2")).flags, BPFNET_BACKEND_ROUTE);
        for (const auto &[key, port] : state.services)
            EXPECT_EQ(port.link.flags, BPFNET_BACKEND_ROUTE) << ntohs(key.port_be);
    }
}

// The iface entry marks the last byte of every service IP, of either family, and nothing else.
// The tables' sizes bound a desired state: one past them is named, what fits is not (DatapathRuntime refuses to
// write a state that does not fit, so nothing is half applied).
TEST(DesiredState, CapacityProblemNamesTheTableThatOverflows) {
    std::vector<ServiceSpec> specs;
    for (int i = 0; i < BPFNET_MAX_SERVICE_IPS; ++i) {
        ServiceSpec spec;
        spec.service_ip = key_ip(("198.18." + std::to_string(i / 200) + "." + std::to_string(i % 200 + 1)).c_str());
        spec.ports = {{"http", Protocol::Tcp, 80, 8080, PortKind::Plain}};
        specs.push_back(spec);
    }
    EXPECT_EQ(capacity_problem(desired_state(specs)), std::nullopt);
    ServiceSpec one_more = specs.back();
    one_more.service_ip = key_ip("198.19.0.1");
    specs.push_back(one_more);
    const auto problem = capacity_problem(desired_state(specs));
    ASSERT_TRUE(problem.has_value());
    EXPECT_EQ(*problem, std::to_string(BPFNET_MAX_SERVICE_IPS + 1) + " service IPs: the datapath holds " +
                            std::to_string(BPFNET_MAX_SERVICE_IPS));

    // Ports: one service IP with more listed ports than the services table holds.
    ServiceSpec many_ports;
    many_ports.service_ip = key_ip("198.18.0.2");
    for (int port = 1; port <= BPFNET_MAX_SERVICES + 1; ++port)
        many_ports.ports.push_back({"p" + std::to_string(port), Protocol::Tcp, static_cast<uint16_t>(port),
                                    static_cast<uint16_t>(port), PortKind::Plain});
    const auto ports_problem = capacity_problem(desired_state({many_ports}));
    ASSERT_TRUE(ports_problem.has_value());
    EXPECT_NE(ports_problem->find("listed ports"), std::string::npos) << *ports_problem;
}

TEST(DesiredState, ServiceIpMarksHoldEveryServiceIpsLastByte) {
    DesiredState state;
    state.service_ips[key_ip("198.18.0.2")] = {};
    state.service_ips[key_ip("2001:2::1:0:203")] = {};
    bpfnet_iface iface{};
    mark_service_ips(iface, state);
    for (unsigned last = 0; last < 256; last++) {
        const bool marked = (iface.service_ip_marks[last / 8] >> (last % 8)) & 1;
        EXPECT_EQ(marked, last == 2 || last == 3) << last;
    }
}

// Source ranges become one LPM entry each plus the IP's own entry (prefix 128) that refuses the rest; an IPv4
// range a.b.c.d/n is ::ffff:a.b.c.d/(96 + n) after the service IP's 128 bits; 0.0.0.0/0 is that entry, allowing.
TEST(DesiredState, SourceRangesAndTheEntryThatRefusesTheRest) {
    ServiceSpec spec;
    spec.service_ip = key_ip("198.18.0.2");
    spec.ports = {{"http", Protocol::Tcp, 80, 8080, PortKind::Plain}};
    EXPECT_TRUE(desired_state({spec}).source_ranges.empty());
    spec.source_ranges = {{key_ip("198.18.0.0"), 28}, {key_ip("10.1.0.0"), 16}};
    DesiredState state = desired_state({spec});
    ASSERT_EQ(state.source_ranges.size(), 3u);
    bpfnet_source_range_key key{};
    key.prefixlen = 128;
    key.service_ip = key_ip("198.18.0.2");
    EXPECT_EQ(state.source_ranges.at(key).allowed, 0);
    key.prefixlen = 128 + 96 + 28;
    key.source = key_ip("198.18.0.0");
    EXPECT_EQ(state.source_ranges.at(key).allowed, 1);
    // The IP's ports say it has ranges too: a listed port's packet reads the flag from its own entry.
    ASSERT_EQ(state.services.size(), 1u);
    EXPECT_EQ(state.services.begin()->second.flags, BPFNET_SERVICE_SOURCE_RANGES);
    spec.source_ranges = {{key_ip("0.0.0.0"), 0}};
    state = desired_state({spec});
    ASSERT_EQ(state.source_ranges.size(), 1u);
    EXPECT_EQ(state.source_ranges.begin()->second.allowed, 1);
}

// An IPv6 range n bits long is (128 + n) long after the service address; a range of the other family does not
// apply, so an IPv6 address whose list has only IPv4 ranges refuses every source.
TEST(DesiredState, Ipv6SourceRangesApplyToTheIpv6ServiceAddressOnly) {
    ServiceSpec spec;
    spec.service_ip = key_ip("fd00:1::2");
    spec.ports = {{"http", Protocol::Tcp, 80, 8080, PortKind::Plain}};
    spec.source_ranges = {{key_ip("fd00:1::"), 120}, {key_ip("198.18.0.0"), 24}};
    DesiredState state = desired_state({spec});
    ASSERT_EQ(state.source_ranges.size(), 2u);
    bpfnet_source_range_key key{};
    key.prefixlen = 128;
    key.service_ip = key_ip("fd00:1::2");
    EXPECT_EQ(state.source_ranges.at(key).allowed, 0);
    key.prefixlen = 128 + 120;
    key.source = key_ip("fd00:1::");
    EXPECT_EQ(state.source_ranges.at(key).allowed, 1);
    spec.source_ranges = {{key_ip("198.18.0.0"), 24}};
    state = desired_state({spec});
    ASSERT_EQ(state.source_ranges.size(), 1u);
    EXPECT_EQ(state.source_ranges.begin()->second.allowed, 0);
    spec.source_ranges = {{key_ip("::"), 0}};
    state = desired_state({spec});
    ASSERT_EQ(state.source_ranges.size(), 1u);
    EXPECT_EQ(state.source_ranges.begin()->second.allowed, 1);
}

TEST(DesiredState, NoBackendKeepsPortsListedButInactiveAndUnrouted) {
    Config config = sample_config();
    config.backend.reset();
    DesiredState state = desired_state(config, std::nullopt);
    EXPECT_EQ(state.service_ips.at(key_ip("198.18.0.2")).flags, 0u);
    EXPECT_EQ(state.services.size(), 3u);
    for (const auto &[key, service] : state.services)
        EXPECT_EQ(service.backend_ip, bpfnet_ip{});
    EXPECT_TRUE(state.backend_ports.empty());
    EXPECT_TRUE(state.backends.empty());
    for (const auto &[key, service] : state.services)
        EXPECT_EQ(service.link.ifindex, 0u) << "no pod on this node: nothing to deliver to";
}

TEST(DesiredState, IfaceEntryCarriesSubnetAndTimeout) {
    bpfnet_iface iface = iface_entry(sample_config(), 10, {2, 0, 0, 0, 0, 1});
    EXPECT_EQ(iface.nic_ifindex, 10u);
    EXPECT_EQ(iface.subnet.net, ip_from_v4(ip("198.18.0.0")));
    EXPECT_EQ(iface.subnet.mask.w[3], ip("255.255.255.0"));
    EXPECT_EQ(iface.subnet.len, 96u + 24u);
    EXPECT_EQ(iface.heartbeat_timeout_ns, 5'000'000'000ull);
    EXPECT_EQ(iface.nic_mac[5], 1);
    EXPECT_EQ(iface.dhcp_service_ip, bpfnet_ip{}) << "no DHCP port listed: broadcasts are not relayed";
    EXPECT_EQ(iface.dhcp_max_hops, BPFNET_DHCP_DEFAULT_MAX_HOPS);
}

TEST(DesiredState, DhcpPortMakesTheServiceIpTheRelayForBroadcasts) {
    Config config = sample_config();
    config.ports.push_back(PortRule{"dhcp", Protocol::Udp, 67, 67, PortKind::Dhcp});
    config.dhcp_max_hops = 8;
    bpfnet_iface iface = iface_entry(config, 10, {2, 0, 0, 0, 0, 1});
    EXPECT_EQ(iface.dhcp_service_ip, ip_from_v4(ip("198.18.0.2")));
    EXPECT_EQ(iface.dhcp_max_hops, 8);
}

// A shared address (the node's VIP): its ports flagged shared both ways, no service_ips entry (its ARP and claim
// stay the node's), marked and counted; the pod's own connections leave as the provisioning service IP, never
// as the node's address, whichever spec comes first.
TEST(DesiredState, SharedAddressIsListedButNeverOwned) {
    Config config = sample_config();
    config.shared_addresses = {SharedAddress{parse_ip("198.19.0.5"), {PortRule{"media", Protocol::Tcp, 6180, 6180}}}};
    const bpfnet_ip vip = key_ip("198.19.0.5");
    std::vector<ServiceSpec> specs = service_specs(config, sample_location(), {vip});
    ASSERT_EQ(specs.size(), 2u);
    std::swap(specs[0], specs[1]); // the shared spec first: the backend still leaves as the service IP
    const DesiredState state = desired_state(specs);
    EXPECT_FALSE(state.service_ips.contains(vip));
    EXPECT_TRUE(state.shared_addresses.contains(vip));
    bpfnet_service_key media{};
    media.service_ip = vip;
    media.port_be = htons(6180);
    media.proto = BPFNET_PROTO_TCP;
    EXPECT_EQ(state.services.at(media).flags, BPFNET_SERVICE_SHARED);
    EXPECT_EQ(state.services.at(media).link.ifindex, 20u);
    bpfnet_backend_port_key reverse{};
    reverse.backend_ip = key_ip("198.18.100.2");
    reverse.port_be = htons(6180);
    reverse.proto = BPFNET_PROTO_TCP;
    EXPECT_EQ(state.backend_ports.at(reverse).flags, BPFNET_BACKEND_PORT_SHARED);
    EXPECT_EQ(state.backend_ports.at(reverse).service_ip, vip);
    EXPECT_EQ(state.backends.at(key_ip("198.18.100.2")).service_ip, key_ip("198.18.0.2"));
    bpfnet_iface iface{};
    mark_service_ips(iface, state);
    EXPECT_EQ(iface.shared_addresses, 1);
    EXPECT_EQ(iface.service_ip_marks[5 / 8] & (1u << (5 % 8)), 1u << (5 % 8)) << "the VIP's last byte is marked";

    // A shared address alone: its backend has no service IP to leave as.
    Config shared_only = config;
    shared_only.service_ip_be = 0;
    EXPECT_EQ(desired_state(shared_only, sample_location(), {vip}).backends.at(key_ip("198.18.100.2")).service_ip,
              bpfnet_ip{});
    // Not held, the pod here: its listed ports still go to the pod (a node holding it may hand them on), and the
    // answers leave as the VIP.
    const DesiredState away = desired_state(config, sample_location(), {std::nullopt});
    EXPECT_TRUE(away.shared_addresses.contains(vip));
    EXPECT_EQ(away.services.at(media).link.ifindex, 20u);
    EXPECT_EQ(away.backend_ports.at(reverse).service_ip, vip);
    // Not held, no pod here: nothing of it.
    const DesiredState nothing = desired_state(config, std::nullopt, {std::nullopt});
    EXPECT_TRUE(nothing.shared_addresses.empty());
    EXPECT_FALSE(nothing.services.contains(media));
}

// The pod on another node (backend.node): the node holding the VIP lists its ports handed to that node
// (BPFNET_SERVICE_VIA_NODE), DNATed to the pod's address; nothing of the pod is here (no backend, no reverse
// entry); not held, nothing at all.
TEST(DesiredState, SharedAddressWithThePodElsewhereIsHandedToItsNode) {
    const Config config = parse_config(R"(
interface: eno1
sharedAddresses:
  - address: 198.19.0.5
    ports:
      - {name: media, protocol: tcp, port: 6180, targetPort: 8081}
backend:
  ip: 10.244.2.7
  node: 198.19.0.22
)",
                                       "test.yaml");
    ASSERT_TRUE(config.backend && config.backend->elsewhere());
    const bpfnet_ip vip = key_ip("198.19.0.5");
    const DesiredState state = desired_state(config, std::nullopt, {vip});
    bpfnet_service_key media{};
    media.service_ip = vip;
    media.port_be = htons(6180);
    media.proto = BPFNET_PROTO_TCP;
    const bpfnet_service &entry = state.services.at(media);
    EXPECT_EQ(entry.flags, BPFNET_SERVICE_SHARED | BPFNET_SERVICE_VIA_NODE);
    EXPECT_EQ(entry.via_node, key_ip("198.19.0.22"));
    EXPECT_EQ(entry.backend_ip, key_ip("10.244.2.7"));
    EXPECT_EQ(ntohs(entry.backend_port_be), 8081);
    EXPECT_EQ(entry.link.ifindex, 0u);
    EXPECT_EQ(state.services.size(), 1u);
    EXPECT_TRUE(state.backend_ports.empty());
    EXPECT_TRUE(state.backends.empty());
    EXPECT_EQ(state.shared_addresses.size(), 1u);
    EXPECT_TRUE(desired_state(config, std::nullopt, {std::nullopt}).services.empty());
}

// More shared addresses than the datapath's limit (BPFNET_MAX_SHARED_ADDRESSES) change nothing.
TEST(DesiredState, CapacityCountsSharedAddresses) {
    std::vector<ServiceSpec> specs;
    for (int i = 0; i <= BPFNET_MAX_SHARED_ADDRESSES; i++) {
        ServiceSpec spec;
        spec.service_ip = key_ip("198.19.0." + std::to_string(i + 1));
        spec.ports = {PortRule{"media", Protocol::Tcp, 6180, 6180}};
        spec.shared = true;
        specs.push_back(spec);
    }
    const auto problem = capacity_problem(desired_state(specs));
    ASSERT_TRUE(problem.has_value());
    EXPECT_EQ(*problem, "9 shared addresses: the datapath holds 8");
}

TEST(DiffTable, OnlyChangesAreWritten) {
    Table<__be32, bpfnet_service_ip> desired{{1, {1}}, {2, {0}}, {3, {1}}};
    std::vector<std::pair<__be32, bpfnet_service_ip>> live{{1, {1}}, {2, {1}}, {4, {1}}};
    auto diff = diff_table(live, desired);
    ASSERT_EQ(diff.upserts.size(), 2u); // 2 changed, 3 new; 1 unchanged is not rewritten
    EXPECT_EQ(diff.upserts[0].first, 2u);
    EXPECT_EQ(diff.upserts[1].first, 3u);
    ASSERT_EQ(diff.removals.size(), 1u);
    EXPECT_EQ(diff.removals[0], 4u);
}

TEST(DiffTable, IdenticalStateNeedsNoWrite) {
    DesiredState state = desired_state(sample_config(), sample_location());
    std::vector<std::pair<bpfnet_service_key, bpfnet_service>> live(state.services.begin(), state.services.end());
    EXPECT_TRUE(diff_table(live, state.services).empty());
}

} // namespace
} // namespace bpfnet
