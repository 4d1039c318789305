/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The liveness gate and the grace: whether the loader's heartbeat still lets this node claim its service
 * IPs (answer ARP and NDP, relay broadcast DHCP), and when a stopping loader's grace ends early.
 */
#ifndef BPFNET_LIVENESS_H
#define BPFNET_LIVENESS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "maps.h"

/*
 * The liveness gate: a loader that stopped heartbeating must not keep claiming the service IP. A heartbeat
 * in the future is a stopping loader's grace (an upgrade: see struct bpfnet_heartbeat): open until then,
 * and for the timeout after. Read on CLOCK_MONOTONIC's coarse clock, the heartbeat's clock as of the last
 * tick: the gate closes up to a tick (1-10 ms) after the timeout, of at least twice the heartbeat's
 * interval, and the packets that ask (ARP, NDP and DHCP requests) skip a read of the fine clock (a tenth of
 * the cost of answering a who-has, measured in docs/design.md). A fresh heartbeat may be ahead of the
 * coarse clock: open, as it should be.
 */
static __always_inline int loader_alive(const struct bpfnet_iface *cfg)
{
	__u32 key = 0;
	struct bpfnet_heartbeat *hb = bpf_map_lookup_elem(&heartbeat, &key);
	__u64 now = bpf_ktime_get_coarse_ns();

	if (!hb || hb->monotonic_ns == 0)
		return 0;
	if (hb->monotonic_ns > now)
		return 1;
	return now - hb->monotonic_ns <= cfg->heartbeat_timeout_ns;
}

/*
 * Another MAC claims a service IP this node answers for while no loader runs (its grace): nobody is there
 * to weigh the claim, and it may be the node that rightfully took the IP over, so the grace ends here and
 * the gate closes. The next loader decides afresh. A running loader's heartbeat is never in the future of
 * the fine clock (of the coarse one it may be: so not that one here).
 */
static __always_inline void end_grace_on_claim(void)
{
	__u32 key = 0;
	struct bpfnet_heartbeat *hb = bpf_map_lookup_elem(&heartbeat, &key);

	if (hb && hb->monotonic_ns > bpf_ktime_get_ns())
		hb->monotonic_ns = 0;
}

#endif /* BPFNET_LIVENESS_H */
