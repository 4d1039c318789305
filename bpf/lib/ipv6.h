/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * IPv6 headers (RFC 8200): the fixed header, the extension headers a packet to a service address may carry,
 * and its TCP or UDP ports. Everything past the fixed header is read with the load-bytes helpers, at
 * offsets checked against the payload length, so a chain of any shape costs no unbounded pointer
 * arithmetic and reads nothing outside the packet.
 */
#ifndef BPFNET_IPV6_H
#define BPFNET_IPV6_H

#include <linux/in6.h>
#include "parse.h"
#include "addr.h"

#define IPV6_HEADER_LEN	      40
/* Extension headers walked before the upper-layer header. A packet with more is dropped as not understood:
 * hosts booting over IPv6 send none (a hop-by-hop header carries MLD's router alert, never steered traffic).
 */
#define IPV6_MAX_EXT_HEADERS  4
#define IPV6_NEXTHDR_HOP      0
#define IPV6_NEXTHDR_ROUTING  43
#define IPV6_NEXTHDR_FRAGMENT 44
#define IPV6_NEXTHDR_ESP      50
#define IPV6_NEXTHDR_AUTH     51
#define IPV6_NEXTHDR_ICMP     58
#define IPV6_NEXTHDR_NONE     59
#define IPV6_NEXTHDR_DEST     60
#define IPV6_NEXTHDR_MOBILITY 135
#define IPV6_NEXTHDR_HIP      139
#define IPV6_NEXTHDR_SHIM6    140
#define IPV6_NEXTHDR_EXP1     253
#define IPV6_NEXTHDR_EXP2     254

static __always_inline struct ipv6hdr *parse_ipv6_fixed(struct ethhdr *eth, void *data_end)
{
	struct ipv6hdr *ip6 = (void *)(eth + 1);

	if ((void *)(ip6 + 1) > data_end)
		return NULL;
	return ip6;
}

/* The map form of an address in a packet (the packet's own 16 bytes, copied). */
static __always_inline struct bpfnet_ip ip_of(const struct in6_addr *addr)
{
	struct bpfnet_ip ip;

	ip.w[0] = addr->in6_u.u6_addr32[0];
	ip.w[1] = addr->in6_u.u6_addr32[1];
	ip.w[2] = addr->in6_u.u6_addr32[2];
	ip.w[3] = addr->in6_u.u6_addr32[3];
	return ip;
}

/* An extension header is one the RFC defines but the datapath does not walk (a packet with it is dropped). */
static __always_inline int ipv6_unwalked_ext_header(__u8 nexthdr)
{
	return nexthdr == IPV6_NEXTHDR_ESP || nexthdr == IPV6_NEXTHDR_AUTH ||
	       nexthdr == IPV6_NEXTHDR_MOBILITY || nexthdr == IPV6_NEXTHDR_HIP ||
	       nexthdr == IPV6_NEXTHDR_SHIM6 || nexthdr == IPV6_NEXTHDR_EXP1 || nexthdr == IPV6_NEXTHDR_EXP2;
}

/*
 * Walks the extension headers from the fixed header to the upper-layer header: hop-by-hop options (first
 * only, RFC 8200 4.1), destination options, and a routing header with no segments left (one that still
 * has some would make us a hop of its route: not understood). A fragment header makes the packet a
 * fragment. Sets *proto and *l4_off. l3_end: offset just past the packet (fixed header + payload length).
 */
static __always_inline enum parse_verdict
ipv6_walk_ext_headers(void *ctx, int xdp, __u32 l3_off, __u32 l3_end, __u8 first, __u8 *proto, __u32 *l4_off)
{
	__u8 nexthdr = first;
	__u32 off = l3_off + IPV6_HEADER_LEN;

	for (int i = 0; i < IPV6_MAX_EXT_HEADERS; i++) {
		__u8 head[4]; /* next header, length in 8-octet units beyond the first, and for routing: type,
				 left */

		if (nexthdr == IPV6_NEXTHDR_FRAGMENT)
			return PARSE_FRAGMENT;
		if (nexthdr != IPV6_NEXTHDR_HOP && nexthdr != IPV6_NEXTHDR_DEST &&
		    nexthdr != IPV6_NEXTHDR_ROUTING)
			break;
		if (nexthdr == IPV6_NEXTHDR_HOP && i != 0)
			return PARSE_MALFORMED;
		if (off + 8 > l3_end || load_packet_bytes(ctx, xdp, off, head, sizeof(head)))
			return PARSE_MALFORMED;
		if (nexthdr == IPV6_NEXTHDR_ROUTING && head[3] != 0)
			return PARSE_EXT_HEADER;
		nexthdr = head[0];
		off += ((__u32)head[1] + 1) * 8;
	}
	if (nexthdr == IPV6_NEXTHDR_HOP || nexthdr == IPV6_NEXTHDR_DEST || nexthdr == IPV6_NEXTHDR_ROUTING ||
	    ipv6_unwalked_ext_header(nexthdr))
		return PARSE_EXT_HEADER; /* a longer chain, or a header not walked */
	if (off > l3_end)
		return PARSE_MALFORMED;
	*proto = nexthdr;
	*l4_off = off;
	return PARSE_OK;
}

