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

enum nat_side {
	NAT_SOURCE,
	NAT_DESTINATION,
};

static __always_inline __u32 l4_csum_off(const struct ipv4_packet *pkt)
{
	return pkt->l4_off +
	       (pkt->proto == IPPROTO_TCP ? offsetof(struct tcphdr, check) : offsetof(struct udphdr, check));
}

/*
 * Rewrites one side's address and port. The packet's pointers are invalid afterwards: helpers may
 * move the data. Returns 0 on success, negative when a helper refused.
 */
static __always_inline int nat_rewrite(struct __sk_buff *skb, const struct ipv4_packet *pkt,
				       enum nat_side side, __be32 old_ip, __be32 new_ip, __be16 old_port,
				       __be16 new_port)
{
	__u32 ip_off = pkt->l3_off +
		       (side == NAT_SOURCE ? offsetof(struct iphdr, saddr) : offsetof(struct iphdr, daddr));
	__u32 port_off = pkt->l4_off + (side == NAT_SOURCE ? 0 : sizeof(__be16));
	__u64 zero_stays = pkt->proto == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0;
	__u32 csum_off = l4_csum_off(pkt);

	if (old_ip != new_ip) {
		if (bpf_l4_csum_replace(skb, csum_off, old_ip, new_ip, BPF_F_PSEUDO_HDR | zero_stays | 4) ||
		    bpf_l3_csum_replace(skb, pkt->l3_off + offsetof(struct iphdr, check), old_ip, new_ip,
					4) ||
		    bpf_skb_store_bytes(skb, ip_off, &new_ip, 4, 0))
			return -1;
	}
	if (old_port != new_port) {
		if (bpf_l4_csum_replace(skb, csum_off, old_port, new_port, zero_stays | 2) ||
		    bpf_skb_store_bytes(skb, port_off, &new_port, 2, 0))
			return -1;
	}
	return 0;
}

/* Sets both MACs of the frame, as the next hop expects to receive it. */
static __always_inline int rewrite_macs(struct __sk_buff *skb, const __u8 *dst, const __u8 *src)
{
	__u8 macs[12];

	mac_copy(macs, dst);
	mac_copy(macs + 6, src);
	return bpf_skb_store_bytes(skb, 0, macs, sizeof(macs), 0);
}

#endif /* BPFNET_NAT_H */
