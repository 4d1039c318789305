/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The DHCP relay agent (RFC 1542, packet walk 2). Requests from clients (broadcast, or unicast to the
 * service IP for renewals) and from relays on the LAN are relayed to the DHCP server in the pod as coming
 * from the service IP; the server's replies, addressed to the relay (giaddr), are delivered to the client
 * as RFC 2131 section 4.1 says. The client only ever sees the service IP: a reply that names the pod as
 * server identifier (option 54) or next server (siaddr) is rewritten in place.
 *
 * A message's BOOTP head is read where it lies in the linear part; the options, which may lie past it, are
 * copied into a per-CPU area for the option walk. Whatever the relay changes is written in place in the
 * frame: the headers in the linear part (pulled there), giaddr, siaddr and each option 54 directly where the
 * linear part holds them, else by the kernel's helper. Every offset is checked against the UDP length first.
 */
#ifndef BPFNET_DHCP_H
#define BPFNET_DHCP_H

#include <linux/if_packet.h>
#include <linux/pkt_cls.h>
#include "parse.h"
#include "addr.h"
#include "maps.h"
#include "iface.h"
#include "counters.h"
#include "csum.h"
#include "nat.h"
#include "steer.h"
#include "trace.h"

/* BOOTP message layout (RFC 2131 section 2), offsets from the start of the UDP payload. */
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
#define DHCP_OPT_OVERLOAD     52
#define DHCP_DISCOVER	      1 /* option 53's values that never carry a server identifier (RFC 2131 table 5) */
#define DHCP_INFORM	      8
#define BOOTP_SNAME	      44  /* 64 bytes; options when option 52 says 2 or 3 */
#define BOOTP_FILE	      108 /* 128 bytes; options when option 52 says 1 or 3 */
/* The option walk copies this much of a message (more than a relayed message on a 1500-byte LAN carries). */
#define DHCP_SCAN	      2048
/* Direct writes into a message reach this far into the frame (its headers and DHCP_SCAN bytes fit). */
#define DHCP_FIELD_MAX_OFF    4096
/* Copies of option 54 rewritten in one message; a message with more is malformed and left untouched. */
#define DHCP_MAX_SERVER_IDS   8

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

static __always_inline __u32 bootp_offset(const struct ip_packet *pkt)
{
	return pkt->l4_off + sizeof(struct udphdr);
}

/*
 * Reads the BOOTP head of a message that carries at least the fixed header and the magic cookie: straight
 * from the linear part, where the TC programs' pull put it (after an IPv4 header without options), else
 * copied by the helper.
 */
static __always_inline int bootp_read(struct __sk_buff *skb, const struct ip_packet *pkt,
				      struct bootp_head *head)
{
	__u32 off = bootp_offset(pkt);

	if (pkt->l4_end < off + BOOTP_OPTIONS)
		return -1;
	const __u32 *at = nat_direct_at(skb, off, sizeof(*head));
	if (!at)
		return bpf_skb_load_bytes(skb, off, head, sizeof(*head));
	__u32 *to = (__u32 *)head;
	for (__u32 i = 0; i < sizeof(*head) / sizeof(*to); i++)
		to[i] = at[i];
	return 0;
}

/*
 * The option walk (RFC 2131 section 4.1, RFC 2132 section 9.3): the options field, then, when option 52
 * says so, the `file` and the `sname` fields, each ending with END. Every copy of option 54 is found, so
 * none keeps the pod's address; pads are bytes like any other, so no padding exhausts a budget.
 */
enum dhcp_area { DHCP_AREA_OPTIONS, DHCP_AREA_FILE, DHCP_AREA_SNAME, DHCP_AREA_DONE };

struct dhcp_walk {
	__u8 bytes[DHCP_SCAN];		   /* the BOOTP message from its first byte */
	__u32 n;			   /* how many bytes were copied (0: none) */
	__u32 csum_diff;		   /* the UDP checksum's change by the fields rewritten in the copy */
	__u32 pos;			   /* the next option, in bytes[] */
	__u32 end;			   /* the end of the area being walked */
	__u32 area;			   /* enum dhcp_area */
	__u32 overload;			   /* option 52's value: 1 file, 2 sname, 3 both */
	__u32 ids;			   /* copies of option 54 found */
	__u32 id_off[DHCP_MAX_SERVER_IDS]; /* where each copy's value is, in bytes[] */
	__u8 msg_type;			   /* option 53, 0 if none */
	__u8 broken;			   /* a length runs past its area, an area has no END, too many ids */
	__u8 pad[2];
};

