// Every read command's table and JSON rendered from fake map contents, and the state `backend set` and
// `backend clear` compute from the maps. The JSON shapes here are the ones docs/cli.md documents.
#include "cli/commands_backend.hpp"
#include "cli/commands_stats.hpp"
#include "cli/commands_status.hpp"
#include "cli/commands_tables.hpp"
#include "core/control_socket.hpp"
#include "core/desired_state.hpp"
#include "core/flow_sweep.hpp"
#include "maps/layout.hpp"
#include "packet.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <sstream>

namespace bpfnet::cli {
namespace {

using test::ip;
using test::key_ip;

template <typename Render, typename... Args>
std::string rendered(Render render, Args &&...args) {
    std::ostringstream out;
    render(out, std::forward<Args>(args)...);
    return out.str();
}

// ---- status ----

StatusView sample_status() {
    StatusView status;
    status.interface = "prov0";
    status.ifindex = 2;
    status.nic_mac = {0x02, 0, 0, 0, 0, 0x01};
    status.carrier = true;
    status.subnet_be = ip("198.18.0.0");
    status.subnet_mask_be = ip("255.255.255.0");
    status.dhcp_service_ip_be = ip("198.18.0.2");
    status.xdp = {true, "xdp_nic", 41, "native", false, ""};
    status.tc_ingress = {true, "tc_nic_ingress", 42, "", std::nullopt, "tcx"};
    status.redirect_peer = true;
    status.heartbeat_age_seconds = 0.31;
    status.heartbeat_timeout_seconds = 5;
    status.service_ips = {{key_ip("198.18.0.2"), true, std::nullopt}};
    status.backends = {
        {key_ip("198.18.100.2"), 3, "vethpod", {true, "tc_pod_ingress", 43, "", std::nullopt, "tcx"}, "redirect_peer"}};
    status.conflicts_seen = 2;
    status.conflicts = {{key_ip("198.18.0.2"), {0x02, 0, 0, 0, 0, 0x66}, 1.5}};
    status.loader = describe_loader("standalone", "prov0", "",
                                    Json::array({{{"ifindex", 3}, {"found_by", "route"}, {"behind", nullptr}}}));
    return status;
}

TEST(CliStatus, TableShowsEveryFact) {
    EXPECT_EQ(
        rendered(print_status_table, sample_status()),
        "interface     prov0 (ifindex 2, mac 02:00:00:00:00:01)\n"
        "carrier       yes\n"
        "loader        standalone mode, NIC named prov0\n"
        "subnet        198.18.0.0/24\n"
        "xdp           xdp_nic (id 41), native, plain attach (no dispatcher)\n"
        "tc ingress    tc_nic_ingress (id 42), tcx link\n"
        "arp           answered at tc ingress, out of the NIC's egress (every NIC kind)\n"
        "pod delivery  bpf_redirect_peer\n"
        "heartbeat     fresh: 0.3 s ago (timeout 5.0 s)\n"
        "service IP    198.18.0.2: active (owner), answering ARP\n"
        "dhcp relay    for 198.18.0.2\n"
        "dhcpv6 relay  off\n"
        "backend       198.18.100.2 on vethpod (ifindex 3, found by route), delivered by bpf_redirect_peer, pod hook "
        "tc_pod_ingress (tcx)\n"
        "conflicts     2 seen (ARP and NDP claims: counter arp_conflict)\n"
        "conflict      198.18.0.2 claimed by 02:00:00:00:00:66, 1.5 s ago\n");
}

TEST(CliStatus, JsonShape) {
    EXPECT_EQ(
        status_json(sample_status()).dump(),
        R"({"interface":{"name":"prov0","ifindex":2,"mac":"02:00:00:00:00:01","carrier":true},)"
        R"("loader":{"backend_veths":[{"behind":null,"found_by":"route","ifindex":3}],"interface":"prov0",)"
        R"("interface_chosen_by":"name","interface_macs":null,"mode":"standalone"},)"
        R"("subnet":"198.18.0.0/24","subnet_ipv6":null,"dhcp_service_ip":"198.18.0.2","dhcp6_relay":null,)"
        R"("hooks":{"xdp":{"attached":true,"program":"xdp_nic","program_id":41,"mode":"native","dispatcher":false},)"
        R"("tc_ingress":{"attached":true,"program":"tc_nic_ingress","program_id":42,"attach":"tcx"}},)"
        R"("pod_delivery":"redirect_peer","arp_responder":"tc_egress",)"
        R"("heartbeat":{"state":"fresh","age_seconds":0.31,"timeout_seconds":5.0},)"
        R"("service_ips":[{"ip":"198.18.0.2","active":true,"answering_arp":true,"solicited_node_group":null}],)"
        R"("shared_addresses":[],)"
        R"("backends":[{"ip":"198.18.100.2","veth":"vethpod","ifindex":3,"pod_delivery":"redirect_peer",)"
        R"("pod_hook":{"attached":true,"program":"tc_pod_ingress","program_id":43,"attach":"tcx"}}],)"
        R"("conflicts":{"seen":2,"entries":[{"service_ip":"198.18.0.2","mac":"02:00:00:00:00:66","age_seconds":1.5}]}})");
}

// A shared address: the node's, the interface holding it, each steered port and where to (none: no backend).
TEST(CliStatus, SharedAddressSaysItIsTheNodesAndWhatIsSteered) {
    StatusView status = sample_status();
    status.shared_addresses = {{key_ip("192.0.2.10"),
                                "prov0",
                                {{"tcp", 6180, key_ip("198.18.100.2"), 6180, {}},
                                 {"tcp", 6385, bpfnet_ip{}, 6385, {}},
                                 {"tcp", 7000, key_ip("10.244.2.7"), 8080, key_ip("192.0.2.22")}}}};
    EXPECT_NE(
        rendered(print_status_table, status)
            .find("shared address  192.0.2.10: the node's, held on prov0 (its ARP and other ports stay the "
                  "node's); steered: tcp/6180 to 198.18.100.2:6180, tcp/6385 to no backend here (dropped), tcp/7000 to "
                  "10.244.2.7:8080 on the node at 192.0.2.22\n"),
        std::string::npos)
        << rendered(print_status_table, status);
    EXPECT_EQ(status_json(status)["shared_addresses"].dump(),
              R"([{"ip":"192.0.2.10","held_on":"prov0","ports":[{"protocol":"tcp","port":6180,)"
              R"("backend":"198.18.100.2:6180","via_node":null},{"protocol":"tcp","port":6385,"backend":null,)"
              R"("via_node":null},{"protocol":"tcp","port":7000,"backend":"10.244.2.7:8080",)"
              R"("via_node":"192.0.2.22"}]}])");
    status.shared_addresses[0].ip = key_ip("2001:db8::10");
    status.shared_addresses[0].held_on = "";
    EXPECT_NE(rendered(print_status_table, status)
                  .find("2001:db8::10: the node's, held by no interface here (its listed ports still reach the "
                        "pod here: a node holding it may hand them on) (its NDP"),
              std::string::npos);
}

// How the loader chose the NIC, as it described itself; or why none answered.
TEST(CliStatus, LoaderLineSaysHowTheNicWasChosenOrWhyNoLoaderAnswered) {
    StatusView status = sample_status();
    status.loader = describe_loader("kubernetes", "enp2s0", "02:00:00:00:ff:99,02:00:00:00:00:0b");
    EXPECT_NE(rendered(print_status_table, status)
                  .find("loader        kubernetes mode, NIC chosen by MAC (the one link with one of "
                        "02:00:00:00:ff:99,02:00:00:00:00:0b)\n"),
              std::string::npos);
    EXPECT_EQ(status_json(status)["loader"]["interface_chosen_by"], "mac");
    status.loader.reset();
    status.loader_problem = "no bpfnet-loader serves /run/bpfnet/prov0.sock";
    EXPECT_NE(rendered(print_status_table, status)
                  .find("loader        none answered: no bpfnet-loader serves /run/bpfnet/prov0.sock\n"),
              std::string::npos);
    EXPECT_EQ(status_json(status)["loader"].dump(), R"({"problem":"no bpfnet-loader serves /run/bpfnet/prov0.sock"})");
}

// The backend line says how the loader found the veth, as its log does: behind a bridge (a bridge CNI), or
// named in the config; nothing when the loader did not say (one from before backend_veths, or none).
TEST(CliStatus, BackendLineSaysHowTheVethWasFound) {
    StatusView status = sample_status();
    status.loader = describe_loader("kubernetes", "prov0", "",
                                    Json::array({{{"ifindex", 3}, {"found_by", "namespace"}, {"behind", "cni0"}}}));
    EXPECT_NE(
        rendered(print_status_table, status)
            .find("backend       198.18.100.2 on vethpod (ifindex 3, found by namespace behind cni0), delivered by "
                  "bpf_redirect_peer, pod hook"),
        std::string::npos);
    status.loader = describe_loader("standalone", "prov0", "",
                                    Json::array({{{"ifindex", 3}, {"found_by", "named"}, {"behind", nullptr}}}));
    EXPECT_NE(
        rendered(print_status_table, status).find("(ifindex 3, named in the config), delivered by bpf_redirect_peer"),
        std::string::npos);
    status.loader = describe_loader("standalone", "prov0", "",
                                    Json::array({{{"ifindex", 9}, {"found_by", "route"}, {"behind", nullptr}}}));
    EXPECT_NE(rendered(print_status_table, status).find("(ifindex 3), delivered by"), std::string::npos);
    status.loader.reset();
    EXPECT_NE(rendered(print_status_table, status).find("(ifindex 3), delivered by"), std::string::npos);
}

// A backend delivered through the node's routing says so; the JSON names the delivery as `backends` does.
TEST(CliStatus, BackendLineSaysTheDelivery) {
    StatusView status = sample_status();
    status.backends[0].delivery = "route";
    EXPECT_NE(rendered(print_status_table, status)
                  .find("backend       198.18.100.2 on vethpod (ifindex 3, found by route), delivered by the node's "
                        "routing, pod hook tc_pod_ingress"),
              std::string::npos);
    EXPECT_EQ(status_json(status)["backends"][0]["pod_delivery"], "route");
    status.backends[0].delivery = "veth";
    EXPECT_NE(rendered(print_status_table, status).find("), delivered through the veth, pod hook"), std::string::npos);
}

// An IPv6-only LAN: no IPv4 subnet (the iface entry's match-nothing network), the IPv6 one shown.
TEST(CliStatus, Ipv6OnlyShowsNoIpv4SubnetAndTheIpv6One) {
    StatusView status = sample_status();
    status.subnet_be = 0xffffffff;
    status.subnet_mask_be = 0;
    status.subnet6 = key_ip("fd00:1::");
    status.subnet6_prefix_len = 64;
    std::string table = rendered(print_status_table, status);
    EXPECT_NE(table.find("subnet        none\n"), std::string::npos) << table;
    EXPECT_NE(table.find("subnet ipv6   fd00:1::/64\n"), std::string::npos) << table;
    // Its neighbour protocol is NDP: no ARP line.
    EXPECT_NE(table.find("ndp           answered at tc ingress, out of the NIC's egress (every NIC kind)\n"),
              std::string::npos)
        << table;
    EXPECT_EQ(table.find("arp "), std::string::npos) << table;
    Json json = status_json(status);
    EXPECT_TRUE(json["subnet"].is_null());
    EXPECT_EQ(json["subnet_ipv6"], "fd00:1::/64");
}

// An IPv6 service address answers NDP, and status says whether the NIC is in its solicited-node group.
TEST(CliStatus, Ipv6ServiceAddressShowsNdpAndTheSolicitedNodeGroup) {
    StatusView status = sample_status();
    status.service_ips = {{key_ip("198.18.0.2"), true, std::nullopt},
                          {key_ip("fd00:1::2"), true, true},
                          {key_ip("fd00:1::3"), false, false}};
    std::string table = rendered(print_status_table, status);
    EXPECT_NE(table.find("198.18.0.2: active (owner), answering ARP\n"), std::string::npos) << table;
    EXPECT_NE(table.find("fd00:1::2: active (owner), answering NDP, NIC in its solicited-node group\n"),
              std::string::npos)
        << table;
    EXPECT_NE(
        table.find("fd00:1::3: inactive (not the owner here, or no backend; NDP requests for it dropped while the "
                   "loader runs), NIC NOT in its solicited-node group"),
        std::string::npos)
        << table;
    Json json = status_json(status);
    EXPECT_EQ(json["service_ips"][1]["solicited_node_group"], true);
    EXPECT_EQ(json["service_ips"][2]["solicited_node_group"], false);
}

// The DHCPv6 relay: for which address, and whether the NIC is in ff02::1:2.
TEST(CliStatus, Dhcpv6RelayShowsItsAddressAndTheGroup) {
    StatusView status = sample_status();
    status.dhcp6_service_ip = key_ip("fd00:1::2");
    status.dhcp6_group_member = true;
    EXPECT_NE(rendered(print_status_table, status).find("dhcpv6 relay  for fd00:1::2, NIC in ff02::1:2\n"),
              std::string::npos);
    EXPECT_EQ(status_json(status)["dhcp6_relay"].dump(), R"({"service_ip":"fd00:1::2","nic_in_group":true})");
    status.dhcp6_group_member = false;
    EXPECT_NE(rendered(print_status_table, status).find("NIC NOT in ff02::1:2"), std::string::npos);
}

TEST(CliStatus, StaleHeartbeatMeansNoArpAnswersEvenWhenActive) {
    StatusView status = sample_status();
    status.heartbeat_age_seconds = 7.5;
    EXPECT_EQ(status.heartbeat(), HeartbeatState::Stale);
    EXPECT_FALSE(status.answering_arp(status.service_ips[0]));
    Json json = status_json(status);
    EXPECT_EQ(json["heartbeat"]["state"], "stale");
    EXPECT_EQ(json["service_ips"][0]["active"], true);
    EXPECT_EQ(json["service_ips"][0]["answering_arp"], false);
    std::string table = rendered(print_status_table, status);
    EXPECT_NE(table.find("heartbeat     STALE: 7.5 s ago (timeout 5.0 s): loader not running, no ARP answers\n"),
              std::string::npos)
        << table;
    EXPECT_NE(table.find("active (owner), NOT answering ARP (heartbeat not fresh)"), std::string::npos) << table;
}

TEST(CliStatus, NothingAttachedNoBackendNeverHeartbeat) {
    StatusView status = sample_status();
    status.xdp = {};
    status.tc_ingress = {};
    status.heartbeat_age_seconds.reset();
    status.service_ips = {{key_ip("198.18.0.2"), false, std::nullopt}};
    status.backends.clear();
    status.conflicts_seen = 0;
    status.conflicts.clear();
    status.dhcp_service_ip_be = 0;
    std::string table = rendered(print_status_table, status);
    EXPECT_NE(table.find("xdp           NOT ATTACHED\n"), std::string::npos) << table;
    EXPECT_NE(table.find("tc ingress    NOT ATTACHED\n"), std::string::npos) << table;
    EXPECT_NE(table.find("heartbeat     never written (timeout 5.0 s): no ARP answers\n"), std::string::npos) << table;
    EXPECT_NE(table.find("198.18.0.2: inactive"), std::string::npos) << table;
    EXPECT_NE(table.find("backend       none: service traffic is dropped (drop_no_backend)\n"), std::string::npos);
    EXPECT_NE(table.find("conflicts     none seen\n"), std::string::npos) << table;
    EXPECT_NE(table.find("dhcp relay    off\n"), std::string::npos) << table;

    Json json = status_json(status);
    EXPECT_EQ(json["hooks"]["xdp"].dump(),
              R"({"attached":false,"program":null,"program_id":null,"mode":null,"dispatcher":null})");
    EXPECT_EQ(json["heartbeat"].dump(), R"({"state":"never","age_seconds":null,"timeout_seconds":5.0})");
    EXPECT_EQ(json["backends"].dump(), "[]");
    EXPECT_EQ(json["dhcp_service_ip"].dump(), "null");
    EXPECT_EQ(json["conflicts"].dump(), R"({"seen":0,"entries":[]})");
}

// ---- services, backends, flows, neighbours ----

std::pair<bpfnet_service_key, bpfnet_service> service(const char *service_ip, __u8 proto, __u16 port,
                                                      const char *backend_ip, __u16 backend_port, __u8 kind) {
    bpfnet_service_key key{};
    key.service_ip = key_ip(service_ip);
    key.port_be = htons(port);
    key.proto = proto;
    bpfnet_service value{};
    value.backend_ip = backend_ip ? key_ip(backend_ip) : bpfnet_ip{};
    value.backend_port_be = htons(backend_port);
    value.kind = kind;
    return {key, value};
}

ServiceEntries sample_services() {
    // Out of order on purpose: the renderers sort.
    return {service("198.18.0.2", 17, 69, "198.18.100.2", 69, BPFNET_KIND_TFTP),
            service("198.18.0.2", 6, 80, "198.18.100.2", 8080, BPFNET_KIND_PLAIN),
            service("198.18.0.2", 17, 67, "198.18.100.2", 67, BPFNET_KIND_DHCP)};
}

TEST(CliServices, TableSortedByAddressProtocolPort) {
    EXPECT_EQ(rendered(print_services_table, sample_services()), "SERVICE IP  PROTO  PORT  KIND   BACKEND\n"
                                                                 "198.18.0.2  tcp    80    plain  198.18.100.2:8080\n"
                                                                 "198.18.0.2  udp    67    dhcp   198.18.100.2:67\n"
                                                                 "198.18.0.2  udp    69    tftp   198.18.100.2:69\n");
}

TEST(CliServices, JsonShapeAndNoBackend) {
    ServiceEntries entries = {service("198.18.0.2", 6, 80, nullptr, 8080, BPFNET_KIND_PLAIN)};
    EXPECT_EQ(services_json(entries).dump(),
              R"({"services":[{"service_ip":"198.18.0.2","shared":false,"protocol":"tcp","port":80,"kind":"plain",)"
              R"("backend_ip":null,"backend_port":8080,"via_node":null}]})");
    EXPECT_EQ(rendered(print_services_table, entries), "SERVICE IP  PROTO  PORT  KIND   BACKEND\n"
                                                       "198.18.0.2  tcp    80    plain  none (port 8080)\n");
}

// A shared address's ports say so: the address is the node's, not a service IP.
TEST(CliServices, SharedAddressPortsSaySo) {
    auto shared = service("192.0.2.10", 6, 6180, "198.18.100.2", 6180, BPFNET_KIND_PLAIN);
    shared.second.flags = BPFNET_SERVICE_SHARED;
    shared.second.link.ifindex = 3;
    ServiceEntries entries = {shared};
    EXPECT_EQ(services_json(entries)["services"][0]["shared"], true);
    EXPECT_NE(rendered(print_services_table, entries).find("192.0.2.10 (shared)  tcp    6180"), std::string::npos)
        << rendered(print_services_table, entries);
    // Its pod on another node: that node named.
    shared.second.flags = BPFNET_SERVICE_SHARED | BPFNET_SERVICE_VIA_NODE;
    shared.second.via_node = key_ip("192.0.2.22");
    shared.second.link.ifindex = 0;
    entries = {shared};
    EXPECT_EQ(services_json(entries)["services"][0]["via_node"], "192.0.2.22");
    EXPECT_NE(rendered(print_services_table, entries).find("198.18.100.2:6180 on the node at 192.0.2.22"),
              std::string::npos)
        << rendered(print_services_table, entries);
}

BackendRow sample_backend() {
    BackendRow row;
    row.ip = key_ip("198.18.100.2");
    row.entry.ifindex = 3;
    const __u8 pod[6] = {2, 0, 0, 0, 1, 2};
    const __u8 host[6] = {2, 0, 0, 0, 1, 1};
    std::copy(pod, pod + 6, row.entry.pod_mac);
    std::copy(host, host + 6, row.entry.veth_mac);
    row.entry.service_ip = key_ip("198.18.0.2");
    row.entry.flags = BPFNET_BACKEND_REDIRECT_PEER;
    row.veth = "vethpod";
    return row;
}

TEST(CliBackends, TableAndJson) {
    EXPECT_EQ(rendered(print_backends_table, std::vector<BackendRow>{sample_backend()}),
              "BACKEND IP    VETH     IFINDEX  POD MAC            VETH MAC           POD DELIVERY   EGRESS SERVICE IP\n"
              "198.18.100.2  vethpod  3        02:00:00:00:01:02  02:00:00:00:01:01  redirect_peer  198.18.0.2\n");
    BackendRow gone = sample_backend();
    gone.veth.clear();
    gone.entry.flags = 0;
    EXPECT_EQ(backends_json({gone}).dump(),
              R"({"backends":[{"ip":"198.18.100.2","veth":null,"ifindex":3,"pod_mac":"02:00:00:00:01:02",)"
              R"("veth_mac":"02:00:00:00:01:01","pod_delivery":"veth","redirect":"plain",)"
              R"("egress_service_ip":"198.18.0.2"}]})");
    BackendRow routed = sample_backend();
    routed.entry.flags = BPFNET_BACKEND_ROUTE;
    EXPECT_EQ(backends_json({routed})["backends"][0]["pod_delivery"], "route");
}

FlowRow flow(const char *host, __u16 host_port, __u16 service_port, __u8 proto, __u16 backend_port) {
    bpfnet_flow_key key{};
    key.remote_ip = key_ip(host);
    key.remote_port_be = htons(host_port);
    key.service_ip = key_ip("198.18.0.2");
    key.service_port_be = htons(service_port);
    key.proto = proto;
    bpfnet_flow value{};
    value.backend_ip = key_ip("198.18.100.2");
    value.backend_port_be = htons(backend_port);
    return {key, value, true, 12};
}

TEST(CliFlows, TableAndJson) {
    FlowEntries entries = {flow("198.18.0.10", 9999, 41000, 6, 41000), flow("198.18.0.10", 2048, 55123, 17, 55123)};
    entries[1].confirmed = false;
    entries[1].idle_s = std::nullopt;
    EXPECT_EQ(rendered(print_flows_table, entries),
              "HOST                   SERVICE           PROTO  BACKEND             STATE        IDLE\n"
              "198.18.0.10:2048  <->  198.18.0.2:55123  udp    198.18.100.2:55123  unconfirmed  -\n"
              "198.18.0.10:9999  <->  198.18.0.2:41000  tcp    198.18.100.2:41000  confirmed    12s\n");
    EXPECT_EQ(flows_json({entries[0]}).dump(),
              R"({"flows":[{"host_ip":"198.18.0.10","host_port":9999,"service_ip":"198.18.0.2",)"
              R"("service_port":41000,"protocol":"tcp","backend_ip":"198.18.100.2","backend_port":41000,)"
              R"("confirmed":true,"idle_s":12}]})");
}

// A flow's idle time is read off the 16-bit flow clock, across its wrap; a flow of a build without the clock
// has none.
TEST(CliFlows, IdleSecondsFromTheFlowClock) {
    bpfnet_flow flow{};
    flow.seen = 65530;
    EXPECT_EQ(flow_idle_seconds(flow, 65530), 0u);
    EXPECT_EQ(flow_idle_seconds(flow, 4), 10u);    // 10 units of 2^30 ns: 10.7 s
    EXPECT_EQ(flow_idle_seconds(flow, 565), 613u); // 571 units: 613.1 s
    flow.seen = 0;
    EXPECT_FALSE(flow_idle_seconds(flow, 100).has_value());
}

TEST(CliFlows, FilterByHostAndByEitherPort) {
    auto a = flow("198.18.0.10", 9999, 41000, 6, 41000).key;
    auto b = flow("198.18.0.11", 2048, 55123, 17, 55123).key;
    FlowFilter none;
    EXPECT_TRUE(none.matches(a));
    FlowFilter host{key_ip("198.18.0.11"), std::nullopt};
    EXPECT_FALSE(host.matches(a));
    EXPECT_TRUE(host.matches(b));
    FlowFilter host_port{std::nullopt, 9999};
    EXPECT_TRUE(host_port.matches(a));
    FlowFilter service_port{std::nullopt, 55123};
    EXPECT_FALSE(service_port.matches(a));
    EXPECT_TRUE(service_port.matches(b));
}

TEST(CliNeighbours, TableAndJsonSortedNumericallyWithTheirTable) {
    bpfnet_neighbour n10{{2, 0, 0, 0, 0, 0x10}, {}};
    bpfnet_neighbour n9{{2, 0, 0, 0, 0, 0x09}, {}};
    NeighbourEntries entries = {
        {key_ip("198.18.0.10"), n10, true}, {key_ip("fd00:1::9"), n9, false}, {key_ip("198.18.0.9"), n9, true}};
    // IPv4 first, then IPv6, each in address order; a host known from ARP or NDP only is unconfirmed.
    EXPECT_EQ(rendered(print_neighbours_table, entries), "IP           MAC                STATE\n"
                                                         "198.18.0.9   02:00:00:00:00:09  confirmed\n"
                                                         "198.18.0.10  02:00:00:00:00:10  confirmed\n"
                                                         "fd00:1::9    02:00:00:00:00:09  unconfirmed\n");
    EXPECT_EQ(neighbours_json(entries).dump(),
              R"({"neighbours":[{"ip":"198.18.0.9","mac":"02:00:00:00:00:09","confirmed":true},)"
              R"({"ip":"198.18.0.10","mac":"02:00:00:00:00:10","confirmed":true},)"
              R"({"ip":"fd00:1::9","mac":"02:00:00:00:00:09","confirmed":false}]})");
}

// ---- stats ----

CounterValues sample_counters() {
    CounterValues values(BPFNET_CTR_MAX, 0);
    values[BPFNET_CTR_PASS] = 100;
    values[BPFNET_CTR_DNAT_SERVICE] = 7;
    values[BPFNET_CTR_DROP_NOT_ALLOWED] = 3;
    values[BPFNET_CTR_DHCP_REQUEST_RELAYED] = 2;
    return values;
}

// Drops and events are grouped by kind (maps/bpfnet_maps.h); "paths" keeps every counter not named drop_*, as
// before events had a group (docs/cli.md: JSON keys are only added).
TEST(CliStats, JsonGroupsPathsDropsAndEvents) {
    Json json = stats_json(sample_counters());
    ASSERT_EQ(json.size(), 3u);
    for (size_t i = 0; i < counter_table.size(); i++) {
        std::string label(counter_label(counter_table[i]));
        bool named_drop = counter_table[i].name.starts_with("drop_");
        EXPECT_EQ(json["paths"].contains(label), !named_drop) << label;
        EXPECT_EQ(json["drops"].contains(label), counter_table[i].kind == CounterKind::Drop) << label;
        EXPECT_EQ(json["events"].contains(label), counter_table[i].kind == CounterKind::Event) << label;
    }
    EXPECT_EQ(json["paths"]["pass"], 100);
    EXPECT_EQ(json["paths"]["dnat_service"], 7);
    EXPECT_EQ(json["paths"]["dhcp_request_relayed"], 2);
    EXPECT_EQ(json["drops"]["not_allowed"], 3);
    EXPECT_EQ(json["drops"]["no_backend"], 0);
    EXPECT_TRUE(json["drops"].contains("neighbour_miss")) << "a neighbour miss drops the packet";
    EXPECT_TRUE(json["events"].contains("flow_created"));
    // The order is the counters' order: paths start with pass, drops with neighbour_miss.
    EXPECT_EQ(json["paths"].begin().key(), "pass");
    EXPECT_EQ(json["drops"].begin().key(), "neighbour_miss");
    EXPECT_EQ(json["events"].begin().key(), "arp_conflict");
}

TEST(CliStats, TableHasAPathADropAndAnEventSection) {
    std::string table = rendered(print_stats_table, sample_counters(), nullptr);
    EXPECT_EQ(table.rfind("PATH ", 0), 0u) << table;
    EXPECT_NE(table.find("\npass                      100\n"), std::string::npos) << table;
    EXPECT_NE(
        table.find("\n\nDROP REASON               COUNT\nneighbour_miss            0\nnot_allowed               3\n"),
        std::string::npos)
        << table;
    EXPECT_NE(table.find("\n\nEVENT                     COUNT\narp_conflict              0\n"), std::string::npos)
        << table;
    EXPECT_EQ(table.find("drop_"), std::string::npos) << table;
}

TEST(CliStats, WatchShowsRatesPerSecond) {
    CounterValues before = sample_counters();
    CounterValues after = before;
    after[BPFNET_CTR_PASS] += 50;
    after[BPFNET_CTR_DROP_NOT_ALLOWED] += 1;
    after[BPFNET_CTR_DNAT_SERVICE] = 0; // re-created datapath: no negative rate
    std::vector<double> rates = counter_rates(before, after, 2.0);
    EXPECT_DOUBLE_EQ(rates[BPFNET_CTR_PASS], 25.0);
    EXPECT_DOUBLE_EQ(rates[BPFNET_CTR_DROP_NOT_ALLOWED], 0.5);
    EXPECT_DOUBLE_EQ(rates[BPFNET_CTR_DNAT_SERVICE], 0.0);

    Json json = stats_watch_json(after, rates, 2.0004);
    EXPECT_EQ(json["paths"]["pass"], 150);
    EXPECT_EQ(json["interval_seconds"], 2.0);
    EXPECT_EQ(json["rates"]["paths"]["pass"], 25.0);
    EXPECT_EQ(json["rates"]["drops"]["not_allowed"], 0.5);

    std::string table = rendered(print_stats_table, after, &rates);
    EXPECT_NE(table.find("PATH                      COUNT  PER SECOND\npass                      150    25.0\n"),
              std::string::npos)
        << table;
    EXPECT_NE(table.find("\nnot_allowed               4      0.5\n"), std::string::npos) << table;
}

// ---- backend set / clear: the request sent to the loader and the report of its answer ----

TEST(CliBackend, RequestsNameTheCommandAndOnlyTheGivenFields) {
    EXPECT_EQ(backend_set_request("198.18.100.2", ""),
              nlohmann::json::parse(R"({"command":"backend_set","ip":"198.18.100.2"})"));
    EXPECT_EQ(backend_set_request("198.18.100.2", "veth1"),
              nlohmann::json::parse(R"({"command":"backend_set","ip":"198.18.100.2","veth":"veth1"})"));
    EXPECT_EQ(backend_set_request("198.18.100.2", "", "fd00:10::2"),
              nlohmann::json::parse(R"({"command":"backend_set","ip":"198.18.100.2","ipv6":"fd00:10::2"})"));
    EXPECT_EQ(backend_set_request("198.18.100.2", "", "", "route"),
              nlohmann::json::parse(R"({"command":"backend_set","ip":"198.18.100.2","delivery":"route"})"));
    EXPECT_EQ(backend_clear_request(), nlohmann::json::parse(R"({"command":"backend_clear"})"));
}

TEST(CliBackend, TheLoadersRefusalsKeepTheirExitCodes) {
    EXPECT_EQ(exit_code_for(ControlFailure::Kind::InvalidArgument), ExitCode::InvalidArgument);
    EXPECT_EQ(exit_code_for(ControlFailure::Kind::BackendUnavailable), ExitCode::BackendUnavailable);
    EXPECT_EQ(exit_code_for(ControlFailure::Kind::PermissionDenied), ExitCode::Permission);
    EXPECT_EQ(exit_code_for(ControlFailure::Kind::Refused), ExitCode::Failure);
    EXPECT_EQ(exit_code_for(ControlFailure::Kind::BadRequest), ExitCode::Failure);
}

TEST(CliBackend, SetReportNamesBackendVethHookWritesAndAnnouncements) {
    Json result = Json::parse(R"({"backend":{"ip":"198.18.100.2","veth":"vethpod","ifindex":7},
        "pod_hook":"attached","service_ips":["198.18.0.2"],"writes":9,"removals":0,
        "announced":["198.18.0.2"],"gratuitous_arps":3,"detached_pod_hooks":[{"ifindex":5,"veth":null}]})");
    EXPECT_EQ(describe_backend_change(result),
              "backend 198.18.100.2 on vethpod now serves 198.18.0.2; pod hook attached; 9 map writes, 0 removals; "
              "pod hook removed from ifindex 5; announced with 3 gratuitous ARPs\n"
              "note: bpfnet-loader re-applies its config's backend on SIGHUP, a config change or a restart");
}

TEST(CliBackend, ClearReportNamesTheInactiveServiceIps) {
    Json result = Json::parse(R"({"backend":null,"pod_hook":null,"service_ips":["198.18.0.2","198.18.0.3"],
        "writes":4,"removals":5,"announced":[],"gratuitous_arps":3,
        "detached_pod_hooks":[{"ifindex":7,"veth":"vethpod"}]})");
    EXPECT_EQ(describe_backend_change(result),
              "backend cleared: 198.18.0.2, 198.18.0.3 inactive, listed ports dropped (drop_no_backend); 4 map "
              "writes, 5 removals; pod hook removed from vethpod\n"
              "note: bpfnet-loader re-applies its config's backend on SIGHUP, a config change or a restart");
}

} // namespace
} // namespace bpfnet::cli
