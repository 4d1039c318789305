/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bpfnet's datapath: three programs sharing one set of maps.
 *
 *   xdp_nic         XDP on the provisioning NIC: neighbour learning, and the drop of everything sent to
 *                   a service IP that nothing allows.
 *   tc_nic_ingress  TC ingress on the NIC: the ARP responder, DNAT of allowed packets into the backend
 *                   pod, the DHCP relay.
 *   tc_pod_ingress  TC ingress on the host side of the pod's veth: the way back to the LAN, as the
 *                   service IP.
 *
 * The packet walks they implement are described in docs/design.md.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bpfnet_maps.h"
#include "lib/parse.h"
#include "lib/addr.h"
#include "lib/family.h"
#include "lib/maps.h"
#include "lib/iface.h"
#include "lib/counters.h"
#include "lib/liveness.h"
#include "lib/neighbour.h"
#include "lib/arp.h"
#include "lib/ipv6.h"
#include "lib/ndp.h"
#include "lib/steer.h"
#include "lib/nat.h"
#include "lib/dhcp.h"
#include "lib/dhcp6.h"
#include "lib/tftp.h"
#include "lib/icmp_error.h"
#include "lib/trace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define VLAN_ID_MASK 0x0fff /* of the 802.1Q tag control information */

/* The most header bytes the TC programs read in place: Ethernet, IPv4 with the longest options, the fixed TCP
 * header (IPv6: its fixed header and 40 bytes after it, a neighbour solicitation with its option). */
#define HEADERS_MAX_LEN (sizeof(struct ethhdr) + 60 + sizeof(struct tcphdr))

/* Service IPs live in the provisioning subnet of their family, and their last bytes are marked: anything else
 * is passed without a lookup. */
static __always_inline struct bpfnet_service_ip *service_ip_for(const struct bpfnet_iface *cfg,
								const struct bpfnet_ip *ip, const int v6)
{
	if (!maybe_service_ip(cfg, ip, v6))
		return NULL;
	return bpf_map_lookup_elem(&service_ips, ip);
}

/*
 * The service_ips entry of a packet from the LAN to a service IP, either family (its fixed header at l3);
 * NULL when it goes to no service IP (not ours). The packet is traced from here on, as seen at hook.
 */
static __always_inline struct bpfnet_service_ip *service_ip_asked(const struct bpfnet_iface *cfg,
								  const void *l3, const struct l3_addrs *a,
								  const __u8 *mac, enum bpfnet_hook hook,
								  const int v6)
{
	struct bpfnet_service_ip *service = service_ip_for(cfg, &a->daddr, v6);

	if (service) {
		trace_begin(hook);
		trace_addresses(&a->saddr, &a->daddr, l3_proto(l3, v6), mac);
	}
	return service;
}

/*
 * Whether a packet from the LAN (its fixed header at l3, its destination on the provisioning subnet) may
 * reach a backend: valid, from the provisioning subnet, for a recorded flow or a listed port, from the
 * service IP's source ranges when it has any. XDP decides first; TC again, so that it is safe on its own.
 * Fills pkt and target; returns BPFNET_CTR_MAX when the packet is admitted, BPFNET_CTR_PASS when its
 * destination is no service IP (not ours: nothing traced, nothing counted), else the drop counter that says
 * why. A packet is traced (as seen at hook; mac: its sender's) from when it is known to be ours: a listed
 * port's packet knows it from its services entry, with no service_ips lookup (steer_lookup).
 */
static __always_inline enum bpfnet_counter admit(void *ctx, int xdp, void *data, __u32 frame_len, void *l3,
						 const struct bpfnet_iface *cfg, const struct l3_addrs *a,
						 const __u8 *mac, enum bpfnet_hook hook,
						 struct ip_packet *pkt, struct steer_target *target,
						 const int v6)
{
	enum parse_verdict verdict = ip_validate(ctx, xdp, data, frame_len, l3, pkt, v6);

	/* The way back leaves only onto the provisioning subnet (tc_pod_ingress): nothing else gets in. */
	if (verdict != PARSE_OK || !in_provisioning_subnet(cfg, &a->saddr, v6)) {
		if (!service_ip_asked(cfg, l3, a, mac, hook, v6))
			return BPFNET_CTR_PASS;
		if (verdict != PARSE_OK)
			return drop_reason(verdict);
		trace_ports(pkt);
		return BPFNET_CTR_DROP_OFF_SUBNET;
	}
	struct lan_ports ports = lan_ports_of(pkt);
	enum steer_result steered = steer_lookup(&ports, &a->saddr, &a->daddr, target, 1);
	if (steered == STEER_NOT_SERVICE_IP)
		return BPFNET_CTR_PASS;
	trace_begin(hook);
	trace_addresses(&a->saddr, &a->daddr, l3_proto(l3, v6), mac);
	trace_ports(pkt);
	return steered == STEER_OK ? BPFNET_CTR_MAX : steer_drop_reason(steered);
}

/* The verdict, after the decision taken for it has been traced. */
static __always_inline int traced_xdp(int verdict)
{
	trace_end_xdp();
	return verdict;
}

/* xdp_ip's answer for ICMP to a service IP: xdp_icmp_error's to judge. */
#define XDP_ICMP_TO_SERVICE (-1)

/*
 * An ICMP error to a service IP passes on to TC when it quotes a packet the datapath sent from there. Called
 * by xdp_nic, not xdp_ip (through each family's entry below): their frames together would pass the verifier's
 * 512 bytes.
 */
static __always_inline int xdp_icmp_error(struct xdp_md *ctx, const int v6)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct bpfnet_iface *cfg = iface_config();
	struct ethhdr *eth = parse_eth(data, data_end);
	void *l3 = eth ? parse_ip_fixed(eth, data_end, v6) : NULL;
	struct ip_packet pkt = {};
	struct icmp_error e;
	struct steer_target target;

	if (!cfg || !l3)
		return XDP_PASS;
	struct l3_addrs a = l3_addrs_of(l3, v6);
	enum bpfnet_counter refused =
		admit_icmp_error(ctx, 1, data, data_end - data, l3, cfg, &a, &pkt, &e, &target, v6);
	if (refused != BPFNET_CTR_MAX) {
		decide(refused);
		return XDP_DROP;
	}
	return XDP_PASS; /* tc_nic_ingress translates it */
}

static __noinline int xdp_icmp4_error(struct xdp_md *ctx)
{
	return xdp_icmp_error(ctx, 0);
}

static __noinline int xdp_icmp6_error(struct xdp_md *ctx)
{
	return xdp_icmp_error(ctx, 1);
}

/*
 * XDP for an IP packet, either family (its fixed header at l3): the filter in front of the service IPs. For
 * packets to a service IP: keep what a listed port or recorded flow allows, drop the rest.
 */
static __always_inline int xdp_ip(struct xdp_md *ctx, void *data, void *data_end, struct ethhdr *eth,
				  void *l3, const struct bpfnet_iface *cfg, const int v6)
{
	struct l3_addrs a = l3_addrs_of(l3, v6);
	struct ip_packet pkt = {};
	struct steer_target target;

	if (!maybe_service_ip(cfg, &a.daddr, v6))
		goto pass;
	if (l3_proto(l3, v6) == icmp_proto(v6)) {
		if (!service_ip_asked(cfg, l3, &a, eth->h_source, BPFNET_HOOK_XDP_NIC, v6))
			goto pass;
		return XDP_ICMP_TO_SERVICE;
	}
	enum bpfnet_counter refused = admit(ctx, 1, data, data_end - data, l3, cfg, &a, eth->h_source,
					    BPFNET_HOOK_XDP_NIC, &pkt, &target, v6);
	if (refused == BPFNET_CTR_PASS)
		goto pass;
	if (refused != BPFNET_CTR_MAX) {
		decide(refused);
		return traced_xdp(XDP_DROP);
	}
	return traced_xdp(XDP_PASS); /* tc_nic_ingress steers it */
pass:
	count(BPFNET_CTR_PASS);
	return XDP_PASS;
}

