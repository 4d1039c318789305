/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Address and port rewriting for TC programs. The TCP/UDP checksum is computed in the program where the
 * kernel shows the skb's checksum state (l4_check_after), through the kernel's helpers elsewhere; both keep a
 * CHECKSUM_PARTIAL skb's pseudo-header sum right and a UDP checksum of 0 ("none") at 0.
 */
#ifndef BPFNET_NAT_H
#define BPFNET_NAT_H

#include <stddef.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include "parse.h"
#include "addr.h"
#include "csum.h"
#include "maps.h"

enum nat_side {
	NAT_SOURCE,
	NAT_DESTINATION,
};

/*
 * Rewrites write the packet's bytes directly, not through a helper call per field. A program that does so
 * gets a prologue from the verifier that, for a cloned skb, makes its whole linear part writable
 * (bpf_skb_pull_data(skb, 0)) before the program runs, for every frame it sees, ours or not; it copies the
 * head only where the clone may not write it as it is. The pod's TCP data segments are clones whose head
 * room only the clone writes (__skb_header_release) and whose linear part holds only their headers: no
 * copy (pull_headers leaves them as they are too). Copied: a clone with payload in its linear part, and a
 * frame whose head is shared, as a packet socket capturing on the pod's side or a looped-back broadcast
 * leaves it. See docs/design.md, "How the rewrites are made".
 */

/* Where one side's port lies in the frame: the source port, then the destination port. */
static __always_inline __u32 nat_port_off(const struct ip_packet *pkt, enum nat_side side)
{
	return pkt->l4_off + (side == NAT_SOURCE ? 0 : sizeof(__be16));
}

/* The bytes of an IPv4 header from its checksum to the destination address, written together. */
struct ipv4_check_addrs {
	__sum16 check;
	__be32 saddr;
	__be32 daddr;
} __attribute__((packed));

/*
 * Sets one side's address in the IPv4 header with the header checksum, in one write. Every IPv4 header the
 * programs rewrite follows the Ethernet header (parse_ipv4_fixed), in the linear part (tc_parse_eth).
 */
static __always_inline int ipv4_set_address(struct __sk_buff *skb, const struct ip_packet *pkt,
					    enum nat_side side, __be32 old_ip, __be32 new_ip)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr);

	if (pkt->l3_off != sizeof(struct ethhdr) || (void *)(ip + 1) > data_end)
		return -1;
	ip->check = csum_replace4_value(ip->check, old_ip, new_ip);
	if (side == NAT_SOURCE)
		ip->saddr = new_ip;
	else
		ip->daddr = new_ip;
	return 0;
}

/* lower_hop_limit()'s results besides 0. */
#define HOP_LIMIT_USED_UP   1
#define HOP_LIMIT_NO_HEADER (-1)

/*
 * Lowers the TTL (IPv6: the hop limit) by one, written directly, as a router forwarding the packet does; the
 * IPv4 header's checksum with it (the TTL shares a 16-bit word with the protocol, RFC 1624). A packet with a
 * TTL of 1 or less must not be forwarded (RFC 1812 section 5.3.1): HOP_LIMIT_USED_UP, nothing written.
 */
static __always_inline int lower_hop_limit(struct __sk_buff *skb, const struct ip_packet *pkt)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	if (pkt->l3_off != sizeof(struct ethhdr))
		return HOP_LIMIT_NO_HEADER;
	if (pkt->ip6) {
		struct ipv6hdr *ip6 = data + sizeof(struct ethhdr);
		if ((void *)(ip6 + 1) > data_end)
			return HOP_LIMIT_NO_HEADER;
		if (ip6->hop_limit <= 1)
			return HOP_LIMIT_USED_UP;
		ip6->hop_limit--;
		return 0;
	}
	struct iphdr *ip = data + sizeof(struct ethhdr);
	if ((void *)(ip + 1) > data_end)
		return HOP_LIMIT_NO_HEADER;
	if (ip->ttl <= 1)
		return HOP_LIMIT_USED_UP;
	__u16 *ttl_word = (__u16 *)&ip->ttl;
	__u16 before = *ttl_word;
	ip->ttl--;
	ip->check = csum_add_diff(ip->check, csum_word_diff(before, *ttl_word));
	return 0;
}

/* Direct writes reach this far into the frame (the headers, and the BOOTP fields the relay sets). */
#define NAT_DIRECT_MAX_OFF 127

/*
 * Where len bytes at off lie in the linear part, for a rewrite to write them directly; NULL when
 * they do not (past NAT_DIRECT_MAX_OFF, or in the paged part): the helper stores them then.
 */
static __always_inline void *nat_direct_at(struct __sk_buff *skb, __u32 off, __u32 len)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	if (off > NAT_DIRECT_MAX_OFF)
		return NULL;
	/* Restate off <= NAT_DIRECT_MAX_OFF where the verifier sees it. */
	asm volatile("%[off] &= 127" : [off] "+r"(off));
	if (data + off + len > data_end)
		return NULL;
	return data + off;
}

