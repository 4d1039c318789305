// The C++ side's view of the shared map layout: sizes pinned with static_assert (a change on one side that
// the other does not share fails the build), and the names of the counters as bpfnetctl and metrics show
// them.
#pragma once

#include "bpfnet_maps.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <compare>
#include <cstddef>
#include <cstring>
#include <string_view>

// Addresses as the maps hold them: IPv4 as its IPv4-mapped IPv6 address (struct bpfnet_ip). Ordered by their
// bytes (address order within a family), so an IPv4 address never equals an IPv6 one. In the global
// namespace, beside the type, so every lookup finds them.
inline bool operator==(const bpfnet_ip &a, const bpfnet_ip &b) {
    return std::memcmp(&a, &b, sizeof(a)) == 0;
}
inline std::strong_ordering operator<=>(const bpfnet_ip &a, const bpfnet_ip &b) {
    return std::memcmp(&a, &b, sizeof(a)) <=> 0;
}

namespace bpfnet {

// The map form of an IPv4 address in network byte order (its IPv4-mapped IPv6 address).
inline bpfnet_ip ip_from_v4(__be32 v4) {
    return bpfnet_ip{{0, 0, htonl(0xffff), v4}};
}
inline bool is_v4(const bpfnet_ip &ip) {
    return ip.w[0] == 0 && ip.w[1] == 0 && ip.w[2] == htonl(0xffff);
}
// The IPv4 address (network byte order) of a mapped one; 0 for an IPv6 address.
inline __be32 v4_of(const bpfnet_ip &ip) {
    return is_v4(ip) ? ip.w[3] : 0;
}

// The map form of a prefix (struct bpfnet_prefix): addr's first len bits of the 16-byte form (an IPv4 /24 of a
// mapped address is 96 + 24 bits). No prefix is bpfnet_prefix{} (len 0).
inline bpfnet_prefix prefix_of(const bpfnet_ip &addr, unsigned len) {
    bpfnet_prefix prefix{};
    for (unsigned i = 0; i < 4; i++) {
        const unsigned from = 32 * i;
        const unsigned bits = len <= from ? 0 : std::min(32u, len - from);
        prefix.mask.w[i] = bits == 0 ? 0 : htonl(0xffffffffu << (32 - bits));
        prefix.net.w[i] = addr.w[i] & prefix.mask.w[i];
    }
    prefix.len = len;
    return prefix;
}

// Marks service_ip in the iface entry's set of service IPs' last bytes (bpfnet_iface.service_ip_marks).
inline void mark_service_ip(bpfnet_iface &iface, const bpfnet_ip &service_ip) {
    const auto last = reinterpret_cast<const __u8 *>(&service_ip)[sizeof(service_ip) - 1];
    iface.service_ip_marks[last / 8] |= static_cast<__u8>(1u << (last % 8));
}

// A backends entry's pod link, as its listed ports' services entries carry it.
inline bpfnet_pod_link pod_link_of(const bpfnet_backend &backend) {
    bpfnet_pod_link link{};
    link.ifindex = backend.ifindex;
    std::copy(std::begin(backend.pod_mac), std::end(backend.pod_mac), link.pod_mac);
    std::copy(std::begin(backend.veth_mac), std::end(backend.veth_mac), link.veth_mac);
    link.mtu = backend.mtu;
    link.flags = static_cast<__u8>(backend.flags);
    return link;
}

static_assert(sizeof(bpfnet_prefix) == 36);
static_assert(sizeof(bpfnet_iface) == 176);
static_assert(offsetof(bpfnet_iface, service_ip_marks) == 144);
static_assert(sizeof(bpfnet_ip) == 16);
static_assert(sizeof(bpfnet_heartbeat) == 8);
static_assert(sizeof(bpfnet_service_ip) == 4);
static_assert(sizeof(bpfnet_service_key) == 20);
static_assert(sizeof(bpfnet_pod_link) == 20);
static_assert(sizeof(bpfnet_service) == 56);
static_assert(offsetof(bpfnet_service, link) == 20);
static_assert(sizeof(bpfnet_backend_port_key) == 20);
static_assert(sizeof(bpfnet_backend_port) == 20);
static_assert(sizeof(bpfnet_backend) == 40);
static_assert(sizeof(bpfnet_flow_key) == 40);
static_assert(sizeof(bpfnet_flow) == 20);
static_assert(sizeof(bpfnet_flow_ports) == BPFNET_PORTS);
static_assert(sizeof(bpfnet_neighbour) == 8);
static_assert(sizeof(bpfnet_event) == 44);
static_assert(sizeof(bpfnet_conflict) == 16);
static_assert(sizeof(bpfnet_source_range_key) == 36);
static_assert(sizeof(bpfnet_source_range) == 4);
static_assert(sizeof(bpfnet_trace_control) == 8);
static_assert(sizeof(bpfnet_trace) == 144);
static_assert(sizeof(bpfnet_dhcp_server) == 8);
static_assert(sizeof(bpfnet_dhcp_relay) == 4);
static_assert(offsetof(bpfnet_iface, heartbeat_timeout_ns) == 16);
static_assert(offsetof(bpfnet_iface, subnet) == 24);
static_assert(offsetof(bpfnet_iface, dhcp_service_ip) == 96);

// What a counter counts (BPFNET_COUNTERS in bpfnet_maps.h): a path a packet took, why one was dropped, or
// an event along a path.
enum class CounterKind { Path, Drop, Event };

struct CounterInfo {
    std::string_view name; // as bpfnetctl and the metrics show it
    CounterKind kind;
    std::string_view help;
};

// Indexed by enum bpfnet_counter, derived from the one table in bpfnet_maps.h.
inline constexpr std::array<CounterInfo, BPFNET_CTR_MAX> counter_table = {{
#define BPFNET_COUNTER_INFO(id, name, kind, help) {name, CounterKind::kind##_KIND, help},
#define PATH_KIND Path
#define DROP_KIND Drop
#define EVENT_KIND Event
    BPFNET_COUNTERS(BPFNET_COUNTER_INFO)
#undef BPFNET_COUNTER_INFO
#undef PATH_KIND
#undef DROP_KIND
#undef EVENT_KIND
}};

inline constexpr std::array<std::string_view, BPFNET_CTR_MAX> counter_names = [] {
    std::array<std::string_view, BPFNET_CTR_MAX> names{};
    for (size_t i = 0; i < names.size(); i++)
        names[i] = counter_table[i].name;
    return names;
}();

// The label a counter has among its kind: a drop reason is named without the drop_ prefix.
constexpr std::string_view counter_label(const CounterInfo &counter) {
    constexpr std::string_view prefix = "drop_";
    if (counter.kind == CounterKind::Drop && counter.name.starts_with(prefix))
        return counter.name.substr(prefix.size());
    return counter.name;
}

} // namespace bpfnet
