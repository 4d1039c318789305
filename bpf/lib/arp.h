/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* ARP responder for the service IPs (packet walk 1) and neighbour learning from ARP. */
#ifndef BPFNET_ARP_H
#define BPFNET_ARP_H

#include <linux/bpf.h>
#include "parse.h"
#include "maps.h"
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

static __always_inline int handle_arp(struct ethhdr *eth, void *data_end, const struct bpfnet_iface *cfg)
{
	struct arp_ipv4 *arp = parse_arp_ipv4(eth, data_end);

	if (!arp)
		return XDP_PASS;

	__be32 target = arp->target_ip;
	struct bpfnet_service_ip *service = bpf_map_lookup_elem(&service_ips, &target);
	/* A host asking for (or announcing) any address tells us where it is; remember it for the
	 * reverse path. A claim on a service IP that this node answers for is another owner on the LAN:
	 * a conflict. Standby nodes list the IP too, and see the owner's claims: not a conflict. */
	__be32 sender = arp->sender_ip;
	struct bpfnet_service_ip *claimed = bpf_map_lookup_elem(&service_ips, &sender);
	if (claimed) {
		if ((claimed->flags & BPFNET_SERVICE_IP_ACTIVE) && loader_alive(cfg) &&
		    !mac_equal(arp->sender_mac, cfg->nic_mac))
			report_conflict(sender, arp->sender_mac);
	} else {
		learn_neighbour(cfg, sender, arp->sender_mac);
	}

	if (!service || arp->op != bpf_htons(BPFNET_ARPOP_REQUEST)) {
		count(BPFNET_CTR_PASS);
		return XDP_PASS;
	}
	if (!(service->flags & BPFNET_SERVICE_IP_ACTIVE)) {
		decide(BPFNET_CTR_ARP_NOT_ACTIVE);
		return XDP_PASS;
	}
	if (!loader_alive(cfg)) {
		decide(BPFNET_CTR_ARP_STALE_HEARTBEAT);
		return XDP_PASS;
	}
	arp_make_reply(eth, arp, cfg->nic_mac);
	decide(BPFNET_CTR_ARP_REPLY);
	return XDP_TX;
}

#endif /* BPFNET_ARP_H */
