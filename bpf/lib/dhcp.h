/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The DHCP relay agent (RFC 1542, packet walk 2). Requests from clients (broadcast, or unicast to the
 * service IP for renewals) and from relays on the LAN are relayed to the DHCP server in the pod as coming
 * from the service IP; the server's replies, addressed to the relay (giaddr), are delivered to the client
 * as RFC 2131 section 4.1 says. The client only ever sees the service IP: a reply that names the pod as
 * server identifier (option 54) or next server (siaddr) is rewritten in place.
 *
 * BOOTP fields are read and written with bpf_skb_load_bytes/store_bytes: they lie past the linear head
 * the other programs read, and every offset is checked against the UDP length first.
 */
#ifndef BPFNET_DHCP_H
#define BPFNET_DHCP_H

#include <linux/if_packet.h>
#include "parse.h"
#include "maps.h"
#include "nat.h"
#include "steer.h"
#include "trace.h"

/* BOOTP message layout (RFC 2131 section 2), offsets from the start of the UDP payload. */
#define BOOTP_HLEN_HOPS	      2 /* the 16-bit word holding hlen and hops */
#define BOOTP_HOPS	      3
#define BOOTP_SIADDR	      20
#define BOOTP_GIADDR	      24
#define BOOTP_COOKIE	      236
#define BOOTP_OPTIONS	      240
#define BOOTP_REQUEST	      1
#define BOOTP_REPLY	      2
#define BOOTP_FLAG_BROADCAST  0x8000
#define BOOTP_HTYPE_ETHERNET  1
#define DHCP_MAGIC_COOKIE     0x63825363
#define DHCP_SERVER_PORT      67
#define DHCP_CLIENT_PORT      68
#define DHCP_OPT_PAD	      0
#define DHCP_OPT_MESSAGE_TYPE 53
#define DHCP_OPT_SERVER_ID    54
#define DHCP_OPT_END	      255
/* The option walk is bounded; a list it cannot finish is treated as malformed and never rewritten. */
#define DHCP_MAX_OPTIONS      96

/* The fixed part of a BOOTP message up to chaddr, as read in one call. */
struct bootp_head {
	__u8 op;
	__u8 htype;
	__u8 hlen;
	__u8 hops;
	__be32 xid;
	__be16 secs;
	__be16 flags;
	__be32 ciaddr;
	__be32 yiaddr;
	__be32 siaddr;
	__be32 giaddr;
	__u8 chaddr[16];
};

static __always_inline __u32 bootp_offset(const struct ipv4_packet *pkt)
{
	return pkt->l4_off + sizeof(struct udphdr);
}

/* Reads the BOOTP head of a message that carries at least the fixed header and the magic cookie. */
static __always_inline int bootp_read(struct __sk_buff *skb, const struct ipv4_packet *pkt,
				      struct bootp_head *head)
{
	__u32 off = bootp_offset(pkt);

	if (pkt->l4_end < off + BOOTP_OPTIONS)
		return -1;
	return bpf_skb_load_bytes(skb, off, head, sizeof(*head));
}

/*
 * Writes 1, 2 or 4 bytes at off and updates the UDP checksum for them. The checksum sums 16-bit words
 * counted from the start of the UDP header, so a value at an odd position straddles two words: the words
 * around it are replaced whole (a window of at most 6 bytes).
 */
static __always_inline int udp_store_csum(struct __sk_buff *skb, const struct ipv4_packet *pkt, __u32 off,
					  const __u8 *bytes, __u32 len)
{
	__u32 lead = (off - pkt->l4_off) & 1;
	__u32 start = off - lead;
	__u32 span = lead + len + ((lead + len) & 1);
	__u8 old[6] = {}, new[6] = {};

	if (span > sizeof(old) || start + span > pkt->l4_end)
		return -1;
	if (bpf_skb_load_bytes(skb, start, old, span))
		return -1;
	for (__u32 i = 0; i < sizeof(new); i++)
		new[i] = old[i];
	/* Constant stack offsets in both branches: the verifier refuses pointer arithmetic on the stack. */
	for (__u32 j = 0; j < 4; j++) {
		if (j >= len)
			break;
		if (lead)
			new[j + 1] = bytes[j];
		else
			new[j] = bytes[j];
	}
	for (__u32 i = 0; i + 1 < sizeof(old); i += 2) {
		if (i >= span)
			break;
		__u16 from = (__u16)(old[i] | old[i + 1] << 8); /* the word as it lies in memory */
		__u16 to = (__u16)(new[i] | new[i + 1] << 8);
		if (from != to && bpf_l4_csum_replace(skb, l4_csum_off(pkt), from, to,
						      BPF_F_MARK_MANGLED_0 | sizeof(__u16)))
			return -1;
	}
	return bpf_skb_store_bytes(skb, start, new, span, 0);
}

