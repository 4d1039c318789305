/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Checksum helpers shared by the headers that rewrite packets: where a TCP or UDP checksum lies and the
 * flags the kernel's updates of it take, the fold of a bpf_csum_diff sum, and a store of a few UDP payload
 * bytes that keeps the checksum right.
 */
#ifndef BPFNET_CSUM_H
#define BPFNET_CSUM_H

#include <stddef.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "parse.h"

/* Where the TCP or UDP checksum lies in the frame. */
static __always_inline __u32 l4_csum_off(const struct ip_packet *pkt)
{
	return pkt->l4_off +
	       (pkt->proto == IPPROTO_TCP ? offsetof(struct tcphdr, check) : offsetof(struct udphdr, check));
}

/*
 * The flags every L4 checksum update takes: BPF_F_MARK_MANGLED_0 keeps a UDP checksum of 0 ("none", RFC 768)
 * at 0 and turns a computed 0 into 0xffff (0 is "none" on the wire, and invalid over IPv6).
 */
static __always_inline __u64 l4_csum_flags(const struct ip_packet *pkt)
{
	return pkt->proto == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0;
}

/* A bpf_csum_diff sum as the 16-bit checksum field takes it: folded and complemented. */
static __always_inline __u16 csum_fold(__s64 sum)
{
	__u32 folded = (__u32)sum;

	folded = (folded & 0xffff) + (folded >> 16);
	folded = (folded & 0xffff) + (folded >> 16);
	return (__u16)~folded;
}

/*
 * Where a field of len bytes (1, 2 or 4) at off of a UDP datagram lies in the checksum's 16-bit words,
 * counted from the start of the UDP header: a value at an odd position straddles two words, so the words
 * around it are replaced whole (a window of at most 6 bytes from start).
 */
struct udp_window {
	__u32 lead; /* 1 when the field starts at an odd position */
	__u32 start;
	__u32 span;
};

static __always_inline struct udp_window udp_window_of(const struct ip_packet *pkt, __u32 off, __u32 len)
{
	struct udp_window win = {.lead = (off - pkt->l4_off) & 1};

	win.start = off - win.lead;
	win.span = win.lead + len + ((win.lead + len) & 1);
	return win;
}

/*
 * Writes the field (bytes, len) over the window's old bytes and adds the change to the checksum to *diff, for
 * one update of the checksum over several such fields (udp_csum_apply, or the payload difference a readdress
 * takes).
 */
static __always_inline int udp_store_window(struct __sk_buff *skb, const struct udp_window *win,
					    const __u8 *old, const __u8 *bytes, __u32 len, __u32 *diff)
{
	__u8 new[6] = {};

	for (__u32 i = 0; i < sizeof(new); i++)
		new[i] = old[i];
	/* Constant stack offsets in both branches: the verifier refuses pointer arithmetic on the stack. */
	for (__u32 j = 0; j < 4; j++) {
		if (j >= len)
			break;
		if (win->lead)
			new[j + 1] = bytes[j];
		else
			new[j] = bytes[j];
	}
	for (__u32 i = 0; i + 1 < sizeof(new); i += 2) {
		if (i >= win->span)
			break;
		__u16 from = (__u16)(old[i] | old[i + 1] << 8); /* the word as it lies in memory */
		__u16 to = (__u16)(new[i] | new[i + 1] << 8);
		if (from != to)
			*diff += (__u16)~from + (__u32)to;
	}
	return bpf_skb_store_bytes(skb, win->start, new, win->span, 0);
}

/*
 * Writes 1, 2 or 4 bytes at off of a UDP datagram and adds the change they make to its checksum to *diff
 * (udp_store_window), the window's old bytes read from the packet.
 */
static __always_inline int udp_store_diff(struct __sk_buff *skb, const struct ip_packet *pkt, __u32 off,
					  const __u8 *bytes, __u32 len, __u32 *diff)
{
	struct udp_window win = udp_window_of(pkt, off, len);
	__u8 old[6] = {};

	if (win.span > sizeof(old) || win.start + win.span > pkt->l4_end)
		return -1;
	if (bpf_skb_load_bytes(skb, win.start, old, win.span))
		return -1;
	return udp_store_window(skb, &win, old, bytes, len, diff);
}

/*
 * Applies the change summed by udp_store_diff() to the UDP checksum, in one call of the kernel's helper
 * (payload: not applied to a CHECKSUM_PARTIAL skb's field, which holds the pseudo-header's sum). A UDP
 * checksum of 0 ("none") stays 0.
 */
static __always_inline int udp_csum_apply(struct __sk_buff *skb, const struct ip_packet *pkt, __u32 diff)
{
	if (!diff)
		return 0;
	return bpf_l4_csum_replace(skb, l4_csum_off(pkt), 0, diff, BPF_F_MARK_MANGLED_0) ? -1 : 0;
}

/* Writes 1, 2 or 4 bytes at off of a UDP datagram and updates its checksum for them. */
static __always_inline int udp_store_csum(struct __sk_buff *skb, const struct ip_packet *pkt, __u32 off,
					  const __u8 *bytes, __u32 len)
{
	__u32 diff = 0;

	if (udp_store_diff(skb, pkt, off, bytes, len, &diff))
		return -1;
	return udp_csum_apply(skb, pkt, diff);
}

#endif /* BPFNET_CSUM_H */
