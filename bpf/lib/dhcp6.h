/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The DHCPv6 relay agent (RFC 8415 section 19). A client's message to All_DHCP_Relay_Agents_and_Servers
 * (ff02::1:2, port 547), or a Relay-Forward from a relay on the LAN to the service address, goes into the
 * pod wrapped in a Relay-Forward from the service address: link-address = the service address (the server
 * picks the subnet by it), peer-address = where the message came from, and an Interface-ID option holding
 * the frame's source MAC. The server's Relay-Reply to the service address is unwrapped, and its inner
 * message sent to the peer-address (port 546, or 547 for a relay's Relay-Reply) at the MAC the server
 * echoed in the Interface-ID: a reply goes back to the frame that asked for it, whatever address that
 * frame claimed.
 *
 * Wrapping and unwrapping change the UDP payload's length. A request whose checksum is computed here gets its
 * Relay-Forward header in room made in front of the message (bpf_skb_adjust_room); elsewhere the UDP header
 * stays where it is (the message is moved within the payload and the tail grown or cut with
 * bpf_skb_change_tail), so a CHECKSUM_PARTIAL skb's checksum start stays right. The UDP checksum is computed
 * from the skb's checksum state (l4_check_after: a CHECKSUM_PARTIAL skb's field holds the pseudo-header's sum
 * only, so the payload is not summed for it), or updated by the kernel's helpers where the state asks for
 * them. A Relay-Forward made in front gets its new headers built in a copy and written directly after the
 * room is made. A Relay-Reply is copied with its frame's headers; the frame sent is built in the copy in
 * front of the inner message and written back directly once the tail is cut.
 */
#ifndef BPFNET_DHCP6_H
#define BPFNET_DHCP6_H

#include <linux/if_packet.h>
#include <linux/pkt_cls.h>
#include "parse.h"
#include "ipv6.h"
#include "maps.h"
#include "iface.h"
#include "csum.h"
#include "nat.h"
#include "steer.h"
#include "trace.h"

#define DHCP6_CLIENT_PORT	   546
#define DHCP6_SERVER_PORT	   547
/* Message types (RFC 8415 section 7.3). */
#define DHCP6_SOLICIT		   1
#define DHCP6_ADVERTISE		   2
#define DHCP6_REQUEST		   3
#define DHCP6_CONFIRM		   4
#define DHCP6_RENEW		   5
#define DHCP6_REBIND		   6
#define DHCP6_REPLY		   7
#define DHCP6_RELEASE		   8
#define DHCP6_DECLINE		   9
#define DHCP6_RECONFIGURE	   10
#define DHCP6_INFORMATION_REQUEST  11
#define DHCP6_RELAY_FORW	   12
#define DHCP6_RELAY_REPL	   13
/* Options (RFC 8415 section 21). */
#define DHCP6_OPT_RELAY_MSG	   9
#define DHCP6_OPT_INTERFACE_ID	   18
#define DHCP6_OPT_CLIENT_LINKLAYER 79 /* RFC 6939 */

/* msg-type, hop-count, link-address, peer-address (RFC 8415 section 9). */
#define DHCP6_RELAY_HEAD_LEN	   34
#define DHCP6_RELAY_LINK	   2
#define DHCP6_RELAY_PEER	   18
#define DHCP6_OPT_HEAD_LEN	   4
#define DHCP6_INTERFACE_ID_LEN	   6 /* the MAC the relayed frame came from */
/* The Client Link-Layer Address option's data: hardware type 1 (Ethernet), the client's MAC. */
#define DHCP6_CLIENT_LINKLAYER_LEN 8
/*
 * The options in front of the Relay Message, the same length whatever was relayed so that the message has one
 * place: for a client's message the Interface-ID and the Client Link-Layer Address (RFC 6939: servers keyed
 * by MAC, as ironic-image's dnsmasq with dhcp-host and Kea's hw-address reservations, read the client's MAC
 * there); for a relay's Relay-Forward (whose sender is the relay, not the client) the Interface-ID alone, its
 * MAC followed by as many zero bytes. The Relay-Reply's Interface-ID is either.
 */
#define DHCP6_OPTIONS_LEN                                                                                    \
	(DHCP6_OPT_HEAD_LEN + DHCP6_INTERFACE_ID_LEN + DHCP6_OPT_HEAD_LEN + DHCP6_CLIENT_LINKLAYER_LEN)
#define DHCP6_PADDED_INTERFACE_ID_LEN (DHCP6_OPTIONS_LEN - DHCP6_OPT_HEAD_LEN)
/* What wrapping adds: the relay header, the options above, the Relay Message option's header. A multiple of
 * 4: the message after it keeps its words' places in the checksum, and the header is summed in 4-byte words.
 */
#define DHCP6_WRAP_LEN		      (DHCP6_RELAY_HEAD_LEN + DHCP6_OPTIONS_LEN + DHCP6_OPT_HEAD_LEN)
_Static_assert(DHCP6_WRAP_LEN % 4 == 0, "dhcp6_wrap_sum sums the relay header in 4-byte words");
/* The largest UDP payload relayed either way (more than a 1500-byte LAN carries); a power of two. */
#define DHCP6_MAX_MSG	2048
/* bpf_csum_diff sums at most 512 bytes per call on the oldest kernels of the matrix. */
#define DHCP6_SUM_CHUNK 512
_Static_assert(DHCP6_SUM_CHUNK == 512, "dhcp6_sum masks a chunk with 511");

/* The frame's headers in front of a DHCPv6 message: Ethernet, the fixed IPv6 header (tc_pod_dhcp6 takes no
 * extension headers), UDP; the copy keeps room for them before msg[]. */
#define DHCP6_FRAME_HEAD_LEN (sizeof(struct ethhdr) + IPV6_HEADER_LEN + sizeof(struct udphdr))
#define DHCP6_HEAD_ROOM	     64