/*
 * XDP for IPv4 and for IPv6 (what neighbour discovery tells, then the filter): a function each (as the TC
 * paths), so that their stacks are never added up (the verifier's 512 bytes cover a whole call chain).
 */
static __noinline int xdp_ipv4(struct xdp_md *ctx, struct ethhdr *eth, struct iphdr *ip,
			       const struct bpfnet_iface *cfg)
{
	return xdp_ip(ctx, (void *)(long)ctx->data, (void *)(long)ctx->data_end, eth, ip, cfg, 0);
}

static __noinline int xdp_ipv6(struct xdp_md *ctx, void *data, void *data_end, struct ethhdr *eth,
			       const struct bpfnet_iface *cfg)
{
	struct ipv6hdr *ip6 = parse_ipv6_fixed(eth, data_end);
	struct ndp_msg nd;

	if (ip6 && ip6->nexthdr == IPV6_NEXTHDR_ICMP &&
	    ndp_read(ctx, 1, data, data_end - data, ip6, &nd) == 0) {
		ndp_observe(&nd, eth->h_source,
			    cfg); /* a solicitation for a service address: answered at TC */
		ip6 = NULL;
	}
	if (!ip6) {
		count(BPFNET_CTR_PASS);
		return XDP_PASS;
	}
	return xdp_ip(ctx, data, data_end, eth, ip6, cfg, 1);
}

/* An ICMP packet to a service IP (XDP_ICMP_TO_SERVICE from xdp_ip): judged in a frame of its own. */
static __always_inline int xdp_icmp_to_service(struct xdp_md *ctx, int verdict, const int v6)
{
	if (verdict != XDP_ICMP_TO_SERVICE)
		return verdict;
	return traced_xdp(v6 ? xdp_icmp6_error(ctx) : xdp_icmp4_error(ctx));
}

SEC("xdp")
int xdp_nic(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct bpfnet_iface *cfg = iface_config();
	struct ethhdr *eth = parse_eth(data, data_end);
	struct iphdr *ip;

	if (!cfg || !eth)
		goto pass;
	if (eth->h_proto == bpf_htons(ETH_P_ARP))
		return xdp_observe_arp(eth, data_end, cfg);
	if (eth->h_proto == bpf_htons(ETH_P_IPV6))
		return xdp_icmp_to_service(ctx, xdp_ipv6(ctx, data, data_end, eth, cfg), 1);
	/* IPv4 to anywhere but the provisioning subnet (most of a NIC's traffic) passes here, without a call.
	 */
	if (eth->h_proto == bpf_htons(ETH_P_IP) && (ip = parse_ipv4_fixed(eth, data_end)) &&
	    in_provisioning_subnet4(cfg, ip->daddr))
		return xdp_icmp_to_service(ctx, xdp_ipv4(ctx, eth, ip, cfg), 0);
pass:
	count(BPFNET_CTR_PASS);
	return XDP_PASS;
}

/* The fixed header after IP that the programs read in place: TCP's, else 8 bytes (UDP's, ICMP's). */
static __always_inline __u32 l4_fixed_len(__u8 proto)
{
	return proto == IPPROTO_TCP ? sizeof(struct tcphdr) : sizeof(struct udphdr);
}

/*
 * The header bytes the TC programs read in place from this frame, as far as its linear part shows them: the
 * Ethernet header, an ARP packet, the IPv4 header with its options and the fixed TCP header (UDP's, ICMP's 8
 * bytes), IPv6's fixed header and the TCP or UDP header after it; HEADERS_MAX_LEN for anything else (IPv6
 * extension headers, neighbour discovery) and when the linear part ends before the IP header says.
 */
static __always_inline __u32 headers_len(void *data, void *data_end)
{
	struct ethhdr *eth = parse_eth(data, data_end);
	struct iphdr *ip;
	struct ipv6hdr *ip6;

	if (!eth)
		return HEADERS_MAX_LEN;
	if (eth->h_proto == bpf_htons(ETH_P_ARP))
		return sizeof(*eth) + sizeof(struct arp_ipv4);
	if (eth->h_proto == bpf_htons(ETH_P_IP) && (ip = parse_ipv4_fixed(eth, data_end)))
		return sizeof(*eth) + ip->ihl * 4 + l4_fixed_len(ip->protocol);
	if (eth->h_proto == bpf_htons(ETH_P_IPV6) && (ip6 = parse_ipv6_fixed(eth, data_end)) &&
	    (ip6->nexthdr == IPPROTO_TCP || ip6->nexthdr == IPPROTO_UDP))
		return sizeof(*eth) + sizeof(*ip6) + l4_fixed_len(ip6->nexthdr);
	return HEADERS_MAX_LEN;
}

/*
 * Makes sure the headers the programs read are in the linear part of the skb, so direct packet access can
 * reach them; no more than those. A pull copies the head of a cloned skb, and the pod's TCP segments are
 * clones whose linear part holds their headers and no payload: pulled to a fixed length, every one of them
 * (the CNI's too) would be copied on its way past.
 */
static __always_inline void pull_headers(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u32 linear = data_end - data;

	if (skb->len <= linear)
		return;
	__u32 need = headers_len(data, data_end);
	if (linear < need)
		bpf_skb_pull_data(skb, skb->len < need ? skb->len : need);
}

/* The Ethernet header of a frame in a TC program, with the headers pulled into the linear part. */
static __always_inline struct ethhdr *tc_parse_eth(struct __sk_buff *skb, void **data, void **data_end)
{
	pull_headers(skb);
	*data = (void *)(long)skb->data;
	*data_end = (void *)(long)skb->data_end;
	return parse_eth(*data, *data_end);
}

/* The fixed IP header of the family's Ethernet frame in a TC program. */
static __always_inline void *tc_parse_ip(struct ethhdr *eth, void *data_end, const int v6)
{
	if (!eth || eth->h_proto != bpf_htons(v6 ? ETH_P_IPV6 : ETH_P_IP))
		return NULL;
	return parse_ip_fixed(eth, data_end, v6);
}

/* Sends the record of a TC decision, with the DHCP or TFTP details of the packet it was made for. */
static __always_inline void trace_end_skb(struct __sk_buff *skb)
{
	struct trace_scratch *s = trace_finish();

	if (!s || s->rec.decision >= BPFNET_CTR_MAX)
		return;
	if (s->rec.proto == IPPROTO_UDP && s->l4_end) {
		if (s->kind == BPFNET_KIND_DHCP || s->rec.dport_be == bpf_htons(DHCP_SERVER_PORT))
			dhcp_trace_details(skb, s);
		else if (s->kind == BPFNET_KIND_DHCP6 || s->rec.dport_be == bpf_htons(DHCP6_SERVER_PORT))
			dhcp6_trace_details(skb, s);
		else if (s->kind == BPFNET_KIND_TFTP || s->rec.dport_be == bpf_htons(TFTP_PORT))
			tftp_trace_details(skb, s);
	}
	s->rec.time_ns = bpf_ktime_get_ns();
	if (bpf_ringbuf_output(&trace, &s->rec, sizeof(s->rec), 0))
		count(BPFNET_CTR_EVENT_LOST);
}

/* The verdict, after the decision taken for it has been traced with what the packet carried. */
static __always_inline int traced_tc(struct __sk_buff *skb, int verdict)
{
	trace_end_skb(skb);
	return verdict;
}

