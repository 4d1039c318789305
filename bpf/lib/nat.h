/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Address and port rewriting for TC programs. All checksum work goes through the kernel helpers, which
 * also handle CHECKSUM_PARTIAL skbs from the pod and keep a UDP checksum of 0 ("none") at 0.
 */
#ifndef BPFNET_NAT_H
#define BPFNET_NAT_H

#include <stddef.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include "parse.h"
#include "addr.h"
#include "csum.h"

enum nat_side {
	NAT_SOURCE,
	NAT_DESTINATION,
};

/* One side's port, and the L4 checksum over it (either family). */
static __always_inline int nat_rewrite_port(struct __sk_buff *skb, const struct ip_packet *pkt,
					    enum nat_side side, __be16 old_port, __be16 new_port)
{
	__u32 port_off = pkt->l4_off + (side == NAT_SOURCE ? 0 : sizeof(__be16));

	if (old_port == new_port)
		return 0;
	if (bpf_l4_csum_replace(skb, l4_csum_off(pkt), old_port, new_port, l4_csum_flags(pkt) | 2) ||
	    bpf_skb_store_bytes(skb, port_off, &new_port, 2, 0))
		return -1;
	return 0;
}

/*
 * Rewrites one side's address and port. The packet's pointers are invalid afterwards: helpers may
 * move the data. Returns 0 on success, negative when a helper refused.
 */
static __always_inline int nat_rewrite(struct __sk_buff *skb, const struct ip_packet *pkt, enum nat_side side,
				       __be32 old_ip, __be32 new_ip, __be16 old_port, __be16 new_port)
{
	__u32 ip_off = pkt->l3_off +
		       (side == NAT_SOURCE ? offsetof(struct iphdr, saddr) : offsetof(struct iphdr, daddr));

	if (old_ip != new_ip) {
		if (bpf_l4_csum_replace(skb, l4_csum_off(pkt), old_ip, new_ip,
					BPF_F_PSEUDO_HDR | l4_csum_flags(pkt) | 4) ||
		    bpf_l3_csum_replace(skb, pkt->l3_off + offsetof(struct iphdr, check), old_ip, new_ip,
					4) ||
		    bpf_skb_store_bytes(skb, ip_off, &new_ip, 4, 0))
			return -1;
	}
	return nat_rewrite_port(skb, pkt, side, old_port, new_port);
}

/*
 * NAT66: the same for an IPv6 packet. IPv6 has no header checksum; the L4 checksum covers both addresses
 * through the pseudo-header (RFC 8200 8.1), so the 16-byte change goes in as one checksum difference.
 */
static __always_inline int nat6_rewrite(struct __sk_buff *skb, const struct ip_packet *pkt,
					enum nat_side side, const struct bpfnet_ip *old_ip,
					const struct bpfnet_ip *new_ip, __be16 old_port, __be16 new_port)
{
	__u32 ip_off = pkt->l3_off + (side == NAT_SOURCE ? offsetof(struct ipv6hdr, saddr)
							 : offsetof(struct ipv6hdr, daddr));
	struct bpfnet_ip from = *old_ip,
			 to = *new_ip; /* on the stack: the helpers below may move the packet */

	if (!ip_equal(&from, &to)) {
		__s64 diff = bpf_csum_diff(from.w, sizeof(from), to.w, sizeof(to), 0);

		/*
		 * With BPF_F_PSEUDO_HDR the helper also takes diff out of skb->csum of a CHECKSUM_COMPLETE
		 * skb (right for IPv4, whose header checksum changes too). Over IPv6 the address change and
		 * the L4 checksum change cancel out in skb->csum, so diff is given back (a no-op for any
		 * other skb); kernels from 6.16 offer BPF_F_IPV6 for the same. Without it the receiver sees
		 * "hw csum failure".
		 */
		if (diff < 0 || bpf_l4_csum_replace(skb, l4_csum_off(pkt), 0, (__u32)diff,
						    BPF_F_PSEUDO_HDR | l4_csum_flags(pkt)))
			return -1;
		bpf_csum_update(skb, (__u32)diff);
		if (bpf_skb_store_bytes(skb, ip_off, &to, sizeof(to), 0))
			return -1;
	}
	return nat_rewrite_port(skb, pkt, side, old_port, new_port);
}

/* Either family's rewrite, the addresses in their map form. */
static __always_inline int nat_rewrite_ip(struct __sk_buff *skb, const struct ip_packet *pkt,
					  enum nat_side side, const struct bpfnet_ip *old_ip,
					  const struct bpfnet_ip *new_ip, __be16 old_port, __be16 new_port)
{
	if (pkt->ip6)
		return nat6_rewrite(skb, pkt, side, old_ip, new_ip, old_port, new_port);
	return nat_rewrite(skb, pkt, side, old_ip->w[3], new_ip->w[3], old_port, new_port);
}

/*
 * Sets both MACs of the frame, as the next hop expects to receive it. Stored straight from where they are
 * (no copy on the stack: every steering path's frame is close to the verifier's limit).
 */
static __always_inline int rewrite_macs(struct __sk_buff *skb, const __u8 *dst, const __u8 *src)
{
	return bpf_skb_store_bytes(skb, 0, dst, 6, 0) || bpf_skb_store_bytes(skb, 6, src, 6, 0);
}

#endif /* BPFNET_NAT_H */