struct dhcp6_scratch {
	/* A Relay-Reply's frame headers, copied with it so that they end where msg[] starts; the headers of
	 * the frame sent are built in front of the inner message, in msg[] or here (dhcp6_relay_reply). A
	 * Relay-Forward made in front has its frame headers built here, in front of its relay header in msg[]
	 * (dhcp6_forward_in_front). */
	__u8 head[DHCP6_HEAD_ROOM];
	/* The message as it is read or built. Twice DHCP6_MAX_MSG: an offset below DHCP6_MAX_MSG plus a
	 * length up to it stays inside, which is what the verifier can prove; 4 more for the padding after
	 * one. */
	__u8 msg[2 * DHCP6_MAX_MSG + 4];
	/* The Relay-Reply's option walk (dhcp6_option_step). */
	__u32 pos;
	__u32 end;
	__u32 relay_msg_off; /* the Relay Message option's data, in msg[]; 0: none */
	__u32 relay_msg_len;
	__u32 interface_id_off; /* the Interface-ID option's data; 0: none */
	__u32 interface_id_len;
	__u32 broken;
	/* Where the inner message goes, read from the Relay-Reply before the message is moved. */
	struct bpfnet_ip peer;
	__u8 peer_mac[6];
	__u8 pad[2];
};

BPFNET_SCRATCH_MAP(dhcp6_scratch, struct dhcp6_scratch);

static __always_inline struct dhcp6_scratch *dhcp6_state(void)
{
	return scratch_entry(&dhcp6_scratch);
}

/* fe80::/10: where clients send from (RFC 8415 section 13.1). */
static __always_inline int ip6_link_local(const struct bpfnet_ip *ip)
{
	return (ip->w[0] & bpf_htonl(0xffc00000)) == bpf_htonl(0xfe800000);
}

/* A message a client sends to servers (RFC 8415 section 7.3); what the relay wraps as it is. */
static __always_inline int dhcp6_client_message(__u8 type)
{
	return type == DHCP6_SOLICIT || type == DHCP6_REQUEST || type == DHCP6_CONFIRM ||
	       type == DHCP6_RENEW || type == DHCP6_REBIND || type == DHCP6_RELEASE ||
	       type == DHCP6_DECLINE || type == DHCP6_INFORMATION_REQUEST;
}

/* A message a server sends to clients. */
static __always_inline int dhcp6_server_message(__u8 type)
{
	return type == DHCP6_ADVERTISE || type == DHCP6_REPLY || type == DHCP6_RECONFIGURE;
}

/*
 * The ones'-complement sum of msg[from, from + len) (from below DHCP6_MAX_MSG, len a multiple of 4 up to
 * DHCP6_MAX_MSG), as the words of a payload that starts at msg[from] (the kernel's sum keeps to its buffer's
 * start at any address), in chunks bpf_csum_diff takes. The bytes past the message up to len must be zero:
 * they pad it as the UDP checksum does. Negative when the helper refused.
 */
static __always_inline __s64 dhcp6_sum(const struct dhcp6_scratch *s, __u32 from, __u32 len)
{
	__s64 sum = 0;

	for (__u32 start = 0; start < DHCP6_MAX_MSG; start += DHCP6_SUM_CHUNK) {
		if (start >= len)
			break;
		__u32 size = len - start;
		if (size > DHCP6_SUM_CHUNK)
			size = DHCP6_SUM_CHUNK;
		/* Restate 1 <= size <= DHCP6_SUM_CHUNK where the verifier sees it. */
		asm volatile("%[size] += -1; %[size] &= 511; %[size] += 1" : [size] "+r"(size));
		__u32 at = (from + start) & (2 * DHCP6_MAX_MSG - 1);
		if (at >= DHCP6_MAX_MSG + DHCP6_MAX_MSG - DHCP6_SUM_CHUNK)
			return -1;
		sum = bpf_csum_diff(NULL, 0, (__be32 *)&s->msg[at], size, (__wsum)sum);
		if (sum < 0)
			return -1;
	}
	return sum;
}

/* Zeroes the 4 bytes after msg[end): the padding dhcp6_sum() sums over. */
static __always_inline void dhcp6_zero_after(struct dhcp6_scratch *s, __u32 end)
{
	__u32 at = end & (2 * DHCP6_MAX_MSG - 1); /* end itself: below 2 * DHCP6_MAX_MSG */

	for (int i = 0; i < 4; i++)
		s->msg[at + i] = 0;
}

static __always_inline __u32 round_up4(__u32 n)
{
	return (n + 3) & ~3u;
}

/*
 * The hop limit of the Relay-Forwards the relay sends (the kernel's default for a host's own datagrams): the
 * Relay-Forward is the relay's own datagram, not the client's, whose 1 for ff02::1:2 the node's forwarding,
 * on the way through its routing, would not pass on.
 */
#define DHCP6_RELAY_HOP_LIMIT 64

/* Where a relayed datagram goes: its new addresses and ports. */
struct udp6_ends {
	struct bpfnet_ip saddr;
	struct bpfnet_ip daddr;
	__be16 sport;
	__be16 dport;
};

/* A relayed datagram's changes to its UDP checksum, by what they change. */
struct udp6_csum_change {
	__u32 addrs; /* the addresses' change (pseudo-header) */
	__u32 len;   /* the length's, in the pseudo-header and the UDP header alike */
	__u32 rest;  /* the ports', the length's in the UDP header and the payload's */
};

/*
 * The UDP checksum's update where the kernel's helpers must make it (l4_check_after): what the
 * pseudo-header carries with BPF_F_PSEUDO_HDR, the rest without, and the address change given back to
 * skb->csum (l4_csum_address() says why).
 */
static __always_inline int udp6_csum_by_helpers(struct __sk_buff *skb, const struct ip_packet *pkt,
						const struct udp6_csum_change *change)
{
	if (bpf_l4_csum_replace(skb, l4_csum_off(pkt), 0, change->rest, BPF_F_MARK_MANGLED_0) ||
	    bpf_l4_csum_replace(skb, l4_csum_off(pkt), 0, csum_add32(change->len, change->addrs),
				BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0))
		return -1;
	bpf_csum_update(skb, change->addrs);
	return 0;
}