/* ARP at TC ingress: a who-has for a service IP is answered (or declined) here, everything else passes. A
 * function of its own like each family's path (see tc_ipv6_from_lan). */
static __noinline int tc_arp(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	void *data, *data_end;
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);
	struct arp_ipv4 *arp = eth ? parse_arp_ipv4(eth, data_end) : NULL;
	struct bpfnet_service_ip *service = arp ? arp_service_asked(arp) : NULL;

	if (!service)
		return BPFNET_TC_NEXT;
	struct bpfnet_ip sender = ip_v4(arp->sender_ip), target = ip_v4(arp->target_ip);
	trace_begin(BPFNET_HOOK_TC_NIC_INGRESS);
	trace_addresses(&sender, &target, 0, eth->h_source);
	return traced_tc(skb, tc_answer_arp(eth, arp, service, cfg));
}

/* A broadcast on the LAN is ours only when it is a DHCP request and this node owns the DHCP service IP. */
static __always_inline int broadcast_dhcp_for_us(struct __sk_buff *skb, void *data, void *data_end,
						 struct iphdr *ip, const struct bpfnet_iface *cfg,
						 struct ip_packet *pkt)
{
	if (ip_is_unset(&cfg->dhcp_service_ip) || ip->protocol != IPPROTO_UDP ||
	    ipv4_validate(data, data_end, skb->len, ip, pkt) != PARSE_OK ||
	    pkt->dport != bpf_htons(DHCP_SERVER_PORT))
		return 0;
	struct bpfnet_service_ip *owned = bpf_map_lookup_elem(&service_ips, &cfg->dhcp_service_ip);
	return owned && (owned->flags & BPFNET_SERVICE_IP_ACTIVE); /* else another node relays */
}

/* pkt: validated by broadcast_dhcp_for_us(). */
static __always_inline int relay_broadcast_dhcp(struct __sk_buff *skb, const struct ip_packet *pkt,
						const struct bpfnet_iface *cfg)
{
	struct steer_target target;

	trace_ports(pkt);
	if (!loader_alive(cfg)) {
		/* Like ARP: a node whose loader stopped must not answer while another may own the IP. */
		decide(BPFNET_CTR_DHCP_STALE_HEARTBEAT);
		return BPFNET_TC_NEXT;
	}
	struct lan_ports ports = lan_ports_of(pkt);
	struct bpfnet_ip client = ip_v4(pkt->ip->saddr);
	if (steer_lookup(&ports, &client, &cfg->dhcp_service_ip, &target, 0) != STEER_OK ||
	    target.kind != BPFNET_KIND_DHCP) {
		decide(BPFNET_CTR_DROP_NO_BACKEND); /* the DHCP port is not listed any more */
		return TC_ACT_SHOT;
	}
	trace_steered(&target.backend_ip, target.backend_port, target.kind);
	return dhcp_relay_request(skb, pkt, cfg, cfg->dhcp_service_ip.w[3], &target);
}

/* The IPv6 header is 20 bytes longer than IPv4's: a datagram through the pod's MTU carries that much less. */
#define IPV6_EXTRA_HEADER_LEN (IPV6_HEADER_LEN - 20)

