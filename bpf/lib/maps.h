/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The map definitions; their key and value types come from the layout shared with C++. */
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
	__type(key, __be32);
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
	__type(key, __be32);
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
	__uint(max_entries, BPFNET_MAX_NEIGHBOURS);
	__type(key, __be32);
	__type(value, struct bpfnet_neighbour);
} neighbours SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BPFNET_MAX_DHCP_SERVERS);
	__type(key, __be32);
	__type(value, struct bpfnet_dhcp_server);
} dhcp_servers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPFNET_MAX_SERVICE_IPS);
	__type(key, __be32);
	__type(value, struct bpfnet_conflict);
} conflicts SEC(".maps");

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

static __always_inline void count(enum bpfnet_counter ctr)
{
	__u32 key = ctr;
	__u64 *value = bpf_map_lookup_elem(&counters, &key);

	if (value)
		*value += 1; /* per-CPU slot: no other writer */
}

static __always_inline struct bpfnet_iface *iface_config(void)
{
	__u32 key = 0;

	return bpf_map_lookup_elem(&iface, &key);
}

static __always_inline int in_provisioning_subnet(const struct bpfnet_iface *cfg, __be32 ip)
{
	return (ip & cfg->subnet_mask_be) == cfg->subnet_be;
}

/* The liveness gate: a loader that stopped heartbeating must not keep claiming the service IP. */
static __always_inline int loader_alive(const struct bpfnet_iface *cfg)
{
	__u32 key = 0;
	struct bpfnet_heartbeat *hb = bpf_map_lookup_elem(&heartbeat, &key);

	if (!hb || hb->monotonic_ns == 0)
		return 0;
	return bpf_ktime_get_ns() - hb->monotonic_ns <= cfg->heartbeat_timeout_ns;
}

/* Learns where a LAN host is, writing only when the entry is new or changed. */
static __always_inline void learn_neighbour(const struct bpfnet_iface *cfg, __be32 ip, const __u8 *mac)
{
	if (ip == 0 || !in_provisioning_subnet(cfg, ip))
		return;
	struct bpfnet_neighbour *known = bpf_map_lookup_elem(&neighbours, &ip);
	if (known && mac_equal(known->mac, mac))
		return;

	struct bpfnet_neighbour entry = {};
	mac_copy(entry.mac, mac);
	bpf_map_update_elem(&neighbours, &ip, &entry, BPF_ANY);
	count(BPFNET_CTR_NEIGHBOUR_LEARNED);
}

static __always_inline void report_neighbour_miss(__be32 ip, __be32 service_ip)
{
	struct bpfnet_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);

	if (!ev) {
		count(BPFNET_CTR_EVENT_LOST);
		return;
	}
	ev->type = BPFNET_EVENT_NEIGHBOUR_MISS;
	ev->ip_be = ip;
	ev->service_ip_be = service_ip;
	for (int i = 0; i < 6; i++)
		ev->mac[i] = 0;
	ev->pad[0] = ev->pad[1] = 0;
	bpf_ringbuf_submit(ev, 0);
}

/* Another MAC claims a service IP: remembered per IP, counted, and reported to the loader. */
static __always_inline void report_conflict(__be32 service_ip, const __u8 *mac)
{
	struct bpfnet_conflict seen = {.last_seen_ns = bpf_ktime_get_ns()};

	mac_copy(seen.mac, mac);
	bpf_map_update_elem(&conflicts, &service_ip, &seen, BPF_ANY);
	count(BPFNET_CTR_ARP_CONFLICT);

	struct bpfnet_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count(BPFNET_CTR_EVENT_LOST);
		return;
	}
	ev->type = BPFNET_EVENT_CONFLICT;
	ev->ip_be = service_ip;
	ev->service_ip_be = service_ip;
	mac_copy(ev->mac, mac);
	ev->pad[0] = ev->pad[1] = 0;
	bpf_ringbuf_submit(ev, 0);
}

#endif /* BPFNET_BPF_MAPS_H */