/*
 * A relayed request's new length (old_len -> new_len), addresses (saddr, daddr -> to), ports (pkt's -> to)
 * and hop limit (DHCP6_RELAY_HOP_LIMIT), with the UDP checksum, which also takes payload_diff (the caller's
 * change to the payload). The length is in the UDP header, in the pseudo-header and in the IPv6 payload
 * length (the extension headers before the datagram included). The checksum is computed here
 * (l4_check_after); where the skb's state asks for the helpers, udp6_csum_by_helpers() updates it.
 * tc_nic_ingress only: the headers are written where they lie in the linear part. The packet's pointers are
 * invalid afterwards.
 */
static __always_inline int udp6_readdress(struct __sk_buff *skb, const struct ip_packet *pkt, __u32 old_len,
					  __u32 new_len, const struct bpfnet_ip *saddr,
					  const struct bpfnet_ip *daddr, const struct udp6_ends *to,
					  __u32 payload_diff)
{
	struct udphdr udp = {.source = to->sport, .dest = to->dport, .len = bpf_htons((__u16)new_len)};
	__be16 payload = bpf_htons((__u16)(pkt->l4_off - pkt->l3_off - IPV6_HEADER_LEN + new_len));
	struct udp6_csum_change change = {
		.addrs = csum_add32(csum_diff16(saddr, &to->saddr), csum_diff16(daddr, &to->daddr)),
		.len = csum_word_diff(bpf_htons((__u16)old_len), udp.len)};
	change.rest = csum_add32(payload_diff, change.len + csum_word_diff(pkt->sport, udp.source) +
						       csum_word_diff(pkt->dport, udp.dest));
	__sum16 *check_at = nat_direct_at(skb, l4_csum_off(pkt), sizeof(*check_at));
	int by_helper =
		!check_at || l4_check_after(skb_csum_state(skb), IPPROTO_UDP, *check_at,
					    csum_add32(change.len, change.addrs), change.rest, &udp.check);

	if (by_helper && udp6_csum_by_helpers(skb, pkt, &change))
		return -1;
	struct ipv6hdr *ip6 = nat_direct_at(skb, pkt->l3_off, sizeof(*ip6));
	struct udphdr *at = nat_direct_at(skb, pkt->l4_off, sizeof(*at));
	if (!ip6 || !at)
		return -1;
	ip6->payload_len = payload;
	ip6->hop_limit = DHCP6_RELAY_HOP_LIMIT;
	__builtin_memcpy(&ip6->saddr, &to->saddr, sizeof(to->saddr));
	__builtin_memcpy(&ip6->daddr, &to->daddr, sizeof(to->daddr));
	at->source = udp.source;
	at->dest = udp.dest;
	at->len = udp.len;
	if (!by_helper)
		at->check = udp.check;
	return 0;
}

/* Writes msg[0, len) as the UDP payload of a datagram that now ends there. */
static __always_inline int udp6_store_payload(struct __sk_buff *skb, const struct ip_packet *pkt,
					      const struct dhcp6_scratch *s, __u32 len)
{
	__u32 off = pkt->l4_off + sizeof(struct udphdr);

	if (len == 0 || len > DHCP6_MAX_MSG)
		return -1;
	/* Restate 1 <= len <= DHCP6_MAX_MSG where the verifier sees it. */
	asm volatile("%[len] += -1; %[len] &= 2047; %[len] += 1" : [len] "+r"(len));
	if (bpf_skb_change_tail(skb, off + len, 0))
		return -1;
	return bpf_skb_store_bytes(skb, off, s->msg, len, 0);
}

static __always_inline int dhcp6_relay_configured(const struct bpfnet_ip *relay)
{
	return bpf_map_lookup_elem(&dhcp_relays, relay) != NULL;
}

static __always_inline void put_be16(__u8 *at, __u16 value)
{
	at[0] = value >> 8;
	at[1] = value & 0xff;
}

static __always_inline __u32 get_be16(const __u8 *at)
{
	return (__u32)at[0] << 8 | at[1];
}

/*
 * Builds the Relay-Forward header in msg[0, DHCP6_WRAP_LEN) in front of the n-byte message already at
 * msg[DHCP6_WRAP_LEN]. Returns the drop counter when the message may not be relayed, BPFNET_CTR_MAX when
 * it is wrapped.
 */
static __always_inline enum bpfnet_counter dhcp6_wrap(struct dhcp6_scratch *s, __u32 n,
						      const struct bpfnet_iface *cfg,
						      const struct bpfnet_ip *service,
						      const struct bpfnet_ip *peer, const __u8 *peer_mac)
{
	__u8 type = s->msg[DHCP6_WRAP_LEN];
	__u8 hops = 0;
	struct bpfnet_ip link = *service;

	if (type == DHCP6_RELAY_FORW) {
		/* A relay on the LAN (RFC 8415 19.1.2): replies go to it, so only a configured one. */
		if (n < DHCP6_RELAY_HEAD_LEN)
			return BPFNET_CTR_DROP_DHCP6_MALFORMED;
		if (!dhcp6_relay_configured(peer))
			return BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY;
		hops = s->msg[DHCP6_WRAP_LEN + 1];
		if (hops >= cfg->dhcp_max_hops)
			return BPFNET_CTR_DROP_DHCP_HOPS;
		hops++;
		/* Its global address names its link already; a link-local one needs ours. */
		if (!ip6_link_local(peer))
			__builtin_memset(&link, 0, sizeof(link));
	} else if (!dhcp6_client_message(type)) {
		return BPFNET_CTR_DROP_DHCP6_MALFORMED;
	}
	s->msg[0] = DHCP6_RELAY_FORW;
	s->msg[1] = hops;
	__builtin_memcpy(&s->msg[DHCP6_RELAY_LINK], &link, sizeof(link));
	__builtin_memcpy(&s->msg[DHCP6_RELAY_PEER], peer, sizeof(*peer));
	__u8 *opt = &s->msg[DHCP6_RELAY_HEAD_LEN];
	put_be16(opt, DHCP6_OPT_INTERFACE_ID);
	if (type == DHCP6_RELAY_FORW) {
		put_be16(opt + 2, DHCP6_PADDED_INTERFACE_ID_LEN);
		__builtin_memset(opt + DHCP6_OPT_HEAD_LEN, 0, DHCP6_PADDED_INTERFACE_ID_LEN);
		mac_copy(opt + DHCP6_OPT_HEAD_LEN, peer_mac);
	} else {
		put_be16(opt + 2, DHCP6_INTERFACE_ID_LEN);
		mac_copy(opt + DHCP6_OPT_HEAD_LEN, peer_mac);
		opt += DHCP6_OPT_HEAD_LEN + DHCP6_INTERFACE_ID_LEN;
		put_be16(opt, DHCP6_OPT_CLIENT_LINKLAYER);
		put_be16(opt + 2, DHCP6_CLIENT_LINKLAYER_LEN);
		put_be16(opt + DHCP6_OPT_HEAD_LEN, 1); /* ARP hardware type: Ethernet */
		mac_copy(opt + DHCP6_OPT_HEAD_LEN + 2, peer_mac);
	}
	put_be16(&s->msg[DHCP6_WRAP_LEN - DHCP6_OPT_HEAD_LEN], DHCP6_OPT_RELAY_MSG);
	put_be16(&s->msg[DHCP6_WRAP_LEN - 2], (__u16)n);
	return BPFNET_CTR_MAX;
}

