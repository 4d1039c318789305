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
#include "lib/maps.h"
#include "lib/arp.h"
#include "lib/steer.h"
#include "lib/nat.h"
#include "lib/dhcp.h"
#include "lib/tftp.h"
#include "lib/icmp.h"
#include "lib/trace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define VLAN_ID_MASK 0x0fff /* of the 802.1Q tag control information */

/* Headers the TC programs read: Ethernet, IPv4 with the longest options, the fixed TCP header. */
#define HEADERS_MAX_LEN (sizeof(struct ethhdr) + 60 + sizeof(struct tcphdr))

static __always_inline struct bpfnet_service_ip *service_ip_for(const struct bpfnet_iface *cfg, __be32 ip)
{
	/* Service IPs live in the provisioning subnet: anything else is passed without a lookup. */
	if (!in_provisioning_subnet(cfg, ip))
		return NULL;
	return bpf_map_lookup_elem(&service_ips, &ip);
}

/* An ICMP error to a service IP passes on to TC when it quotes a packet the datapath sent from there. */
static __always_inline int xdp_filter_icmp_error(struct xdp_md *ctx, const struct ipv4_packet *pkt,
						 __be32 daddr)
{
	struct icmp_error e;
	struct steer_target target;

	if (icmp_error_read(ctx, 1, pkt, &e)) {
		decide(BPFNET_CTR_DROP_PROTOCOL); /* an echo request, or an error about nothing we send */
		return XDP_DROP;
	}
	if (e.inner_saddr != daddr || icmp_quote_from_service(&e, &target)) {
		decide(BPFNET_CTR_DROP_ICMP_UNMATCHED);
		return XDP_DROP;
	}
	return XDP_PASS; /* tc_nic_ingress translates it */
}

/* For packets to a service IP: keep what a listed port or recorded flow allows, drop the rest. */
static __always_inline int xdp_filter_service_traffic(struct xdp_md *ctx, void *data, void *data_end,
						      struct ethhdr *eth, struct iphdr *ip,
						      const struct bpfnet_iface *cfg)
{
	struct ipv4_packet pkt = {};
	enum parse_verdict verdict = ipv4_validate(data, data_end, data_end - data, eth, ip, &pkt);

	if (verdict == PARSE_OTHER_PROTOCOL && ip->protocol == IPPROTO_ICMP)
		return xdp_filter_icmp_error(ctx, &pkt, ip->daddr);
	if (verdict != PARSE_OK) {
		decide(drop_reason(verdict));
		return XDP_DROP;
	}
	trace_ports(&pkt);
	if (!in_provisioning_subnet(cfg, ip->saddr)) {
		decide(BPFNET_CTR_DROP_OFF_SUBNET);
		return XDP_DROP;
	}

	struct steer_target target;
	enum steer_result steered = steer_lookup(&pkt, ip->saddr, ip->daddr, &target, 1);
	if (steered != STEER_OK) {
		decide(steer_drop_reason(steered));
		return XDP_DROP;
	}
	return XDP_PASS; /* tc_nic_ingress steers it */
}

/* The verdict, after the decision taken for it has been traced. */
static __always_inline int traced_xdp(int verdict)
{
	trace_end_xdp();
	return verdict;
}

SEC("xdp")
int xdp_nic(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct bpfnet_iface *cfg = iface_config();
	struct ethhdr *eth = parse_eth(data, data_end);

	if (!cfg || !eth)
		goto pass;
	if (eth->h_proto == bpf_htons(ETH_P_ARP))
		return xdp_observe_arp(eth, data_end, cfg);
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		goto pass;

	struct iphdr *ip = parse_ipv4_fixed(eth, data_end);
	if (!ip || !service_ip_for(cfg, ip->daddr))
		goto pass;
	trace_begin(BPFNET_HOOK_XDP_NIC);
	trace_addresses(ip->saddr, ip->daddr, ip->protocol, eth->h_source);
	return traced_xdp(xdp_filter_service_traffic(ctx, data, data_end, eth, ip, cfg));
pass:
	count(BPFNET_CTR_PASS);
	return XDP_PASS;
}