/*
 * Finds option 54's value (its offset) and the message type (option 53); returns -1 for a list that is
 * broken, has no end, or is too long to walk.
 */
static __always_inline int dhcp_find_options(struct __sk_buff *skb, const struct ipv4_packet *pkt,
					     __u32 *value_off, __u8 *msg_type)
{
	__u32 pos = bootp_offset(pkt) + BOOTP_OPTIONS;
	__u32 end = pkt->l4_end;

	*value_off = 0;
	*msg_type = 0;
	for (int i = 0; i < DHCP_MAX_OPTIONS; i++) {
		__u8 opt[2];

		if (pos >= end || bpf_skb_load_bytes(skb, pos, opt, 1))
			return -1;
		if (opt[0] == DHCP_OPT_PAD) {
			pos++;
			continue;
		}
		if (opt[0] == DHCP_OPT_END)
			return 0;
		if (pos + 2 > end || bpf_skb_load_bytes(skb, pos, opt, 2))
			return -1;
		__u32 next = pos + 2 + opt[1];
		if (next > end)
			return -1;
		if (opt[0] == DHCP_OPT_SERVER_ID) {
			if (opt[1] != 4)
				return -1;
			*value_off = pos + 2;
		}
		if (opt[0] == DHCP_OPT_MESSAGE_TYPE && opt[1] == 1 &&
		    bpf_skb_load_bytes(skb, pos + 2, msg_type, 1))
			return -1;
		pos = next;
	}
	return -1;
}

/* Learns the identifier a DHCP server names itself with, writing only when it is new or changed. */
static __always_inline void remember_server_id(__be32 backend_ip, __be32 server_id)
{
	struct bpfnet_dhcp_server *known = bpf_map_lookup_elem(&dhcp_servers, &backend_ip);

	if (known && known->server_id_be == server_id)
		return;
	struct bpfnet_dhcp_server entry = {.server_id_be = server_id};
	bpf_map_update_elem(&dhcp_servers, &backend_ip, &entry, BPF_ANY);
}

/*
 * A client answers with the server identifier it was given (the service IP) in REQUEST, DECLINE and
 * RELEASE. A server that names itself with its own (pod) address would ignore such a request as meant for
 * another server, so the relay hands it its own identifier again.
 */
static __always_inline void dhcp_restore_server_id(struct __sk_buff *skb, const struct ipv4_packet *pkt,
						   __be32 backend_ip, __be32 service_ip)
{
	struct bpfnet_dhcp_server *server = bpf_map_lookup_elem(&dhcp_servers, &backend_ip);
	if (!server || server->server_id_be == service_ip)
		return;
	__be32 own_id = server->server_id_be;

	__be32 cookie = 0;
	if (bpf_skb_load_bytes(skb, bootp_offset(pkt) + BOOTP_COOKIE, &cookie, 4) ||
	    cookie != bpf_htonl(DHCP_MAGIC_COOKIE))
		return;
	__u32 server_id_off;
	__u8 msg_type;
	if (dhcp_find_options(skb, pkt, &server_id_off, &msg_type) != 0) {
		count(BPFNET_CTR_DHCP_OPTIONS_MALFORMED);
		return;
	}
	__be32 named = 0;
	if (server_id_off && !bpf_skb_load_bytes(skb, server_id_off, &named, 4) && named == service_ip &&
	    !udp_store_csum(skb, pkt, server_id_off, (const __u8 *)&own_id, 4))
		count(BPFNET_CTR_DHCP_SERVER_ID_RESTORED);
}

/*
 * Replaces the pod's address with the service IP where a reply names it as the server; l4_off and l4_end
 * locate the UDP datagram. A global function: the verifier checks its option walk once, on its own,
 * instead of again on each way a reply can leave.
 */
