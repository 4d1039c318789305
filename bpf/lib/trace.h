/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Decisions and their trace. Every steering decision is counted through decide(); while `bpfnetctl trace`
 * has switched tracing on (trace_control), the decision and the packet it was made for are also sent to
 * user space through the trace ring buffer, one record per packet.
 *
 * The record is assembled in a per-CPU scratch entry while the program runs (a program runs to the end on
 * one CPU) and sent when it returns. With tracing off, a program pays one array lookup (the switch) and one
 * per-CPU lookup (the record's end) per packet that is ours, and nothing for traffic that is not: the calls
 * in between read a global copy of the switch first.
 */
#ifndef BPFNET_TRACE_H
#define BPFNET_TRACE_H

#include "parse.h"
#include "addr.h"
#include "maps.h"
#include "counters.h"

struct trace_scratch {
	struct bpfnet_trace rec;
	__u32 active;
	__u32 l4_off; /* for the DHCP and TFTP details, read when the record is sent */
	__u32 l4_end;
	__u8 kind; /* enum bpfnet_port_kind of the listed port the packet was for */
	__u8 pad[3];
};

BPFNET_SCRATCH_MAP(trace_scratch, struct trace_scratch);

/*
 * trace_control's switch as the last packet that began a record saw it, on any CPU: a global, read in one
 * instruction where the record's per-CPU entry takes a lookup. Written only when it changes, so the CPUs'
 * packets do not take its cache line from each other. Around the moment the switch changes, CPUs may
 * write it in either order for a packet: a record in progress on one CPU can then be lost (not sent) or
 * sent with the fields of the calls that read it off left empty; the next packet that begins a record
 * writes the switch as it is. No record outlives its packet (trace_finish), so none is sent twice or late.
 */
__u32 trace_switch_seen = 0;

static __always_inline struct trace_scratch *tracing(void)
{
	if (!trace_switch_seen)
		return NULL;
	struct trace_scratch *s = scratch_entry(&trace_scratch);

	return s && s->active ? s : NULL;
}

/* Starts a record for a packet that is ours (called before any decide() for it). */
static __always_inline void trace_begin(enum bpfnet_hook hook)
{
	__u32 key = 0;
	struct bpfnet_trace_control *control = bpf_map_lookup_elem(&trace_control, &key);
	__u32 on = control && control->enabled;

	if (on != trace_switch_seen)
		trace_switch_seen = on;
	if (!on)
		return;
	struct trace_scratch *s = scratch_entry(&trace_scratch);
	if (!s)
		return;
	s->active = 1;
	__builtin_memset(&s->rec, 0, sizeof(s->rec));
	s->rec.hook = hook;
	s->rec.decision = BPFNET_CTR_MAX;
	s->l4_off = 0;
	s->l4_end = 0;
	s->kind = 0;
}

/* Counts a decision (a path taken or a drop reason) and records it for the trace. */
static __always_inline void decide(enum bpfnet_counter decision)
{
	count(decision);
	struct trace_scratch *s = tracing();
	if (s)
		s->rec.decision = decision;
}

static __always_inline void trace_addresses(const struct bpfnet_ip *saddr, const struct bpfnet_ip *daddr,
					    __u8 proto, const __u8 *mac)
{
	struct trace_scratch *s = tracing();

	if (!s)
		return;
	s->rec.saddr = *saddr;
	s->rec.daddr = *daddr;
	s->rec.proto = proto;
	mac_copy(s->rec.mac, mac);
}

static __always_inline void trace_ports(const struct ip_packet *pkt)
{
	struct trace_scratch *s = tracing();

	if (!s)
		return;
	s->rec.sport_be = pkt->sport;
	s->rec.dport_be = pkt->dport;
	s->l4_off = pkt->l4_off;
	s->l4_end = pkt->l4_end;
}

/* Where the packet was steered to: the backend on the way in, the service IP or client on the way out. */
static __always_inline void trace_steered(const struct bpfnet_ip *to_addr, __be16 to_port, __u8 kind)
{
	struct trace_scratch *s = tracing();

	if (!s)
		return;
	s->rec.to_addr = *to_addr;
	s->rec.to_port_be = to_port;
	s->kind = kind;
}

/*
 * The record of the packet that ends now, closed so that it is sent at most once: a later packet that
 * begins no record (ARP that is not for us, a pass) never sends this one again. Closed whatever the switch
 * reads now, so that no record outlives its packet while tracing is off.
 */
static __always_inline struct trace_scratch *trace_finish(void)
{
	struct trace_scratch *s = scratch_entry(&trace_scratch);

	if (!s || !s->active)
		return NULL;
	s->active = 0;
	return trace_switch_seen ? s : NULL;
}

/* Sends the record of an XDP decision; pass-through traffic is not a decision and is never traced. */
static __always_inline void trace_end_xdp(void)
{
	struct trace_scratch *s = trace_finish();

	if (!s || s->rec.decision >= BPFNET_CTR_MAX || s->rec.decision == BPFNET_CTR_PASS)
		return;
	s->rec.time_ns = bpf_ktime_get_ns();
	if (bpf_ringbuf_output(&trace, &s->rec, sizeof(s->rec), 0))
		count(BPFNET_CTR_EVENT_LOST);
}

#endif /* BPFNET_TRACE_H */