/* The TCP/UDP checksum after a port changed (not in the pseudo-header), either family. */
static __always_inline int l4_csum_port(struct __sk_buff *skb, const struct ip_packet *pkt, __be16 from,
					__be16 to)
{
	if (from == to)
		return 0;
	return bpf_l4_csum_replace(skb, l4_csum_off(pkt), from, to, l4_csum_flags(pkt) | 2) ? -1 : 0;
}

/*
 * The TCP/UDP checksum after an address changed, either family: the pseudo-header carries it (RFC 768, RFC
 * 8200 8.1), so BPF_F_PSEUDO_HDR; the kernel's helper knows the skb's checksum state. An IPv6 address goes in
 * as one 16-byte difference.
 */
static __always_inline int l4_csum_address(struct __sk_buff *skb, const struct ip_packet *pkt,
					   const struct bpfnet_ip *from, const struct bpfnet_ip *to)
{
	if (!pkt->ip6)
		return bpf_l4_csum_replace(skb, l4_csum_off(pkt), from->w[3], to->w[3],
					   BPF_F_PSEUDO_HDR | l4_csum_flags(pkt) | 4)
			       ? -1
			       : 0;
	__u32 diff = csum_diff16(from, to);

	/*
	 * With BPF_F_PSEUDO_HDR the helper also takes diff out of skb->csum of a CHECKSUM_COMPLETE skb (right
	 * for IPv4, whose header checksum changes too). Over IPv6 the address change and the L4 checksum
	 * change cancel out in skb->csum, so diff is given back (a no-op for any other skb); kernels
	 * from 6.16 offer BPF_F_IPV6 for the same. Without it the receiver sees "hw csum failure".
	 */
	if (bpf_l4_csum_replace(skb, l4_csum_off(pkt), 0, diff, BPF_F_PSEUDO_HDR | l4_csum_flags(pkt)))
		return -1;
	bpf_csum_update(skb, diff);
	return 0;
}

/* One side's port, and the L4 checksum over it (either family). */
static __always_inline int nat_rewrite_port(struct __sk_buff *skb, const struct ip_packet *pkt,
					    enum nat_side side, __be16 old_port, __be16 new_port)
{
	__u32 port_off = nat_port_off(pkt, side);

	if (old_port == new_port)
		return 0;
	if (l4_csum_port(skb, pkt, old_port, new_port))
		return -1;
	__be16 *at = nat_direct_at(skb, port_off, sizeof(*at));
	if (at) {
		*at = new_port;
		return 0;
	}
	return bpf_skb_store_bytes(skb, port_off, &new_port, sizeof(new_port), 0);
}

/*
 * Rewrites one side's address and port. The L4 checksum follows through the kernel's helper (it knows the
 * skb's checksum state); the IPv4 header checksum, which no device computes, is updated with the address.
 * The packet's pointers are invalid afterwards: helpers may move the data. Returns 0 on success, negative
 * when a helper refused.
 */
static __always_inline int nat_rewrite(struct __sk_buff *skb, const struct ip_packet *pkt, enum nat_side side,
				       const struct bpfnet_ip *old_ip, const struct bpfnet_ip *new_ip,
				       __be16 old_port, __be16 new_port)
{
	if (old_ip->w[3] != new_ip->w[3]) {
		if (l4_csum_address(skb, pkt, old_ip, new_ip) ||
		    ipv4_set_address(skb, pkt, side, old_ip->w[3], new_ip->w[3]))
			return -1;
	}
	return nat_rewrite_port(skb, pkt, side, old_port, new_port);
}

/*
 * Re-addresses an IPv4 UDP datagram: both addresses and both ports, with the IPv4 header checksum and the
 * UDP checksum, which also takes payload_diff (the csum_word_diff()s of what the caller changes in the
 * payload; the caller writes those bytes itself). The UDP checksum is computed here (l4_check_after), or
 * where the skb's state asks for them by two calls of the kernel's helper: one for the addresses, which the
 * pseudo-header carries, one for the rest (a CHECKSUM_PARTIAL skb's field holds the pseudo-header's sum
 * only). The headers are in the linear part (tc_parse_eth) and written there: the DHCP relay's requests
 * and replies. The packet's pointers are invalid afterwards.
 */