__noinline int dhcp_hide_backend(struct __sk_buff *skb, __u32 l4_off, __u32 l4_end, __be32 backend_ip,
				 __be32 service_ip)
{
	struct ipv4_packet reply = {.l4_off = l4_off, .l4_end = l4_end, .proto = IPPROTO_UDP};
	const struct ipv4_packet *pkt = &reply;
	__be32 siaddr = 0;
	int rewritten = 0;

	if (!skb || bpf_skb_load_bytes(skb, bootp_offset(pkt) + BOOTP_SIADDR, &siaddr, 4))
		return 0;
	if (siaddr == backend_ip) {
		if (udp_store_csum(skb, pkt, bootp_offset(pkt) + BOOTP_SIADDR, (const __u8 *)&service_ip, 4))
			return 0;
		rewritten = 1;
	}

	__be32 cookie = 0;
	if (bpf_skb_load_bytes(skb, bootp_offset(pkt) + BOOTP_COOKIE, &cookie, 4) ||
	    cookie != bpf_htonl(DHCP_MAGIC_COOKIE))
		goto done; /* plain BOOTP: no options to look at */

	__u32 server_id_off;
	__u8 msg_type;
	if (dhcp_find_options(skb, pkt, &server_id_off, &msg_type) != 0) {
		count(BPFNET_CTR_DHCP_OPTIONS_MALFORMED);
		goto done;
	}
	__be32 server_id = 0;
	if (!server_id_off || bpf_skb_load_bytes(skb, server_id_off, &server_id, 4))
		goto done;
	remember_server_id(backend_ip, server_id);
	if (server_id == backend_ip && !udp_store_csum(skb, pkt, server_id_off, (const __u8 *)&service_ip, 4))
		rewritten = 1;
done:
	if (rewritten)
		count(BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN);
	return rewritten;
}

static __always_inline int dhcp_relay_configured(__be32 giaddr)
{
	return bpf_map_lookup_elem(&dhcp_relays, &giaddr) != NULL;
}

/*
 * Client (or a relay on the LAN) -> server. Sets giaddr to the service IP when no relay did, counts the
 * hop, and sends the request into the pod from service IP:67 to backend:port.
 */
