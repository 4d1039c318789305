/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The neighbour table (where each LAN host is, for the replies from the pod) and the trust policy that
 * decides what a frame may teach it: one rule for both families (the family a constant argument).
 */
#ifndef BPFNET_NEIGHBOUR_H
#define BPFNET_NEIGHBOUR_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "maps.h"
#include "parse.h"
#include "addr.h"
#include "ipv6.h"
#include "iface.h"
#include "family.h"
#include "liveness.h"
#include "counters.h"
#include "events.h"

/* How a frame may change the neighbour table. */
enum neighbour_source {
	NEIGHBOUR_FROM_ARP, /* ARP or NDP: adds or changes an entry, as the kernel's neighbour code does */
	NEIGHBOUR_FROM_ACCEPTED, /* a packet the datapath accepted: adds an entry, never changes one */
};

/*
 * Whether a frame may teach the datapath that ip (on the provisioning subnet, either family) is at mac (the
 * trust model in docs/design.md): only a LAN host's own unicast address. Never a broadcast or multicast MAC,
 * a service IP, or an address that names the subnet rather than a host (names_subnet, which the family's
 * caller works out): the reverse path would send the pod's packets there.
 */
static __always_inline int neighbour_acceptable(int names_subnet, const __u8 *mac)
{
	if (names_subnet)
		return 0;
	if (mac[0] & 1) /* the group bit: broadcast and multicast */
		return 0;
	return (mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]) != 0;
}

/*
 * Learns where a LAN host is (key: its address, on the subnet), when neighbour_acceptable() allows, writing
 * only when the entry is new or (from ARP or NDP) changed. Callers pass only frames the datapath keeps: a
 * dropped frame changes no state.
 *
 * Two tables, so that no host can empty the table of the others (docs/design.md, the trust model): a host
 * known from ARP or NDP only is written to neighbours_unconfirmed, which a flood of made-up senders churns;
 * its first accepted packet moves it to neighbours, where only ARP and NDP change it. A host added from a
 * packet (for service_ip) is checked by the loader with an ARP request (NDP solicitation), whose answer, like
 * any ARP, may correct it: a packet in a new host's name holds its entry only until the host answers.
 */
static __always_inline long write_neighbour(void *table, const struct bpfnet_ip *key, const __u8 *mac)
{
	struct bpfnet_neighbour entry = {};

	mac_copy(entry.mac, mac);
	return bpf_map_update_elem(table, key, &entry, BPF_ANY);
}

static __always_inline void learn_neighbour_at(const struct bpfnet_ip *key, int names_subnet, const __u8 *mac,
					       enum neighbour_source source,
					       const struct bpfnet_ip *service_ip)
{
	if (!neighbour_acceptable(names_subnet, mac)) {
		count(BPFNET_CTR_NEIGHBOUR_REFUSED);
		return;
	}
	/* The common cases first: a known host at the MAC it is known at teaches nothing, nor does the ARP of
	 * a host known from ARP only, and neither costs more lookups (a service IP is never in the tables:
	 * nothing below writes one). */
	struct bpfnet_neighbour *known = bpf_map_lookup_elem(&neighbours, key);
	if (known && mac_equal(known->mac, mac))
		return;
	struct bpfnet_neighbour *pending = known ? NULL : bpf_map_lookup_elem(&neighbours_unconfirmed, key);
	if (pending && source == NEIGHBOUR_FROM_ARP && mac_equal(pending->mac, mac))
		return;
	if (bpf_map_lookup_elem(&service_ips, key)) {
		count(BPFNET_CTR_NEIGHBOUR_REFUSED);
		return;
	}
	if (source == NEIGHBOUR_FROM_ARP) {
		/* ARP moves a host in the table it is in; a new one waits in the unconfirmed table. */
		if (known)
			write_neighbour(&neighbours, key, mac);
		else
			write_neighbour(&neighbours_unconfirmed, key, mac);
		count(BPFNET_CTR_NEIGHBOUR_LEARNED);
		return;
	}
	/* An accepted packet. Anyone can put another host's address on a packet; only ARP moves a host: a
	 * known one stays, and one known from ARP only takes its place in neighbours at the MAC ARP told. */
	if (known || (pending && !mac_equal(pending->mac, mac)))
		count(BPFNET_CTR_NEIGHBOUR_KEPT);
	if (known || write_neighbour(&neighbours, key, pending ? pending->mac : mac))
		return;
	if (pending) {
		bpf_map_delete_elem(&neighbours_unconfirmed, key);
		count(BPFNET_CTR_NEIGHBOUR_CONFIRMED);
		return;
	}
	count(BPFNET_CTR_NEIGHBOUR_LEARNED);
	if (events_room_for_low_priority())
		report_event(BPFNET_EVENT_NEIGHBOUR_VERIFY, key, service_ip, mac);
}