static __always_inline int udp4_readdress(struct __sk_buff *skb, const struct ip_packet *pkt, __be32 saddr,
					  __be32 daddr, __be16 sport, __be16 dport, __u32 payload_diff)
{
	/* Asked first: a call in the middle would keep the header's fields on the stack across it. */
	const __u32 state = skb_csum_state(skb);
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr);
	struct udphdr *udp = nat_direct_at(skb, pkt->l4_off, sizeof(*udp));

	if (pkt->l3_off != sizeof(struct ethhdr) || (void *)(ip + 1) > data_end || !udp ||
	    pkt->proto != IPPROTO_UDP)
		return -1;
	__u32 addr_diff = csum_word4_diff(ip->saddr, saddr) + csum_word4_diff(ip->daddr, daddr);
	__u32 rest_diff =
		payload_diff + csum_word_diff(udp->source, sport) + csum_word_diff(udp->dest, dport);
	__sum16 check;
	if (l4_check_after(state, IPPROTO_UDP, udp->check, addr_diff, rest_diff, &check)) {
		if (bpf_l4_csum_replace(skb, l4_csum_off(pkt), 0, rest_diff, BPF_F_MARK_MANGLED_0) ||
		    bpf_l4_csum_replace(skb, l4_csum_off(pkt), 0, addr_diff,
					BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0))
			return -1;
		udp = nat_direct_at(skb, pkt->l4_off, sizeof(*udp));
		if (!udp)
			return -1;
		check = udp->check;
	}
	/* The IPv4 header's checksum, read where it is now: the helpers above may have moved the packet. */
	struct ipv4_check_addrs *at =
		nat_direct_at(skb, sizeof(struct ethhdr) + offsetof(struct iphdr, check), sizeof(*at));
	if (!at)
		return -1;
	__sum16 ip_check = csum_add_diff(at->check, addr_diff);
	udp = nat_direct_at(skb, pkt->l4_off, sizeof(*udp));
	if (!udp)
		return -1;
	at->check = ip_check;
	at->saddr = saddr;
	at->daddr = daddr;
	udp->source = sport;
	udp->dest = dport;
	udp->check = check;
	return 0;
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
	struct bpfnet_ip to = *new_ip; /* on the stack: the helpers below may move the packet */

	if (!ip_equal(old_ip, &to)) {
		if (l4_csum_address(skb, pkt, old_ip, &to))
			return -1;
		struct bpfnet_ip *at = nat_direct_at(skb, ip_off, sizeof(*at));
		if (at)
			*at = to;
		else if (bpf_skb_store_bytes(skb, ip_off, &to, sizeof(to), 0))
			return -1;
	}
	return nat_rewrite_port(skb, pkt, side, old_port, new_port);
}

/* nat_rewrite_computed() could not compute the checksum: the helpers' way is taken, nothing was changed. */
#define NAT_NEEDS_HELPER 1

/*
 * One side's address and port rewritten in place with the TCP/UDP checksum computed here (l4_check_after)
 * and the IPv4 header checksum: no helper call. NAT_NEEDS_HELPER, with nothing written, where the skb's
 * checksum state asks for the helper or a field lies outside the direct reach; -1 when a write failed.
 */
static __always_inline int nat_rewrite_computed(struct __sk_buff *skb, const struct ip_packet *pkt,
						enum nat_side side, const struct bpfnet_ip *old_ip,
						const struct bpfnet_ip *new_ip, __be16 old_port,
						__be16 new_port)
{
	const int v6 = pkt->ip6 != 0;
	__u32 port_off = nat_port_off(pkt, side);
	__sum16 *check_at = nat_direct_at(skb, l4_csum_off(pkt), sizeof(*check_at));
	__sum16 check;

	if (!check_at || pkt->l3_off != sizeof(struct ethhdr) ||
	    l4_check_after(skb_csum_state(skb), pkt->proto, *check_at, csum_address_diff(old_ip, new_ip, v6),
			   csum_word_diff(old_port, new_port), &check))
		return NAT_NEEDS_HELPER;
	*check_at = check;
	__be16 *port_at = nat_direct_at(skb, port_off, sizeof(*port_at));
	if (!port_at)
		return -1;
	*port_at = new_port;
	if (!v6)
		return ipv4_set_address(skb, pkt, side, old_ip->w[3], new_ip->w[3]);
	__u32 ip_off = sizeof(struct ethhdr) + (side == NAT_SOURCE ? offsetof(struct ipv6hdr, saddr)
								   : offsetof(struct ipv6hdr, daddr));
	struct bpfnet_ip *ip_at = nat_direct_at(skb, ip_off, sizeof(*ip_at));
	if (!ip_at)
		return -1;
	*ip_at = *new_ip;
	return 0;
}

/*
 * Either family's rewrite, the addresses in their map form: with the checksum computed here, else (a
 * checksum state that asks for them, a field out of direct reach) through the kernel's helpers.
 */
static __always_inline int nat_rewrite_ip(struct __sk_buff *skb, const struct ip_packet *pkt,
					  enum nat_side side, const struct bpfnet_ip *old_ip,
					  const struct bpfnet_ip *new_ip, __be16 old_port, __be16 new_port)
{
	int computed = nat_rewrite_computed(skb, pkt, side, old_ip, new_ip, old_port, new_port);

	if (computed != NAT_NEEDS_HELPER)
		return computed;
	if (pkt->ip6)
		return nat6_rewrite(skb, pkt, side, old_ip, new_ip, old_port, new_port);
	return nat_rewrite(skb, pkt, side, old_ip, new_ip, old_port, new_port);
}

/* Sets both MACs of the frame, as the next hop expects to receive it. */
static __always_inline int rewrite_macs(struct __sk_buff *skb, const __u8 *dst, const __u8 *src)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return -1;
	mac_copy(eth->h_dest, dst);
	mac_copy(eth->h_source, src);
	return 0;
}

#endif /* BPFNET_NAT_H */
