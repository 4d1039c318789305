#include "cli/commands_tables.hpp"

#include "cli/commands.hpp"
#include "core/flow_sweep.hpp"
#include "core/netlink.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <tuple>

namespace bpfnet::cli {

namespace {

// Orders by numeric address, then by the rest: tables read top-down like `ip route`.
void sort_services(ServiceEntries &entries) {
    std::sort(entries.begin(), entries.end(), [](const auto &a, const auto &b) {
        return std::make_tuple(a.first.service_ip, a.first.proto, ntohs(a.first.port_be)) <
               std::make_tuple(b.first.service_ip, b.first.proto, ntohs(b.first.port_be));
    });
}

void sort_flows(FlowEntries &entries) {
    auto key = [](const bpfnet_flow_key &k) {
        return std::make_tuple(k.remote_ip, ntohs(k.remote_port_be), k.service_ip, ntohs(k.service_port_be), k.proto);
    };
    std::sort(entries.begin(), entries.end(), [&](const auto &a, const auto &b) { return key(a.key) < key(b.key); });
}

void sort_neighbours(NeighbourEntries &entries) {
    std::sort(entries.begin(), entries.end(), [](const auto &a, const auto &b) { return a.ip < b.ip; });
}

// The older spelling of the same choice, kept as the JSON key "redirect" (docs/cli.md promised it).
std::string redirect_alias(const bpfnet_backend &backend) {
    return (backend.flags & BPFNET_BACKEND_REDIRECT_PEER) ? "peer" : "plain";
}

// A service whose backend IP is 0 has no backend on this node: its traffic is dropped (drop_no_backend).
bool has_backend(const bpfnet_service &service) {
    return service.backend_ip != bpfnet_ip{};
}

} // namespace

void run_services(Context &context) {
    DatapathMaps maps = context.open_datapath();
    if (context.json())
        print_json(context.out, services_json(maps.services.entries()));
    else
        print_services_table(context.out, maps.services.entries());
}

void run_backends(Context &context) {
    DatapathMaps maps = context.open_datapath();
    std::vector<BackendRow> rows;
    for (const auto &[ip, entry] : maps.backends.entries())
        rows.push_back({ip, entry, interface_name(static_cast<int>(entry.ifindex))});
    if (context.json())
        print_json(context.out, backends_json(std::move(rows)));
    else
        print_backends_table(context.out, std::move(rows));
}

void run_flows(Context &context, const FlowArgs &args) {
    FlowFilter filter;
    if (!args.host.empty())
        filter.host = parse_ip(args.host, "--host");
    if (!args.port.empty())
        filter.port = parse_port(args.port, "--port");
    DatapathMaps maps = context.open_datapath();
    FlowEntries entries;
    const uint16_t now = flow_clock_now();
    for (const auto &[key, flow] : maps.flows.entries())
        if (filter.matches(key))
            entries.push_back({key, flow, true, flow_idle_seconds(flow, now)});
    for (const auto &[key, flow] : maps.flows_unconfirmed.entries())
        if (filter.matches(key))
            entries.push_back({key, flow, false, flow_idle_seconds(flow, now)});
    if (context.json())
        print_json(context.out, flows_json(std::move(entries)));
    else
        print_flows_table(context.out, std::move(entries));
}

void run_neighbours(Context &context) {
    DatapathMaps maps = context.open_datapath();
    NeighbourEntries entries;
    for (const auto &[ip, neighbour] : maps.neighbours.entries())
        entries.push_back({ip, neighbour, true});
    for (const auto &[ip, neighbour] : maps.neighbours_unconfirmed.entries())
        entries.push_back({ip, neighbour, false});
    if (context.json())
        print_json(context.out, neighbours_json(std::move(entries)));
    else
        print_neighbours_table(context.out, std::move(entries));
}

bool FlowFilter::matches(const bpfnet_flow_key &key) const {
    if (host && key.remote_ip != *host)
        return false;
    return !port || ntohs(key.remote_port_be) == *port || ntohs(key.service_port_be) == *port;
}

void print_services_table(std::ostream &out, ServiceEntries entries) {
    sort_services(entries);
    TextTable table({"SERVICE IP", "PROTO", "PORT", "KIND", "BACKEND"});
    for (const auto &[key, service] : entries)
        table.add_row(
            {format_ip(key.service_ip) + ((service.flags & BPFNET_SERVICE_SHARED) ? " (shared)" : ""),
             format_protocol(key.proto), std::to_string(ntohs(key.port_be)), format_kind(service.kind),
             (has_backend(service) ? format_endpoint(service.backend_ip, service.backend_port_be)
                                   : "none (port " + std::to_string(ntohs(service.backend_port_be)) + ")") +
                 ((service.flags & BPFNET_SERVICE_VIA_NODE) ? " on the node at " + format_ip(service.via_node) : "")});
    table.print(out);
}

Json services_json(ServiceEntries entries) {
    sort_services(entries);
    Json list = Json::array();
    for (const auto &[key, service] : entries)
        list.push_back(
            {{"service_ip", format_ip(key.service_ip)},
             {"shared", (service.flags & BPFNET_SERVICE_SHARED) != 0},
             {"protocol", format_protocol(key.proto)},
             {"port", ntohs(key.port_be)},
             {"kind", format_kind(service.kind)},
             {"backend_ip", has_backend(service) ? Json(format_ip(service.backend_ip)) : Json()},
             {"backend_port", ntohs(service.backend_port_be)},
             {"via_node", (service.flags & BPFNET_SERVICE_VIA_NODE) ? Json(format_ip(service.via_node)) : Json()}});
    return {{"services", list}};
}

void print_backends_table(std::ostream &out, std::vector<BackendRow> rows) {
    std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.ip < b.ip; });
    TextTable table({"BACKEND IP", "VETH", "IFINDEX", "POD MAC", "VETH MAC", "POD DELIVERY", "EGRESS SERVICE IP"});
    for (const auto &row : rows)
        table.add_row({format_ip(row.ip), row.veth.empty() ? "?" : row.veth, std::to_string(row.entry.ifindex),
                       format_mac(row.entry.pod_mac), format_mac(row.entry.veth_mac),
                       format_pod_delivery(row.entry.flags), format_ip(row.entry.service_ip)});
    table.print(out);
}