/* Whether the address has an entry in either neighbour table (a host the datapath has heard of). */
static __always_inline int neighbour_known(const struct bpfnet_ip *ip)
{
	return bpf_map_lookup_elem(&neighbours, ip) || bpf_map_lookup_elem(&neighbours_unconfirmed, ip);
}

/*
 * An address of the subnet that names the subnet rather than a host: IPv4's network and broadcast addresses
 * (a /31 or /32 has neither, RFC 3021), IPv6's subnet-router anycast address (the prefix itself, RFC 4291
 * 2.6.1).
 */
static __always_inline int names_subnet(const struct bpfnet_iface *cfg, const struct bpfnet_ip *ip,
					const int v6)
{
	if (v6)
		return ip_equal(ip, &cfg->subnet6.net);
	__u32 host_mask = bpf_ntohl(~cfg->subnet.mask.w[3]);
	__u32 host_part = bpf_ntohl(ip->w[3]) & host_mask;
	return host_mask >= 3 && (host_part == 0 || host_part == host_mask);
}

/*
 * learn_neighbour_at() for a host of either family. Only the provisioning subnet's hosts are learned: not the
 * unspecified address (an ARP probe's sender, a DAD probe's), not other subnets, not IPv6's link-local
 * addresses (nothing is sent to them through the table: relayed DHCPv6 replies carry their client's MAC with
 * them).
 */
static __always_inline void learn_neighbour(const struct bpfnet_iface *cfg, const struct bpfnet_ip *ip,
					    const __u8 *mac, enum neighbour_source source,
					    const struct bpfnet_ip *service_ip, const int v6)
{
	if (ip_is_unspecified(ip, v6) || !in_provisioning_subnet(cfg, ip, v6))
		return;
	learn_neighbour_at(ip, names_subnet(cfg, ip, v6), mac, source, service_ip);
}

/*
 * What the sender of an ARP request or reply, or of an NDP solicitation, tells: when it is a service IP this
 * node answers for, another owner on the LAN (a conflict: claimant is the MAC that claims it); else where a
 * LAN host is (learned from lladdr, the link-layer address the message carries; NULL: none, nothing is
 * learned). service_ip: what the message asked about, for the loader's check of a learned entry.
 */
static __always_inline void observe_sender(const struct bpfnet_iface *cfg, const struct bpfnet_ip *sender,
					   const __u8 *claimant, const __u8 *lladdr,
					   const struct bpfnet_ip *service_ip, const int v6)
{
	struct bpfnet_service_ip *claimed = bpf_map_lookup_elem(&service_ips, sender);

	if (!claimed) {
		if (lladdr)
			learn_neighbour(cfg, sender, lladdr, NEIGHBOUR_FROM_ARP, service_ip, v6);
		return;
	}
	if ((claimed->flags & BPFNET_SERVICE_IP_ACTIVE) && loader_alive(cfg) &&
	    !mac_equal(claimant, cfg->nic_mac))
		report_conflict(sender, claimant);
}

#endif /* BPFNET_NEIGHBOUR_H */