BPFNET_SCRATCH_MAP(dhcp_walk_scratch, struct dhcp_walk);

static __always_inline struct dhcp_walk *dhcp_walk_state(void)
{
	return scratch_entry(&dhcp_walk_scratch);
}

static __always_inline __u8 dhcp_byte(const struct dhcp_walk *w, __u32 at)
{
	return w->bytes[at & (DHCP_SCAN - 1)];
}

/* An area ended with END: on to the next one option 52 names, or done. Returns the bpf_loop verdict. */
static __always_inline long dhcp_next_area(struct dhcp_walk *w)
{
	if (w->area == DHCP_AREA_OPTIONS && (w->overload & 1)) {
		w->area = DHCP_AREA_FILE;
		w->pos = BOOTP_FILE;
		w->end = BOOTP_FILE + 128;
		return 0;
	}
	if (w->area != DHCP_AREA_SNAME && (w->overload & 2)) {
		w->area = DHCP_AREA_SNAME;
		w->pos = BOOTP_SNAME;
		w->end = BOOTP_SNAME + 64;
		return 0;
	}
	w->area = DHCP_AREA_DONE;
	return 1;
}

/* What the walk hands each step: the per-CPU copy, looked up once per walk instead of once per option. */
struct dhcp_walk_ref {
	struct dhcp_walk *w;
};

/* One option of the walk, at w->pos. A bpf_loop callback: verified apart, the state in the per-CPU copy. */
static long dhcp_option_step(__u32 index, void *ctx)
{
	struct dhcp_walk *w = ((struct dhcp_walk_ref *)ctx)->w;

	(void)index;
	if (!w || w->area == DHCP_AREA_DONE)
		return 1;
	__u32 pos = w->pos;
	if (pos >= w->end || pos >= DHCP_SCAN) {
		w->broken = 1; /* every area ends with END */
		return 1;
	}
	__u8 code = dhcp_byte(w, pos);
	if (code == DHCP_OPT_PAD) {
		w->pos = pos + 1;
		return 0;
	}
	if (code == DHCP_OPT_END)
		return dhcp_next_area(w);
	__u32 len = pos + 1 < w->end ? dhcp_byte(w, pos + 1) : 0;
	__u32 next = pos + 2 + len;
	if (pos + 1 >= w->end || next > w->end) {
		w->broken = 1;
		return 1;
	}
	if (code == DHCP_OPT_SERVER_ID) {
		if (len != 4 || w->ids >= DHCP_MAX_SERVER_IDS) {
			w->broken = 1;
			return 1;
		}
		w->id_off[w->ids & (DHCP_MAX_SERVER_IDS - 1)] = pos + 2;
		w->ids++;
	} else if (code == DHCP_OPT_MESSAGE_TYPE && len == 1) {
		w->msg_type = dhcp_byte(w, pos + 2);
	} else if (code == DHCP_OPT_OVERLOAD && len == 1 && w->area == DHCP_AREA_OPTIONS) {
		w->overload = dhcp_byte(w, pos + 2) & 3;
	}
	w->pos = next;
	return 0;
}

enum dhcp_walk_result { DHCP_WALK_DONE = 0, DHCP_WALK_NO_OPTIONS = 1, DHCP_WALK_BROKEN = -1 };

/*
 * Copies the BOOTP message of the UDP datagram at [l4_off, l4_end) into the per-CPU walk (bytes[0] its
 * first byte), in one call, and walks the options.
 * DHCP_WALK_NO_OPTIONS for plain BOOTP (no magic cookie) or a message that cannot be read (w->n 0).
 */
static __always_inline int dhcp_walk_options(struct __sk_buff *skb, __u32 l4_off, __u32 l4_end,
					     struct dhcp_walk *w)
{
	__u32 off = l4_off + sizeof(struct udphdr);

