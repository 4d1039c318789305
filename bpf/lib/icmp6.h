/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ICMPv6 errors about steered packets (RFC 4443): the IPv6 counterpart of icmp.h. A router's "packet too big"
 * for the pod's segment (path MTU discovery, RFC 8201: IPv6 routers never fragment, so without it a
 * connection over a smaller hop stalls), a host's "port unreachable" for a TFTP transfer, and the pod's own
 * errors about what it was sent, each translated like the packet it quotes.
 *
 * The quote is the packet as far as it fits in 1280 bytes, so unlike ICMPv4's 8 bytes it holds the quoted
 * TCP or UDP checksum: that checksum follows the quoted address and port, as a NAT translating the quote
 * keeps it (the receiver does not check it, but a packet capture does). The ICMPv6 checksum covers a
 * pseudo-header with the outer addresses (RFC 4443 2.3) and every quoted byte: it follows the outer address
 * as NAT66 does (nat6_rewrite) and each quoted change as payload.
 *
 * Only a quote of a TCP or UDP packet right after its fixed header is translated: the datapath sends none
 * with extension headers, and the pod's stack adds none to what it answers on.
 */
#ifndef BPFNET_ICMP6_H
#define BPFNET_ICMP6_H

#include "icmp.h"
#include "ipv6.h"

#define ICMPV6_DEST_UNREACH	 1
#define ICMPV6_PACKET_TOO_BIG	 2
#define ICMPV6_TIME_EXCEEDED	 3
#define ICMPV6_PARAMETER_PROBLEM 4

/* The ICMPv6 header and the quoted fixed header, read in one call. */
struct icmp6_error_head {
	__u8 type;
	__u8 code;
	__be16 check;
	__be32 rest; /* unused, the MTU of a packet too big, or a parameter problem's pointer */
	struct ipv6hdr ip;
};

/*
 * Reads the ICMPv6 error in pkt (validated by ipv6_validate as some other protocol) and what it quotes.
 * Returns -1 for anything but the four error types quoting the start of a TCP or UDP packet with its ports.
 */
static __always_inline int icmp6_error_read(void *ctx, int xdp, const struct ip_packet *pkt,
					    struct icmp_error *e)
{
	struct icmp6_error_head head;
	__be16 quoted[2];

	if (pkt->proto != IPV6_NEXTHDR_ICMP || pkt->l4_off + sizeof(head) > pkt->l4_end ||
	    load_packet_bytes(ctx, xdp, pkt->l4_off, &head, sizeof(head)))
		return -1;
	if (head.type < ICMPV6_DEST_UNREACH || head.type > ICMPV6_PARAMETER_PROBLEM)
		return -1; /* informational (echo, NDP, MLD): not about a packet */
	if (head.ip.version != 6 || (head.ip.nexthdr != IPPROTO_TCP && head.ip.nexthdr != IPPROTO_UDP))
		return -1;
	e->icmp_off = pkt->l4_off;
	e->inner_l3_off = pkt->l4_off + sizeof(head) - sizeof(head.ip);
	e->inner_l4_off = pkt->l4_off + sizeof(head);
	if (e->inner_l4_off + sizeof(quoted) > pkt->l4_end ||
	    load_packet_bytes(ctx, xdp, e->inner_l4_off, quoted, sizeof(quoted)))
		return -1;
	e->inner_saddr = ip_of(&head.ip.saddr);
	e->inner_daddr = ip_of(&head.ip.daddr);
	e->ports.sport = quoted[0];
	e->ports.dport = quoted[1];
	e->ports.proto = head.ip.nexthdr;
	__u32 check_off = e->inner_l4_off + (head.ip.nexthdr == IPPROTO_TCP ? offsetof(struct tcphdr, check)
									    : offsetof(struct udphdr, check));
	e->inner_check_off = 0;
	e->inner_check = 0;
	if (check_off + sizeof(e->inner_check) <= pkt->l4_end &&
	    !load_packet_bytes(ctx, xdp, check_off, &e->inner_check, sizeof(e->inner_check)))
		e->inner_check_off = check_off;
	return 0;
}

/*
 * Rewrites an ICMPv6 error: the outer address on side `outer` from_ip -> to_ip, and in the quote the opposite
 * side's address (the same change), port (from_port -> to_port) and its L4 checksum. Packet pointers are
 * invalid afterwards. Returns 0, or -1 when a helper refused.
 */
static __always_inline int icmp6_error_rewrite(struct __sk_buff *skb, const struct ip_packet *pkt,
					       const struct icmp_error *e, enum nat_side outer,
					       const struct bpfnet_ip *from_ip, const struct bpfnet_ip *to_ip,
					       __be16 from_port, __be16 to_port)
{
	struct icmp_error_spots at = icmp_error_spots(pkt, e, outer, offsetof(struct ipv6hdr, saddr),
						      offsetof(struct ipv6hdr, daddr));
	struct bpfnet_ip from = *from_ip, to = *to_ip; /* on the stack: the helpers may move the packet */
	__s64 diff = bpf_csum_diff(from.w, sizeof(from), to.w, sizeof(to), 0);

	if (diff < 0)
		return -1;
	/*
	 * The quote is ICMPv6 payload: each change and the ICMPv6 checksum's cancel out in the sum over the
	 * packet, so skb->csum of a CHECKSUM_COMPLETE skb stays right without BPF_F_PSEUDO_HDR.
	 */
	if (e->inner_check_off) {
		__be16 check = quoted_check_after(e->inner_check, (__u32)diff, from_port, to_port,
						  e->ports.proto == IPPROTO_UDP);
		if (bpf_l4_csum_replace(skb, at.icmp_check, e->inner_check, check, sizeof(check)) ||
		    bpf_skb_store_bytes(skb, e->inner_check_off, &check, sizeof(check), 0))
			return -1;
	}
	if (bpf_l4_csum_replace(skb, at.icmp_check, 0, (__u32)diff, 0) ||
	    bpf_skb_store_bytes(skb, at.quote_ip, &to, sizeof(to), 0) ||
	    bpf_l4_csum_replace(skb, at.icmp_check, from_port, to_port, sizeof(to_port)) ||
	    bpf_skb_store_bytes(skb, at.quote_port, &to_port, sizeof(to_port), 0))
		return -1;
	/* The outer address is in the pseudo-header: handled as nat6_rewrite() does (see there). */
	if (bpf_l4_csum_replace(skb, at.icmp_check, 0, (__u32)diff, BPF_F_PSEUDO_HDR))
		return -1;
	bpf_csum_update(skb, (__u32)diff);
	return bpf_skb_store_bytes(skb, at.outer_ip, &to, sizeof(to), 0) ? -1 : 0;
}

#endif /* BPFNET_ICMP6_H */
