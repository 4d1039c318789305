/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Checksums for the headers that rewrite packets: the ones'-complement arithmetic of a change (RFC 1624),
 * the skb's checksum state and the TCP/UDP checksum field computed from it, where a TCP or UDP checksum lies
 * and the flags the kernel's updates of it take, the fold of a bpf_csum_diff sum, and a store of a few UDP
 * payload bytes that keeps the checksum right.
 */
#ifndef BPFNET_CSUM_H
#define BPFNET_CSUM_H

#include <stddef.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "parse.h"
#include "addr.h"

/*
 * Checksum arithmetic (RFC 1624 eqn. 3) for fields the programs change: the difference a word's change
 * makes to a ones'-complement sum, and a checksum field after such differences. Words are summed as they
 * lie in memory: the ones'-complement sum does not depend on the byte order.
 */
static __always_inline __u32 csum_word_diff(__u16 from, __u16 to)
{
	return (__u16)~from + (__u32)to;
}

/* A 32-bit field's change: its two 16-bit words (the field at an even offset of what the sum covers). */
static __always_inline __u32 csum_word4_diff(__be32 from, __be32 to)
{
	return csum_word_diff((__u16)from, (__u16)to) +
	       csum_word_diff((__u16)(from >> 16), (__u16)(to >> 16));
}

/* A sum of 16-bit words and differences folded into 16 bits with the end-around carry (not complemented). */
static __always_inline __u16 csum_fold_sum(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)((sum & 0xffff) + (sum >> 16));
}

/* A change summed as if its field lay at an even offset, for the field at an odd one: its bytes fall in the
 * other halves of the checksum's words, so the folded sum is byte-swapped (RFC 1071 section 2(B)). */
static __always_inline __u32 csum_swab(__u64 diff)
{
	__u16 folded = csum_fold_sum(diff);

	return (__u16)(folded << 8 | folded >> 8);
}

/* A 16-bit checksum field after the words it covers changed by diff (a sum of a few of the above). */
static __always_inline __sum16 csum_add_diff(__sum16 check, __u64 diff)
{
	return (__sum16)~csum_fold_sum((__u16)~check + diff);
}

/* A checksum after a 32-bit word it covers changed (what the kernel's csum_replace4 does). */
static __always_inline __sum16 csum_replace4_value(__sum16 check, __be32 from, __be32 to)
{
	return csum_add_diff(check, csum_word4_diff(from, to));
}

/* Two 32-bit partial sums added with the end-around carry (still a partial sum of 32 bits). */
static __always_inline __u32 csum_add32(__u32 a, __u32 b)
{
	__u64 sum = (__u64)a + b;

	sum = (sum & 0xffffffff) + (sum >> 32);
	return (__u32)sum + (__u32)(sum >> 32);
}

/* The ones'-complement sum of to - from over 16 bytes, as bpf_csum_diff would give it (a 32-bit partial sum).
 */
static __always_inline __u32 csum_diff16(const struct bpfnet_ip *from, const struct bpfnet_ip *to)
{
	__u64 sum = 0;

	for (int i = 0; i < 4; i++)
		sum += (__u32)~from->w[i] + (__u64)to->w[i];
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	return (__u32)sum;
}

/*
 * The skb's checksum state (include/linux/skbuff.h), which says what a TCP or UDP checksum field holds: the
 * whole checksum (CHECKSUM_NONE, CHECKSUM_UNNECESSARY), the whole checksum with skb->csum summing the packet
 * for the stack (CHECKSUM_COMPLETE), or only the pseudo-header's sum, the rest left to the device
 * (CHECKSUM_PARTIAL: the pod's own TCP and UDP through a veth with its default offloads).
 */
enum skb_csum_state {
	SKB_CSUM_NONE = 0,
	SKB_CSUM_UNNECESSARY = 1,
	SKB_CSUM_COMPLETE = 2,
	SKB_CSUM_PARTIAL = 3,
	SKB_CSUM_UNKNOWN, /* the kernel does not show it */
};

/*
 * Set by the loader where a TC program may read the kernel's sk_buff (bpf_cast_to_kern_ctx, from 6.2;
 * core/kernel_probe.cpp loads the same read to find out). Without it the call below is dead code, never
 * checked, and every checksum goes through the kernel's helper.
 */
const volatile __u8 kernel_reads_skb_csum = 0;

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;

/* The one field of the kernel's sk_buff read here; CO-RE finds it in the running kernel's layout. */
struct sk_buff___bpfnet {
	__u8 ip_summed : 2;
} __attribute__((preserve_access_index));

static __always_inline __u32 skb_csum_state(struct __sk_buff *skb)
{
	if (!kernel_reads_skb_csum)
		return SKB_CSUM_UNKNOWN;
	struct sk_buff___bpfnet *kernel_skb = bpf_cast_to_kern_ctx(skb);
	return BPF_CORE_READ_BITFIELD(kernel_skb, ip_summed);
}

/*
 * The TCP or UDP checksum field (check) after a rewrite, computed here from the skb's checksum state instead
 * of by bpf_l4_csum_replace (a helper call per update, the largest cost of a rewrite): pseudo sums the
 * change to the words of the pseudo-header (addresses, a UDP length), rest the change to the other words the
 * checksum covers (ports, payload). A CHECKSUM_PARTIAL field holds the pseudo-header's sum, not complemented:
 * only pseudo changes it (what the helper does with BPF_F_PSEUDO_HDR). A UDP checksum of 0 ("none", RFC 768)
 * stays 0, and a computed 0 is sent as 0xffff (BPF_F_MARK_MANGLED_0). Returns -1, having changed nothing,
 * where the helper must do it: CHECKSUM_COMPLETE (skb->csum must follow, and only a helper writes it) or a
 * state the kernel does not show.
 */
static __always_inline int l4_check_after(__u32 state, __u8 proto, __sum16 check, __u64 pseudo, __u64 rest,
					  __sum16 *after)
{
	if (state == SKB_CSUM_PARTIAL)
		*after = (__sum16)csum_fold_sum((__u16)check + pseudo);
	else if (state == SKB_CSUM_NONE || state == SKB_CSUM_UNNECESSARY)
		*after = csum_add_diff(check, pseudo + rest);
	else
		return -1;
	if (proto == IPPROTO_UDP && !check)
		*after = 0;
	else if (proto == IPPROTO_UDP && !*after)
		*after = (__sum16)0xffff;
	return 0;
}

/* The change an address makes to the pseudo-header's sum, either family (IPv4 in its map form). */
static __always_inline __u64 csum_address_diff(const struct bpfnet_ip *from, const struct bpfnet_ip *to,
					       const int v6)
{
	return v6 ? csum_diff16(from, to) : csum_word4_diff(from->w[3], to->w[3]);
}

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