	w->n = 0;
	w->csum_diff = 0;
	if (l4_end > 0xffff || off + BOOTP_OPTIONS > l4_end)
		return DHCP_WALK_NO_OPTIONS;
	__u32 n = l4_end - off;
	if (n > DHCP_SCAN)
		n = DHCP_SCAN;
	/* Restate 1 <= n <= DHCP_SCAN where the verifier sees it. */
	asm volatile("%[n] += -1; %[n] &= 2047; %[n] += 1" : [n] "+r"(n));
	if (bpf_skb_load_bytes(skb, off, w->bytes, n))
		return DHCP_WALK_NO_OPTIONS;
	w->n = n;
	__be32 cookie;
	__builtin_memcpy(&cookie, &w->bytes[BOOTP_COOKIE], sizeof(cookie));
	if (cookie != bpf_htonl(DHCP_MAGIC_COOKIE))
		return DHCP_WALK_NO_OPTIONS;
	w->pos = BOOTP_OPTIONS;
	w->end = n;
	w->area = DHCP_AREA_OPTIONS;
	w->overload = 0;
	w->ids = 0;
	w->msg_type = 0;
	w->broken = 0;
	/* Each step takes at least one byte or ends an area. */
	struct dhcp_walk_ref ref = {.w = w};
	bpf_loop(DHCP_SCAN + 3, dhcp_option_step, &ref, 0);
	return w->broken || w->area != DHCP_AREA_DONE ? DHCP_WALK_BROKEN : DHCP_WALK_DONE;
}

/* The message type (option 53) for the trace, 0 if none can be read. A global function, verified once. */
__noinline int dhcp_message_type(struct __sk_buff *skb, __u32 l4_off, __u32 l4_end)
{
	struct dhcp_walk *w = dhcp_walk_state();

	if (!skb || !w || dhcp_walk_options(skb, l4_off, l4_end, w) != DHCP_WALK_DONE)
		return 0;
	return w->msg_type;
}

/* The value of copy i of option 54. */
static __always_inline __be32 dhcp_server_id(const struct dhcp_walk *w, __u32 i)
{
	__u32 at = w->id_off[i & (DHCP_MAX_SERVER_IDS - 1)];
	__be32 id;

	/* Masked into bytes[]; the four bytes may reach past it into the rest of the per-CPU value. */
	__builtin_memcpy(&id, &w->bytes[at & (DHCP_SCAN - 1)], sizeof(id));
	return id;
}

/*
 * Writes a 4-byte field at `at` of the message the walk copied (an offset from its first byte) in the copy,
 * adding the change to the UDP checksum to w->csum_diff: the message starts 8 bytes into the datagram, so a
 * field at an odd `at` lies across the checksum's words and its change is byte-swapped (RFC 1071 2(B)).
 * `at` is a field the walk found, whole within the copy.
 */
static __always_inline void dhcp_copy_write(struct dhcp_walk *w, __u32 at, __be32 value)
{
	__u8 *field = &w->bytes[at & (DHCP_SCAN - 1)];
	__be32 old;

	__builtin_memcpy(&old, field, sizeof(old));
	__builtin_memcpy(field, &value, sizeof(value));
	__u32 diff = csum_word4_diff(old, value);
	w->csum_diff += at & 1 ? csum_swab(diff) : diff;
}

/* Writes to over every copy of option 54 that names from, in the copy (dhcp_copy_write); returns how many. */
static __always_inline int dhcp_replace_server_ids(struct dhcp_walk *w, __be32 from, __be32 to)
{
	int rewritten = 0;

	for (__u32 i = 0; i < DHCP_MAX_SERVER_IDS; i++) {
		if (i >= w->ids)
			break;
		if (dhcp_server_id(w, i) != from)
			continue;
		dhcp_copy_write(w, w->id_off[i & (DHCP_MAX_SERVER_IDS - 1)], to);
		rewritten++;
	}
	return rewritten;
}

/*
 * Writes 4 bytes of the message at `at` (an offset from its first byte, at l4_off + 8 in the frame) where
 * they lie: directly when the linear part holds them (a datagram the pod sent is linear: the UDP stack
 * builds it so up to a page), else by the kernel's helper.
 */
