/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Bounds-checked header parsing shared by the XDP and TC programs. Every step checks against
 * data_end before it reads; variable-length headers (IPv4 IHL, TCP data offset) are validated before
 * the next header is located.
 */
#ifndef BPFNET_PARSE_H
#define BPFNET_PARSE_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* <linux/if_arp.h> drags in glibc headers, so the few ARP constants we need are spelled out here. */
#define BPFNET_ARPHRD_ETHER  1
#define BPFNET_ARPOP_REQUEST 1
#define BPFNET_ARPOP_REPLY   2

/* An Ethernet/IPv4 ARP packet, header and body together (RFC 826). */
struct arp_ipv4 {
	__be16 hw_type;
	__be16 proto_type;
	__u8 hw_len;
	__u8 proto_len;
	__be16 op;
	__u8 sender_mac[6];
	__be32 sender_ip;
	__u8 target_mac[6];
	__be32 target_ip;
} __attribute__((packed));

#define IP_FRAG_MASK 0x3fff /* MF flag and fragment offset */

enum parse_verdict {
	PARSE_OK = 0,
	PARSE_MALFORMED,
	PARSE_FRAGMENT,
	PARSE_OTHER_PROTOCOL,
	PARSE_EXT_HEADER, /* IPv6: an extension header the datapath does not walk (AH, ESP, mobility...) */
};

/* Where the headers of one IPv4 or IPv6 packet are, once validated. */
/* TCP's flags byte (the header's 14th: CWR ECE URG ACK PSH RST SYN FIN) and its SYN bit. */
#define TCP_FLAG_SYN_BYTE 0x02

static __always_inline __u8 tcp_flags_byte(const struct tcphdr *tcp)
{
	return ((const __u8 *)tcp)[13];
}

struct ip_packet {
	struct iphdr *ip; /* IPv4 only */
	__u32 l3_off;	  /* from the start of the frame */
	__u32 l4_off;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 ip6;	/* an IPv6 packet */
	__u8 tcp_flags; /* TCP's flags byte (TCP_FLAG_SYN_BYTE, ...); 0 for UDP */
	__u32 l4_end;	/* offset just past the UDP datagram (UDP length); for TCP the IP total length */
};

/* Copies len bytes at off out of the packet: an XDP or a TC program's (xdp is a constant once inlined). */
static __always_inline long load_packet_bytes(void *ctx, int xdp, __u32 off, void *to, __u32 len)
{
	if (xdp)
		return bpf_xdp_load_bytes(ctx, off, to, len);
	return bpf_skb_load_bytes(ctx, off, to, len);
}

/* Where the directly readable part of the frame ends (a TC program's skb may hold more in pages). */
static __always_inline void *ctx_data_end(void *ctx, int xdp)
{
	if (xdp)
		return (void *)(long)((struct xdp_md *)ctx)->data_end;
	return (void *)(long)((struct __sk_buff *)ctx)->data_end;
}

static __always_inline struct ethhdr *parse_eth(void *data, void *data_end)
{
	struct ethhdr *eth = data;

#ifndef BPFNET_BROKEN_BOUNDS_CHECK
	if ((void *)(eth + 1) > data_end)
		return NULL;
#else
	/* The kernel matrix's self-check (tests/vm/run.sh --self-check): no verifier may accept this. */
	(void)data_end;
#endif
	return eth;
}

/* The fixed IPv4 header, enough to read the addresses; full validation is ipv4_validate(). */
static __always_inline struct iphdr *parse_ipv4_fixed(struct ethhdr *eth, void *data_end)
{
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > data_end)
		return NULL;
	return ip;
}

