#include "core/desired_state.hpp"

#include "core/addresses.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <optional>
#include <set>

namespace bpfnet {

namespace {

bpfnet_backend backend_entry(const bpfnet_ip &service_ip, const BackendLocation &where) {
    bpfnet_backend entry{};
    entry.ifindex = static_cast<__u32>(where.ifindex);
    std::copy(where.pod_mac.begin(), where.pod_mac.end(), entry.pod_mac);
    std::copy(where.veth_mac.begin(), where.veth_mac.end(), entry.veth_mac);
    entry.service_ip = service_ip;
    entry.flags = where.route ? BPFNET_BACKEND_ROUTE : where.redirect_peer ? BPFNET_BACKEND_REDIRECT_PEER : 0;
    entry.mtu = static_cast<__u16>(std::min(where.mtu, 0xffffu));
    return entry;
}

// A listed port: its services entry. link: where the backend is attached (its backends entry's pod link), all
// zero when it is on no veth here; via_node: the node it is on instead (a shared address's, BPFNET_SERVICE_VIA_NODE).
void add_listed_port(DesiredState &state, const bpfnet_ip &service_ip, const PortRule &rule,
                     const bpfnet_ip &backend_ip, const bpfnet_pod_link &link, bool shared,
                     const std::optional<bpfnet_ip> &via_node) {
    bpfnet_service_key skey{};
    skey.service_ip = service_ip;
    skey.port_be = htons(rule.port);
    skey.proto = static_cast<__u8>(rule.protocol);
    bpfnet_service service{};
    service.backend_ip = backend_ip;
    service.backend_port_be = htons(rule.target_port);
    service.kind = static_cast<__u8>(rule.kind);
    service.flags = shared ? BPFNET_SERVICE_SHARED : 0;
    service.link = link;
    if (via_node) {
        service.flags |= BPFNET_SERVICE_VIA_NODE;
        service.via_node = *via_node;
    }
    state.services.emplace(skey, service);
}

// The reverse of a listed port whose backend is here: the pod's replies from the target port become the
// service's (a shared address's leave through the node's routing).
void add_reverse_port(DesiredState &state, const bpfnet_ip &service_ip, const PortRule &rule,
                      const bpfnet_ip &backend_ip, bool shared) {
    bpfnet_backend_port_key bkey{};
    bkey.backend_ip = backend_ip;
    bkey.port_be = htons(rule.target_port);
    bkey.proto = static_cast<__u8>(rule.protocol);
    bpfnet_backend_port reverse{};
    reverse.service_ip = service_ip;
    reverse.service_port_be = htons(rule.port);
    reverse.kind = static_cast<__u8>(rule.kind);
    reverse.flags = shared ? BPFNET_BACKEND_PORT_SHARED : 0;
    state.backend_ports.emplace(bkey, reverse);
}

template <typename K, typename V>
size_t apply_upserts(PinnedMap<K, V> &map, const TableDiff<K, V> &diff) {
    for (const auto &[key, value] : diff.upserts)
        map.update(key, value);
    return diff.upserts.size();
}

template <typename K, typename V>
size_t apply_removals(PinnedMap<K, V> &map, const TableDiff<K, V> &diff) {
    for (const auto &key : diff.removals)
        map.erase(key);
    return diff.removals.size();
}

// The service IP's source ranges: one entry per range, and the entry that every other source matches.
// The LPM key's prefix length of the service IP alone: the ranges' prefixes come after its 128 bits.
constexpr __u32 kServiceIpPrefixLen = 128;

// The entry of the service IP's source ranges that every source outside them matches (refused).
bpfnet_source_range_key source_ranges_rest_key(const bpfnet_ip &service_ip) {
    bpfnet_source_range_key rest{};
    rest.prefixlen = kServiceIpPrefixLen;
    rest.service_ip = service_ip;
    return rest;
}

void add_source_ranges(DesiredState &state, const bpfnet_ip &service_ip, const std::vector<SourceRange> &ranges,
                       bool shared) {
    if (ranges.empty())
        return;
    // The datapath looks ranges up only for an IP that says it has some (a shared address: its ports' entries
    // say it, desired_state()).
    if (!shared)
        state.service_ips[service_ip].flags |= BPFNET_SERVICE_IP_SOURCE_RANGES;
    state.source_ranges.try_emplace(source_ranges_rest_key(service_ip), bpfnet_source_range{});
    const bool v4 = is_v4(service_ip);
    for (const SourceRange &range : ranges) {
        if (is_v4(range.network) != v4)
            continue; // an IPv4 service IP gets no IPv6 packets, and the other way round
        bpfnet_source_range_key key{};
        key.service_ip = service_ip;
        key.source = range.network;
        // The whole family (0.0.0.0/0, ::/0) is the {128, IP, ::} entry itself: it would also match the other
        // family's sources, but no packet of the other family reaches this service IP.
        const unsigned family_bits = v4 ? BPFNET_IP_V4_MAPPED_PREFIX_LEN : 0;
        key.prefixlen =
            range.prefix_len == 0 ? kServiceIpPrefixLen : kServiceIpPrefixLen + family_bits + range.prefix_len;
        if (range.prefix_len == 0)
            key.source = bpfnet_ip{};
        bpfnet_source_range allowed{};
        allowed.allowed = 1;
        state.source_ranges.insert_or_assign(key, allowed);
    }
}

// Ranges are written before the entry that refuses the rest, and that entry is removed first: a change of
// ranges never refuses, even for a moment, a source that is allowed before and after it. New ranges go in
// before the ports they guard are listed, and old ones go after those ports are gone.
void add_source_ranges_first(DatapathMaps &maps, const TableDiff<bpfnet_source_range_key, bpfnet_source_range> &diff,
                             ReconcileReport &report) {
    for (const auto &[key, value] : diff.upserts)
        if (value.allowed)
            maps.source_ranges.update(key, value);
    for (const auto &[key, value] : diff.upserts)
        if (!value.allowed)
            maps.source_ranges.update(key, value);
    report.upserts += diff.upserts.size();
}

void remove_source_ranges_last(DatapathMaps &maps, const TableDiff<bpfnet_source_range_key, bpfnet_source_range> &diff,
                               ReconcileReport &report) {
    auto is_rest = [](const bpfnet_source_range_key &key) {
        return key.prefixlen == kServiceIpPrefixLen;
    };
    for (const auto &key : diff.removals)
        if (is_rest(key))
            maps.source_ranges.erase(key);
    for (const auto &key : diff.removals)
        if (!is_rest(key))
            maps.source_ranges.erase(key);
    report.removals += diff.removals.size();
}

// An address the datapath learned as a LAN host before it became a service IP is a host no more: the way out
// sends nothing to a service IP, and it finds that out from a neighbour miss only (docs/design.md, "Per-packet
// cost"). Run once the IPs are in service_ips, from where on the datapath never learns them again.
void forget_hosts_at_service_ips(DatapathMaps &maps, const DesiredState &desired) {
    for (const auto &service_ip : desired.service_ips) {
        maps.neighbours.erase(service_ip.first);
        maps.neighbours_unconfirmed.erase(service_ip.first);
    }
}

} // namespace

DesiredState desired_state(const std::vector<ServiceSpec> &specs) {
    DesiredState state;
    // The datapath keeps one delivery per pod (its backends entry, and each listed port's copy): a pod that any
    // of its specs wants delivered through the node's routing is, for all of them.
    std::set<bpfnet_ip> routed;
    for (const ServiceSpec &spec : specs)
        if (spec.location && spec.location->route)
            routed.insert(spec.backend_ip);
    for (const ServiceSpec &spec : specs) {
        const bool here = spec.backend_ip != bpfnet_ip{} && spec.location.has_value();
        const bool forwarded = !here && spec.shared && spec.via_node && spec.backend_ip != bpfnet_ip{};
        const bpfnet_ip backend_ip = here || forwarded ? spec.backend_ip : bpfnet_ip{};
        if (spec.shared)
            state.shared_addresses.insert(spec.service_ip);
        else if (auto &ip = state.service_ips[spec.service_ip]; here)
            ip.flags |= BPFNET_SERVICE_IP_ACTIVE;
        std::optional<BackendLocation> where = spec.location;
        if (where && routed.contains(spec.backend_ip))
            where->route = true;
        // A pod's own connections to the LAN leave as its service IP: a shared address is none (the node's
        // routing and the CNI take them, bpfnet never speaks for the node's address).
        const std::optional<bpfnet_backend> backend =
            here ? std::optional(backend_entry(spec.shared ? bpfnet_ip{} : spec.service_ip, *where)) : std::nullopt;
        const bpfnet_pod_link link = backend ? pod_link_of(*backend) : bpfnet_pod_link{};
        for (const PortRule &rule : spec.ports) {
            add_listed_port(state, spec.service_ip, rule, backend_ip, link, spec.shared,
                            forwarded ? spec.via_node : std::nullopt);
            if (here)
                add_reverse_port(state, spec.service_ip, rule, backend_ip, spec.shared);
        }
        if (backend) {
            auto [known, added] = state.backends.emplace(backend_ip, *backend);
            if (!added && known->second.service_ip == bpfnet_ip{})
                known->second.service_ip = backend->service_ip; // a service IP's spec after a shared one's
        }
        add_source_ranges(state, spec.service_ip, spec.source_ranges, spec.shared);
    }
    // A listed port's packet reads its IP's source-ranges flag from the port's entry (one lookup): the copy
    // is made once every spec sharing the IP has been seen.
    for (auto &[key, service] : state.services) {
        const bool ranged = (service.flags & BPFNET_SERVICE_SHARED)
                                ? state.source_ranges.contains(source_ranges_rest_key(key.service_ip))
                                : (state.service_ips[key.service_ip].flags & BPFNET_SERVICE_IP_SOURCE_RANGES) != 0;
        if (ranged)
            service.flags |= BPFNET_SERVICE_SOURCE_RANGES;
    }
    return state;
}

std::optional<std::string> capacity_problem(const DesiredState &desired) {
    struct Limit {
        size_t entries;
        size_t capacity;
        const char *what;
    };
    const Limit limits[] = {
        {desired.service_ips.size(), BPFNET_MAX_SERVICE_IPS, "service IPs"},
        {desired.services.size(), BPFNET_MAX_SERVICES, "listed ports (of all service IPs)"},
        {desired.backend_ports.size(), BPFNET_MAX_SERVICES, "backend ports"},
        {desired.backends.size(), BPFNET_MAX_BACKENDS, "backend pod addresses on this node"},
        {desired.source_ranges.size(), BPFNET_MAX_SOURCE_RANGES / 2, "source range entries"},
        {desired.shared_addresses.size(), BPFNET_MAX_SHARED_ADDRESSES, "shared addresses"},
    };
    for (const Limit &limit : limits)
        if (limit.entries > limit.capacity)
            return std::to_string(limit.entries) + " " + limit.what + ": the datapath holds " +
                   std::to_string(limit.capacity);
    return std::nullopt;
}

namespace {

// The service address of the first spec listing a port of `kind` in `family`, preferring one this node serves.
std::optional<bpfnet_ip> relayed_service_ip(const std::vector<ServiceSpec> &specs, PortKind kind, bool v4) {
    auto lists = [kind](const ServiceSpec &spec) {
        return std::any_of(spec.ports.begin(), spec.ports.end(),
                           [kind](const PortRule &rule) { return rule.kind == kind; });
    };
    std::optional<bpfnet_ip> listed;
    for (const ServiceSpec &spec : specs) {
        if (!lists(spec) || is_v4(spec.service_ip) != v4)
            continue;
        if (spec.location)
            return spec.service_ip;
        if (!listed)
            listed = spec.service_ip;
    }
    return listed;
}

} // namespace

__be32 dhcp_service_ip(const std::vector<ServiceSpec> &specs) {
    auto ip = relayed_service_ip(specs, PortKind::Dhcp, true);
    return ip ? v4_of(*ip) : 0;
}

bpfnet_ip dhcp6_service_ip(const std::vector<ServiceSpec> &specs) {
    return relayed_service_ip(specs, PortKind::Dhcp6, false).value_or(bpfnet_ip{});
}

RelayAddresses relay_addresses(const std::vector<ServiceSpec> &specs) {
    return RelayAddresses{.dhcp_service_ip_be = dhcp_service_ip(specs), .dhcp6_service_ip = dhcp6_service_ip(specs)};
}

bpfnet_iface iface_entry(const NodeSettings &node, int nic_ifindex, const MacAddress &nic_mac,
                         const RelayAddresses &relay) {
    bpfnet_iface entry{};
    entry.nic_ifindex = static_cast<__u32>(nic_ifindex);
    std::copy(nic_mac.begin(), nic_mac.end(), entry.nic_mac);
    // A family without a subnet (an IPv6-only LAN, an IPv4-only one): no prefix, so the datapath never takes
    // a packet or neighbour message of that family as its business.
    entry.subnet = node.prefix_len != 0 ? prefix_of(ip_from_v4(node.subnet_be), 96 + node.prefix_len) : bpfnet_prefix{};
    entry.subnet6 = node.prefix6_len != 0 ? prefix_of(node.subnet6, node.prefix6_len) : bpfnet_prefix{};
    entry.dhcp_max_hops = node.dhcp_max_hops;
    // Broadcast DHCP has no service IP in it: it is relayed for the service IP that lists the DHCP port.
    entry.dhcp_service_ip = relay.dhcp_service_ip_be != 0 ? ip_from_v4(relay.dhcp_service_ip_be) : bpfnet_ip{};
    // DHCPv6 to ff02::1:2 has none either: relayed for the IPv6 service address that lists the dhcpv6 port.
    entry.dhcp6_service_ip = relay.dhcp6_service_ip;
    entry.nic_link_local = relay.nic_link_local;
    entry.heartbeat_timeout_ns =
        static_cast<__u64>(std::chrono::duration_cast<std::chrono::nanoseconds>(node.heartbeat_timeout).count());
    return entry;
}

void mark_service_ips(bpfnet_iface &iface, const DesiredState &desired) {
    for (const auto &service_ip : desired.service_ips)
        mark_service_ip(iface, service_ip.first);
    for (const bpfnet_ip &shared : desired.shared_addresses)
        mark_service_ip(iface, shared);
    iface.shared_addresses = static_cast<__u8>(desired.shared_addresses.size());
}

ReconcileReport reconcile(DatapathMaps &maps, const DesiredState &desired) {
    auto service_ips = diff_table(maps.service_ips.entries(), desired.service_ips);
    auto services = diff_table(maps.services.entries(), desired.services);
    auto backend_ports = diff_table(maps.backend_ports.entries(), desired.backend_ports);
    auto current_backends = maps.backends.entries();
    auto backends = diff_table(current_backends, desired.backends);
    auto source_ranges = diff_table(maps.source_ranges.entries(), desired.source_ranges);

    ReconcileReport report;
    for (const auto &[ip, entry] : service_ips.upserts) {
        auto before = maps.service_ips.lookup(ip);
        bool was_active = before && (before->flags & BPFNET_SERVICE_IP_ACTIVE);
        if ((entry.flags & BPFNET_SERVICE_IP_ACTIVE) && !was_active)
            report.activated.push_back(ip);
        if (!(entry.flags & BPFNET_SERVICE_IP_ACTIVE) && was_active)
            report.deactivated.push_back(ip);
    }
    for (const bpfnet_ip &ip : service_ips.removals) {
        auto before = maps.service_ips.lookup(ip);
        if (before && (before->flags & BPFNET_SERVICE_IP_ACTIVE))
            report.deactivated.push_back(ip);
    }
    for (const auto &[ip, entry] : current_backends) {
        auto it = desired.backends.find(ip);
        if (it == desired.backends.end() || it->second.ifindex != entry.ifindex)
            report.departed.push_back(entry);
    }

    add_source_ranges_first(maps, source_ranges, report);
    report.upserts += apply_upserts(maps.backends, backends);
    report.upserts += apply_upserts(maps.backend_ports, backend_ports);
    report.upserts += apply_upserts(maps.services, services);
    report.upserts += apply_upserts(maps.service_ips, service_ips);
    forget_hosts_at_service_ips(maps, desired);
    report.removals += apply_removals(maps.service_ips, service_ips);
    report.removals += apply_removals(maps.services, services);
    report.removals += apply_removals(maps.backend_ports, backend_ports);
    report.removals += apply_removals(maps.backends, backends);
    remove_source_ranges_last(maps, source_ranges, report);
    return report;
}

} // namespace bpfnet
