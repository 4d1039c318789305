// The C++ side's view of the shared map layout: sizes pinned with static_assert (a change on one side that
// the other does not share fails the build), and the names of the counters as bpfnetctl and metrics show
// them.
#pragma once

#include "bpfnet_maps.h"

#include <array>
#include <cstddef>
#include <string_view>

namespace bpfnet {

static_assert(sizeof(bpfnet_iface) == 32);
static_assert(sizeof(bpfnet_heartbeat) == 8);
static_assert(sizeof(bpfnet_service_ip) == 4);
static_assert(sizeof(bpfnet_service_key) == 8);
static_assert(sizeof(bpfnet_service) == 8);
static_assert(sizeof(bpfnet_backend_port_key) == 8);
static_assert(sizeof(bpfnet_backend_port) == 8);
static_assert(sizeof(bpfnet_backend) == 28);
static_assert(sizeof(bpfnet_flow_key) == 16);
static_assert(sizeof(bpfnet_flow) == 8);
static_assert(sizeof(bpfnet_neighbour) == 8);
static_assert(sizeof(bpfnet_event) == 20);
static_assert(sizeof(bpfnet_conflict) == 16);
static_assert(sizeof(bpfnet_source_range_key) == 12);
static_assert(sizeof(bpfnet_source_range) == 4);
static_assert(sizeof(bpfnet_trace_control) == 8);
static_assert(sizeof(bpfnet_trace) == 112);
static_assert(sizeof(bpfnet_dhcp_server) == 8);
static_assert(sizeof(bpfnet_dhcp_relay) == 4);
static_assert(offsetof(bpfnet_iface, heartbeat_timeout_ns) == 24);
static_assert(offsetof(bpfnet_iface, dhcp_service_ip_be) == 20);

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