/*
 * Validates an IPv4 header and its TCP or UDP header: version, IHL >= 5, total length within the frame,
 * not a fragment, L4 header present (TCP data offset >= 5, UDP length >= 8 and within the IP payload).
 * Fills pkt with offsets and ports. Anything else about the packet is for the receiver to judge.
 *
 * frame_len is the whole frame's length: data_end - data in XDP, skb->len in TC. In TC only the linear
 * head lies below data_end; the payload of a locally sent TCP segment sits in page fragments, so the
 * total length must be checked against skb->len, not against data_end.
 */
static __always_inline enum parse_verdict ipv4_validate(void *data, void *data_end, __u32 frame_len,
							struct iphdr *ip, struct ip_packet *pkt)
{
	__u32 ihl_bytes = ip->ihl * 4;
	__u32 ip_len = bpf_ntohs(ip->tot_len);
	__u32 frame_ip_bytes = frame_len - (__u32)((void *)ip - data);

	if (ip->version != 4 || ihl_bytes < sizeof(*ip) || ip_len < ihl_bytes || ip_len > frame_ip_bytes)
		return PARSE_MALFORMED;
	if (ip->frag_off & bpf_htons(IP_FRAG_MASK))
		return PARSE_FRAGMENT;

	pkt->ip = ip;
	pkt->l3_off = (void *)ip - data;
	pkt->l4_off = pkt->l3_off + ihl_bytes;
	pkt->proto = ip->protocol;
	pkt->l4_end = pkt->l3_off + ip_len;

	void *l4 = (void *)ip + ihl_bytes;
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;

		if ((void *)(tcp + 1) > data_end || tcp->doff < 5 || tcp->doff * 4 > ip_len - ihl_bytes)
			return PARSE_MALFORMED;
		pkt->sport = tcp->source;
		pkt->dport = tcp->dest;
		pkt->tcp_flags = tcp_flags_byte(tcp);
		return PARSE_OK;
	}
	if (ip->protocol == IPPROTO_UDP) {
		struct udphdr *udp = l4;

		if ((void *)(udp + 1) > data_end)
			return PARSE_MALFORMED;
		__u32 udp_len = bpf_ntohs(udp->len);
		if (udp_len < sizeof(*udp) || udp_len > ip_len - ihl_bytes)
			return PARSE_MALFORMED;
		pkt->sport = udp->source;
		pkt->dport = udp->dest;
		pkt->l4_end = pkt->l4_off + udp_len;
		return PARSE_OK;
	}
	return PARSE_OTHER_PROTOCOL;
}

static __always_inline struct arp_ipv4 *parse_arp_ipv4(struct ethhdr *eth, void *data_end)
{
	struct arp_ipv4 *arp = (void *)(eth + 1);

	if ((void *)(arp + 1) > data_end)
		return NULL;
	if (arp->hw_type != bpf_htons(BPFNET_ARPHRD_ETHER) || arp->proto_type != bpf_htons(ETH_P_IP) ||
	    arp->hw_len != 6 || arp->proto_len != 4)
		return NULL;
	return arp;
}

static __always_inline void mac_copy(__u8 *dst, const __u8 *src)
{
	/* By hand: clang-14 turns __builtin_memcpy/memcmp of odd sizes into calls the verifier refuses. */
	for (int i = 0; i < 6; i++)
		dst[i] = src[i];
}

/* A MAC address as one value (its bytes in memory order), to keep across a rewrite in one stack slot. */
static __always_inline __u64 mac_load(const __u8 *mac)
{
	__u64 value = 0;

	for (int i = 0; i < 6; i++)
		value |= (__u64)mac[i] << (8 * i);
	/* Opaque to the compiler, which would otherwise keep six bytes in six slots again. */
	asm volatile("" : "+r"(value));
	return value;
}

static __always_inline void mac_store(__u8 *dst, __u64 value)
{
	for (int i = 0; i < 6; i++)
		dst[i] = (__u8)(value >> (8 * i));
}

static __always_inline int mac_equal(const __u8 *a, const __u8 *b)
{
	__u8 diff = 0;

	for (int i = 0; i < 6; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

#endif /* BPFNET_PARSE_H */
