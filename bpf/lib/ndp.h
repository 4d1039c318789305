/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Neighbor Discovery (RFC 4861) for the service IPv6 addresses: what XDP learns from solicitations and
 * advertisements, and the responder at TC ingress, IPv6's counterpart of lib/arp.h under the same ownership
 * and liveness gate.
 */
#ifndef BPFNET_NDP_H
#define BPFNET_NDP_H

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include "parse.h"
#include "ipv6.h"
#include "maps.h"
#include "csum.h"
#include "liveness.h"
#include "events.h"
#include "neighbour.h"
#include "steer.h"
#include "trace.h"

#define ICMPV6_NEIGHBOUR_SOLICIT 135
#define ICMPV6_NEIGHBOUR_ADVERT	 136
#define ND_OPT_SOURCE_LL_ADDR	 1
#define ND_OPT_TARGET_LL_ADDR	 2
#define ND_MESSAGE_LEN		 24  /* type, code, checksum, flags (reserved in a solicitation), target */
#define ND_MAX_OPTIONS		 4   /* options looked at for the link-layer address */
#define ND_MAX_CHECKED_LEN	 128 /* longest message whose checksum is verified; a longer one is not ours */
#define ND_HOP_LIMIT		 255 /* RFC 4861 7.1: anything else came through a router */
#define ND_FLAG_SOLICITED	 0x40000000
#define ND_FLAG_OVERRIDE	 0x20000000

/* A neighbour solicitation or advertisement, as read by ndp_read(). */
struct ndp_msg {
	__u8 type;	 /* ICMPV6_NEIGHBOUR_SOLICIT or _ADVERT */
	__u8 has_lladdr; /* the source (solicitation) or target (advertisement) link-layer option */
	__u8 lladdr[6];
	__u8 override;	 /* an advertisement's Override flag */
	__u8 answers_us; /* a solicited advertisement to one of our service addresses (the loader's
			    solicitation) */
	__u8 pad[6];
	struct bpfnet_ip source; /* of the IPv6 header; unspecified (::) for a DAD probe */
	struct bpfnet_ip target;
};

/* The fixed part of the message, read in one call. */
struct nd_head {
	__u8 type;
	__u8 code;
	__be16 check;
	__be32 flags;
	struct in6_addr target;
};

static __always_inline int ipv6_is_multicast(const struct bpfnet_ip *ip)
{
	return (bpf_ntohl(ip->w[0]) >> 24) == 0xff;
}

/*
 * RFC 4861 7.1.1: the ICMPv6 checksum must be valid, over the pseudo-header (RFC 8200 8.1) and the message
 * [icmp_off, end). The kernel drops a message that fails it; so must the responder and what XDP learns, or a
 * frame the hosts' stacks ignore would still be answered and believed. Summed 8 bytes at a time (a message is
 * 24 bytes plus options of 8-byte units), up to ND_MAX_CHECKED_LEN: real solicitations and advertisements
 * carry one or two options; a longer message is left to the kernel.
 */
static __always_inline int nd_checksum_ok(void *ctx, int xdp, const struct bpfnet_ip *source,
					  const struct bpfnet_ip *dest, __u32 icmp_off, __u32 end)
{
	__u32 len = end - icmp_off;
	struct {
		__be32 len;
		__be32 next_header;
	} rest = {bpf_htonl(len), bpf_htonl(IPV6_NEXTHDR_ICMP)};
	struct bpfnet_ip s = *source, d = *dest;
	__s64 sum;

	if (len > ND_MAX_CHECKED_LEN || len % 8)
		return 0;
	sum = bpf_csum_diff(NULL, 0, s.w, sizeof(s), 0);
	sum = bpf_csum_diff(NULL, 0, d.w, sizeof(d), (__u32)sum);
	sum = bpf_csum_diff(NULL, 0, (__be32 *)&rest, sizeof(rest), (__u32)sum);
	for (int i = 0; i < ND_MAX_CHECKED_LEN / 8; i++) {
		__be32 chunk[2];
		__u32 off = icmp_off + i * 8;

		if (off >= end)
			break;
		if (load_packet_bytes(ctx, xdp, off, chunk, sizeof(chunk)))
			return 0;
		sum = bpf_csum_diff(NULL, 0, chunk, sizeof(chunk), (__u32)sum);
	}
	return csum_fold(sum) == 0; /* a valid message sums to 0xffff */
}