/* Makes sure the headers are in the linear part of the skb, so direct packet access can reach them. */
static __always_inline void pull_headers(struct __sk_buff *skb)
{
	__u32 linear = skb->data_end - skb->data;

	if (linear < HEADERS_MAX_LEN && skb->len > linear)
		bpf_skb_pull_data(skb, skb->len < HEADERS_MAX_LEN ? skb->len : HEADERS_MAX_LEN);
}

/* The Ethernet header of a frame in a TC program, with the headers pulled into the linear part. */
static __always_inline struct ethhdr *tc_parse_eth(struct __sk_buff *skb, void **data, void **data_end)
{
	pull_headers(skb);
	*data = (void *)(long)skb->data;
	*data_end = (void *)(long)skb->data_end;
	return parse_eth(*data, *data_end);
}

/* The IPv4 header of an Ethernet frame in a TC program. */
static __always_inline struct iphdr *tc_parse_ipv4(struct ethhdr *eth, void *data_end)
{
	if (!eth || eth->h_proto != bpf_htons(ETH_P_IP))
		return NULL;
	return parse_ipv4_fixed(eth, data_end);
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

/* ARP at TC ingress: a who-has for a service IP is answered (or declined) here, everything else passes. */
static __always_inline int tc_arp(struct __sk_buff *skb, struct ethhdr *eth, void *data_end,
				  const struct bpfnet_iface *cfg)
{
	struct arp_ipv4 *arp = parse_arp_ipv4(eth, data_end);
	struct bpfnet_service_ip *service = arp ? arp_service_asked(arp) : NULL;

	if (!service)
		return BPFNET_TC_NEXT;
	trace_begin(BPFNET_HOOK_TC_NIC_INGRESS);
	trace_addresses(arp->sender_ip, arp->target_ip, 0, eth->h_source);
	return traced_tc(skb, tc_answer_arp(eth, arp, service, cfg));
}

/* A broadcast on the LAN is ours only when it is a DHCP request and this node owns the DHCP service IP. */
static __always_inline int broadcast_dhcp_for_us(struct __sk_buff *skb, void *data, void *data_end,
						 struct ethhdr *eth, struct iphdr *ip,
						 const struct bpfnet_iface *cfg, struct ipv4_packet *pkt)
{
	__be32 service_ip = cfg->dhcp_service_ip_be;

	if (!service_ip || ip->protocol != IPPROTO_UDP ||
	    ipv4_validate(data, data_end, skb->len, eth, ip, pkt) != PARSE_OK ||
	    pkt->dport != bpf_htons(DHCP_SERVER_PORT))
		return 0;
	struct bpfnet_service_ip *owned = bpf_map_lookup_elem(&service_ips, &service_ip);
	return owned && (owned->flags & BPFNET_SERVICE_IP_ACTIVE); /* else another node relays */
}

/* pkt: validated by broadcast_dhcp_for_us(). */
static __always_inline int relay_broadcast_dhcp(struct __sk_buff *skb, const struct ipv4_packet *pkt,
						const struct bpfnet_iface *cfg)
{
	__be32 service_ip = cfg->dhcp_service_ip_be;
	struct steer_target target;

	trace_ports(pkt);
	if (!loader_alive(cfg)) {
		/* Like ARP: a node whose loader stopped must not answer while another may own the IP. */
		decide(BPFNET_CTR_DHCP_STALE_HEARTBEAT);
		return BPFNET_TC_NEXT;
	}
	if (steer_lookup(pkt, pkt->ip->saddr, service_ip, &target, 0) != STEER_OK ||
	    target.kind != BPFNET_KIND_DHCP) {
		decide(BPFNET_CTR_DROP_NO_BACKEND); /* the DHCP port is not listed any more */
		return TC_ACT_SHOT;
	}
	trace_steered(target.backend_ip, target.backend_port, target.kind);
	return dhcp_relay_request(skb, pkt, cfg, service_ip, &target);
}

/* An ICMP error about a packet the datapath sent as the service IP, translated into the backend's pod. */
static __always_inline int icmp_error_to_pod(struct __sk_buff *skb, const struct ipv4_packet *pkt,
					     __be32 daddr)
{
	struct icmp_error e;
	struct steer_target target;

	if (icmp_error_read(skb, 0, pkt, &e)) {
		decide(BPFNET_CTR_DROP_PROTOCOL);
		return TC_ACT_SHOT;
	}
	if (e.inner_saddr != daddr || icmp_quote_from_service(&e, &target)) {
		decide(BPFNET_CTR_DROP_ICMP_UNMATCHED);
		return TC_ACT_SHOT;
	}
	trace_steered(target.backend_ip, target.backend_port, BPFNET_KIND_PLAIN);
	struct bpfnet_backend *backend = bpf_map_lookup_elem(&backends, &target.backend_ip);
	if (!backend) {
		decide(BPFNET_CTR_DROP_NO_BACKEND);
		return TC_ACT_SHOT;
	}
	if (icmp_error_rewrite(skb, pkt, &e, NAT_DESTINATION, daddr, target.backend_ip, e.inner_sport,
			       target.backend_port) ||
	    rewrite_macs(skb, backend->pod_mac, backend->veth_mac)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	decide(BPFNET_CTR_ICMP_ERROR_TO_POD);
	return deliver_to_backend(backend);
}

/* DNAT into the backend's pod (walks 3, 4 and 6). */
static __always_inline int steer_to_backend(struct __sk_buff *skb, const struct ipv4_packet *pkt,
					    __be32 daddr, const struct steer_target *target)
{
	struct bpfnet_backend *backend = bpf_map_lookup_elem(&backends, &target->backend_ip);
	if (!backend) {
		decide(BPFNET_CTR_DROP_NO_BACKEND);
		return TC_ACT_SHOT;
	}
	if (target->kind == BPFNET_KIND_TFTP)
		tftp_clamp_blksize(skb, pkt->l4_off, pkt->l4_end, backend->mtu);
	if (nat_rewrite(skb, pkt, NAT_DESTINATION, daddr, target->backend_ip, pkt->dport,
			target->backend_port) ||
	    rewrite_macs(skb, backend->pod_mac, backend->veth_mac)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	decide(target->path);
	return deliver_to_backend(backend);
}

/* A packet from the LAN for a service IP: DNAT into the pod, relay, or drop (walks 2, 3, 4, 6). */
static __always_inline int steer_from_lan(struct __sk_buff *skb, void *data, void *data_end,
					  struct ethhdr *eth, struct iphdr *ip,
					  const struct bpfnet_iface *cfg)
{
	/* XDP has already dropped what is not allowed; checked again so TC is safe on its own. */
	struct ipv4_packet pkt = {};
	enum parse_verdict verdict = ipv4_validate(data, data_end, skb->len, eth, ip, &pkt);
	__be32 saddr = ip->saddr;
	__be32 daddr = ip->daddr;
	if (verdict == PARSE_OTHER_PROTOCOL && pkt.proto == IPPROTO_ICMP)
		return icmp_error_to_pod(skb, &pkt, daddr);
	if (verdict != PARSE_OK) {
		decide(drop_reason(verdict));
		return TC_ACT_SHOT;
	}
	trace_ports(&pkt);
	/* The way back leaves only onto the provisioning subnet (tc_pod_ingress): nothing else gets in. */
	if (!in_provisioning_subnet(cfg, saddr)) {
		decide(BPFNET_CTR_DROP_OFF_SUBNET);
		return TC_ACT_SHOT;
	}
	struct steer_target target;
	enum steer_result steered = steer_lookup(&pkt, saddr, daddr, &target, 1);
	if (steered != STEER_OK) {
		decide(steer_drop_reason(steered));
		return TC_ACT_SHOT;
	}
	trace_steered(target.backend_ip, target.backend_port, target.kind);
	__u8 sender_mac[6]; /* the rewrite below moves the packet */
	mac_copy(sender_mac, eth->h_source);

	/* Unicast to the DHCP port: renewals, and requests from relays on the LAN. */
	if (target.kind == BPFNET_KIND_DHCP && !loader_alive(cfg)) {
		decide(BPFNET_CTR_DHCP_STALE_HEARTBEAT);
		return TC_ACT_SHOT;
	}
	int action = target.kind == BPFNET_KIND_DHCP ? dhcp_relay_request(skb, &pkt, cfg, daddr, &target)
						     : steer_to_backend(skb, &pkt, daddr, &target);
	if (action != TC_ACT_REDIRECT)
		return action;
	/* Accepted: what the packet tells about its sender may be remembered now, never from a drop. */
	if (target.unconfirmed)
		confirm_flow(&pkt, saddr, daddr, &target);
	learn_neighbour(cfg, saddr, sender_mac, NEIGHBOUR_FROM_ACCEPTED, daddr);
	return action;
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
		return tc_arp(skb, eth, data_end, cfg);
	struct iphdr *ip = tc_parse_ipv4(eth, data_end);
	if (!ip)
		return BPFNET_TC_NEXT;
	if (ip->daddr == 0xffffffff) {
		struct ipv4_packet pkt = {};
		if (!broadcast_dhcp_for_us(skb, data, data_end, eth, ip, cfg, &pkt))
			return BPFNET_TC_NEXT;
		trace_begin(BPFNET_HOOK_TC_NIC_INGRESS);
		trace_addresses(ip->saddr, ip->daddr, ip->protocol, eth->h_source);
		return traced_tc(skb, relay_broadcast_dhcp(skb, &pkt, cfg));
	}
	if (!service_ip_for(cfg, ip->daddr))
		return BPFNET_TC_NEXT;
	trace_begin(BPFNET_HOOK_TC_NIC_INGRESS);
	trace_addresses(ip->saddr, ip->daddr, ip->protocol, eth->h_source);
	return traced_tc(skb, steer_from_lan(skb, data, data_end, eth, ip, cfg));
}

/*
 * Records the pod's side of a connection so the host's answers find their way back (walks 3 and 5). A new
 * flow waits in flows_unconfirmed until the host answers (confirm_flow); the pod moving a known flow to
 * another backend port is trusted and updated in place.
 */
static __always_inline void record_flow(const struct ipv4_packet *pkt, __be32 host, __be32 service_ip,
					__be32 backend_ip)
{
	/* The pod's packet goes to the host: its destination is the host's side of the flow. */
	struct bpfnet_flow_key key = flow_key(host, pkt->dport, service_ip, pkt->sport, pkt->proto);
	struct bpfnet_flow flow = {.backend_ip_be = backend_ip, .backend_port_be = pkt->sport};
	struct bpfnet_flow *known = bpf_map_lookup_elem(&flows, &key);
	if (known) {
		if (known->backend_ip_be != backend_ip || known->backend_port_be != pkt->sport)
			bpf_map_update_elem(&flows, &key, &flow, BPF_EXIST);
		return;
	}
	known = bpf_map_lookup_elem(&flows_unconfirmed, &key);
	if (known && known->backend_ip_be == backend_ip && known->backend_port_be == pkt->sport)
		return;
	bpf_map_update_elem(&flows_unconfirmed, &key, &flow, BPF_ANY);
	count(BPFNET_CTR_FLOW_CREATED);
}

/* The backend's ICMP error about a packet the datapath delivered to it, sent to the LAN as the service IP. */
static __always_inline int icmp_error_to_lan(struct __sk_buff *skb, const struct ipv4_packet *pkt,
					     const struct bpfnet_iface *cfg,
					     const struct bpfnet_backend *backend, __be32 saddr, __be32 daddr)
{
	struct icmp_error e;
	__be32 service_ip;
	__be16 service_port;

	if (icmp_error_read(skb, 0, pkt, &e)) {
		decide(BPFNET_CTR_DROP_BACKEND_PROTOCOL);
		return TC_ACT_SHOT;
	}
	if (e.inner_daddr != saddr || icmp_quote_to_backend(&e, backend, &service_ip, &service_port)) {
		decide(BPFNET_CTR_DROP_ICMP_UNMATCHED);
		return TC_ACT_SHOT;
	}
	trace_steered(service_ip, service_port, BPFNET_KIND_PLAIN);
	__u8 host_mac[6];
	if (lan_host_mac(daddr, service_ip, host_mac))
		return TC_ACT_SHOT;
	if (icmp_error_rewrite(skb, pkt, &e, NAT_SOURCE, saddr, service_ip, e.inner_dport, service_port) ||
	    rewrite_macs(skb, host_mac, cfg->nic_mac)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	decide(BPFNET_CTR_ICMP_ERROR_TO_LAN);
	return bpf_redirect(cfg->nic_ifindex, 0);
}

/* A packet from a backend to the provisioning LAN: reverse SNAT, relay reply, or flow (walks 2-5). */
static __always_inline int steer_from_pod(struct __sk_buff *skb, void *data, void *data_end,
					  struct ethhdr *eth, struct iphdr *ip,
					  const struct bpfnet_iface *cfg,
					  const struct bpfnet_backend *backend)
{
	__be32 saddr = ip->saddr;
	__be32 daddr = ip->daddr;
	struct ipv4_packet pkt = {};
	enum parse_verdict verdict = ipv4_validate(data, data_end, skb->len, eth, ip, &pkt);
	if (verdict == PARSE_OTHER_PROTOCOL && pkt.proto == IPPROTO_ICMP)
		return icmp_error_to_lan(skb, &pkt, cfg, backend, saddr, daddr);
	if (verdict != PARSE_OK) {
		decide(verdict == PARSE_OTHER_PROTOCOL ? BPFNET_CTR_DROP_BACKEND_PROTOCOL
						       : drop_reason(verdict));
		return TC_ACT_SHOT;
	}
	trace_ports(&pkt);

	struct bpfnet_backend_port_key bkey = {
		.backend_ip_be = saddr, .port_be = pkt.sport, .proto = pkt.proto};
	struct bpfnet_backend_port *listed = bpf_map_lookup_elem(&backend_ports, &bkey);
	/* The DHCP server answering the relay (giaddr:67). */
	if (listed && listed->kind == BPFNET_KIND_DHCP && pkt.dport == bpf_htons(DHCP_SERVER_PORT))
		return dhcp_relay_reply(skb, &pkt, cfg, listed);
	/* The pod calling its own service IP would need both addresses rewritten; refused, visibly. */
	if (bpf_map_lookup_elem(&service_ips, &daddr)) {
		decide(BPFNET_CTR_DROP_HAIRPIN);
		return TC_ACT_SHOT;
	}
	__be32 service_ip = listed ? listed->service_ip_be : backend->service_ip_be;
	__be16 service_port = listed ? listed->service_port_be : pkt.sport;
	enum bpfnet_counter path = listed ? BPFNET_CTR_SNAT_REPLY : BPFNET_CTR_SNAT_FLOW;
	trace_steered(service_ip, service_port, listed ? listed->kind : BPFNET_KIND_PLAIN);

	__u8 host_mac[6];
	if (lan_host_mac(daddr, service_ip, host_mac))
		return TC_ACT_SHOT; /* no flow for a packet that cannot leave */
	if (!listed)
		record_flow(&pkt, daddr, service_ip, saddr);

	if (nat_rewrite(skb, &pkt, NAT_SOURCE, saddr, service_ip, pkt.sport, service_port) ||
	    rewrite_macs(skb, host_mac, cfg->nic_mac)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	decide(path);
	return bpf_redirect(cfg->nic_ifindex, 0);
}

SEC("tc")
int tc_pod_ingress(struct __sk_buff *skb)
{
	void *data, *data_end;
	struct bpfnet_iface *cfg = iface_config();
	struct ethhdr *eth = tc_parse_eth(skb, &data, &data_end);
	struct iphdr *ip = tc_parse_ipv4(eth, data_end);

	if (!cfg || !ip)
		return BPFNET_TC_NEXT;
	__be32 saddr = ip->saddr;
	struct bpfnet_backend *backend = bpf_map_lookup_elem(&backends, &saddr);
	/* Only a backend's traffic to the provisioning LAN is ours; the pod's other traffic is the CNI's. */
	if (!backend || !in_provisioning_subnet(cfg, ip->daddr))
		return BPFNET_TC_NEXT;
	trace_begin(BPFNET_HOOK_TC_POD_INGRESS);
	trace_addresses(ip->saddr, ip->daddr, ip->protocol, eth->h_source);
	return traced_tc(skb, steer_from_pod(skb, data, data_end, eth, ip, cfg, backend));
}
