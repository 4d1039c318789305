/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The map definitions, and nothing else: their key and value types come from the layout shared with C++;
 * what the programs do with each map lives in the header of its concern (a scratch map's owner declares it
 * with BPFNET_SCRATCH_MAP, below).
 */
#ifndef BPFNET_BPF_MAPS_H
#define BPFNET_BPF_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpfnet_maps.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpfnet_iface);
} iface SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpfnet_heartbeat);
} heartbeat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPFNET_MAX_SERVICE_IPS);
	__type(key, struct bpfnet_ip);
	__type(value, struct bpfnet_service_ip);
} service_ips SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPFNET_MAX_SERVICES);
	__type(key, struct bpfnet_service_key);
	__type(value, struct bpfnet_service);
} services SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPFNET_MAX_SERVICES);
	__type(key, struct bpfnet_backend_port_key);
	__type(value, struct bpfnet_backend_port);
} backend_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPFNET_MAX_BACKENDS);
	__type(key, struct bpfnet_ip);
	__type(value, struct bpfnet_backend);
} backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BPFNET_MAX_FLOWS);
	__type(key, struct bpfnet_flow_key);
	__type(value, struct bpfnet_flow);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BPFNET_MAX_UNCONFIRMED_FLOWS);
	__type(key, struct bpfnet_flow_key);
	__type(value, struct bpfnet_flow);
} flows_unconfirmed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BPFNET_MAX_NEIGHBOURS);
	__type(key, struct bpfnet_ip);
	__type(value, struct bpfnet_flow_share);
} flow_shares SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE); /* the loader marks ports in place: maps/flow_ports.hpp */
	__type(key, __u32);
	__type(value, struct bpfnet_flow_ports);
} flow_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BPFNET_MAX_NEIGHBOURS);
	__type(key, struct bpfnet_ip);
	__type(value, struct bpfnet_neighbour);
} neighbours SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BPFNET_MAX_UNCONFIRMED_NEIGHBOURS);
	__type(key, struct bpfnet_ip);
	__type(value, struct bpfnet_neighbour);
} neighbours_unconfirmed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BPFNET_MAX_DHCP_SERVERS);
	__type(key, __be32);
	__type(value, struct bpfnet_dhcp_server);
} dhcp_servers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPFNET_MAX_DHCP_RELAYS);
	__type(key, struct bpfnet_ip);
	__type(value, struct bpfnet_dhcp_relay);
} dhcp_relays SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPFNET_MAX_SERVICE_IPS);
	__type(key, struct bpfnet_ip);
	__type(value, struct bpfnet_conflict);
} conflicts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, BPFNET_MAX_SOURCE_RANGES);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* LPM tries require it */
	__type(key, struct bpfnet_source_range_key);
	__type(value, struct bpfnet_source_range);
} source_ranges SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpfnet_trace_control);
} trace_control SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BPFNET_TRACE_BYTES);
} trace SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BPFNET_CTR_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BPFNET_EVENTS_BYTES);
} events SEC(".maps");

/*
 * A program's scratch space beyond its 512 stack bytes: a per-CPU array of one entry (a program runs to its
 * end on one CPU), private to the programs (BPFNET_PRIVATE_MAPS). scratch_entry(&name) is its entry.
 */
#define BPFNET_SCRATCH_MAP(name, value_type)                                                                 \
	struct {                                                                                             \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                                     \
		__uint(max_entries, 1);                                                                      \
		__type(key, __u32);                                                                          \
		__type(value, value_type);                                                                   \
	} name SEC(".maps")

static __always_inline void *scratch_entry(void *map)
{
	__u32 key = 0;

	return bpf_map_lookup_elem(map, &key);
}

#endif /* BPFNET_BPF_MAPS_H */