/*
 * Reads a neighbour solicitation or advertisement that passes RFC 4861's checks (7.1.1, 7.1.2): ICMPv6 right
 * after the fixed header, hop limit 255, code 0, a valid checksum, at least the fixed message, a unicast
 * target; a DAD probe (from ::) only to a multicast group and without a source link-layer option. Returns -1
 * for anything else. The link-layer option is looked for among the first ND_MAX_OPTIONS options; an option of
 * length 0 ends the message as invalid.
 */
static __always_inline int ndp_read(void *ctx, int xdp, void *data, __u32 frame_len, struct ipv6hdr *ip6,
				    struct ndp_msg *nd)
{
	__u32 l3_off = (void *)ip6 - data;
	__u32 icmp_off = l3_off + IPV6_HEADER_LEN;
	__u32 end = icmp_off + bpf_ntohs(ip6->payload_len);
	struct nd_head head;

	if (ip6->version != 6 || ip6->nexthdr != IPV6_NEXTHDR_ICMP || ip6->hop_limit != ND_HOP_LIMIT ||
	    end > frame_len || icmp_off + ND_MESSAGE_LEN > end ||
	    load_packet_bytes(ctx, xdp, icmp_off, &head, sizeof(head)))
		return -1;
	if ((head.type != ICMPV6_NEIGHBOUR_SOLICIT && head.type != ICMPV6_NEIGHBOUR_ADVERT) || head.code != 0)
		return -1;
	nd->type = head.type;
	nd->target = ip_of(&head.target);
	nd->source = ip_of(&ip6->saddr);
	nd->has_lladdr = 0;
	nd->override = (head.flags & bpf_htonl(ND_FLAG_OVERRIDE)) != 0;
	struct bpfnet_ip dest = ip_of(&ip6->daddr);
	nd->answers_us = head.type == ICMPV6_NEIGHBOUR_ADVERT &&
			 (head.flags & bpf_htonl(ND_FLAG_SOLICITED)) &&
			 bpf_map_lookup_elem(&service_ips, &dest) != NULL;
	/* An IPv4-mapped address would name an IPv4 service IP's entry: never NDP's. */
	if (ipv6_is_multicast(&nd->target) || ip_is_v4(&nd->target) || ipv6_is_multicast(&nd->source) ||
	    ip_is_v4(&nd->source))
		return -1;
	if (head.type == ICMPV6_NEIGHBOUR_ADVERT && ipv6_is_multicast(&dest) &&
	    (head.flags & bpf_htonl(ND_FLAG_SOLICITED)))
		return -1;
	if (!nd_checksum_ok(ctx, xdp, &nd->source, &dest, icmp_off, end))
		return -1;

	__u8 wanted = head.type == ICMPV6_NEIGHBOUR_SOLICIT ? ND_OPT_SOURCE_LL_ADDR : ND_OPT_TARGET_LL_ADDR;
	__u32 off = icmp_off + ND_MESSAGE_LEN;
	for (int i = 0; i < ND_MAX_OPTIONS; i++) {
		__u8 opt[8];

		if (off + 2 > end)
			break;
		if (load_packet_bytes(ctx, xdp, off, opt, 2) || opt[1] == 0 || off + opt[1] * 8 > end)
			return -1;
		if (opt[0] == wanted && opt[1] == 1 && !nd->has_lladdr) {
			if (load_packet_bytes(ctx, xdp, off, opt, sizeof(opt)))
				return -1;
			mac_copy(nd->lladdr, opt + 2);
			nd->has_lladdr = 1;
		}
		off += opt[1] * 8;
	}
	if (ip_is_unset(&nd->source) && (!ipv6_is_multicast(&dest) || nd->has_lladdr))
		return -1;
	return 0;
}