/* DNAT into the backend's pod (walks 3, 4 and 6), either family. */
static __always_inline int steer_to_backend(struct __sk_buff *skb, const struct ip_packet *pkt,
					    const struct bpfnet_ip *daddr, const struct steer_target *target)
{
	struct bpfnet_pod_link own;
	const struct bpfnet_pod_link *link = target_pod_link(target, &own);

	if (!link) {
		decide(BPFNET_CTR_DROP_NO_BACKEND);
		return TC_ACT_SHOT;
	}
	if (target->kind == BPFNET_KIND_TFTP)
		tftp_clamp_blksize(skb, pkt->l4_off, pkt->l4_end,
				   pkt->ip6 ? (__u32)link->mtu - IPV6_EXTRA_HEADER_LEN : link->mtu);
	if (nat_rewrite_ip(skb, pkt, NAT_DESTINATION, daddr, &target->backend_ip, pkt->dport,
			   target->backend_port) ||
	    rewrite_macs(skb, link->pod_mac, link->veth_mac)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	return deliver_into_pod(skb, link->ifindex, link->flags, target->path);
}

/*
 * Whether an accepted packet may teach the datapath where its sender is. A TCP connection's packets do so
 * with its first, the SYN (a host's first packet to a service IP is one), and a flow's (TFTP's transfer
 * port) with the one that confirms it, which found its host known at its MAC: the others would only find
 * their sender known, at a neighbours lookup each. A host the table lost since (LRU) is asked for again on
 * the way back (a neighbour miss).
 */
static __always_inline int teaches_sender(const struct ip_packet *pkt, const struct steer_target *target)
{
	if (target->path == BPFNET_CTR_DNAT_FLOW && !target->unconfirmed)
		return 0;
	return pkt->proto != IPPROTO_TCP || (pkt->tcp_flags & TCP_FLAG_SYN_BYTE);
}

/*
 * A packet from the LAN for a service IP, either family (its fixed header at l3, its destination on the
 * provisioning subnet): DNAT into the pod, relay, or drop (walks 2, 3, 4, 6); BPFNET_TC_NEXT when the
 * destination is no service IP. relays_dhcp: a constant, for the IPv4 copies of this path: tc_ipv4_dhcp's
 * (UDP to port 67, the only port a DHCP kind is listed on) relays, the others have no relay in them (their
 * frames stay small enough for the verifier's stack limit; see tc_ndp). DHCPv6 is relayed by tc_ipv6_dhcp.
 */
static __always_inline int steer_from_lan(struct __sk_buff *skb, void *data, struct ethhdr *eth, void *l3,
					  const struct bpfnet_iface *cfg, const struct l3_addrs *a,
					  const int relays_dhcp, const int v6)
{
	struct ip_packet pkt = {};
	struct steer_target target;
	enum bpfnet_counter refused = admit(skb, 0, data, skb->len, l3, cfg, a, eth->h_source,
					    BPFNET_HOOK_TC_NIC_INGRESS, &pkt, &target, v6);
	if (refused == BPFNET_CTR_PASS)
		return BPFNET_TC_NEXT;
	if (refused != BPFNET_CTR_MAX) {
		decide(refused);
		return TC_ACT_SHOT;
	}
	struct lan_ports ports = lan_ports_of(&pkt);
	trace_steered(&target.backend_ip, target.backend_port, target.kind);
	__u64 sender = mac_load(eth->h_source); /* the rewrite below moves the packet */

	/* Never: port 67 goes to tc_ipv4_dhcp; and only a DHCPv6 datagram right after the fixed header gets
	 * to tc_ipv6_dhcp (clients send no extension headers). */
	if ((target.kind == BPFNET_KIND_DHCP && !relays_dhcp) || (v6 && target.kind == BPFNET_KIND_DHCP6)) {
		decide(BPFNET_CTR_DROP_NOT_ALLOWED);
		return TC_ACT_SHOT;
	}
	/* Unicast to the DHCP port: renewals, and requests from relays on the LAN. */
	if (target.kind == BPFNET_KIND_DHCP && !loader_alive(cfg)) {
		decide(BPFNET_CTR_DHCP_STALE_HEARTBEAT);
		return TC_ACT_SHOT;
	}
	int action = relays_dhcp && target.kind == BPFNET_KIND_DHCP
			     ? dhcp_relay_request(skb, &pkt, cfg, a->daddr.w[3], &target)
			     : steer_to_backend(skb, &pkt, &a->daddr, &target);
	if (action == TC_ACT_SHOT)
		return action;
	/* Accepted (into the pod, or handed on to the node's routing): what the packet tells about its sender
	 * may be remembered now, never from a drop. */
	if (!target.unconfirmed && !teaches_sender(&pkt, &target))
		return action;
	__u8 sender_mac[6];
	mac_store(sender_mac, sender);
	if (target.unconfirmed)
		confirm_flow(&ports, &a->saddr, &a->daddr, &target, sender_mac);
	if (teaches_sender(&pkt, &target))
		learn_neighbour(cfg, &a->saddr, sender_mac, NEIGHBOUR_FROM_ACCEPTED, &a->daddr, v6);
	return action;
}

/* Not to a service IP but maybe to a shared address (tc_from_lan, tc_from_pod): tc_lan_to_shared's or
 * tc_pod_to_shared's to judge, in a frame of their own. */
#define TC_TO_SHARED (-4)

/*
 * A source no client has (loopback, unspecified, multicast, broadcast, or the shared address itself): the
 * node's stack drops such martians; steered into the pod, they would reach it before that check.
 */
static __always_inline int martian_source(const struct bpfnet_ip *saddr, const struct bpfnet_ip *daddr,
					  const int v6)
{
	if (ip_equal(saddr, daddr))
		return 1;
	if (v6) {
		__u32 w0 = bpf_ntohl(saddr->w[0]);
		int zero_prefix = saddr->w[0] == 0 && saddr->w[1] == 0 && saddr->w[2] == 0;
		return (w0 >> 24) == 0xff ||
		       (zero_prefix && (saddr->w[3] == 0 || saddr->w[3] == bpf_htonl(1)));
	}
	__u32 a = bpf_ntohl(saddr->w[3]);
	return (a >> 24) == 0 || (a >> 24) == 127 || (a >> 28) == 0xe || a == 0xffffffff;
}

/*
 * A shared address's listed port whose pod runs on another node (BPFNET_SERVICE_VIA_NODE): handed to that
 * node as it came but for its TTL (hop limit), lowered as a router's hop lowers it, through the node's
 * neighbour table (bpf_redirect_neigh toward via_node, out of the NIC it came in by; the kernel resolves and
 * writes the MACs), not through its stack. The pod's node steers the shared address's listed ports into the
 * pod whether it holds the address or not, and its answers leave there as the address, so neither node's
 * conntrack sees one direction of a connection without the other (kube-proxy drops what conntrack calls
 * invalid) and nothing here keeps state: a connection outlives the address moving to another node that hands
 * it on the same way. The destination stays the shared address: the pod's node takes nothing a host could not
 * send it directly.
 */
static __always_inline int forward_to_node(struct __sk_buff *skb, const struct ip_packet *pkt,
					   const struct bpfnet_service *service, const int v6)
{
	int hop = lower_hop_limit(skb, pkt);
	if (hop == HOP_LIMIT_USED_UP) {
		decide(BPFNET_CTR_DROP_HOP_LIMIT);
		return TC_ACT_SHOT;
	}
	if (hop) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	struct bpf_redir_neigh nh = {};
	if (v6) {
		nh.nh_family = 10; /* AF_INET6 */
		__builtin_memcpy(nh.ipv6_nh, &service->via_node, sizeof(nh.ipv6_nh));
	} else {
		nh.nh_family = 2; /* AF_INET */
		nh.ipv4_nh = service->via_node.w[3];
	}
	decide(BPFNET_CTR_FORWARD_TO_NODE);
	return bpf_redirect_neigh(skb->ifindex, &nh, sizeof(nh), 0);
}

/*
 * A packet from the LAN to a shared address, either family (BPFNET_SERVICE_SHARED: an address of the node's
 * that bpfnet does not own, such as the control plane's VIP): a listed port's packet is DNATed into the
 * backend's pod, from any source (the address is reached across routers); everything else, a packet that
 * fails validation included, is the node's own (BPFNET_TC_NEXT): its other ports, ICMP, fragments. Nothing
 * is learned from it: the way back is the node's routing (tc_pod_to_shared).
 */
static __always_inline int tc_lan_to_shared(struct __sk_buff *skb, const int v6)
{
	void *data, *data_end;
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);
	void *l3 = tc_parse_ip(eth, data_end, v6);
	struct ip_packet pkt = {};

	if (!l3)
		return BPFNET_TC_NEXT;
	struct l3_addrs a = l3_addrs_of(l3, v6);
	if (ip_validate(skb, 0, data, skb->len, l3, &pkt, v6) != PARSE_OK ||
	    martian_source(&a.saddr, &a.daddr, v6))
		return BPFNET_TC_NEXT;
	struct bpfnet_service_key key = {.service_ip = a.daddr, .port_be = pkt.dport, .proto = pkt.proto};
	struct bpfnet_service *service = bpf_map_lookup_elem(&services, &key);
	if (!service || !(service->flags & BPFNET_SERVICE_SHARED))
		return BPFNET_TC_NEXT;
	trace_begin(BPFNET_HOOK_TC_NIC_INGRESS);
	trace_addresses(&a.saddr, &a.daddr, l3_proto(l3, v6), eth->h_source);
	trace_ports(&pkt);
	if ((service->flags & BPFNET_SERVICE_SOURCE_RANGES) && !source_in_ranges(&a.daddr, &a.saddr)) {
		decide(BPFNET_CTR_DROP_SOURCE_RANGE);
		return traced_tc(skb, TC_ACT_SHOT);
	}
	if (service->flags & BPFNET_SERVICE_VIA_NODE) {
		trace_steered(&service->via_node, pkt.dport, BPFNET_KIND_PLAIN);
		return traced_tc(skb, forward_to_node(skb, &pkt, service, v6));
	}
	trace_steered(&service->backend_ip, service->backend_port_be, BPFNET_KIND_PLAIN);
	struct steer_target target = {
		.backend_ip = service->backend_ip,
		.backend_port = service->backend_port_be,
		.kind = BPFNET_KIND_PLAIN,
		.path = BPFNET_CTR_DNAT_SERVICE,
		.link = &service->link,
	};
	return traced_tc(skb, steer_to_backend(skb, &pkt, &a.daddr, &target));
}

static __noinline int tc_ipv4_to_shared(struct __sk_buff *skb)
{
	return tc_lan_to_shared(skb, 0);
}

static __noinline int tc_ipv6_to_shared(struct __sk_buff *skb)
{
	return tc_lan_to_shared(skb, 1);
}

/* A family's path from the LAN (a service IP's), then the shared addresses' when it was not a service IP's.
 */
static __always_inline int tc_lan_path(int action, struct __sk_buff *skb, const int v6)
{
	if (action != TC_TO_SHARED)
		return action;
	return v6 ? tc_ipv6_to_shared(skb) : tc_ipv4_to_shared(skb);
}

/*
 * Each family's path at TC ingress is a function of its own, called with the context and the interface
 * config only (it finds the headers again): the verifier's 512 stack bytes cover a whole call chain, and
 * this way the IPv4 and IPv6 paths' frames are never added up.
 */

/* The family's packets to a service IP at TC ingress on the NIC (relays_dhcp: see steer_from_lan). */
static __always_inline int tc_from_lan(struct __sk_buff *skb, const struct bpfnet_iface *cfg,
				       const int relays_dhcp, const int v6)
{
	void *data, *data_end;
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);
	void *l3 = tc_parse_ip(eth, data_end, v6);

	if (!l3)
		return BPFNET_TC_NEXT;
	struct l3_addrs a = l3_addrs_of(l3, v6);
	if (!maybe_service_ip(cfg, &a.daddr, v6))
		return maybe_shared_address(cfg, &a.daddr, v6) ? TC_TO_SHARED : BPFNET_TC_NEXT;
	return traced_tc(skb, steer_from_lan(skb, data, eth, l3, cfg, &a, relays_dhcp, v6));
}