/*
 * The ones'-complement sum of the relay header dhcp6_wrap() built in msg[0, DHCP6_WRAP_LEN), summed here in
 * 4-byte words (dhcp6_sum()'s, once folded): the helper's call cost more than its 60 bytes.
 */
static __always_inline __u32 dhcp6_wrap_sum(const struct dhcp6_scratch *s)
{
	__u64 sum = 0;

#pragma unroll
	for (__u32 at = 0; at < DHCP6_WRAP_LEN; at += 4)
		sum += *(const __u32 *)&s->msg[at];
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (__u32)sum + (__u32)(sum >> 32);
	/* Summed here: the compiler may otherwise move the 15 loads to where the sum is used and keep them
	 * live across the calls between, spilled past the stack's 512 bytes (it did, for a source mutant). */
	asm volatile("" : "+r"(sum));
	return (__u32)sum;
}

/* dhcp6_forward_in_front() does not apply: nothing was changed, the message goes the other way. */
#define DHCP6_AT_TAIL 1

/*
 * Writes the Relay-Forward's frame headers and relay header, built in the copy at frame, over the frame's
 * first bytes: directly where the linear part holds them (after bpf_skb_adjust_room it does: the headers
 * moved, the room made), in 8-byte words and then the last 8 bytes (the copy's and the frame's are 2-aligned;
 * the verifier takes loads and stores at any alignment where the CPU does, as x86_64 and arm64 do), else by
 * the helper's store. Direct, the 122 bytes cost less than the helper's call and copy (0.92 of its time in
 * 2-byte words, path_cost, 2026-12-07).
 */
static __always_inline int dhcp6_write_forward_head(struct __sk_buff *skb, const __u8 *frame)
{
	const __u32 total = DHCP6_FRAME_HEAD_LEN + DHCP6_WRAP_LEN;
	__u8 *out = nat_direct_at(skb, 0, total);

	if (!out)
		return bpf_skb_store_bytes(skb, 0, frame, total, 0) ? -1 : 0;
#pragma unroll
	for (__u32 at = 0; at + 8 <= total; at += 8)
		*(__u64 *)(out + at) = *(const __u64 *)(frame + at);
	*(__u64 *)(out + total - 8) = *(const __u64 *)(frame + total - 8);
	return 0;
}

/*
 * The Relay-Forward made where the frame lies: room for the header is made after the IPv6 header
 * (bpf_skb_adjust_room moves the Ethernet and IPv6 headers towards the frame's head, into its headroom) and
 * the frame's headers, built in the copy in front of the header dhcp6_wrap() left in msg[], are written
 * over the frame's first bytes with it (dhcp6_write_forward_head). The client's message is neither read nor
 * written, and a frame with headroom (any that XDP saw) is not reallocated, as growing its tail does. The
 * headers are read where they lie, in the linear part: what stays of them (the EtherType, IPv6's version,
 * traffic class and flow label) is copied into the headers built, everything else is written anew (the next
 * header is UDP: nothing else takes this way). Only where the checksum is computed here (CHECKSUM_NONE or
 * UNNECESSARY) and the datagram follows the fixed IPv6 header: the UDP header moves, which a CHECKSUM_PARTIAL
 * skb's checksum start would not follow. Returns DHCP6_AT_TAIL, having changed nothing, where it does not
 * apply; -1 when a helper refused. wrap_sum: the header's sum (dhcp6_wrap_sum); saddr, daddr: the
 * datagram's addresses as it came.
 */
