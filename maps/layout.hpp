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
static_assert(sizeof(bpfnet_trace_control) == 8);
static_assert(sizeof(bpfnet_trace) == 112);
static_assert(sizeof(bpfnet_dhcp_server) == 8);
static_assert(sizeof(bpfnet_dhcp_relay) == 4);
static_assert(offsetof(bpfnet_iface, heartbeat_timeout_ns) == 24);
static_assert(offsetof(bpfnet_iface, dhcp_service_ip_be) == 20);

// Indexed by enum bpfnet_counter; the order must follow the enum.
inline constexpr std::array<std::string_view, BPFNET_CTR_MAX> counter_names = {
    "pass",
    "arp_reply",
    "arp_not_active",
    "arp_stale_heartbeat",
    "arp_conflict",
    "neighbour_learned",
    "neighbour_refused",
    "neighbour_kept",
    "dnat_service",
    "dnat_flow",
    "snat_reply",
    "snat_flow",
    "flow_created",
    "flow_confirmed",
    "neighbour_miss",
    "event_lost",
    "drop_not_allowed",
    "drop_protocol",
    "drop_malformed",
    "drop_fragment",
    "drop_no_backend",
    "drop_backend_protocol",
    "drop_hairpin",
    "dhcp_request_relayed",
    "dhcp_reply_relayed",
    "dhcp_server_id_rewritten",
    "dhcp_server_id_restored",
    "dhcp_options_malformed",
    "dhcp_stale_heartbeat",
    "tftp_blksize_clamped",
    "icmp_error_to_pod",
    "icmp_error_to_lan",
    "drop_dhcp_malformed",
    "drop_dhcp_hops",
    "drop_dhcp_foreign_relay",
    "drop_dhcp_off_subnet",
    "drop_icmp_unmatched",
    "drop_off_subnet",
    "drop_rewrite_failed",
};
static_assert(counter_names.back() == "drop_rewrite_failed" && BPFNET_CTR_DROP_REWRITE_FAILED == BPFNET_CTR_MAX - 1,
              "counter_names must list every enum bpfnet_counter in order");

} // namespace bpfnet