static __noinline int tc_ipv4_from_lan(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	return tc_from_lan(skb, cfg, 0, 0);
}

static __noinline int tc_ipv6_from_lan(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	return tc_from_lan(skb, cfg, 0, 1);
}

/* An ICMP error about a packet the datapath sent as the service IP daddr, translated into the backend's pod.
 */
static __always_inline int icmp_error_to_pod(struct __sk_buff *skb, void *data, void *l3,
					     const struct bpfnet_iface *cfg, const struct l3_addrs *a,
					     const int v6)
{
	const struct bpfnet_ip *daddr = &a->daddr;
	struct ip_packet pkt = {};
	struct icmp_error e;
	struct steer_target target;
	enum bpfnet_counter refused =
		admit_icmp_error(skb, 0, data, skb->len, l3, cfg, a, &pkt, &e, &target, v6);

	if (refused != BPFNET_CTR_MAX) {
		decide(refused);
		return TC_ACT_SHOT;
	}
	trace_steered(&target.backend_ip, target.backend_port, BPFNET_KIND_PLAIN);
	struct bpfnet_backend *backend = bpf_map_lookup_elem(&backends, &target.backend_ip);
	if (!backend) {
		decide(BPFNET_CTR_DROP_NO_BACKEND);
		return TC_ACT_SHOT;
	}
	if (icmp_error_rewrite(skb, &pkt, &e, NAT_DESTINATION, daddr, &target.backend_ip, e.ports.sport,
			       target.backend_port, v6) ||
	    rewrite_macs(skb, backend->pod_mac, backend->veth_mac)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	return deliver_to_backend(skb, backend, BPFNET_CTR_ICMP_ERROR_TO_POD);
}

/* The family's ICMP at TC ingress on the NIC: errors to a service IP. */
static __always_inline int tc_icmp_error_to_pod(struct __sk_buff *skb, const struct bpfnet_iface *cfg,
						const int v6)
{
	void *data, *data_end;
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);
	void *l3 = tc_parse_ip(eth, data_end, v6);

	if (!l3)
		return BPFNET_TC_NEXT;
	struct l3_addrs a = l3_addrs_of(l3, v6);
	if (!service_ip_asked(cfg, l3, &a, eth->h_source, BPFNET_HOOK_TC_NIC_INGRESS, v6))
		return BPFNET_TC_NEXT;
	return traced_tc(skb, icmp_error_to_pod(skb, data, l3, cfg, &a, v6));
}

static __noinline int tc_icmp4_error_to_pod(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	return tc_icmp_error_to_pod(skb, cfg, 0);
}

static __noinline int tc_icmp6_error_to_pod(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	return tc_icmp_error_to_pod(skb, cfg, 1);
}

/* Not a neighbour solicitation or advertisement (tc_ndp): the packet is for the IPv6 path. */
#define TC_NOT_NDP (-2)

/* The NDP responder at TC ingress on the NIC: a solicitation for a service address. */
static __noinline int tc_ndp(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	void *data, *data_end;
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);
	struct ipv6hdr *ip6 = eth ? parse_ipv6_fixed(eth, data_end) : NULL;
	struct ndp_msg nd;

	if (!ip6 || ndp_read(skb, 0, data, skb->len, ip6, &nd))
		return TC_NOT_NDP;
	struct bpfnet_service_ip *service = bpf_map_lookup_elem(&service_ips, &nd.target);
	if (nd.type != ICMPV6_NEIGHBOUR_SOLICIT || !service)
		return BPFNET_TC_NEXT;
	trace_begin(BPFNET_HOOK_TC_NIC_INGRESS);
	trace_addresses(&nd.source, &nd.target, IPV6_NEXTHDR_ICMP, eth->h_source);
	return traced_tc(skb, tc_answer_ns(skb, &nd, eth->h_source, service, cfg));
}

/* Not DHCPv6 the relay takes (tc_ipv6_dhcp, tc_pod_dhcp6): the packet is for the IPv6 path. */
#define TC_NOT_DHCP6 (-3)

/* ff02::1:2, All_DHCP_Relay_Agents_and_Servers (RFC 8415 section 7.1). */
static __always_inline int ip6_all_dhcp_agents(const struct bpfnet_ip *ip)
{
	return ip->w[0] == bpf_htonl(0xff020000) && ip->w[1] == 0 && ip->w[2] == 0 &&
	       ip->w[3] == bpf_htonl(0x00010002);
}

/* An IPv6 UDP datagram to port 547 right after the fixed header (its header in the linear part). */
static __always_inline int udp6_to_dhcp_server(struct ipv6hdr *ip6, void *data_end)
{
	struct udphdr *udp = (void *)(ip6 + 1);

	if (ip6->nexthdr != IPPROTO_UDP || (void *)(udp + 1) > data_end)
		return 0;
	return udp->dest == bpf_htons(DHCP6_SERVER_PORT);
}

/*
 * A DHCPv6 message to relay: to ff02::1:2 while this node owns the DHCPv6 service address (else not ours:
 * another node relays), or to that address (a relay on the LAN, from its subnet address). Fills pkt.
 */
static __always_inline int dhcp6_for_us(struct __sk_buff *skb, void *data, struct ipv6hdr *ip6,
					const struct bpfnet_iface *cfg, const struct bpfnet_ip *daddr,
					struct ip_packet *pkt)
{
	int multicast = ip6_all_dhcp_agents(daddr);

	/* The destination first: UDP to 547 of any other host of the LAN costs no map lookup. */
	if (ip_is_unset(&cfg->dhcp6_service_ip) || (!multicast && !ip_equal(daddr, &cfg->dhcp6_service_ip)))
		return 0;
	struct bpfnet_service_ip *owned = bpf_map_lookup_elem(&service_ips, &cfg->dhcp6_service_ip);
	if (!owned || (multicast && !(owned->flags & BPFNET_SERVICE_IP_ACTIVE)))
		return 0;
	return ipv6_validate(skb, 0, data, skb->len, ip6, pkt) == PARSE_OK && pkt->proto == IPPROTO_UDP &&
	       pkt->dport == bpf_htons(DHCP6_SERVER_PORT);
}

/* pkt: validated by dhcp6_for_us(). */
static __always_inline int relay_dhcp6(struct __sk_buff *skb, const struct ip_packet *pkt, struct ethhdr *eth,
				       const struct bpfnet_iface *cfg, const struct bpfnet_ip *saddr,
				       const struct bpfnet_ip *daddr)
{
	struct bpfnet_ip service = cfg->dhcp6_service_ip;
	int multicast = ip6_all_dhcp_agents(daddr);
	struct steer_target target;

	trace_ports(pkt);
	if (!loader_alive(cfg)) {
		decide(BPFNET_CTR_DHCP_STALE_HEARTBEAT); /* as for DHCP: another node may own the address */
		return multicast ? BPFNET_TC_NEXT : TC_ACT_SHOT;
	}
	/* Unicast comes from a relay's address on the LAN; clients send from link-local addresses. */
	if (!multicast && !in_provisioning_subnet(cfg, saddr, 1)) {
		decide(BPFNET_CTR_DROP_OFF_SUBNET);
		return TC_ACT_SHOT;
	}
	struct lan_ports ports = lan_ports_of(pkt);
	enum steer_result steered = steer_lookup(&ports, saddr, &service, &target, !multicast);
	if (steered != STEER_OK || target.kind != BPFNET_KIND_DHCP6) {
		decide(steered == STEER_OK ? BPFNET_CTR_DROP_NO_BACKEND : steer_drop_reason(steered));
		return TC_ACT_SHOT;
	}
	trace_steered(&target.backend_ip, target.backend_port, target.kind);
	__u8 sender_mac[6]; /* the rewrite moves the packet */
	mac_copy(sender_mac, eth->h_source);
	return dhcp6_relay_request(skb, pkt, cfg, &target, saddr, daddr, &service, sender_mac);
}