static __always_inline int dhcp6_forward_in_front(struct __sk_buff *skb, const struct ip_packet *pkt,
						  struct dhcp6_scratch *s, __u32 n, __u32 wrap_sum,
						  const struct bpfnet_ip *saddr,
						  const struct bpfnet_ip *daddr, const struct udp6_ends *to,
						  const struct bpfnet_pod_link *link)
{
	const __u32 state = skb_csum_state(skb);
	const __u8 *was = nat_direct_at(skb, 0, DHCP6_FRAME_HEAD_LEN);

	if ((state != SKB_CSUM_NONE && state != SKB_CSUM_UNNECESSARY) ||
	    pkt->l4_off + sizeof(struct udphdr) != DHCP6_FRAME_HEAD_LEN || !was)
		return DHCP6_AT_TAIL;
	const struct udphdr *was_udp = (const void *)(was + sizeof(struct ethhdr) + IPV6_HEADER_LEN);
	__be16 len = bpf_htons((__u16)(sizeof(struct udphdr) + DHCP6_WRAP_LEN + n));
	struct udp6_csum_change change = {
		.addrs = csum_add32(csum_diff16(saddr, &to->saddr), csum_diff16(daddr, &to->daddr)),
		.len = csum_word_diff(was_udp->len, len)};
	change.rest = csum_add32(wrap_sum, change.len + csum_word_diff(was_udp->source, to->sport) +
						   csum_word_diff(was_udp->dest, to->dport));
	__sum16 check;
	if (l4_check_after(state, IPPROTO_UDP, was_udp->check, csum_add32(change.len, change.addrs),
			   change.rest, &check))
		return DHCP6_AT_TAIL;
	/* The copy's headers end where msg[] starts (IPv6's at a multiple of 4 in it). */
	__u8 *frame = &s->head[DHCP6_HEAD_ROOM - DHCP6_FRAME_HEAD_LEN];
	struct ipv6hdr *ip6 = (void *)(frame + sizeof(struct ethhdr));
	struct udphdr *udp = (void *)(frame + sizeof(struct ethhdr) + IPV6_HEADER_LEN);
	mac_copy(frame, link->pod_mac);
	mac_copy(frame + ETH_ALEN, link->veth_mac);
	/* The EtherType and IPv6's version, traffic class and flow label. */
#pragma unroll
	for (__u32 i = 2 * ETH_ALEN; i < sizeof(struct ethhdr) + 4; i++)
		frame[i] = was[i];
	ip6->payload_len = len; /* no extension headers: the datagram is the payload */
	ip6->nexthdr = IPPROTO_UDP;
	ip6->hop_limit = DHCP6_RELAY_HOP_LIMIT;
	__builtin_memcpy(&ip6->saddr, &to->saddr, sizeof(to->saddr));
	__builtin_memcpy(&ip6->daddr, &to->daddr, sizeof(to->daddr));
	udp->source = to->sport;
	udp->dest = to->dport;
	udp->len = len;
	udp->check = check;
	if (bpf_skb_adjust_room(skb, DHCP6_WRAP_LEN, BPF_ADJ_ROOM_NET, 0))
		return -1;
	return dhcp6_write_forward_head(skb, frame);
}

/*
 * The Relay-Forward made by moving the message: it is read behind the header in msg[], the payload written
 * back whole with the tail grown, and the headers rewritten where they lie (any skb's checksum state). saddr,
 * daddr: the datagram's addresses as it came.
 */
static __always_inline int dhcp6_forward_at_tail(struct __sk_buff *skb, const struct ip_packet *pkt,
						 struct dhcp6_scratch *s, __u32 n, __u32 wrap_sum,
						 const struct bpfnet_ip *saddr, const struct bpfnet_ip *daddr,
						 const struct udp6_ends *to,
						 const struct bpfnet_pod_link *link)
{
	__u32 udp_len = sizeof(struct udphdr) + n;

	if (n == 0 || n > DHCP6_MAX_MSG - DHCP6_WRAP_LEN)
		return -1;
	/* Restate 1 <= n < DHCP6_MAX_MSG where the verifier sees it. */
	asm volatile("%[n] += -1; %[n] &= 2047; %[n] += 1" : [n] "+r"(n));
	if (bpf_skb_load_bytes(skb, pkt->l4_off + sizeof(struct udphdr), &s->msg[DHCP6_WRAP_LEN], n) ||
	    udp6_store_payload(skb, pkt, s, n + DHCP6_WRAP_LEN) ||
	    udp6_readdress(skb, pkt, udp_len, udp_len + DHCP6_WRAP_LEN, saddr, daddr, to, wrap_sum))
		return -1;
	return rewrite_macs(skb, link->pod_mac, link->veth_mac);
}

/*
 * Reads the message's first two bytes (its type, a relay's hop count) to msg[DHCP6_WRAP_LEN], where
 * dhcp6_wrap() reads them: directly where the linear part holds them (a client's frame does), else by the
 * helper.
 */
static __always_inline int dhcp6_read_type(struct __sk_buff *skb, __u32 off, struct dhcp6_scratch *s)
{
	const __u8 *at = nat_direct_at(skb, off, 2);

	if (!at)
		return bpf_skb_load_bytes(skb, off, &s->msg[DHCP6_WRAP_LEN], 2);
	s->msg[DHCP6_WRAP_LEN] = at[0];
	s->msg[DHCP6_WRAP_LEN + 1] = at[1];
	return 0;
}

/*
 * Client (or a relay on the LAN) -> server: the message becomes a Relay-Forward's Relay Message and the
 * datagram goes into the pod from service:547 to backend:port. pkt: the validated UDP datagram to port
 * 547; saddr, daddr: its addresses (daddr ff02::1:2 or the service address); service: the DHCPv6 service
 * address. Only the message's first two bytes are read to wrap it (its type, a relay's hop count).
 */