/*
 * What a solicitation or advertisement tells the datapath, whoever it is for (XDP, like arp_observe): where
 * its sender is, or another node claiming a service address this node answers for: an advertisement for it
 * from another MAC, or another node's duplicate address detection probe for it (RFC 4862 5.4: a node about to
 * use the address). Both are conflicts.
 */
static __always_inline void ndp_observe(const struct ndp_msg *nd, const __u8 *frame_source,
					const struct bpfnet_iface *cfg)
{
	struct bpfnet_service_ip *claimed = bpf_map_lookup_elem(&service_ips, &nd->target);
	int ours = claimed && (claimed->flags & BPFNET_SERVICE_IP_ACTIVE) && loader_alive(cfg);
	const __u8 *claimant = nd->has_lladdr ? nd->lladdr : frame_source;

	if (nd->type == ICMPV6_NEIGHBOUR_SOLICIT) {
		if (ip_is_unset(&nd->source)) {
			if (ours && !mac_equal(frame_source, cfg->nic_mac))
				report_conflict(&nd->target, frame_source);
			return;
		}
		/* A solicitation from a service address is another owner resolving a neighbour (as an ARP
		 * request in its name is). */
		observe_sender(cfg, &nd->source, claimant, nd->has_lladdr ? nd->lladdr : NULL, &nd->target,
			       1);
		return;
	}
	if (!claimed) {
		/* RFC 4861 7.2.5: an advertisement updates an entry that exists, and changes its address only
		 * with the Override flag; it creates none, but for the answer to the loader's solicitation
		 * (the kernel has an incomplete entry waiting for that one; the loader's is the miss it
		 * reported). */
		if (nd->has_lladdr && (neighbour_known(&nd->target) ? nd->override : nd->answers_us))
			learn_neighbour(cfg, &nd->target, nd->lladdr, NEIGHBOUR_FROM_ARP, &nd->target, 1);
		return;
	}
	if (ours && !mac_equal(claimant, cfg->nic_mac))
		report_conflict(&nd->target, claimant);
}

/* A neighbour advertisement, in three parts stored one after the other (each aligned for the checksum). */
struct na_icmp {
	struct nd_head na;
	__u8 opt_type;
	__u8 opt_len;
	__u8 opt_mac[6];
};
struct na_frame {
	struct ethhdr eth;
	struct ipv6hdr ip6;
	struct na_icmp icmp;
};
#define NA_FRAME_LEN (sizeof(struct ethhdr) + sizeof(struct ipv6hdr) + sizeof(struct na_icmp))

/* The ICMPv6 pseudo-header (RFC 8200 8.1). */
struct icmp6_pseudo {
	struct in6_addr saddr;
	struct in6_addr daddr;
	__be32 len;
	__be32 nexthdr;
};

/* The advertisement's ICMPv6 checksum, over the pseudo-header and the message. Returns -1 if a helper failed.
 */
static __always_inline int na_checksum(struct na_frame *f)
{
	struct icmp6_pseudo pseudo = {
		.saddr = f->ip6.saddr,
		.daddr = f->ip6.daddr,
		.len = bpf_htonl(sizeof(f->icmp)),
		.nexthdr = bpf_htonl(IPV6_NEXTHDR_ICMP),
	};
	__s64 sum = bpf_csum_diff(NULL, 0, (__be32 *)&pseudo, sizeof(pseudo), 0);

	if (sum < 0)
		return -1;
	f->icmp.na.check = 0;
	sum = bpf_csum_diff(NULL, 0, (__be32 *)&f->icmp, sizeof(f->icmp), (__u32)sum);
	if (sum < 0)
		return -1;
	f->icmp.na.check = csum_fold(sum);
	return 0;
}

