/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The map definitions; their key and value types come from the layout shared with C++. */
#ifndef BPFNET_BPF_MAPS_H
#define BPFNET_BPF_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpfnet_maps.h"
#include "addr.h"

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

/*
 * The liveness gate: a loader that stopped heartbeating must not keep claiming the service IP. A heartbeat
 * in the future is a stopping loader's grace (an upgrade: see struct bpfnet_heartbeat): open until then,
 * and for the timeout after.
 */
static __always_inline int loader_alive(const struct bpfnet_iface *cfg)
{
	__u32 key = 0;
	struct bpfnet_heartbeat *hb = bpf_map_lookup_elem(&heartbeat, &key);
	__u64 now = bpf_ktime_get_ns();

	if (!hb || hb->monotonic_ns == 0)
		return 0;
	if (hb->monotonic_ns > now)
		return 1;
	return now - hb->monotonic_ns <= cfg->heartbeat_timeout_ns;
}

/*
 * Another MAC claims a service IP this node answers for while no loader runs (its grace): nobody is there
 * to weigh the claim, and it may be the node that rightfully took the IP over, so the grace ends here and
 * the gate closes. The next loader decides afresh. A running loader's heartbeat is never in the future.
 */
static __always_inline void end_grace_on_claim(void)
{
	__u32 key = 0;
	struct bpfnet_heartbeat *hb = bpf_map_lookup_elem(&heartbeat, &key);

	if (hb && hb->monotonic_ns > bpf_ktime_get_ns())
		hb->monotonic_ns = 0;
}

/*
 * Whether a frame may teach the datapath that ip is at mac (the trust model in docs/design.md): only a LAN
 * host's own unicast address. Never a broadcast or multicast MAC, a service IP, the subnet's network or
 * broadcast address, or anything off the subnet: the reverse path would send the pod's packets there.
 */
static __always_inline int neighbour_acceptable(const struct bpfnet_iface *cfg, __be32 ip, const __u8 *mac)
{
	__u32 host_mask = bpf_ntohl(~cfg->subnet_mask_be);
	__u32 host_part = bpf_ntohl(ip) & host_mask;

	/* A /31 or /32 has no network or broadcast address (RFC 3021). */
	if (host_mask >= 3 && (host_part == 0 || host_part == host_mask))
		return 0;
	if (mac[0] & 1) /* the group bit: broadcast and multicast */
		return 0;
	if (!(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
		return 0;
	struct bpfnet_ip key = ip_v4(ip);
	return !bpf_map_lookup_elem(&service_ips, &key);
}

/*
 * Reports that are not neighbour misses (conflicts, checks of learned neighbours) may fill only half of
 * the events ring. The other half stays free for neighbour misses, which the pod's traffic waits on: a
 * flood of forged frames (any host can send them) costs reports, never a host's connection.
 */
#define EVENTS_LOW_PRIORITY_BYTES (BPFNET_EVENTS_BYTES / 2)

static __always_inline int events_room_for_low_priority(void)
{
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) < EVENTS_LOW_PRIORITY_BYTES)
		return 1;
	count(BPFNET_CTR_EVENT_LOST);
	return 0;
}

static __always_inline void report_event(__u32 type, const struct bpfnet_ip *ip,
					 const struct bpfnet_ip *service_ip, const __u8 *mac)
{
	struct bpfnet_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);

	if (!ev) {
		count(BPFNET_CTR_EVENT_LOST);
		return;
	}
	ev->type = type;
	ev->ip = *ip;
	ev->service_ip = *service_ip;
	for (int i = 0; i < 6; i++)
		ev->mac[i] = mac ? mac[i] : 0;
	ev->pad[0] = ev->pad[1] = 0;
	bpf_ringbuf_submit(ev, 0);
}