static __always_inline int dhcp6_relay_request(struct __sk_buff *skb, const struct ip_packet *pkt,
					       const struct bpfnet_iface *cfg,
					       const struct steer_target *target,
					       const struct bpfnet_ip *saddr, const struct bpfnet_ip *daddr,
					       const struct bpfnet_ip *service, const __u8 *sender_mac)
{
	const struct bpfnet_pod_link *link = listed_pod_link(target);
	struct dhcp6_scratch *s = dhcp6_state();
	__u32 payload_off = pkt->l4_off + sizeof(struct udphdr);
	__u32 n = pkt->l4_end - payload_off;

	if (!link) {
		decide(BPFNET_CTR_DROP_NO_BACKEND);
		return TC_ACT_SHOT;
	}
	if (!s || n < 4 || n > DHCP6_MAX_MSG - DHCP6_WRAP_LEN || dhcp6_read_type(skb, payload_off, s)) {
		decide(BPFNET_CTR_DROP_DHCP6_MALFORMED);
		return TC_ACT_SHOT;
	}
	enum bpfnet_counter refused = dhcp6_wrap(s, n, cfg, service, saddr, sender_mac);
	if (refused != BPFNET_CTR_MAX) {
		decide(refused);
		return TC_ACT_SHOT;
	}
	/* The message keeps its alignment (the header is a multiple of 4): the header is all that adds. */
	__u32 added = dhcp6_wrap_sum(s);
	struct udp6_ends to = {.saddr = *service,
			       .daddr = target->backend_ip,
			       .sport = bpf_htons(DHCP6_SERVER_PORT),
			       .dport = target->backend_port};
	int forwarded = dhcp6_forward_in_front(skb, pkt, s, n, added, saddr, daddr, &to, link);
	if (forwarded == DHCP6_AT_TAIL)
		forwarded = dhcp6_forward_at_tail(skb, pkt, s, n, added, saddr, daddr, &to, link);
	/* A multicast frame stays PACKET_MULTICAST through redirect_peer; it is the pod's now. */
	if (forwarded || bpf_skb_change_type(skb, PACKET_HOST)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	return deliver_into_pod(skb, link->ifindex, link->flags, BPFNET_CTR_DHCP6_REQUEST_RELAYED);
}

/* One option of the Relay-Reply, at s->pos. A bpf_loop callback: verified apart, the state in the map. */
static long dhcp6_option_step(__u32 index, void *unused)
{
	struct dhcp6_scratch *s = dhcp6_state();

	(void)index;
	(void)unused;
	if (!s)
		return 1;
	__u32 pos = s->pos;
	if (pos == s->end)
		return 1; /* done */
	if (pos + DHCP6_OPT_HEAD_LEN > s->end || pos >= DHCP6_MAX_MSG) {
		s->broken = 1;
		return 1;
	}
	__u32 at = pos & (DHCP6_MAX_MSG - 1);
	__u32 code = get_be16(&s->msg[at]);
	__u32 len = get_be16(&s->msg[at + 2]);
	__u32 data = pos + DHCP6_OPT_HEAD_LEN;
	if (data + len > s->end) {
		s->broken = 1;
		return 1;
	}
	/* RFC 8415 21.9, 21.18: each at most once in a relay message. */
	if (code == DHCP6_OPT_RELAY_MSG) {
		if (s->relay_msg_off) {
			s->broken = 1;
			return 1;
		}
		s->relay_msg_off = data;
		s->relay_msg_len = len;
	} else if (code == DHCP6_OPT_INTERFACE_ID) {
		if (s->interface_id_off) {
			s->broken = 1;
			return 1;
		}
		s->interface_id_off = data;
		s->interface_id_len = len;
	}
	s->pos = data + len;
	return 0;
}

/*
 * The Relay-Reply's options laid out as our Relay-Forward's came back from dnsmasq (it answers with the
 * forward's options in their order, the client's link-layer address left out, the Relay Message in its
 * place): the Interface-ID, then the Relay Message up to the end of msg[0, n). Then the walk's results are
 * set without it: the same options, each once, that the walk would have found. Any other layout is the
 * walk's. A match reads nothing past n: the Relay Message's data ends at n, after all that was read.
 */
static __always_inline int dhcp6_reply_as_forwarded(struct dhcp6_scratch *s, __u32 n)
{
	const __u8 *id = &s->msg[DHCP6_RELAY_HEAD_LEN];
	__u32 id_len = get_be16(id + 2);

	if (get_be16(id) != DHCP6_OPT_INTERFACE_ID ||
	    (id_len != DHCP6_INTERFACE_ID_LEN && id_len != DHCP6_PADDED_INTERFACE_ID_LEN))
		return 0;
	__u32 relay_msg = DHCP6_RELAY_HEAD_LEN + DHCP6_OPT_HEAD_LEN + id_len;
	const __u8 *opt = &s->msg[relay_msg];
	__u32 data = relay_msg + DHCP6_OPT_HEAD_LEN, len = get_be16(opt + 2);
	if (get_be16(opt) != DHCP6_OPT_RELAY_MSG || data + len != n)
		return 0;
	s->interface_id_off = DHCP6_RELAY_HEAD_LEN + DHCP6_OPT_HEAD_LEN;
	s->interface_id_len = id_len;
	s->relay_msg_off = data;
	s->relay_msg_len = len;
	s->pos = n;
	return 1;
}

/* Walks the options of the Relay-Reply in msg[0, n). 0 when it has one Relay Message and our Interface-ID. */
static __always_inline int dhcp6_walk_relay_reply(struct dhcp6_scratch *s, __u32 n)
{
	s->pos = DHCP6_RELAY_HEAD_LEN;
	s->end = n;
	s->relay_msg_off = 0;
	s->relay_msg_len = 0;
	s->interface_id_off = 0;
	s->interface_id_len = 0;
	s->broken = 0;
	if (!dhcp6_reply_as_forwarded(s, n)) /* each step takes at least an option header */
		bpf_loop(DHCP6_MAX_MSG / DHCP6_OPT_HEAD_LEN + 1, dhcp6_option_step, NULL, 0);
	if (s->broken || s->pos != s->end || !s->relay_msg_off || s->relay_msg_len < 4 ||
	    (s->interface_id_len != DHCP6_INTERFACE_ID_LEN &&
	     s->interface_id_len != DHCP6_PADDED_INTERFACE_ID_LEN))
		return -1;
	__builtin_memcpy(&s->peer, &s->msg[DHCP6_RELAY_PEER], sizeof(s->peer));
	__u32 id = s->interface_id_off & (DHCP6_MAX_MSG - 1);
	for (int i = 0; i < 6; i++)
		s->peer_mac[i] = s->msg[id + i];
	/* The MAC a frame came from: never a group or zero address. */
	if ((s->peer_mac[0] & 1) || !(s->peer_mac[0] | s->peer_mac[1] | s->peer_mac[2] | s->peer_mac[3] |
				      s->peer_mac[4] | s->peer_mac[5]))
		return -1;
	return 0;
}

/*
 * Where the inner message of a checked Relay-Reply goes: a client at its link-local address (port 546),
 * or a configured relay on the LAN (547). Returns the drop counter, or BPFNET_CTR_MAX with *to_port set.
 */
static __always_inline enum bpfnet_counter
dhcp6_reply_destination(const struct dhcp6_scratch *s, const struct bpfnet_iface *cfg, __be16 *to_port)
{
	__u8 inner = s->msg[s->relay_msg_off & (DHCP6_MAX_MSG - 1)];

	if (inner == DHCP6_RELAY_REPL) {
		if (!dhcp6_relay_configured(&s->peer))
			return BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY;
		*to_port = bpf_htons(DHCP6_SERVER_PORT);
		return BPFNET_CTR_MAX;
	}
	if (!dhcp6_server_message(inner))
		return BPFNET_CTR_DROP_DHCP6_MALFORMED;
	/* A client on this LAN: its link-local address, or one of the provisioning prefix. */
	if (!ip6_link_local(&s->peer) && !in_provisioning_subnet(cfg, &s->peer, 1))
		return BPFNET_CTR_DROP_DHCP_OFF_SUBNET;
	*to_port = bpf_htons(DHCP6_CLIENT_PORT);
	return BPFNET_CTR_MAX;
}

/*
 * Builds, in the copy, the frame that carries the inner message at msg[inner_off, +len) to the LAN, right in
 * front of it: Ethernet (to the MAC the Interface-ID names, from the NIC's), the IPv6 header (the pod's
 * traffic class, flow label and hop limit kept), the UDP header with the checksum l4_check_after() computes
 * from the old one (the old frame's headers are in head[], in front of the Relay-Reply at msg[0]); *by_helper
 * when the kernel's helpers must update it instead (then the old checksum is kept). Returns the frame's
 * first byte, in the copy.
 */
static __always_inline __u8 *dhcp6_reply_frame(struct dhcp6_scratch *s, __u32 state, __u32 inner_off,
					       __u32 len, const struct udp6_ends *to, __u32 payload_diff,
					       const __u8 *nic_mac, struct udp6_csum_change *change,
					       int *by_helper)
{
	const __u8 *old = &s->head[DHCP6_HEAD_ROOM - DHCP6_FRAME_HEAD_LEN];
	const struct ipv6hdr *old_ip6 = (const void *)(old + sizeof(struct ethhdr));
	const struct udphdr *old_udp = (const void *)(old + sizeof(struct ethhdr) + IPV6_HEADER_LEN);
	/* The frame starts DHCP6_FRAME_HEAD_LEN before the inner message, at least 34 bytes into msg[]'s
	 * Relay-Reply: it overwrites only the relay header and options, which are read by now. */
	__u8 *frame = &s->head[(inner_off & (DHCP6_MAX_MSG - 1)) + DHCP6_HEAD_ROOM - DHCP6_FRAME_HEAD_LEN];
	struct ipv6hdr ip6 = *old_ip6;
	struct udphdr udp = {.source = to->sport, .dest = to->dport, .len = bpf_htons((__u16)(len + 8))};
	struct bpfnet_ip from = ip_of(&old_ip6->saddr), was_to = ip_of(&old_ip6->daddr);

	change->addrs = csum_add32(csum_diff16(&from, &to->saddr), csum_diff16(&was_to, &to->daddr));
	change->len = csum_word_diff(old_udp->len, udp.len);
	change->rest = csum_add32(payload_diff, change->len + csum_word_diff(old_udp->source, udp.source) +
							csum_word_diff(old_udp->dest, udp.dest));
	*by_helper = l4_check_after(state, IPPROTO_UDP, old_udp->check,
				    csum_add32(change->len, change->addrs), change->rest, &udp.check);
	if (*by_helper)
		udp.check = old_udp->check;
	ip6.payload_len = udp.len;
	__builtin_memcpy(&ip6.saddr, &to->saddr, sizeof(to->saddr));
	__builtin_memcpy(&ip6.daddr, &to->daddr, sizeof(to->daddr));
	/* Everything read from the old headers by now: the new ones may overlap their copy. */
	__builtin_memcpy(frame + sizeof(struct ethhdr) + IPV6_HEADER_LEN, &udp, sizeof(udp));
	__builtin_memcpy(frame + sizeof(struct ethhdr), &ip6, sizeof(ip6));
	mac_copy(frame, s->peer_mac);
	mac_copy(frame + ETH_ALEN, nic_mac);
	frame[2 * ETH_ALEN] = ETH_P_IPV6 >> 8;
	frame[2 * ETH_ALEN + 1] = ETH_P_IPV6 & 0xff;
	return frame;
}

/*
 * The change of the payload's ones'-complement sum when only the inner message, msg[inner_off, +len) of the
 * Relay-Reply's msg[0, n), stays, as the new payload's first byte. Where the message starts at an even offset
 * and ends the Relay-Reply, its 16-bit words keep their place in the sum and the payload loses only the bytes
 * in front of it: their sum, negated. dnsmasq's replies are such (it answers with the Relay-Forward's options
 * in their order, the Relay Message in its place, and ours comes last, at offset 48 or 60). Elsewhere the old
 * payload's sum and the message's own, from its first byte (what follows each zeroed first: the walk has read
 * it). -1 when the helper refused.
 */
static __always_inline int dhcp6_unwrap_diff(struct dhcp6_scratch *s, __u32 n, __u32 inner_off, __u32 len,
					     __u32 *diff)
{
	if (!(inner_off & 1) && inner_off + len == n) {
		__s64 front = dhcp6_sum(s, 0, inner_off & ~3u);
		if (front < 0)
			return -1;
		__u32 lost = (__u32)front;
		if (inner_off & 2) {
			__u32 at = (inner_off - 2) & (DHCP6_MAX_MSG - 1);
			lost = csum_add32(lost, *(const __u16 *)&s->msg[at]);
		}
		*diff = csum_word4_diff(lost, 0);
		return 0;
	}
	dhcp6_zero_after(s, n);
	__s64 old_sum = dhcp6_sum(s, 0, round_up4(n));
	dhcp6_zero_after(s, inner_off + len);
	__s64 new_sum = dhcp6_sum(s, inner_off, round_up4(len));
	if (old_sum < 0 || new_sum < 0)
		return -1;
	*diff = csum_word4_diff((__u32)old_sum, (__u32)new_sum);
	return 0;
}

/*
 * Writes the frame built in the copy, total bytes from frame, over the frame's first bytes, directly, in
 * 8-byte words and then its last 8 bytes (total is at least the headers' 62). After bpf_skb_change_tail the
 * whole frame is in the linear part (the helper linearizes, unclones and drops offloads, as its documentation
 * says), so no byte needs the helper's store, whose call and copy was a tenth of the reply's time (path_cost,
 * 2026-12-07). -1 for a frame shorter than total: none after the tail was set to it.
 */
static __always_inline int dhcp6_write_frame(struct __sk_buff *skb, const __u8 *frame, __u32 total)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	if (total < DHCP6_FRAME_HEAD_LEN || total > DHCP6_FRAME_HEAD_LEN + DHCP6_MAX_MSG)
		return -1;
	for (__u32 at = 0; at < DHCP6_FRAME_HEAD_LEN + DHCP6_MAX_MSG; at += 8) {
		if (at + 8 > total)
			break;
		__u64 *out = data + at;
		if ((void *)(out + 1) > data_end)
			return -1;
		*out = *(const __u64 *)(frame + at);
	}
	__u32 last_off = total - 8;
	/* Kept as one offset: data + total, then 8 back, is a pointer the verifier will not let store. */
	asm volatile("" : "+r"(last_off));
	__u64 *last = data + last_off;
	if ((void *)(last + 1) > data_end)
		return -1;
	*last = *(const __u64 *)(frame + last_off);
	return 0;
}

