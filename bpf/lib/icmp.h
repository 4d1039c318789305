/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ICMP errors about steered packets (RFC 792, RFC 1191). A host's "port unreachable" for a TFTP transfer,
 * or a router's "fragmentation needed" for the pod's TCP segment, quotes the packet as it was on the LAN
 * (from the service IP); the pod's own errors quote the packet as the pod received it (to the pod's
 * address). Each is translated like the packet it quotes, outer and inner headers together, so the other
 * side's stack matches it to its socket: path MTU discovery and refused ports work through the service IP.
 *
 * The outer address is rewritten as in the flow's NAT; in the quote, the opposite side (the quote travelled
 * the other way) gets the same address change and the port change. Every checksum stays right: the
 * quoted IP header's checksum with its address, the quoted UDP checksum (when it has one) with both, and
 * the ICMP checksum with every quoted byte that changed. (A quoted address change and its IP header
 * checksum change cancel out in the ICMP checksum.)
 */
#ifndef BPFNET_ICMP_H
#define BPFNET_ICMP_H

#include "parse.h"
#include "addr.h"
#include "maps.h"
#include "csum.h"
#include "nat.h"
#include "steer.h"

#define ICMP_DEST_UNREACH  3
#define ICMP_TIME_EXCEEDED 11
#define ICMP_PARAMETERPROB 12
#define ICMP_HEADER_LEN	   8
#define IP_OFFSET_MASK	   0x1fff /* fragment offset, without the flags */

/* What an ICMP error (either family) quotes: the protocol and ports of the packet it is about. */
struct icmp_quoted_ports {
	__be16 sport;
	__be16 dport;
	__u8 proto;
};

/* An ICMP or ICMPv6 error and the packet it quotes, its addresses in map form. */
struct icmp_error {
	__u32 icmp_off; /* from the start of the frame */
	__u32 inner_l3_off;
	__u32 inner_l4_off;
	__u32 inner_check_off; /* of the quoted TCP or UDP checksum to translate; 0: none */
	struct bpfnet_ip inner_saddr;
	struct bpfnet_ip inner_daddr;
	struct icmp_quoted_ports ports;
	__be16 inner_check;
};

/* The ICMP header and the fixed part of the quoted IP header, read in one call. */
struct icmp_error_head {
	__u8 type;
	__u8 code;
	__be16 check;
	__be32 rest; /* unused, or the next-hop MTU (RFC 1191) */
	struct iphdr ip;
};

/*
 * Reads the ICMP error in pkt (validated by ipv4_validate as some other protocol) and what it quotes.
 * Returns -1 for anything but a destination unreachable, time exceeded or parameter problem message quoting
 * the start of a TCP or UDP packet with its ports. ICMP quotes 8 bytes of data (RFC 792): a UDP checksum
 * (translated unless it is 0, "none"), never TCP's.
 */
static __always_inline int icmp4_error_read(void *ctx, int xdp, const struct ip_packet *pkt,
					    struct icmp_error *e)
{
	struct icmp_error_head head;
	__be16 quoted[4]; /* source port, destination port, and for UDP length and checksum */

	if (pkt->proto != IPPROTO_ICMP || pkt->l4_off + sizeof(head) > pkt->l4_end ||
	    load_packet_bytes(ctx, xdp, pkt->l4_off, &head, sizeof(head)))
		return -1;
	if (head.type != ICMP_DEST_UNREACH && head.type != ICMP_TIME_EXCEEDED &&
	    head.type != ICMP_PARAMETERPROB)
		return -1;
	if (head.ip.version != 4 || head.ip.ihl < 5 ||
	    (head.ip.protocol != IPPROTO_TCP && head.ip.protocol != IPPROTO_UDP) ||
	    (head.ip.frag_off & bpf_htons(IP_OFFSET_MASK))) /* a later fragment quotes no ports */
		return -1;
	e->icmp_off = pkt->l4_off;
	e->inner_l3_off = pkt->l4_off + ICMP_HEADER_LEN;
	e->inner_l4_off = e->inner_l3_off + head.ip.ihl * 4;
	if (e->inner_l4_off + sizeof(quoted) > pkt->l4_end ||
	    load_packet_bytes(ctx, xdp, e->inner_l4_off, quoted, sizeof(quoted)))
		return -1;
	e->inner_saddr = ip_v4(head.ip.saddr);
	e->inner_daddr = ip_v4(head.ip.daddr);
	e->ports.sport = quoted[0];
	e->ports.dport = quoted[1];
	e->ports.proto = head.ip.protocol;
	e->inner_check = head.ip.protocol == IPPROTO_UDP ? quoted[3] : 0;
	e->inner_check_off = e->inner_check ? e->inner_l4_off + offsetof(struct udphdr, check) : 0;
	return 0;
}

/*
 * An error from the LAN about a packet the datapath sent as the service IP (the quote's source) to host (the
 * quote's destination): the backend endpoint that packet came from. The host's answer to that packet would
 * have been steered by a recorded flow or a listed port, so the quote, turned around, is looked up as that
 * answer would be. Returns -1 when the datapath sent no such packet.
 */
static __always_inline int quote_from_service(const struct icmp_quoted_ports *q,
					      const struct bpfnet_ip *service_ip,
					      const struct bpfnet_ip *host, struct steer_target *target)
{
	struct lan_ports answer = {.sport = q->dport, .dport = q->sport, .proto = q->proto};

	if (steer_lookup(&answer, host, service_ip, target, 1) != STEER_OK)
		return -1;
	/* The relays' DHCP replies are not the server's packets: an error about one is not for the pod. */
	return target->kind == BPFNET_KIND_DHCP || target->kind == BPFNET_KIND_DHCP6 ||
			       ip_is_unset(&target->backend_ip)
		       ? -1
		       : 0;
}