/* IPv6 UDP to port 547 at TC ingress on the NIC: DHCPv6 to relay, to ff02::1:2 or the service address. */
static __noinline int tc_ipv6_dhcp(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	void *data, *data_end;
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);
	struct ipv6hdr *ip6 = eth ? parse_ipv6_fixed(eth, data_end) : NULL;
	struct ip_packet pkt = {};

	if (!ip6)
		return BPFNET_TC_NEXT;
	struct bpfnet_ip saddr = ip_of(&ip6->saddr);
	struct bpfnet_ip daddr = ip_of(&ip6->daddr);
	if (!dhcp6_for_us(skb, data, ip6, cfg, &daddr, &pkt))
		return TC_NOT_DHCP6;
	trace_begin(BPFNET_HOOK_TC_NIC_INGRESS);
	trace_addresses(&saddr, &daddr, IPPROTO_UDP, eth->h_source);
	return traced_tc(skb, relay_dhcp6(skb, &pkt, eth, cfg, &saddr, &daddr));
}

/* A UDP datagram to the DHCP server port (its header in the linear part, which tc_parse_eth pulled). */
static __always_inline int udp_to_dhcp_server(struct iphdr *ip, void *data_end)
{
	struct udphdr *udp = (void *)ip + ip->ihl * 4;

	if (ip->protocol != IPPROTO_UDP || ip->ihl < 5 || (void *)(udp + 1) > data_end)
		return 0;
	return udp->dest == bpf_htons(DHCP_SERVER_PORT);
}

/* Broadcast UDP to port 67 at TC ingress on the NIC: a DHCP request to relay when this node owns the DHCP
 * service IP. */
static __noinline int tc_broadcast_dhcp(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	void *data, *data_end;
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);
	struct iphdr *ip = tc_parse_ip(eth, data_end, 0);
	struct ip_packet pkt = {};

	if (!ip || !broadcast_dhcp_for_us(skb, data, data_end, ip, cfg, &pkt))
		return BPFNET_TC_NEXT;
	struct l3_addrs a = l3_addrs_of(ip, 0);
	trace_begin(BPFNET_HOOK_TC_NIC_INGRESS);
	trace_addresses(&a.saddr, &a.daddr, ip->protocol, eth->h_source);
	return traced_tc(skb, relay_broadcast_dhcp(skb, &pkt, cfg));
}

/* Unicast UDP to port 67 at TC ingress on the NIC: DHCP requests to a service IP, relayed. */
static __noinline int tc_ipv4_dhcp(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	return tc_from_lan(skb, cfg, 1, 0);
}

SEC("tc")
int tc_nic_ingress(struct __sk_buff *skb)
{
	void *data, *data_end;
	struct bpfnet_iface *cfg = iface_config();
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);

	/*
	 * A frame of a VLAN, on the VLAN's parent device: the kernel has moved its tag into the skb before TC
	 * and hands it to the VLAN's sub-interface after TC. It belongs to that sub-interface (the interface
	 * to configure), never to the parent: steered from here it would carry its tag into the pod. A
	 * priority tag (VLAN id 0) marks untagged traffic, which is ours.
	 */
	if (!cfg || !eth || (skb->vlan_present && (skb->vlan_tci & VLAN_ID_MASK)))
		return BPFNET_TC_NEXT;
	if (eth->h_proto == bpf_htons(ETH_P_ARP))
		return tc_arp(skb, cfg);
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		/* Only ICMPv6 right after the fixed header can be neighbour discovery: the rest skips that
		 * call. */
		struct ipv6hdr *ip6 = parse_ipv6_fixed(eth, data_end);
		if (ip6 && udp6_to_dhcp_server(ip6, data_end)) {
			int relayed = tc_ipv6_dhcp(skb, cfg);
			return relayed != TC_NOT_DHCP6 ? relayed
						       : tc_lan_path(tc_ipv6_from_lan(skb, cfg), skb, 1);
		}
		if (!ip6 || ip6->nexthdr != IPV6_NEXTHDR_ICMP)
			return tc_lan_path(tc_ipv6_from_lan(skb, cfg), skb, 1);
		int ndp = tc_ndp(skb, cfg);
		return ndp != TC_NOT_NDP ? ndp : tc_icmp6_error_to_pod(skb, cfg);
	}
	struct iphdr *ip = tc_parse_ip(eth, data_end, 0);
	if (!ip)
		return BPFNET_TC_NEXT;
	if (udp_to_dhcp_server(ip, data_end))
		return ip->daddr == 0xffffffff ? tc_broadcast_dhcp(skb, cfg)
					       : tc_lan_path(tc_ipv4_dhcp(skb, cfg), skb, 0);
	if (ip->daddr == 0xffffffff)
		return BPFNET_TC_NEXT;
	return ip->protocol == IPPROTO_ICMP ? tc_icmp4_error_to_pod(skb, cfg)
					    : tc_lan_path(tc_ipv4_from_lan(skb, cfg), skb, 0);
}

/*
 * Records the pod's side of a connection so the host's answers find their way back (walks 3 and 5). A new
 * flow waits in flows_unconfirmed until the host answers (confirm_flow); the pod moving a known flow to
 * another backend port is trusted and updated in place. The pod's packets, never the host's, keep a flow
 * fresh (seen): the loader's sweep removes flows the pod has not sent on for a while, and the pod's next
 * packet on one records it again.
 */
static __always_inline void record_flow(const struct lan_ports *pkt, const struct bpfnet_ip *host,
					const struct bpfnet_ip *service_ip,
					const struct bpfnet_ip *backend_ip)
{
	/* The pod's packet goes to the host: its destination is the host's side of the flow. */
	struct bpfnet_flow_key key = flow_key(host, pkt->dport, service_ip, pkt->sport, pkt->proto);
	struct bpfnet_flow flow = {
		.backend_ip = *backend_ip, .backend_port_be = pkt->sport, .seen = flow_clock()};
	struct bpfnet_flow *known = bpf_map_lookup_elem(&flows, &key);

	mark_flow_port(pkt->sport);
	if (known) {
		if (!ip_equal(&known->backend_ip, backend_ip) || known->backend_port_be != pkt->sport)
			bpf_map_update_elem(&flows, &key, &flow, BPF_EXIST);
		else if (known->seen != flow.seen) /* once a clock unit: the entry is seldom written */
			known->seen = flow.seen;
		return;
	}
	known = bpf_map_lookup_elem(&flows_unconfirmed, &key);
	if (known && ip_equal(&known->backend_ip, backend_ip) && known->backend_port_be == pkt->sport) {
		if (known->seen != flow.seen) /* bpfnetctl flows' IDLE, for flows beyond a host's share too */
			known->seen = flow.seen;
		return;
	}
	bpf_map_update_elem(&flows_unconfirmed, &key, &flow, BPF_ANY);
	count(BPFNET_CTR_FLOW_CREATED);
}

/* The pod's UDP to port 547: its DHCPv6 server's Relay-Reply to the DHCPv6 service address. Its listed port's
 * backend_ports entry says the source is this node's backend (no backends lookup, as for steer_from_pod). */