/*
 * Server -> client (or relay). The pod's DHCPv6 server answers the Relay-Forward with a Relay-Reply to
 * service:547; its Relay Message goes to the peer-address, from the NIC's link-local address to a client
 * (RFC 8415 19.2), from the service address to a relay. pod: the server's address; service: the service
 * address the reply was sent to. The frame is copied whole, the new one built in the copy in front of the
 * inner message, and written back directly after the tail is cut.
 */
static __always_inline int dhcp6_relay_reply(struct __sk_buff *skb, const struct ip_packet *pkt,
					     const struct bpfnet_iface *cfg, const struct bpfnet_ip *service)
{
	const __u32 state = skb_csum_state(skb);
	struct dhcp6_scratch *s = dhcp6_state();
	__u32 n = pkt->l4_end - pkt->l4_off - sizeof(struct udphdr);
	__be16 to_port = 0;

	if (!s || pkt->l4_off + sizeof(struct udphdr) != DHCP6_FRAME_HEAD_LEN || n < DHCP6_RELAY_HEAD_LEN ||
	    n > DHCP6_MAX_MSG) {
		decide(BPFNET_CTR_DROP_DHCP6_MALFORMED);
		return TC_ACT_SHOT;
	}
	asm volatile("%[n] += -1; %[n] &= 2047; %[n] += 1" : [n] "+r"(n));
	if (bpf_skb_load_bytes(skb, 0, &s->head[DHCP6_HEAD_ROOM - DHCP6_FRAME_HEAD_LEN],
			       DHCP6_FRAME_HEAD_LEN + n) ||
	    s->msg[0] != DHCP6_RELAY_REPL || dhcp6_walk_relay_reply(s, n)) {
		decide(BPFNET_CTR_DROP_DHCP6_MALFORMED);
		return TC_ACT_SHOT;
	}
	enum bpfnet_counter refused = dhcp6_reply_destination(s, cfg, &to_port);
	if (refused != BPFNET_CTR_MAX) {
		decide(refused);
		return TC_ACT_SHOT;
	}
	__u32 inner_off = s->relay_msg_off & (DHCP6_MAX_MSG - 1);
	__u32 len = s->relay_msg_len;
	if (len == 0 || len > DHCP6_MAX_MSG) {
		decide(BPFNET_CTR_DROP_DHCP6_MALFORMED);
		return TC_ACT_SHOT;
	}
	asm volatile("%[len] += -1; %[len] &= 2047; %[len] += 1" : [len] "+r"(len));
	/* The payload's change, summed where the checksum covers it (not a CHECKSUM_PARTIAL skb's). */
	__u32 payload_diff = 0;
	if (state != SKB_CSUM_PARTIAL && dhcp6_unwrap_diff(s, n, inner_off, len, &payload_diff)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	struct udp6_ends to = {
		.saddr = ip_is_unset(&cfg->nic_link_local) || to_port == bpf_htons(DHCP6_SERVER_PORT)
				 ? *service
				 : cfg->nic_link_local,
		.daddr = s->peer,
		.sport = bpf_htons(DHCP6_SERVER_PORT),
		.dport = to_port,
	};
	trace_steered(&to.daddr, to_port, BPFNET_KIND_DHCP6);
	struct udp6_csum_change change;
	int by_helper;
	__u8 *frame = dhcp6_reply_frame(s, state, inner_off, len, &to, payload_diff, cfg->nic_mac, &change,
					&by_helper);
	if (bpf_skb_change_tail(skb, DHCP6_FRAME_HEAD_LEN + len, 0) ||
	    dhcp6_write_frame(skb, frame, DHCP6_FRAME_HEAD_LEN + len) ||
	    (by_helper && udp6_csum_by_helpers(skb, pkt, &change))) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	decide(BPFNET_CTR_DHCP6_REPLY_RELAYED);
	return bpf_redirect(cfg->nic_ifindex, 0);
}

/* What a DHCPv6 message was, for the trace: msg-type and transaction id (of the relayed client message). */
static __always_inline void dhcp6_trace_details(struct __sk_buff *skb, struct trace_scratch *s)
{
	__u32 off = s->l4_off + sizeof(struct udphdr);
	__u8 head[4];

	if (bpf_skb_load_bytes(skb, off, head, sizeof(head)))
		return;
	/* A request the relay wrapped: the client's message is behind the header it added. */
	if (head[0] == DHCP6_RELAY_FORW && s->rec.decision == BPFNET_CTR_DHCP6_REQUEST_RELAYED &&
	    bpf_skb_load_bytes(skb, off + DHCP6_WRAP_LEN, head, sizeof(head)))
		return;
	s->rec.dhcp_type = head[0];
	if (head[0] != DHCP6_RELAY_FORW && head[0] != DHCP6_RELAY_REPL)
		s->rec.dhcp_xid_be = bpf_htonl((__u32)head[1] << 16 | (__u32)head[2] << 8 | head[3]);
}

#endif /* BPFNET_DHCP6_H */