/*
 * The pod's error about a packet host sent that the datapath delivered to it (the quote's destination, the
 * backend): the service IP and port the host sent it to. Returns -1 when no listed port or recorded flow
 * explains it.
 */
static __always_inline int quote_to_backend(const struct icmp_quoted_ports *q, const struct bpfnet_ip *host,
					    const struct bpfnet_ip *backend_ip,
					    const struct bpfnet_backend *backend,
					    struct bpfnet_ip *service_ip, __be16 *service_port)
{
	struct bpfnet_backend_port_key bkey = {
		.backend_ip = *backend_ip, .port_be = q->dport, .proto = q->proto};
	struct bpfnet_backend_port *listed = bpf_map_lookup_elem(&backend_ports, &bkey);
	if (listed) {
		if (listed->kind == BPFNET_KIND_DHCP || listed->kind == BPFNET_KIND_DHCP6)
			return -1;
		*service_ip = listed->service_ip;
		*service_port = listed->service_port_be;
		return 0;
	}
	/* Flows keep the port: the pod's side of the flow is the service IP's. */
	struct bpfnet_flow_key fkey = {
		.remote_ip = *host,
		.service_ip = backend->service_ip,
		.remote_port_be = q->sport,
		.service_port_be = q->dport,
		.proto = q->proto,
	};
	struct bpfnet_flow *flow = bpf_map_lookup_elem(&flows, &fkey);
	if (!flow || !ip_equal(&flow->backend_ip, backend_ip) || flow->backend_port_be != q->dport)
		return -1;
	*service_ip = backend->service_ip;
	*service_port = q->dport;
	return 0;
}

/*
 * A quoted TCP or UDP checksum after its pseudo-header's address changed by addr_diff (a ones'-complement sum
 * of the change) and a port from_port -> to_port: ones'-complement arithmetic on the stored 16-bit words,
 * whose order does not matter to it. A UDP checksum that comes out 0 is sent as 0xffff (0 is "none").
 */
static __always_inline __be16 quoted_check_after(__be16 check, __u32 addr_diff, __be16 from_port,
						 __be16 to_port, int udp)
{
	__u64 sum = (__u16)~check + (__u64)addr_diff + (__u16)~from_port + (__u16)to_port;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	__be16 result = (__be16)~sum;
	return udp && result == 0 ? 0xffff : result;
}

/*
 * Where a translation of an ICMP error writes, either family: the ICMP checksum (after type and code in
 * both); in the quote, the address and port of the side opposite `outer` (the quote travelled the other way);
 * the outer address. saddr_off, daddr_off: where the family's IP header holds its addresses.
 */
struct icmp_error_spots {
	__u32 icmp_check;
	__u32 quote_ip;
	__u32 quote_port;
	__u32 outer_ip;
};

static __always_inline struct icmp_error_spots icmp_error_spots(const struct ip_packet *pkt,
								const struct icmp_error *e,
								enum nat_side outer, __u32 saddr_off,
								__u32 daddr_off)
{
	int quote_source = outer == NAT_DESTINATION;
	struct icmp_error_spots at = {
		.icmp_check = e->icmp_off + offsetof(struct icmp_error_head, check),
		.quote_ip = e->inner_l3_off + (quote_source ? saddr_off : daddr_off),
		.quote_port = e->inner_l4_off + (quote_source ? 0 : sizeof(__be16)),
		.outer_ip = pkt->l3_off + (quote_source ? daddr_off : saddr_off),
	};
	return at;
}

/*
 * Rewrites an ICMP error: the outer address on side `outer` from -> to, and in the quote the opposite side's
 * address (the same change) and port (from_port -> to_port). IPv4's rules: the outer and the quoted IP header
 * checksums follow the address; the ICMP checksum covers no pseudo-header (a quoted address change and its
 * header checksum change cancel out in it). Packet pointers are invalid afterwards. Returns 0, or -1 when a
 * helper refused.
 */
static __always_inline int icmp4_error_rewrite(struct __sk_buff *skb, const struct ip_packet *pkt,
					       const struct icmp_error *e, enum nat_side outer,
					       const struct bpfnet_ip *from, const struct bpfnet_ip *to,
					       __be16 from_port, __be16 to_port)
{
	struct icmp_error_spots at =
		icmp_error_spots(pkt, e, outer, offsetof(struct iphdr, saddr), offsetof(struct iphdr, daddr));
	__be32 from_ip = from->w[3], to_ip = to->w[3];

	if (e->inner_check_off) {
		__be16 check = quoted_check_after(e->inner_check, csum_word4_diff(from_ip, to_ip), from_port,
						  to_port, 1);
		if (bpf_l4_csum_replace(skb, at.icmp_check, e->inner_check, check, sizeof(check)) ||
		    bpf_skb_store_bytes(skb, e->inner_check_off, &check, sizeof(check), 0))
			return -1;
	}
	if (bpf_l3_csum_replace(skb, e->inner_l3_off + offsetof(struct iphdr, check), from_ip, to_ip, 4) ||
	    bpf_skb_store_bytes(skb, at.quote_ip, &to_ip, 4, 0) ||
	    bpf_l4_csum_replace(skb, at.icmp_check, from_port, to_port, sizeof(to_port)) ||
	    bpf_skb_store_bytes(skb, at.quote_port, &to_port, sizeof(to_port), 0) ||
	    bpf_l3_csum_replace(skb, pkt->l3_off + offsetof(struct iphdr, check), from_ip, to_ip, 4) ||
	    bpf_skb_store_bytes(skb, at.outer_ip, &to_ip, 4, 0))
		return -1;
	return 0;
}

#endif /* BPFNET_ICMP_H */
