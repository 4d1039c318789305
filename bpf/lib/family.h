/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What differs between IPv4 and IPv6 for the datapath's bodies, each behind one small helper that takes the
 * family as a constant (v6: 0 or 1 once inlined, so each family's program keeps only its own branch): where
 * the fixed header is and what it says, how the packet is validated, the number of its ICMP. Everything else
 * (steering, NAT, flows, ICMP error translation, the filters, the neighbour rules) is written once over
 * struct bpfnet_ip, the form the maps hold addresses in (as Katran's process_packet(..., is_ipv6)).
 */
#ifndef BPFNET_FAMILY_H
#define BPFNET_FAMILY_H

#include <linux/bpf.h>
#include "parse.h"
#include "addr.h"
#include "ipv6.h"

/* A packet's addresses, either family, in map form (32 bytes: no padding on the callers' stacks). */
struct l3_addrs {
	struct bpfnet_ip saddr;
	struct bpfnet_ip daddr;
};

/* The fixed IP header after the Ethernet header, bounds-checked; full validation is ip_validate(). */
static __always_inline void *parse_ip_fixed(struct ethhdr *eth, void *data_end, const int v6)
{
	if (v6)
		return parse_ipv6_fixed(eth, data_end);
	return parse_ipv4_fixed(eth, data_end);
}

static __always_inline struct l3_addrs l3_addrs_of(const void *l3, const int v6)
{
	struct l3_addrs a;

	if (v6) {
		const struct ipv6hdr *ip6 = l3;

		a.saddr = ip_of(&ip6->saddr);
		a.daddr = ip_of(&ip6->daddr);
	} else {
		const struct iphdr *ip = l3;

		a.saddr = ip_v4(ip->saddr);
		a.daddr = ip_v4(ip->daddr);
	}
	return a;
}

/* The protocol the fixed header names: IPv4's protocol; IPv6's next header (an extension header's, or the
 * upper layer's). */
static __always_inline __u8 l3_proto(const void *l3, const int v6)
{
	if (v6)
		return ((const struct ipv6hdr *)l3)->nexthdr;
	return ((const struct iphdr *)l3)->protocol;
}

/* The protocol number of the family's ICMP (in the fixed header: IPv6's right after it). */
static __always_inline __u8 icmp_proto(const int v6)
{
	return v6 ? IPV6_NEXTHDR_ICMP : IPPROTO_ICMP;
}

/* The address is of the family: an IPv4-mapped one for IPv4, any other for IPv6. */
static __always_inline int ip_in_family(const struct bpfnet_ip *ip, const int v6)
{
	return ip_is_v4(ip) != v6;
}

/* The family's unspecified address, which names no host: IPv4's 0.0.0.0 (an ARP probe's sender), IPv6's ::.
 */
static __always_inline int ip_is_unspecified(const struct bpfnet_ip *ip, const int v6)
{
	return v6 ? ip_is_unset(ip) : ip->w[3] == 0;
}

/*
 * Validates the packet whose fixed header is l3 and its TCP or UDP header (ipv4_validate, ipv6_validate), and
 * fills pkt. frame_len: the whole frame's length (data_end - data in XDP, skb->len in TC).
 */
static __always_inline enum parse_verdict ip_validate(void *ctx, int xdp, void *data, __u32 frame_len,
						      void *l3, struct ip_packet *pkt, const int v6)
{
	if (v6)
		return ipv6_validate(ctx, xdp, data, frame_len, l3, pkt);
	return ipv4_validate(data, ctx_data_end(ctx, xdp), frame_len, l3, pkt);
}

#endif /* BPFNET_FAMILY_H */