static __always_inline int dhcp_write_field(struct __sk_buff *skb, __u32 l4_off, __u32 at, __be32 value)
{
	__u32 off = l4_off + sizeof(struct udphdr) + at;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	if (off < DHCP_FIELD_MAX_OFF) {
		/* Restate off < DHCP_FIELD_MAX_OFF where the verifier sees it. */
		asm volatile("%[off] &= 4095" : [off] "+r"(off));
		__u8 *field = data + off;
		if ((void *)(field + sizeof(value)) <= data_end) {
			__builtin_memcpy(field, &value, sizeof(value));
			return 0;
		}
	}
	return bpf_skb_store_bytes(skb, l4_off + sizeof(struct udphdr) + at, &value, sizeof(value), 0);
}

/*
 * Writes every copy of option 54 the walk rewrote to `value` in the copy to the frame as well (one that named
 * it already is written unchanged). The frame's pointers are invalid afterwards.
 */
static __always_inline int dhcp_write_server_ids(struct __sk_buff *skb, __u32 l4_off, struct dhcp_walk *w,
						 __be32 value)
{
	for (__u32 i = 0; i < DHCP_MAX_SERVER_IDS; i++) {
		if (i >= w->ids)
			break;
		if (dhcp_server_id(w, i) == value &&
		    dhcp_write_field(skb, l4_off, w->id_off[i & (DHCP_MAX_SERVER_IDS - 1)] & (DHCP_SCAN - 1),
				     value))
			return -1;
	}
	return 0;
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
 * A DISCOVER or an INFORM, told by its first option (where clients put option 53): messages that carry no
 * server identifier (RFC 2131 table 5), so nothing in them needs restoring and the walk is spared. A message
 * whose type comes later is walked. Read where it lies in the linear part, else copied by the helper.
 */
static __always_inline int dhcp_without_server_id(struct __sk_buff *skb, __u32 l4_off)
{
	struct dhcp_start {
		__be32 cookie;
		__u8 code;
		__u8 len;
		__u8 type;
		__u8 pad;
	} start;
	__u32 off = l4_off + sizeof(struct udphdr) + BOOTP_COOKIE;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	/* Restate off < 512 where the verifier sees it (the cookie lies at 278 after the shortest headers).
	 */
	asm volatile("%[off] &= 511" : [off] "+r"(off));
	if (data + off + sizeof(start) <= data_end)
		__builtin_memcpy(&start, data + off, sizeof(start));
	else if (bpf_skb_load_bytes(skb, l4_off + sizeof(struct udphdr) + BOOTP_COOKIE, &start,
				    sizeof(start)))
		return 0;
	return start.cookie == bpf_htonl(DHCP_MAGIC_COOKIE) && start.code == DHCP_OPT_MESSAGE_TYPE &&
	       start.len == 1 && (start.type == DHCP_DISCOVER || start.type == DHCP_INFORM);
}

/* The UDP checksum's change by the fields dhcp_restore_server_id() or dhcp_hide_backend() last rewrote in
 * place, for the caller's one update of the checksum. */
static __always_inline __u32 dhcp_rewrite_diff(void)
{
	struct dhcp_walk *w = dhcp_walk_state();

	return w ? w->csum_diff : 0;
}

/*
 * A client answers with the server identifier it was given (the service IP) in REQUEST, DECLINE and
 * RELEASE. A server that names itself with its own (pod) address would ignore such a request as meant for
 * another server, so the relay hands it its own identifier again, in every copy; the checksum's change is
 * left in dhcp_rewrite_diff(). A global function, like dhcp_hide_backend.
 */
__noinline int dhcp_restore_server_id(struct __sk_buff *skb, __u32 l4_off, __u32 l4_end, __be32 backend_ip,
				      __be32 service_ip)
{
	struct dhcp_walk *w = dhcp_walk_state();

	if (!skb || !w)
		return 0;
	w->csum_diff = 0;
	if (dhcp_without_server_id(skb, l4_off))
		return 0;
	struct bpfnet_dhcp_server *server = bpf_map_lookup_elem(&dhcp_servers, &backend_ip);
	if (!server || server->server_id_be == service_ip)
		return 0;
	__be32 own_id = server->server_id_be;
	int result = dhcp_walk_options(skb, l4_off, l4_end, w);
	if (result == DHCP_WALK_BROKEN)
		count(BPFNET_CTR_DHCP_OPTIONS_MALFORMED);
	if (result != DHCP_WALK_DONE || !dhcp_replace_server_ids(w, service_ip, own_id))
		return 0;
	if (dhcp_write_server_ids(skb, l4_off, w, own_id)) {
		w->csum_diff = 0; /* the packet is dropped: REWRITE_FAILED is the caller's */
		return -1;
	}
	count(BPFNET_CTR_DHCP_SERVER_ID_RESTORED);
	return 1;
}

/*
 * Replaces the pod's address with the service IP where a reply names it as the server (siaddr, every copy of
 * option 54), in the frame where each lies, with the UDP checksum's change left in dhcp_rewrite_diff() for
 * the caller's one update; l4_off and l4_end locate the UDP datagram. Returns -1 when the message could not
 * be copied for the walk or a field not written (the packet's pointers are invalid afterwards). A global
 * function: the verifier checks its option walk once, on its own, instead of again on each way a reply can
 * leave.
 */
__noinline int dhcp_hide_backend(struct __sk_buff *skb, __u32 l4_off, __u32 l4_end, __be32 backend_ip,
				 __be32 service_ip)
{
	struct dhcp_walk *w = dhcp_walk_state();
	int rewritten = 0;

	if (!skb || !w)
		return -1;
	int result = dhcp_walk_options(skb, l4_off, l4_end, w);
	if (result == DHCP_WALK_BROKEN)
		count(BPFNET_CTR_DHCP_OPTIONS_MALFORMED);
	if (!w->n)
		return -1; /* not copied */
	__be32 siaddr;
	__builtin_memcpy(&siaddr, &w->bytes[BOOTP_SIADDR], sizeof(siaddr));
	if (siaddr == backend_ip) {
		dhcp_copy_write(w, BOOTP_SIADDR, service_ip);
		if (dhcp_write_field(skb, l4_off, BOOTP_SIADDR, service_ip))
			return -1;
		rewritten = 1;
	}
	/* Plain BOOTP, a broken list (counted) or no identifier: siaddr was all. */
	if (result == DHCP_WALK_DONE && w->ids) {
		remember_server_id(backend_ip, dhcp_server_id(w, 0));
		if (dhcp_replace_server_ids(w, backend_ip, service_ip)) {
			if (dhcp_write_server_ids(skb, l4_off, w, service_ip))
				return -1;
			rewritten = 1;
		}
	}
	if (rewritten)
		count(BPFNET_CTR_DHCP_SERVER_ID_REWRITTEN);
	return 0;
}

static __always_inline int dhcp_relay_configured(__be32 giaddr)
{
	struct bpfnet_ip key = ip_v4(giaddr);

	return bpf_map_lookup_elem(&dhcp_relays, &key) != NULL;
}

/* Writes the hops and giaddr of a relayed request (their checksum change is the caller's). tc_nic_ingress
 * only: directly where they lie in the linear part. */
static __always_inline int dhcp_store_relay_fields(struct __sk_buff *skb, const struct ip_packet *pkt,
						   __u8 hops, __be32 giaddr)
{
	__u32 bootp = bootp_offset(pkt);
	__u8 *hops_at = nat_direct_at(skb, bootp + BOOTP_HOPS, sizeof(hops));

	if (hops_at)
		*hops_at = hops;
	else if (bpf_skb_store_bytes(skb, bootp + BOOTP_HOPS, &hops, sizeof(hops), 0))
		return -1;
	return dhcp_write_field(skb, pkt->l4_off, BOOTP_GIADDR, giaddr);
}

/*
 * Client (or a relay on the LAN) -> server. Sets giaddr to the service IP when no relay did, counts the
 * hop, and sends the request into the pod from service IP:67 to backend:port.
 */
static __always_inline int dhcp_relay_request(struct __sk_buff *skb, const struct ip_packet *pkt,
					      const struct bpfnet_iface *cfg, __be32 service_ip,
					      const struct steer_target *target)
{
	const struct bpfnet_pod_link *link = listed_pod_link(target);
	struct bootp_head head;

	if (!link) {
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

	__be32 backend_ip = target->backend_ip.w[3]; /* an IPv4 service's backend: IPv4 */
	if (dhcp_restore_server_id(skb, pkt->l4_off, pkt->l4_end, backend_ip, service_ip) < 0) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}

	/* One more hop, and giaddr the service IP when no relay set it: payload, in the UDP checksum with the
	 * new addresses and ports (one update for all). */
	__u8 hops = head.hops + 1;
	__be32 giaddr = head.giaddr ? head.giaddr : service_ip;
	__u32 payload_diff = csum_word_diff(head.hlen | head.hops << 8, head.hlen | hops << 8) +
			     csum_word4_diff(head.giaddr, giaddr) + dhcp_rewrite_diff();
	if (udp4_readdress(skb, pkt, service_ip, backend_ip, bpf_htons(DHCP_SERVER_PORT),
			   target->backend_port, payload_diff) ||
	    dhcp_store_relay_fields(skb, pkt, hops, giaddr) ||
	    rewrite_macs(skb, link->pod_mac, link->veth_mac) ||
	    /* A broadcast frame stays PACKET_BROADCAST through redirect_peer; it is the pod's now. */
	    bpf_skb_change_type(skb, PACKET_HOST)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	return deliver_into_pod(skb, link->ifindex, link->flags, BPFNET_CTR_DHCP_REQUEST_RELAYED);
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
static __always_inline int dhcp_relay_reply(struct __sk_buff *skb, const struct ip_packet *pkt,
					    const struct bpfnet_iface *cfg,
					    const struct bpfnet_backend_port *listed)
{
	__be32 saddr = pkt->ip->saddr;
	__be32 daddr = pkt->ip->daddr;
	__be32 service_ip = listed->service_ip.w[3];
	struct bpfnet_ip to = ip_v4(daddr);
	struct bootp_head head;
	__u8 to_mac[ETH_ALEN];

	if (bootp_read(skb, pkt, &head) || head.op != BOOTP_REPLY) {
		decide(BPFNET_CTR_DROP_DHCP_MALFORMED);
		return TC_ACT_SHOT;
	}
	if (!head.giaddr || head.giaddr != daddr) {
		decide(BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY);
		return TC_ACT_SHOT;
	}
	/* Where it goes is settled before anything in it changes: a reply that goes nowhere is left alone. A
	 * giaddr that is the service IP the server answers for needs no lookup to be known as ours. */
	__be32 to_ip = daddr;
	__be16 to_port = bpf_htons(DHCP_SERVER_PORT);
	if (daddr == service_ip || bpf_map_lookup_elem(&service_ips, &to)) {
		dhcp_client_address(&head, &to_ip, to_mac);
		to_port = bpf_htons(DHCP_CLIENT_PORT);
		/* A client on this LAN has its address on this LAN: anything else would leave via a router.
		 */
		if (to_ip != 0xffffffff && !in_provisioning_subnet4(cfg, to_ip)) {
			decide(BPFNET_CTR_DROP_DHCP_OFF_SUBNET);
			return TC_ACT_SHOT;
		}
	} else {
		if (!dhcp_relay_configured(daddr)) {
			decide(BPFNET_CTR_DROP_DHCP_FOREIGN_RELAY);
			return TC_ACT_SHOT;
		}
		if (lan_host_mac(&to, &listed->service_ip, to_mac))
			return TC_ACT_SHOT;
	}

	to = ip_v4(to_ip);
	trace_steered(&to, to_port, BPFNET_KIND_DHCP);
	if (dhcp_hide_backend(skb, pkt->l4_off, pkt->l4_end, saddr, service_ip) ||
	    udp4_readdress(skb, pkt, service_ip, to_ip, bpf_htons(DHCP_SERVER_PORT), to_port,
			   dhcp_rewrite_diff()) ||
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
	struct ip_packet pkt = {.l4_off = s->l4_off, .l4_end = s->l4_end};
	struct bootp_head head;

	if (bootp_read(skb, &pkt, &head))
		return;
	s->rec.dhcp_xid_be = head.xid;
	if (head.htype == BOOTP_HTYPE_ETHERNET && head.hlen == 6)
		mac_copy(s->rec.mac, head.chaddr);
	s->rec.dhcp_type = (__u8)dhcp_message_type(skb, s->l4_off, s->l4_end);
}

#endif /* BPFNET_DHCP_H */