static __noinline int tc_pod_dhcp6(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	void *data, *data_end;
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);
	struct ipv6hdr *ip6 = eth ? parse_ipv6_fixed(eth, data_end) : NULL;
	struct ip_packet pkt = {};

	if (!ip6)
		return BPFNET_TC_NEXT;
	struct bpfnet_ip saddr = ip_of(&ip6->saddr);
	struct bpfnet_ip daddr = ip_of(&ip6->daddr);
	if (ip_is_unset(&cfg->dhcp6_service_ip) || !ip_equal(&daddr, &cfg->dhcp6_service_ip) ||
	    ipv6_validate(skb, 0, data, skb->len, ip6, &pkt) != PARSE_OK || pkt.proto != IPPROTO_UDP)
		return TC_NOT_DHCP6;
	struct bpfnet_backend_port_key bkey = {.backend_ip = saddr, .port_be = pkt.sport, .proto = pkt.proto};
	struct bpfnet_backend_port *listed = bpf_map_lookup_elem(&backend_ports, &bkey);
	if (!listed || listed->kind != BPFNET_KIND_DHCP6)
		return TC_NOT_DHCP6;
	trace_begin(BPFNET_HOOK_TC_POD_INGRESS);
	trace_addresses(&saddr, &daddr, IPPROTO_UDP, eth->h_source);
	trace_ports(&pkt);
	return traced_tc(skb, dhcp6_relay_reply(skb, &pkt, cfg, &daddr));
}

/*
 * The backend's ICMP error about a packet the datapath delivered to it, sent to the LAN as the service IP,
 * either family (its fixed header at l3).
 */
static __always_inline int icmp_error_to_lan(struct __sk_buff *skb, void *data, void *l3,
					     const struct bpfnet_iface *cfg,
					     const struct bpfnet_backend *backend, const struct l3_addrs *a,
					     const int v6)
{
	struct ip_packet pkt = {};
	struct icmp_error e;
	struct bpfnet_ip service_ip;
	__be16 service_port;
	enum parse_verdict verdict = ip_validate(skb, 0, data, skb->len, l3, &pkt, v6);

	if (verdict != PARSE_OTHER_PROTOCOL || icmp_error_read(skb, 0, &pkt, &e, v6)) {
		decide(verdict == PARSE_OTHER_PROTOCOL || verdict == PARSE_OK
			       ? BPFNET_CTR_DROP_BACKEND_PROTOCOL
			       : drop_reason(verdict));
		return TC_ACT_SHOT;
	}
	if (!ip_equal(&e.inner_daddr, &a->saddr) ||
	    quote_to_backend(&e.ports, &e.inner_saddr, &a->saddr, backend, &service_ip, &service_port) ||
	    !ip_in_family(&service_ip, v6)) {
		decide(BPFNET_CTR_DROP_ICMP_UNMATCHED);
		return TC_ACT_SHOT;
	}
	trace_steered(&service_ip, service_port, BPFNET_KIND_PLAIN);
	__u8 host_mac[6];
	/* The pod's own packet: to a service IP it is a hairpin, as the pod's other packets there. */
	if (pod_peer_mac(&a->daddr, &service_ip, host_mac))
		return TC_ACT_SHOT;
	if (icmp_error_rewrite(skb, &pkt, &e, NAT_SOURCE, &a->saddr, &service_ip, e.ports.dport, service_port,
			       v6) ||
	    rewrite_macs(skb, host_mac, cfg->nic_mac)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	decide(BPFNET_CTR_ICMP_ERROR_TO_LAN);
	return bpf_redirect(cfg->nic_ifindex, 0);
}

/*
 * A packet from the pod that failed validation: dropped and counted when it comes from one of this node's
 * backends, else not ours (BPFNET_TC_NEXT). A path of its own, so that the valid packet's path carries no
 * copy of pkt's fields for it (the compiler stored them at every check of the validation).
 */
static __always_inline int refuse_from_pod(const struct ethhdr *eth, const void *l3, const struct l3_addrs *a,
					   enum parse_verdict verdict, const int v6)
{
	if (!bpf_map_lookup_elem(&backends, &a->saddr))
		return BPFNET_TC_NEXT;
	trace_begin(BPFNET_HOOK_TC_POD_INGRESS);
	trace_addresses(&a->saddr, &a->daddr, l3_proto(l3, v6), eth->h_source);
	decide(verdict == PARSE_OTHER_PROTOCOL ? BPFNET_CTR_DROP_BACKEND_PROTOCOL : drop_reason(verdict));
	return TC_ACT_SHOT;
}

/*
 * A packet from a backend to the provisioning LAN, either family (its fixed header at l3, its destination on
 * the subnet): reverse SNAT, relay reply, or flow (walks 2-5); BPFNET_TC_NEXT when its source is none of
 * this node's backends (not ours). A listed port's reply is known to be ours from its backend_ports entry,
 * which says all it needs; only the pod's other packets (its own connections) pay for backends. relays_dhcp:
 * a constant, as for steer_from_lan: only tc_pod_dhcp's copy (UDP to port 67) has the relay; DHCPv6 replies
 * are tc_pod_dhcp6's.
 */
static __always_inline int steer_from_pod(struct __sk_buff *skb, void *data, struct ethhdr *eth, void *l3,
					  const struct bpfnet_iface *cfg, const struct l3_addrs *a,
					  const int relays_dhcp, const int v6)
{
	struct ip_packet pkt = {};
	enum parse_verdict verdict = ip_validate(skb, 0, data, skb->len, l3, &pkt, v6);

	if (verdict != PARSE_OK)
		return refuse_from_pod(eth, l3, a, verdict, v6);
	struct bpfnet_backend_port_key bkey = {
		.backend_ip = a->saddr, .port_be = pkt.sport, .proto = pkt.proto};
	struct bpfnet_backend_port *listed = bpf_map_lookup_elem(&backend_ports, &bkey);
	struct bpfnet_backend *backend = NULL;
	if (!listed && !(backend = bpf_map_lookup_elem(&backends, &a->saddr)))
		return BPFNET_TC_NEXT;
	/* A shared address's reply to a host on the provisioning subnet: the node's routing takes it too. */
	if (listed && (listed->flags & BPFNET_BACKEND_PORT_SHARED))
		return TC_TO_SHARED;
	trace_begin(BPFNET_HOOK_TC_POD_INGRESS);
	trace_addresses(&a->saddr, &a->daddr, l3_proto(l3, v6), eth->h_source);
	trace_ports(&pkt);
	/* The DHCP server answering the relay (giaddr:67). */
	if (relays_dhcp && listed && listed->kind == BPFNET_KIND_DHCP &&
	    pkt.dport == bpf_htons(DHCP_SERVER_PORT))
		return dhcp_relay_reply(skb, &pkt, cfg, listed);
	struct bpfnet_ip service_ip = listed ? listed->service_ip : backend->service_ip;
	__be16 service_port = listed ? listed->service_port_be : pkt.sport;
	enum bpfnet_counter path = listed ? BPFNET_CTR_SNAT_REPLY : BPFNET_CTR_SNAT_FLOW;
	trace_steered(&service_ip, service_port, listed ? listed->kind : BPFNET_KIND_PLAIN);
	if (!ip_in_family(&service_ip, v6)) {
		decide(BPFNET_CTR_DROP_NO_BACKEND); /* a backend entry with no service IP of the packet's
						       family */
		return TC_ACT_SHOT;
	}

	__u8 host_mac[ETH_ALEN];
	if (pod_peer_mac(&a->daddr, &service_ip, host_mac))
		return TC_ACT_SHOT; /* no flow for a packet that cannot leave */
	if (!listed) {
		struct lan_ports ports = lan_ports_of(&pkt);
		record_flow(&ports, &a->daddr, &service_ip, &a->saddr);
	}
	if (nat_rewrite_ip(skb, &pkt, NAT_SOURCE, &a->saddr, &service_ip, pkt.sport, service_port) ||
	    rewrite_macs(skb, host_mac, cfg->nic_mac)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	decide(path);
	return bpf_redirect(cfg->nic_ifindex, 0);
}

/*
 * The backend a packet at TC ingress on a backend's veth comes from, when it goes to the provisioning LAN;
 * NULL when it is not ours (the pod's other traffic is the CNI's). The destination first: the pod's traffic
 * anywhere else costs no lookup. The packet is traced from here on.
 */
static __always_inline struct bpfnet_backend *backend_to_lan(const struct bpfnet_iface *cfg, const void *l3,
							     const struct l3_addrs *a, const __u8 *mac,
							     const int v6)
{
	if (!in_provisioning_subnet(cfg, &a->daddr, v6))
		return NULL;
	struct bpfnet_backend *backend = bpf_map_lookup_elem(&backends, &a->saddr);
	if (backend) {
		trace_begin(BPFNET_HOOK_TC_POD_INGRESS);
		trace_addresses(&a->saddr, &a->daddr, l3_proto(l3, v6), mac);
	}
	return backend;
}

/* The family's packets at TC ingress on a backend's veth (relays_dhcp: see steer_from_pod). The destination
 * first: the pod's traffic anywhere but the provisioning subnet costs no lookup. */
static __always_inline int tc_from_pod(struct __sk_buff *skb, const struct bpfnet_iface *cfg,
				       const int relays_dhcp, const int v6)
{
	void *data, *data_end;
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);
	void *l3 = tc_parse_ip(eth, data_end, v6);

	if (!l3)
		return BPFNET_TC_NEXT;
	struct l3_addrs a = l3_addrs_of(l3, v6);
	if (!in_provisioning_subnet(cfg, &a.daddr, v6))
		return cfg->shared_addresses ? TC_TO_SHARED : BPFNET_TC_NEXT;
	int action = steer_from_pod(skb, data, eth, l3, cfg, &a, relays_dhcp, v6);
	return action == TC_TO_SHARED ? action : traced_tc(skb, action);
}

/*
 * A packet at TC ingress on a backend's veth that may answer on a shared address, either family: a reply
 * from a shared address's listed port (its backend_ports entry says so) that the node routes out of the NIC
 * is SNATed to the shared address and handed to the node's routing and neighbour table on the way out
 * (bpf_redirect_neigh: the client may be behind a router, and its MAC was never learned); anything else is
 * the CNI's (BPFNET_TC_NEXT): the pod's own connections, and the same port's answers to the cluster's own
 * clients (another pod through the ClusterIP Service, the node's kubelet), which never came through the NIC.
 */
static __always_inline int tc_pod_to_shared(struct __sk_buff *skb, const struct bpfnet_iface *cfg,
					    const int v6)
{
	void *data, *data_end;
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);
	void *l3 = tc_parse_ip(eth, data_end, v6);
	struct ip_packet pkt = {};

	if (!l3)
		return BPFNET_TC_NEXT;
	struct l3_addrs a = l3_addrs_of(l3, v6);
	if (ip_validate(skb, 0, data, skb->len, l3, &pkt, v6) != PARSE_OK)
		return BPFNET_TC_NEXT;
	struct bpfnet_backend_port_key bkey = {
		.backend_ip = a.saddr, .port_be = pkt.sport, .proto = pkt.proto};
	struct bpfnet_backend_port *listed = bpf_map_lookup_elem(&backend_ports, &bkey);
	if (!listed || !(listed->flags & BPFNET_BACKEND_PORT_SHARED) ||
	    !routed_out_of_nic(skb, cfg->nic_ifindex))
		return BPFNET_TC_NEXT;
	trace_begin(BPFNET_HOOK_TC_POD_INGRESS);
	trace_addresses(&a.saddr, &a.daddr, l3_proto(l3, v6), eth->h_source);
	trace_ports(&pkt);
	trace_steered(&listed->service_ip, listed->service_port_be, BPFNET_KIND_PLAIN);
	if (nat_rewrite_ip(skb, &pkt, NAT_SOURCE, &a.saddr, &listed->service_ip, pkt.sport,
			   listed->service_port_be)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return traced_tc(skb, TC_ACT_SHOT);
	}
	decide(BPFNET_CTR_SNAT_REPLY);
	return traced_tc(skb, bpf_redirect_neigh(cfg->nic_ifindex, NULL, 0, 0));
}