static __always_inline int dhcp_relay_request(struct __sk_buff *skb, const struct ipv4_packet *pkt,
					      const struct bpfnet_iface *cfg, __be32 service_ip,
					      const struct steer_target *target)
{
	struct bpfnet_backend *backend = bpf_map_lookup_elem(&backends, &target->backend_ip);
	struct bootp_head head;
	__be32 saddr = pkt->ip->saddr;
	__be32 daddr = pkt->ip->daddr;

	if (!backend) {
		decide(BPFNET_CTR_DROP_NO_BACKEND);
		return TC_ACT_SHOT;
	}
	if (bootp_read(skb, pkt, &head) || head.op != BOOTP_REQUEST) {
		decide(BPFNET_CTR_DROP_DHCP_MALFORMED);
		return TC_ACT_SHOT;
	}
	if (head.hops > cfg->dhcp_max_hops) {
		decide(BPFNET_CTR_DROP_DHCP_HOPS);
		return TC_ACT_SHOT;
	}
	/* Replies go to giaddr: only a relay the operator configured may stay in it. */
	if (head.giaddr && !dhcp_relay_configured(head.giaddr)) {
		decide(BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY);
		return TC_ACT_SHOT;
	}

	dhcp_restore_server_id(skb, pkt, target->backend_ip, service_ip);

	__u8 hlen_hops[2] = {head.hlen, (__u8)(head.hops + 1)};
	if (udp_store_csum(skb, pkt, bootp_offset(pkt) + BOOTP_HLEN_HOPS, hlen_hops, 2) ||
	    (!head.giaddr &&
	     udp_store_csum(skb, pkt, bootp_offset(pkt) + BOOTP_GIADDR, (const __u8 *)&service_ip, 4)) ||
	    nat_rewrite(skb, pkt, NAT_SOURCE, saddr, service_ip, pkt->sport, bpf_htons(DHCP_SERVER_PORT)) ||
	    nat_rewrite(skb, pkt, NAT_DESTINATION, daddr, target->backend_ip, pkt->dport,
			target->backend_port) ||
	    rewrite_macs(skb, backend->pod_mac, backend->host_mac) ||
	    /* A broadcast frame stays PACKET_BROADCAST through redirect_peer; it is the pod's now. */
	    bpf_skb_change_type(skb, PACKET_HOST)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	decide(BPFNET_CTR_DHCP_REQUEST_RELAYED);
	return deliver_to_backend(backend);
}

/*
 * Where RFC 2131 4.1 says a reply relayed by us goes, at L3 and L2. A group MAC in chaddr cannot name one
 * client: such a reply is broadcast, like one whose client asked for it.
 */
static __always_inline void dhcp_client_address(const struct bootp_head *head, __be32 *ip, __u8 *mac)
{
	int chaddr_usable = head->htype == BOOTP_HTYPE_ETHERNET && head->hlen == 6 && !(head->chaddr[0] & 1);

	if (head->ciaddr && chaddr_usable) {
		*ip = head->ciaddr;
		mac_copy(mac, head->chaddr);
	} else if ((head->flags & bpf_htons(BOOTP_FLAG_BROADCAST)) || !head->yiaddr || !chaddr_usable) {
		*ip = 0xffffffff;
		for (int i = 0; i < 6; i++)
			mac[i] = 0xff;
	} else {
		*ip = head->yiaddr;
		mac_copy(mac, head->chaddr);
	}
}

/*
 * Server -> relay. The server answers the relay at giaddr:67: when that is our service IP the reply goes to
 * the client (port 68); when it is a relay on the LAN, to that relay (port 67), from the service IP.
 */
static __always_inline int dhcp_relay_reply(struct __sk_buff *skb, const struct ipv4_packet *pkt,
					    const struct bpfnet_iface *cfg,
					    const struct bpfnet_backend_port *listed)
{
	__be32 saddr = pkt->ip->saddr;
	__be32 daddr = pkt->ip->daddr;
	__be32 service_ip = listed->service_ip_be;
	struct bootp_head head;

	if (bootp_read(skb, pkt, &head) || head.op != BOOTP_REPLY) {
		decide(BPFNET_CTR_DROP_DHCP_MALFORMED);
		return TC_ACT_SHOT;
	}
	if (!head.giaddr || head.giaddr != daddr) {
		decide(BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY);
		return TC_ACT_SHOT;
	}
	/* Where it goes is settled before anything in it changes: a reply that goes nowhere is left alone. */
	__be32 to_ip = daddr;
	__be16 to_port = bpf_htons(DHCP_SERVER_PORT);
	__u8 to_mac[6];
	if (bpf_map_lookup_elem(&service_ips, &daddr)) {
		dhcp_client_address(&head, &to_ip, to_mac);
		to_port = bpf_htons(DHCP_CLIENT_PORT);
		/* A client on this LAN has its address on this LAN: anything else would leave via a router.
		 */
		if (to_ip != 0xffffffff && !in_provisioning_subnet(cfg, to_ip)) {
			decide(BPFNET_CTR_DROP_DHCP_OFF_SUBNET);
			return TC_ACT_SHOT;
		}
	} else {
		if (!dhcp_relay_configured(daddr)) {
			decide(BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY);
			return TC_ACT_SHOT;
		}
		if (lan_host_mac(daddr, service_ip, to_mac))
			return TC_ACT_SHOT;
	}

	dhcp_hide_backend(skb, pkt->l4_off, pkt->l4_end, saddr, service_ip);
	trace_steered(to_ip, to_port, BPFNET_KIND_DHCP);
	if (nat_rewrite(skb, pkt, NAT_SOURCE, saddr, service_ip, pkt->sport, bpf_htons(DHCP_SERVER_PORT)) ||
	    nat_rewrite(skb, pkt, NAT_DESTINATION, daddr, to_ip, pkt->dport, to_port) ||
	    rewrite_macs(skb, to_mac, cfg->nic_mac)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	decide(BPFNET_CTR_DHCP_REPLY_RELAYED);
	return bpf_redirect(cfg->nic_ifindex, 0);
}

/* What a DHCP packet was, for the trace: message type, transaction id, client hardware address. */
static __always_inline void dhcp_trace_details(struct __sk_buff *skb, struct trace_scratch *s)
{
	struct ipv4_packet pkt = {.l4_off = s->l4_off, .l4_end = s->l4_end};
	struct bootp_head head;
	__u32 server_id_off;

	if (bootp_read(skb, &pkt, &head))
		return;
	s->rec.dhcp_xid_be = head.xid;
	if (head.htype == BOOTP_HTYPE_ETHERNET && head.hlen == 6)
		mac_copy(s->rec.mac, head.chaddr);
	dhcp_find_options(skb, &pkt, &server_id_off, &s->rec.dhcp_type);
}

#endif /* BPFNET_DHCP_H */
