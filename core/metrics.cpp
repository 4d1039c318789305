#include "core/metrics.hpp"

#include "core/addresses.hpp"
#include "core/node.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <initializer_list>

namespace bpfnet {

void MetricsWriter::family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    append_help(help);
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
}

void MetricsWriter::sample(std::string_view name, std::initializer_list<MetricLabel> labels, uint64_t value) {
    begin_sample(name, labels);
    out_ += std::to_string(value);
    out_ += '\n';
}

void MetricsWriter::sample(std::string_view name, std::initializer_list<MetricLabel> labels, double value) {
    begin_sample(name, labels);
    append_double(value);
    out_ += '\n';
}

void MetricsWriter::begin_sample(std::string_view name, std::initializer_list<MetricLabel> labels) {
    out_ += name;
    if (labels.size() > 0) {
        out_ += '{';
        bool first = true;
        for (const MetricLabel &label : labels) {
            if (!first)
                out_ += ',';
            first = false;
            out_ += label.name;
            out_ += "=\"";
            out_ += escape_label_value(label.value);
            out_ += '"';
        }
        out_ += '}';
    }
    out_ += ' ';
}

// HELP text escapes only backslash and line feed (a double quote is literal there).
void MetricsWriter::append_help(std::string_view help) {
    for (char c : help) {
        if (c == '\\')
            out_ += "\\\\";
        else if (c == '\n')
            out_ += "\\n";
        else
            out_ += c;
    }
}

// Shortest text that reads back as the same double; the format spells the special values this way.
void MetricsWriter::append_double(double value) {
    if (std::isnan(value)) {
        out_ += "NaN";
        return;
    }
    if (std::isinf(value)) {
        out_ += value > 0 ? "+Inf" : "-Inf";
        return;
    }
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
    out_.append(buf, ec == std::errc{} ? end : buf);
}

