/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* ARP responder for the service IPs (packet walk 1, at TC ingress) and what XDP learns from ARP. */
#ifndef BPFNET_ARP_H
#define BPFNET_ARP_H

#include <linux/bpf.h>
#include "parse.h"
#include "addr.h"
#include "maps.h"
#include "counters.h"
#include "liveness.h"
#include "events.h"
#include "neighbour.h"
#include "steer.h"
#include "trace.h"

/* Turns a who-has for the service IP into the is-at answer, in place, from the NIC's MAC. */
static __always_inline void arp_make_reply(struct ethhdr *eth, struct arp_ipv4 *arp, const __u8 *nic_mac)
{
	__be32 service_ip = arp->target_ip;

	mac_copy(eth->h_dest, arp->sender_mac);
	mac_copy(eth->h_source, nic_mac);
	arp->op = bpf_htons(BPFNET_ARPOP_REPLY);
	mac_copy(arp->target_mac, arp->sender_mac);
	arp->target_ip = arp->sender_ip;
	mac_copy(arp->sender_mac, nic_mac);
	arp->sender_ip = service_ip;
}

/*
 * An ARP probe (RFC 5227 2.1.1: a request from sender address 0, a node about to use the target address)
 * for a service IP this node answers for, from another MAC: another node about to claim it (a second
 * cluster's loader probes before it answers, docs/kubernetes.md "Pivot"), a conflict as another node's
 * IPv6 duplicate address detection probe is (ndp_observe). It is answered all the same (tc_answer_arp).
 */
static __always_inline void arp_observe_probe(const struct arp_ipv4 *arp, const struct bpfnet_iface *cfg)
{
	struct bpfnet_ip target = ip_v4(arp->target_ip);
	struct bpfnet_service_ip *probed = bpf_map_lookup_elem(&service_ips, &target);

	if (probed && (probed->flags & BPFNET_SERVICE_IP_ACTIVE) && loader_alive(cfg) &&
	    !mac_equal(arp->sender_mac, cfg->nic_mac))
		report_conflict(&target, arp->sender_mac);
}

/*
 * What an ARP frame tells the datapath, whoever it is for: where its sender is (remembered for the
 * reverse path), or, when it claims a service IP this node answers for, another owner on the LAN (a
 * conflict), or another node's probe for one. Standby nodes list the IP too, and see the owner's claims:
 * not a conflict.
 */
static __always_inline void arp_observe(const struct arp_ipv4 *arp, const struct bpfnet_iface *cfg)
{
	/* Only requests and replies say where their sender is, as for the kernel's ARP (RARP and the rest do
	 * not): any other opcode would let a frame the kernel ignores move a host. */
	if (arp->op != bpf_htons(BPFNET_ARPOP_REQUEST) && arp->op != bpf_htons(BPFNET_ARPOP_REPLY))
		return;
	if (arp->op == bpf_htons(BPFNET_ARPOP_REQUEST) && arp->sender_ip == 0) {
		arp_observe_probe(arp, cfg);
		return;
	}
	struct bpfnet_ip sender = ip_v4(arp->sender_ip);
	struct bpfnet_ip none = ip_v4(0);
	observe_sender(cfg, &sender, arp->sender_mac, arp->sender_mac, &none, 0);
}

/* The service IP a who-has asks for, or NULL when it asks for something else or is no request. */
static __always_inline struct bpfnet_service_ip *arp_service_asked(const struct arp_ipv4 *arp)
{
	struct bpfnet_ip target = ip_v4(arp->target_ip);

	if (arp->op != bpf_htons(BPFNET_ARPOP_REQUEST))
		return NULL;
	return bpf_map_lookup_elem(&service_ips, &target);
}

/*
 * XDP sees every ARP frame first and learns from it; it never answers. An answer sent with XDP_TX is lost
 * on a veth whose peer runs no XDP program (metal3-dev-env's `ironicendpoint`, a kind node's eth0), so
 * the who-has for a service IP goes on to tc_nic_ingress, which answers from the NIC's egress on every
 * kind of device. Counted there, not here.
 */
static __always_inline int xdp_observe_arp(struct ethhdr *eth, void *data_end, const struct bpfnet_iface *cfg)
{
	struct arp_ipv4 *arp = parse_arp_ipv4(eth, data_end);

	if (arp) {
		arp_observe(arp, cfg);
		if (arp_service_asked(arp))
			return XDP_PASS;
	}
	count(BPFNET_CTR_PASS);
	return XDP_PASS;
}

/*
 * The ARP responder (packet walk 1), at TC ingress, for a who-has asking for service, while this node's
 * loader is alive: the owner turns the request into the is-at answer in place and sends it out of the NIC's
 * egress, the way every other frame of this node leaves; every other node drops it, so that the one answer
 * on the LAN is the owner's even where a node's kernel has the address on some device (kube-proxy in IPVS
 * mode binds every LoadBalancer ingress IP to kube-ipvs0 on every node; a leftover keepalived address). With
 * the loader gone (heartbeat stale, grace over) the request is handed on to the kernel, as without bpfnet.
 */
static __always_inline int tc_answer_arp(struct ethhdr *eth, struct arp_ipv4 *arp,
					 const struct bpfnet_service_ip *service,
					 const struct bpfnet_iface *cfg)
{
	if (!loader_alive(cfg)) {
		decide(BPFNET_CTR_ARP_STALE_HEARTBEAT);
		return BPFNET_TC_NEXT;
	}
	if (!(service->flags & BPFNET_SERVICE_IP_ACTIVE)) {
		decide(BPFNET_CTR_ARP_NOT_ACTIVE);
		return TC_ACT_SHOT;
	}
	arp_make_reply(eth, arp, cfg->nic_mac);
	decide(BPFNET_CTR_ARP_REPLY);
	return bpf_redirect(cfg->nic_ifindex, 0);
}

#endif /* BPFNET_ARP_H */
