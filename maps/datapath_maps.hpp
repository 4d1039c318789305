// Every map of one interface's datapath, typed. The loader builds it from the fds of the object it loaded;
// bpfnetctl and tests open it from the pin directory.
#pragma once

#include "bpfnet_maps.h"
#include "layout.hpp"
#include "pinned_map.hpp"

#include <string>

namespace bpfnet {

struct DatapathMaps {
    PinnedMap<__u32, bpfnet_iface> iface;
    PinnedMap<__u32, bpfnet_heartbeat> heartbeat;
    PinnedMap<__be32, bpfnet_service_ip> service_ips;
    PinnedMap<bpfnet_service_key, bpfnet_service> services;
    PinnedMap<bpfnet_backend_port_key, bpfnet_backend_port> backend_ports;
    PinnedMap<__be32, bpfnet_backend> backends;
    PinnedMap<bpfnet_flow_key, bpfnet_flow> flows;
    PinnedMap<bpfnet_flow_key, bpfnet_flow> flows_unconfirmed;
    PinnedMap<__be32, bpfnet_neighbour> neighbours;
    PinnedMap<__be32, bpfnet_dhcp_server> dhcp_servers;
    PinnedMap<__be32, bpfnet_dhcp_relay> dhcp_relays;
    PinnedMap<__be32, bpfnet_conflict> conflicts;
    PinnedMap<__u32, bpfnet_trace_control> trace_control;
    CounterMap counters;

    static DatapathMaps open_pinned(const std::string &pin_dir) {
        return DatapathMaps{
            .iface = decltype(iface)::open(pin_dir, BPFNET_MAP_IFACE),
            .heartbeat = decltype(heartbeat)::open(pin_dir, BPFNET_MAP_HEARTBEAT),
            .service_ips = decltype(service_ips)::open(pin_dir, BPFNET_MAP_SERVICE_IPS),
            .services = decltype(services)::open(pin_dir, BPFNET_MAP_SERVICES),
            .backend_ports = decltype(backend_ports)::open(pin_dir, BPFNET_MAP_BACKEND_PORTS),
            .backends = decltype(backends)::open(pin_dir, BPFNET_MAP_BACKENDS),
            .flows = decltype(flows)::open(pin_dir, BPFNET_MAP_FLOWS),
            .flows_unconfirmed = decltype(flows_unconfirmed)::open(pin_dir, BPFNET_MAP_FLOWS_UNCONFIRMED),
            .neighbours = decltype(neighbours)::open(pin_dir, BPFNET_MAP_NEIGHBOURS),
            .dhcp_servers = decltype(dhcp_servers)::open(pin_dir, BPFNET_MAP_DHCP_SERVERS),
            .dhcp_relays = decltype(dhcp_relays)::open(pin_dir, BPFNET_MAP_DHCP_RELAYS),
            .conflicts = decltype(conflicts)::open(pin_dir, BPFNET_MAP_CONFLICTS),
            .trace_control = decltype(trace_control)::open(pin_dir, BPFNET_MAP_TRACE_CONTROL),
            .counters = CounterMap::open(pin_dir),
        };
    }

    // From a loaded bpf_object (the loader's own, or a test's): the fds are duplicated, so the maps stay
    // usable after the object is closed.
    static DatapathMaps from_object(const bpf_object *obj) {
        auto fd_of = [obj](const char *name) {
            const bpf_map *map = bpf_object__find_map_by_name(obj, name);
            if (!map || bpf_map__fd(map) < 0)
                throw SystemError(std::string("bpf_object__find_map_by_name ") + name, ENOENT);
            return dup_fd(bpf_map__fd(map), name);
        };
        return DatapathMaps{
            .iface = {fd_of(BPFNET_MAP_IFACE), BPFNET_MAP_IFACE},
            .heartbeat = {fd_of(BPFNET_MAP_HEARTBEAT), BPFNET_MAP_HEARTBEAT},
            .service_ips = {fd_of(BPFNET_MAP_SERVICE_IPS), BPFNET_MAP_SERVICE_IPS},
            .services = {fd_of(BPFNET_MAP_SERVICES), BPFNET_MAP_SERVICES},
            .backend_ports = {fd_of(BPFNET_MAP_BACKEND_PORTS), BPFNET_MAP_BACKEND_PORTS},
            .backends = {fd_of(BPFNET_MAP_BACKENDS), BPFNET_MAP_BACKENDS},
            .flows = {fd_of(BPFNET_MAP_FLOWS), BPFNET_MAP_FLOWS},
            .flows_unconfirmed = {fd_of(BPFNET_MAP_FLOWS_UNCONFIRMED), BPFNET_MAP_FLOWS_UNCONFIRMED},
            .neighbours = {fd_of(BPFNET_MAP_NEIGHBOURS), BPFNET_MAP_NEIGHBOURS},
            .dhcp_servers = {fd_of(BPFNET_MAP_DHCP_SERVERS), BPFNET_MAP_DHCP_SERVERS},
            .dhcp_relays = {fd_of(BPFNET_MAP_DHCP_RELAYS), BPFNET_MAP_DHCP_RELAYS},
            .conflicts = {fd_of(BPFNET_MAP_CONFLICTS), BPFNET_MAP_CONFLICTS},
            .trace_control = {fd_of(BPFNET_MAP_TRACE_CONTROL), BPFNET_MAP_TRACE_CONTROL},
            .counters = {fd_of(BPFNET_MAP_COUNTERS), BPFNET_MAP_COUNTERS},
        };
    }
};

} // namespace bpfnet