/*
 * Copies the TCP or UDP header at l4_off: straight from the packet when it follows the fixed header within
 * the linear part (no extension headers, the common case), else through the load-bytes helper.
 */
static __always_inline long ipv6_load_l4(void *ctx, int xdp, struct ipv6hdr *ip6, void *data_end,
					 __u32 l3_off, __u32 l4_off, void *to, __u32 len)
{
	void *l4 = ip6 + 1;

	if (l4_off == l3_off + IPV6_HEADER_LEN && l4 + len <= data_end) {
		__builtin_memcpy(to, l4, len);
		return 0;
	}
	return load_packet_bytes(ctx, xdp, l4_off, to, len);
}

/*
 * Validates an IPv6 packet and its TCP or UDP header: version, payload length within the frame (no
 * jumbograms), the extension headers (ipv6_walk_ext_headers), L4 header present and consistent (TCP data
 * offset >= 5 and within the packet, UDP length >= 8 and equal to what the packet carries). Fills pkt like
 * ipv4_validate(). PARSE_OTHER_PROTOCOL leaves pkt->proto and pkt->l4_off set (ICMPv6).
 */
static __always_inline enum parse_verdict ipv6_validate(void *ctx, int xdp, void *data, __u32 frame_len,
							struct ipv6hdr *ip6, struct ip_packet *pkt)
{
	void *data_end = ctx_data_end(ctx, xdp);
	__u32 l3_off = (void *)ip6 - data;
	__u32 payload = bpf_ntohs(ip6->payload_len);
	__u32 l3_end = l3_off + IPV6_HEADER_LEN + payload;
	__u8 proto = 0;
	__u32 l4_off = 0;

	if (ip6->version != 6 || payload == 0 || l3_end > frame_len)
		return PARSE_MALFORMED;
	enum parse_verdict walked =
		ipv6_walk_ext_headers(ctx, xdp, l3_off, l3_end, ip6->nexthdr, &proto, &l4_off);
	if (walked != PARSE_OK)
		return walked;

	pkt->ip6 = 1;
	pkt->l3_off = l3_off;
	pkt->l4_off = l4_off;
	pkt->proto = proto;
	pkt->l4_end = l3_end;

	if (proto == IPPROTO_TCP) {
		struct tcphdr tcp;

		if (l4_off + sizeof(tcp) > l3_end ||
		    ipv6_load_l4(ctx, xdp, ip6, data_end, l3_off, l4_off, &tcp, sizeof(tcp)) ||
		    tcp.doff < 5 || l4_off + tcp.doff * 4 > l3_end)
			return PARSE_MALFORMED;
		pkt->sport = tcp.source;
		pkt->dport = tcp.dest;
		pkt->tcp_flags = tcp_flags_byte(&tcp);
		return PARSE_OK;
	}
	if (proto == IPPROTO_UDP) {
		struct udphdr udp;

		if (l4_off + sizeof(udp) > l3_end ||
		    ipv6_load_l4(ctx, xdp, ip6, data_end, l3_off, l4_off, &udp, sizeof(udp)))
			return PARSE_MALFORMED;
		__u32 udp_len = bpf_ntohs(udp.len);
		/* Over IPv6 a UDP checksum is mandatory (RFC 8200 8.1): a receiver discards one of 0. */
		if (udp_len < sizeof(udp) || udp_len > l3_end - l4_off || udp.check == 0)
			return PARSE_MALFORMED;
		pkt->sport = udp.source;
		pkt->dport = udp.dest;
		pkt->l4_end = l4_off + udp_len;
		return PARSE_OK;
	}
	return PARSE_OTHER_PROTOCOL;
}

#endif /* BPFNET_IPV6_H */