/*
 * The advertisement answering nd for the service address, from the NIC's MAC (RFC 4861 7.2.4): to the
 * soliciting host, solicited and overriding; for another node's DAD probe (from ::), to all nodes, not
 * solicited (the owner defends its address). dest_mac: the host's link-layer option, else the frame's source.
 */
static __always_inline void na_build(struct na_frame *f, const struct ndp_msg *nd, const __u8 *frame_source,
				     const __u8 *nic_mac)
{
	int dad = ip_is_unset(&nd->source);
	const __u8 all_nodes_mac[6] = {0x33, 0x33, 0, 0, 0, 1};

	__builtin_memset(f, 0, sizeof(*f));
	mac_copy(f->eth.h_dest, dad ? all_nodes_mac : (nd->has_lladdr ? nd->lladdr : frame_source));
	mac_copy(f->eth.h_source, nic_mac);
	f->eth.h_proto = bpf_htons(ETH_P_IPV6);
	f->ip6.version = 6;
	f->ip6.payload_len = bpf_htons(sizeof(f->icmp));
	f->ip6.nexthdr = IPV6_NEXTHDR_ICMP;
	f->ip6.hop_limit = ND_HOP_LIMIT;
	__builtin_memcpy(&f->ip6.saddr, &nd->target, sizeof(nd->target));
	if (dad) {
		f->ip6.daddr.in6_u.u6_addr32[0] = bpf_htonl(0xff020000);
		f->ip6.daddr.in6_u.u6_addr32[3] = bpf_htonl(1);
	} else {
		__builtin_memcpy(&f->ip6.daddr, &nd->source, sizeof(nd->source));
	}
	f->icmp.na.type = ICMPV6_NEIGHBOUR_ADVERT;
	f->icmp.na.flags = bpf_htonl(ND_FLAG_OVERRIDE | (dad ? 0 : ND_FLAG_SOLICITED));
	__builtin_memcpy(&f->icmp.na.target, &nd->target, sizeof(nd->target));
	f->icmp.opt_type = ND_OPT_TARGET_LL_ADDR;
	f->icmp.opt_len = 1;
	mac_copy(f->icmp.opt_mac, nic_mac);
}

/*
 * The NDP responder (at TC ingress), for a solicitation asking for a service address, while this node's
 * loader is alive: on the owner the frame becomes the advertisement (resized to it) and leaves through the
 * NIC's egress, like the ARP answer; every other node drops it (one answer on the LAN, as for ARP). With the
 * loader gone it is handed on to the kernel.
 */
static __always_inline int tc_answer_ns(struct __sk_buff *skb, const struct ndp_msg *nd,
					const __u8 *frame_source, const struct bpfnet_service_ip *service,
					const struct bpfnet_iface *cfg)
{
	struct na_frame f;
	__u8 source[6];

	if (!loader_alive(cfg)) {
		decide(BPFNET_CTR_NDP_STALE_HEARTBEAT);
		return BPFNET_TC_NEXT;
	}
	if (!(service->flags & BPFNET_SERVICE_IP_ACTIVE)) {
		decide(BPFNET_CTR_NDP_NOT_ACTIVE);
		return TC_ACT_SHOT;
	}
	mac_copy(source, frame_source); /* the frame changes below */
	na_build(&f, nd, source, cfg->nic_mac);
	if (na_checksum(&f) || bpf_skb_change_tail(skb, NA_FRAME_LEN, 0) ||
	    bpf_skb_store_bytes(skb, 0, &f.eth, sizeof(f.eth), 0) ||
	    bpf_skb_store_bytes(skb, sizeof(f.eth), &f.ip6, sizeof(f.ip6), 0) ||
	    bpf_skb_store_bytes(skb, sizeof(f.eth) + sizeof(f.ip6), &f.icmp, sizeof(f.icmp), 0)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	decide(BPFNET_CTR_NDP_REPLY);
	return bpf_redirect(cfg->nic_ifindex, 0);
}

#endif /* BPFNET_NDP_H */