Json backends_json(std::vector<BackendRow> rows) {
    std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.ip < b.ip; });
    Json list = Json::array();
    for (const auto &row : rows)
        list.push_back({{"ip", format_ip(row.ip)},
                        {"veth", row.veth.empty() ? Json() : Json(row.veth)},
                        {"ifindex", row.entry.ifindex},
                        {"pod_mac", format_mac(row.entry.pod_mac)},
                        {"veth_mac", format_mac(row.entry.veth_mac)},
                        {"pod_delivery", format_pod_delivery(row.entry.flags)},
                        {"redirect", redirect_alias(row.entry)},
                        {"egress_service_ip", format_ip(row.entry.service_ip)}});
    return {{"backends", list}};
}

void print_flows_table(std::ostream &out, FlowEntries entries) {
    sort_flows(entries);
    TextTable table({"HOST", "", "SERVICE", "PROTO", "BACKEND", "STATE", "IDLE"});
    for (const auto &[key, flow, confirmed, idle_s] : entries)
        table.add_row({format_endpoint(key.remote_ip, key.remote_port_be), "<->",
                       format_endpoint(key.service_ip, key.service_port_be), format_protocol(key.proto),
                       format_endpoint(flow.backend_ip, flow.backend_port_be), confirmed ? "confirmed" : "unconfirmed",
                       idle_s ? std::to_string(*idle_s) + "s" : "-"});
    table.print(out);
}

Json flows_json(FlowEntries entries) {
    sort_flows(entries);
    Json list = Json::array();
    for (const auto &[key, flow, confirmed, idle_s] : entries)
        list.push_back({{"host_ip", format_ip(key.remote_ip)},
                        {"host_port", ntohs(key.remote_port_be)},
                        {"service_ip", format_ip(key.service_ip)},
                        {"service_port", ntohs(key.service_port_be)},
                        {"protocol", format_protocol(key.proto)},
                        {"backend_ip", format_ip(flow.backend_ip)},
                        {"backend_port", ntohs(flow.backend_port_be)},
                        {"confirmed", confirmed},
                        {"idle_s", idle_s ? Json(*idle_s) : Json(nullptr)}});
    return {{"flows", list}};
}

void print_neighbours_table(std::ostream &out, NeighbourEntries entries) {
    sort_neighbours(entries);
    TextTable table({"IP", "MAC", "STATE"});
    for (const auto &[ip, neighbour, confirmed] : entries)
        table.add_row({format_ip(ip), format_mac(neighbour.mac), confirmed ? "confirmed" : "unconfirmed"});
    table.print(out);
}

Json neighbours_json(NeighbourEntries entries) {
    sort_neighbours(entries);
    Json list = Json::array();
    for (const auto &[ip, neighbour, confirmed] : entries)
        list.push_back({{"ip", format_ip(ip)}, {"mac", format_mac(neighbour.mac)}, {"confirmed", confirmed}});
    return {{"neighbours", list}};
}

} // namespace bpfnet::cli