/* How a frame may change the neighbour table. */
enum neighbour_source {
	NEIGHBOUR_FROM_ARP, /* ARP or NDP: adds or changes an entry, as the kernel's neighbour code does */
	NEIGHBOUR_FROM_ACCEPTED, /* a packet the datapath accepted: adds an entry, never changes one */
};

/*
 * Learns where a LAN host is (key: its address, acceptable for its family), writing only when the entry is
 * new or (from ARP or NDP) changed. Callers pass only frames the datapath keeps: a dropped frame changes no
 * state. A host added from a packet (for service_ip) is checked by the loader with an ARP request (NDP
 * solicitation), whose answer, like any ARP, may correct it: a packet in a new host's name holds its entry
 * only until the host answers.
 */
static __always_inline void learn_neighbour_at(const struct bpfnet_ip *key, const __u8 *mac,
					       enum neighbour_source source,
					       const struct bpfnet_ip *service_ip)
{
	struct bpfnet_neighbour *known = bpf_map_lookup_elem(&neighbours, key);
	if (known && mac_equal(known->mac, mac))
		return;
	if (known && source != NEIGHBOUR_FROM_ARP) {
		/* Anyone can put another host's address on a packet; only ARP moves a host. */
		count(BPFNET_CTR_NEIGHBOUR_KEPT);
		return;
	}

	struct bpfnet_neighbour entry = {};
	mac_copy(entry.mac, mac);
	bpf_map_update_elem(&neighbours, key, &entry, BPF_ANY);
	count(BPFNET_CTR_NEIGHBOUR_LEARNED);
	if (source == NEIGHBOUR_FROM_ACCEPTED && events_room_for_low_priority())
		report_event(BPFNET_EVENT_NEIGHBOUR_VERIFY, key, service_ip, mac);
}

/* learn_neighbour_at() for an IPv4 host. */
static __always_inline void learn_neighbour(const struct bpfnet_iface *cfg, __be32 ip, const __u8 *mac,
					    enum neighbour_source source, __be32 service_ip)
{
	if (ip == 0 || !in_provisioning_subnet(cfg, ip))
		return; /* ARP probes (sender 0.0.0.0) and other subnets: nothing to learn */
	if (!neighbour_acceptable(cfg, ip, mac)) {
		count(BPFNET_CTR_NEIGHBOUR_REFUSED);
		return;
	}
	struct bpfnet_ip key = ip_v4(ip);
	struct bpfnet_ip service = ip_v4(service_ip);
	learn_neighbour_at(&key, mac, source, &service);
}

static __always_inline void report_neighbour_miss(const struct bpfnet_ip *ip,
						  const struct bpfnet_ip *service_ip)
{
	report_event(BPFNET_EVENT_NEIGHBOUR_MISS, ip, service_ip, NULL);
}

/*
 * Another MAC claims a service IP: remembered per IP (always the latest), counted, and reported to the
 * loader once per IP and MAC per second (2^30 ns); the loader logs and records an Event at most every
 * 10 s anyway.
 */
static __always_inline void report_conflict(const struct bpfnet_ip *service_ip, const __u8 *mac)
{
	__u64 now = bpf_ktime_get_ns();
	struct bpfnet_conflict *known = bpf_map_lookup_elem(&conflicts, service_ip);
	int report = !known || !mac_equal(known->mac, mac) || (known->last_seen_ns >> 30) != (now >> 30);
	struct bpfnet_conflict seen = {.last_seen_ns = now};

	mac_copy(seen.mac, mac);
	count(BPFNET_CTR_ARP_CONFLICT);
	end_grace_on_claim();
	/* A report the ring had no room for leaves the record as it was, so the next claim is reported: the
	 * loader may have to yield to it. */
	if (report && !events_room_for_low_priority())
		return;
	bpf_map_update_elem(&conflicts, service_ip, &seen, BPF_ANY);
	if (report)
		report_event(BPFNET_EVENT_CONFLICT, service_ip, service_ip, mac);
}

#endif /* BPFNET_BPF_MAPS_H */