static __noinline int tc_pod_ipv4_to_shared(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	return tc_pod_to_shared(skb, cfg, 0);
}

static __noinline int tc_pod_ipv6_to_shared(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	return tc_pod_to_shared(skb, cfg, 1);
}

/* A family's path from a backend (to the provisioning LAN), then the shared addresses' when it was none. */
static __always_inline int tc_pod_path(int action, struct __sk_buff *skb, const struct bpfnet_iface *cfg,
				       const int v6)
{
	if (action != TC_TO_SHARED)
		return action;
	return v6 ? tc_pod_ipv6_to_shared(skb, cfg) : tc_pod_ipv4_to_shared(skb, cfg);
}

/* The family's ICMP at TC ingress on a backend's veth: the backend's errors. */
static __always_inline int tc_pod_icmp_error(struct __sk_buff *skb, const struct bpfnet_iface *cfg,
					     const int v6)
{
	void *data, *data_end;
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);
	void *l3 = tc_parse_ip(eth, data_end, v6);

	if (!l3)
		return BPFNET_TC_NEXT;
	struct l3_addrs a = l3_addrs_of(l3, v6);
	struct bpfnet_backend *backend = backend_to_lan(cfg, l3, &a, eth->h_source, v6);
	if (!backend)
		return BPFNET_TC_NEXT;
	return traced_tc(skb, icmp_error_to_lan(skb, data, l3, cfg, backend, &a, v6));
}

static __noinline int tc_pod_ipv4(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	return tc_from_pod(skb, cfg, 0, 0);
}

/* The pod's UDP to port 67: its DHCP server answering the relay. */
static __noinline int tc_pod_dhcp(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	return tc_from_pod(skb, cfg, 1, 0);
}

static __noinline int tc_pod_ipv6(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	return tc_from_pod(skb, cfg, 0, 1);
}

static __noinline int tc_pod_icmp4_error(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	return tc_pod_icmp_error(skb, cfg, 0);
}

static __noinline int tc_pod_icmp6_error(struct __sk_buff *skb, const struct bpfnet_iface *cfg)
{
	return tc_pod_icmp_error(skb, cfg, 1);
}

SEC("tc")
int tc_pod_ingress(struct __sk_buff *skb)
{
	void *data, *data_end;
	struct bpfnet_iface *cfg = iface_config();
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);

	if (!cfg || !eth)
		return BPFNET_TC_NEXT;
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = parse_ipv6_fixed(eth, data_end);
		if (ip6 && ip6->nexthdr == IPV6_NEXTHDR_ICMP)
			return tc_pod_icmp6_error(skb, cfg);
		int relayed =
			ip6 && udp6_to_dhcp_server(ip6, data_end) ? tc_pod_dhcp6(skb, cfg) : TC_NOT_DHCP6;
		return relayed != TC_NOT_DHCP6 ? relayed : tc_pod_path(tc_pod_ipv6(skb, cfg), skb, cfg, 1);
	}
	struct iphdr *ip = tc_parse_ip(eth, data_end, 0);
	if (!ip)
		return BPFNET_TC_NEXT;
	if (ip->protocol == IPPROTO_ICMP)
		return tc_pod_icmp4_error(skb, cfg);
	return tc_pod_path(udp_to_dhcp_server(ip, data_end) ? tc_pod_dhcp(skb, cfg) : tc_pod_ipv4(skb, cfg),
			   skb, cfg, 0);
}
