/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Reports to the loader through the events ring: neighbour misses (a reply waits for the loader to resolve
 * a LAN host), neighbours to verify, and conflicts (another MAC claiming a service IP).
 */
#ifndef BPFNET_EVENTS_H
#define BPFNET_EVENTS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "maps.h"
#include "parse.h"
#include "counters.h"
#include "liveness.h"

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

#endif /* BPFNET_EVENTS_H */