namespace {

void write_build_info(MetricsWriter &out, const MetricsSnapshot &snapshot) {
    out.family("bpfnet_build_info", "gauge", "Always 1; the version label says which bpfnet-loader is running.");
    out.sample("bpfnet_build_info", {{"version", snapshot.version}}, uint64_t{1});
    out.family("bpfnet_loader_ready", "gauge",
               "1 when the programs are attached and the last reconcile succeeded (/readyz answers 200), else 0.");
    out.sample("bpfnet_loader_ready", {}, uint64_t{snapshot.ready ? 1u : 0u});
    if (snapshot.nic_carrier) {
        out.family("bpfnet_nic_carrier", "gauge",
                   "1 while the provisioning NIC is up with carrier, 0 without (Kubernetes mode then claims no "
                   "service IP, so another node serves them).");
        out.sample("bpfnet_nic_carrier", {}, uint64_t{*snapshot.nic_carrier ? 1u : 0u});
    }
}

// One family per kind of counter (maps/bpfnet_maps.h, BPFNET_COUNTERS), so "all drops" is one sum(), a
// dashboard never mistakes a drop for a delivered packet, and events along a path are not packets.
void write_counter_family(MetricsWriter &out, const DatapathSnapshot &dp, CounterKind kind, std::string_view family,
                          std::string_view label, std::string_view help) {
    out.family(family, "counter", help);
    for (size_t i = 0; i < counter_table.size(); i++)
        if (counter_table[i].kind == kind)
            out.sample(family, {{label, std::string(counter_label(counter_table[i]))}}, dp.counters[i]);
}

void write_counters(MetricsWriter &out, const DatapathSnapshot &dp) {
    write_counter_family(out, dp, CounterKind::Path, "bpfnet_datapath_packets_total", "decision",
                         "Packets by the path the datapath took for them (decision), summed over CPUs and hooks.");
    write_counter_family(out, dp, CounterKind::Drop, "bpfnet_datapath_drops_total", "reason",
                         "Packets the datapath dropped, by reason.");
    write_counter_family(out, dp, CounterKind::Event, "bpfnet_datapath_events_total", "event",
                         "Things the datapath did along a packet's path (neighbours learned, flows recorded, "
                         "rewrites), by event.");
}

void write_service_ips(MetricsWriter &out, const DatapathSnapshot &dp) {
    if (dp.service_ips.empty())
        return;
    out.family("bpfnet_service_ip_active", "gauge",
               "1 when this node owns the service IP (answers ARP for it while the loader's heartbeat is fresh).");
    for (const ServiceIpState &s : dp.service_ips)
        out.sample("bpfnet_service_ip_active", {{"service_ip", s.service_ip}}, uint64_t{s.active ? 1u : 0u});
}

void write_tables(MetricsWriter &out, const DatapathSnapshot &dp) {
    out.family("bpfnet_flows", "gauge", "Entries in use in the flows table (LRU: the oldest go when it is full).");
    out.sample("bpfnet_flows", {}, dp.flows);
    out.family("bpfnet_flows_capacity", "gauge", "Size of the flows table.");
    out.sample("bpfnet_flows_capacity", {}, uint64_t{BPFNET_MAX_FLOWS});
    out.family("bpfnet_flows_unconfirmed", "gauge",
               "Flows the pod opened that the host has not answered yet (LRU, apart from the flows table).");
    out.sample("bpfnet_flows_unconfirmed", {}, dp.flows_unconfirmed);
    out.family("bpfnet_neighbours", "gauge",
               "Entries in use in the neighbours table (host IP -> MAC; hosts the datapath accepted a packet from).");
    out.sample("bpfnet_neighbours", {}, dp.neighbours);
    out.family("bpfnet_neighbours_capacity", "gauge", "Size of the neighbours table.");
    out.sample("bpfnet_neighbours_capacity", {}, uint64_t{BPFNET_MAX_NEIGHBOURS});
    out.family("bpfnet_neighbours_unconfirmed", "gauge",
               "Hosts known from ARP or NDP only (LRU, apart from the neighbours table: a flood churns it).");
    out.sample("bpfnet_neighbours_unconfirmed", {}, dp.neighbours_unconfirmed);
}

void write_heartbeat(MetricsWriter &out, const DatapathSnapshot &dp) {
    if (dp.heartbeat_age_seconds) {
        out.family("bpfnet_loader_heartbeat_age_seconds", "gauge",
                   "Seconds since the loader last wrote its heartbeat into the datapath.");
        out.sample("bpfnet_loader_heartbeat_age_seconds", {}, *dp.heartbeat_age_seconds);
    }
    out.family("bpfnet_loader_heartbeat_timeout_seconds", "gauge",
               "Heartbeat age above which the datapath stops answering ARP for the service IPs.");
    out.sample("bpfnet_loader_heartbeat_timeout_seconds", {}, dp.heartbeat_timeout_seconds);
}

void write_conflicts(MetricsWriter &out, const DatapathSnapshot &dp) {
    out.family("bpfnet_conflicts_total", "counter",
               "ARP packets in which another MAC claimed one of this node's service IPs.");
    out.sample("bpfnet_conflicts_total", {}, dp.counters[BPFNET_CTR_ARP_CONFLICT]);
    if (dp.conflicts.empty())
        return;
    out.family("bpfnet_conflict_info", "gauge", "Always 1; mac is the last other MAC seen claiming service_ip.");
    for (const ConflictState &c : dp.conflicts)
        out.sample("bpfnet_conflict_info", {{"service_ip", c.service_ip}, {"mac", c.mac}}, uint64_t{1});
    out.family("bpfnet_conflict_age_seconds", "gauge", "Seconds since another MAC last claimed service_ip.");
    for (const ConflictState &c : dp.conflicts)
        out.sample("bpfnet_conflict_age_seconds", {{"service_ip", c.service_ip}}, c.age_seconds);
}

double seconds_between(uint64_t earlier_ns, uint64_t later_ns) {
    // The loader may write a heartbeat between the caller reading the clock and this map read: never negative.
    return later_ns > earlier_ns ? static_cast<double>(later_ns - earlier_ns) / 1e9 : 0.0;
}

// Entries in use of a hash map, walking keys only. An LRU entry evicted during the walk makes the kernel
// restart from the first key, so the count is capped at the table's size rather than trusted to end there.
template <typename Key, typename Value>
uint64_t count_entries(const PinnedMap<Key, Value> &map, uint64_t capacity) {
    Key key{};
    Key next{};
    const Key *prev = nullptr;
    uint64_t count = 0;
    while (count < capacity && bpf_map_get_next_key(map.fd(), prev, &next) == 0) {
        count++;
        key = next;
        prev = &key;
    }
    if (count < capacity && errno != ENOENT)
        throw SystemError("bpf_map_get_next_key " + map.name(), errno);
    return count;
}

// Service IPs in address order, so a scrape's output is stable.
std::vector<ServiceIpState> read_service_ips(const DatapathMaps &maps) {
    auto entries = maps.service_ips.entries();
    std::sort(entries.begin(), entries.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<ServiceIpState> out;
    for (const auto &[ip, entry] : entries)
        out.push_back({format_ip(ip), (entry.flags & BPFNET_SERVICE_IP_ACTIVE) != 0});
    return out;
}

std::vector<ConflictState> read_conflicts(const DatapathMaps &maps, uint64_t now_ns) {
    auto entries = maps.conflicts.entries();
    std::sort(entries.begin(), entries.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<ConflictState> out;
    for (const auto &[ip, entry] : entries)
        out.push_back({format_ip(ip), format_mac(entry.mac), seconds_between(entry.last_seen_ns, now_ns)});
    return out;
}

} // namespace

std::string escape_label_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string format_metrics(const MetricsSnapshot &snapshot) {
    MetricsWriter out;
    write_build_info(out, snapshot);
    if (snapshot.datapath) {
        const DatapathSnapshot &dp = *snapshot.datapath;
        write_counters(out, dp);
        write_service_ips(out, dp);
        write_tables(out, dp);
        write_heartbeat(out, dp);
        write_conflicts(out, dp);
    }
    if (snapshot.mode_families)
        snapshot.mode_families(out);
    return out.take();
}

DatapathSnapshot read_datapath(const DatapathMaps &maps, uint64_t now_ns) {
    DatapathSnapshot dp;
    std::vector<__u64> counters = maps.counters.all();
    std::copy_n(counters.begin(), std::min(counters.size(), dp.counters.size()), dp.counters.begin());
    dp.service_ips = read_service_ips(maps);
    dp.flows = count_entries(maps.flows, BPFNET_MAX_FLOWS);
    dp.flows_unconfirmed = count_entries(maps.flows_unconfirmed, BPFNET_MAX_UNCONFIRMED_FLOWS);
    dp.neighbours = count_entries(maps.neighbours, BPFNET_MAX_NEIGHBOURS);
    dp.neighbours_unconfirmed = count_entries(maps.neighbours_unconfirmed, BPFNET_MAX_UNCONFIRMED_NEIGHBOURS);
    if (auto hb = maps.heartbeat.lookup(0); hb && hb->monotonic_ns != 0)
        dp.heartbeat_age_seconds = seconds_between(hb->monotonic_ns, now_ns);
    if (auto iface = maps.iface.lookup(0))
        dp.heartbeat_timeout_seconds = static_cast<double>(iface->heartbeat_timeout_ns) / 1e9;
    dp.conflicts = read_conflicts(maps, now_ns);
    return dp;
}

} // namespace bpfnet
