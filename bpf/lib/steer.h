/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The steering decision for a packet from the LAN to a service IP: a listed port, or a recorded flow. */
#ifndef BPFNET_STEER_H
#define BPFNET_STEER_H

#include <linux/pkt_cls.h>
#include "parse.h"
#include "addr.h"
#include "maps.h"
#include "counters.h"
#include "events.h"
#include "trace.h"

/*
 * A packet that is not bpfnet's: TC_ACT_UNSPEC hands it on (TCX_NEXT under tcx, the next filter under
 * clsact), so a CNI's programs on the same hook still see it. TC_ACT_OK would end both chains here.
 */
#define BPFNET_TC_NEXT TC_ACT_UNSPEC

/*
 * Set by the loader before the object is loaded, from its probe of the running kernel: whether
 * bpf_redirect_peer exists (5.10+). A constant to the verifier, so on a kernel without the helper the
 * call is dead code and never checked; the programs still load and deliver through the veth's transmit
 * path instead.
 */
const volatile __u8 kernel_has_redirect_peer = 1;

/* The fixed header's fields the node's routing decides by, from the packet as rewritten (either family). No
 * tot_len: the kernel then checks the route's MTU against the skb itself, which knows a GRO-merged packet
 * for the train of segments it is. */
static __always_inline int fib_params_of(struct __sk_buff *skb, struct bpf_fib_lookup *fib)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return -1;
	/* The interface the packet came in by (the NIC, or the pod's veth): the routing sees it as forwarded
	 * from there. */
	fib->ifindex = skb->ingress_ifindex ? skb->ingress_ifindex : skb->ifindex;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > data_end)
			return -1;
		fib->family = 2; /* AF_INET */
		fib->tos = ip->tos;
		fib->l4_protocol = ip->protocol;
		fib->ipv4_src = ip->saddr;
		fib->ipv4_dst = ip->daddr;
		return 0;
	}
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	if (eth->h_proto != bpf_htons(ETH_P_IPV6) || (void *)(ip6 + 1) > data_end)
		return -1;
	fib->family = 10;					/* AF_INET6 */
	fib->flowinfo = *(__be32 *)ip6 & bpf_htonl(0x0fffffff); /* traffic class and flow label */
	fib->l4_protocol = ip6->nexthdr;
	__builtin_memcpy(fib->ipv6_src, &ip6->saddr, sizeof(fib->ipv6_src));
	__builtin_memcpy(fib->ipv6_dst, &ip6->daddr, sizeof(fib->ipv6_dst));
	return 0;
}

/*
 * Into the pod through the node's own routing (BPFNET_BACKEND_ROUTE): the packet, rewritten to the pod's
 * address, goes where the kernel routes every other packet to that pod (a bridge, cilium_host, an OVS port, a
 * tunnel), whatever the CNI put there. With a route and a resolved next hop, the frame is addressed and sent
 * out of the route's device from here. What the routing must do itself first (resolve the next hop, fragment
 * or answer with an ICMP error, a destination local to the node, no route at all) is handed on
 * (BPFNET_TC_NEXT: a CNI's program after ours on the NIC, then the stack, which forwards the rewritten packet
 * as routed traffic or answers it). A route that refuses it (unreachable, blackhole, prohibit), forwarding
 * off on the NIC, or a route back out of the NIC (onto the LAN it came from): dropped and counted, and not
 * as steered (deliver_into_pod). Its own function: the lookup's parameters
 * take 64 bytes of stack.
 */
static __noinline int deliver_by_route(struct __sk_buff *skb)
{
	struct bpf_fib_lookup fib = {};

	if (fib_params_of(skb, &fib)) {
		decide(BPFNET_CTR_DROP_REWRITE_FAILED);
		return TC_ACT_SHOT;
	}
	const __u32 came_in = fib.ifindex;
	long found = bpf_fib_lookup(skb, &fib, sizeof(fib), 0);
	/* The route's device is known once a route was found, its next hop resolved or not. */
	if ((found == BPF_FIB_LKUP_RET_SUCCESS || found == BPF_FIB_LKUP_RET_NO_NEIGH) &&
	    fib.ifindex == came_in) {
		decide(BPFNET_CTR_DROP_NO_ROUTE);
		return TC_ACT_SHOT;
	}
	switch (found) {
	case BPF_FIB_LKUP_RET_SUCCESS: {
		void *data = (void *)(long)skb->data;
		void *data_end = (void *)(long)skb->data_end;
		struct ethhdr *eth = data;
		if ((void *)(eth + 1) > data_end) {
			decide(BPFNET_CTR_DROP_REWRITE_FAILED);
			return TC_ACT_SHOT;
		}
		__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
		__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
		return bpf_redirect(fib.ifindex, 0);
	}
	case BPF_FIB_LKUP_RET_BLACKHOLE:
	case BPF_FIB_LKUP_RET_UNREACHABLE:
	case BPF_FIB_LKUP_RET_PROHIBIT:
	case BPF_FIB_LKUP_RET_FWD_DISABLED:
		decide(BPFNET_CTR_DROP_NO_ROUTE);
		return TC_ACT_SHOT;
	default: /* NO_NEIGH, FRAG_NEEDED, NOT_FWDED (local, or no route), UNSUPP_LWT: the stack's to do */
		count(BPFNET_CTR_ROUTE_TO_STACK);
		return BPFNET_TC_NEXT;
	}
}

/*
 * Whether the node routes the packet, as it is, out of the NIC (the route's device, its next hop resolved or
 * not): to a host of the LAN or behind its routers, not to another pod, the node itself or a tunnel. Asked
 * for a packet the pod sends from a shared address's listed port (tc_pod_to_shared): only the answers to
 * clients that came in through the NIC are the shared address's; the same port answers the cluster's own
 * clients (the ClusterIP Service, kubelet's probes) the CNI's way. A lookup as the kernel forwards the pod's
 * packets (from its veth), so forwarding off there answers no route.
 */
static __noinline int routed_out_of_nic(struct __sk_buff *skb, __u32 nic_ifindex)
{
	struct bpf_fib_lookup fib = {};

	if (fib_params_of(skb, &fib))
		return 0;
	long found = bpf_fib_lookup(skb, &fib, sizeof(fib), 0);
	return (found == BPF_FIB_LKUP_RET_SUCCESS || found == BPF_FIB_LKUP_RET_NO_NEIGH) &&
	       fib.ifindex == nic_ifindex;
}

/* Into the backend pod (ifindex, flags: its pod link's or backends entry's): through the node's routing when
 * its delivery says so, else straight into its namespace when the kernel and the device allow, else through
 * the host side of its veth. path: the decision the packet counts as, unless the routing drops it (which
 * counts its own). */
static __always_inline long deliver_into_pod(struct __sk_buff *skb, __u32 ifindex, __u32 flags,
					     enum bpfnet_counter path)
{
	long delivered;

	if (flags & BPFNET_BACKEND_ROUTE)
		delivered = deliver_by_route(skb);
	else if (kernel_has_redirect_peer && (flags & BPFNET_BACKEND_REDIRECT_PEER))
		delivered = bpf_redirect_peer(ifindex, 0);
	else
		delivered = bpf_redirect(ifindex, 0);
	if (delivered != TC_ACT_SHOT)
		decide(path);
	return delivered;
}

static __always_inline long deliver_to_backend(struct __sk_buff *skb, const struct bpfnet_backend *backend,
					       enum bpfnet_counter path)
{
	return deliver_into_pod(skb, backend->ifindex, backend->flags, path);
}

struct steer_target {
	struct bpfnet_ip backend_ip;
	__be16 backend_port;
	__u8 kind;	  /* enum bpfnet_port_kind of the listed port; plain for flows */
	__u8 unconfirmed; /* a flow the host answers for the first time: confirm_flow() once accepted */
	enum bpfnet_counter path; /* BPFNET_CTR_DNAT_SERVICE or BPFNET_CTR_DNAT_FLOW */
	/* A listed port's copy of where its pod is (ifindex 0: not on this node); NULL for a flow, whose pod
	 * backends says. */
	const struct bpfnet_pod_link *link;
};

/* A listed port's pod link (what the relays steer to), NULL when its pod is not on this node. */
static __always_inline const struct bpfnet_pod_link *listed_pod_link(const struct steer_target *target)
{
	return target->link && target->link->ifindex ? target->link : NULL;
}

/*
 * Where the target's pod is attached: the listed port's copy, or for a flow its backends entry, copied into
 * *own. NULL when the pod is not on this node.
 */
static __always_inline const struct bpfnet_pod_link *target_pod_link(const struct steer_target *target,
								     struct bpfnet_pod_link *own)
{
	if (target->link)
		return target->link->ifindex ? target->link : NULL;
	struct bpfnet_backend *backend = bpf_map_lookup_elem(&backends, &target->backend_ip);
	if (!backend)
		return NULL;
	own->ifindex = backend->ifindex;
	mac_copy(own->pod_mac, backend->pod_mac);
	mac_copy(own->veth_mac, backend->veth_mac);
	own->mtu = backend->mtu;
	own->flags = (__u8)backend->flags;
	return own;
}

/* A flow, keyed as the host's packets arrive from the LAN (remote = host, local = service IP). */
static __always_inline struct bpfnet_flow_key flow_key(const struct bpfnet_ip *host, __be16 host_port,
						       const struct bpfnet_ip *service_ip,
						       __be16 service_port, __u8 proto)
{
	struct bpfnet_flow_key key = {
		.remote_ip = *host,
		.service_ip = *service_ip,
		.remote_port_be = host_port,
		.service_port_be = service_port,
		.proto = proto,
	};
	return key;
}

/* The ports and protocol of a packet from the LAN, as steer_lookup() looks them up. */
struct lan_ports {
	__be16 sport; /* the host's */
	__be16 dport; /* the service IP's */
	__u8 proto;
};

static __always_inline struct lan_ports lan_ports_of(const struct ip_packet *pkt)
{
	struct lan_ports ports = {.sport = pkt->sport, .dport = pkt->dport, .proto = pkt->proto};

	return ports;
}

/* The flow of a packet from the LAN: saddr is the host, daddr the service IP. */
static __always_inline struct bpfnet_flow_key
flow_key_from_lan(const struct lan_ports *ports, const struct bpfnet_ip *saddr, const struct bpfnet_ip *daddr)
{
	return flow_key(saddr, ports->sport, daddr, ports->dport, ports->proto);
}

/* What steer_lookup() found: where the packet goes, or why nowhere. */
enum steer_result {
	STEER_OK = 0,
	STEER_NOT_ALLOWED = -1,	   /* no recorded flow, no listed port */
	STEER_SOURCE_REFUSED = -2, /* a listed port, the source outside the service IP's source ranges */
	STEER_NOT_SERVICE_IP = -3, /* the destination is no service IP: not ours */
};

/* The service IP's source ranges (if any) admit saddr. */
static __always_inline int source_in_ranges(const struct bpfnet_ip *service_ip, const struct bpfnet_ip *saddr)
{
	struct bpfnet_source_range_key key = {.prefixlen = 256, .service_ip = *service_ip, .source = *saddr};
	struct bpfnet_source_range *range = bpf_map_lookup_elem(&source_ranges, &key);

	return !range || range->allowed;
}

/* The target of a packet of a recorded flow. */
static __always_inline enum steer_result steer_to_flow(const struct bpfnet_flow *flow,
						       struct steer_target *target)
{
	target->backend_ip = flow->backend_ip;
	target->backend_port = flow->backend_port_be;
	target->path = BPFNET_CTR_DNAT_FLOW;
	target->kind = BPFNET_KIND_PLAIN;
	target->link = NULL;
	return STEER_OK;
}

/* The one entry of flow_ports (NULL never happens once the object is loaded; the verifier wants the test). */
static __always_inline struct bpfnet_flow_ports *flow_ports_entry(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&flow_ports, &zero);
}

/* Whether a flow may have been recorded with service_port on the service IP's side (see flow_ports). */
static __always_inline int port_may_have_flows(__be16 service_port)
{
	struct bpfnet_flow_ports *ports = flow_ports_entry();

	return !ports || ports->used[service_port];
}

/* Marks service_port as used by a flow: called before the flow is written, so no lookup can miss it. */
static __always_inline void mark_flow_port(__be16 service_port)
{
	struct bpfnet_flow_ports *ports = flow_ports_entry();

	if (ports && !ports->used[service_port])
		ports->used[service_port] = 1;
}

/*
 * Fills target when the packet may reach a backend. A recorded flow comes before a listed port: when the
 * pod called a host from a port that is also listed (from 443, say), the host's answers belong to that call,
 * not to the listed port's backend. Both flow tables are looked up only for a port some flow was recorded
 * with (flow_ports), and only while daddr is a service IP (flows outlive their IP); the other ports, listed
 * ports above all, go straight to services, whose entry alone says all a listed port needs: that daddr is a
 * service IP (the loader lists ports of service IPs only), whether it has source ranges, where the backend
 * is. Only a packet that finds no listed port pays for the service_ips lookup that tells a drop from a pass.
 * check_source: apply the service IP's source ranges, when it has any (not for broadcast DHCP, whose source
 * is 0.0.0.0).
 */
static __always_inline enum steer_result steer_lookup(const struct lan_ports *pkt,
						      const struct bpfnet_ip *saddr,
						      const struct bpfnet_ip *daddr,
						      struct steer_target *target, int check_source)
{
	int known_service_ip = 0;

	target->unconfirmed = 0;
	if (port_may_have_flows(pkt->dport)) {
		if (!bpf_map_lookup_elem(&service_ips, daddr))
			return STEER_NOT_SERVICE_IP;
		known_service_ip = 1;
		struct bpfnet_flow_key fkey = flow_key_from_lan(pkt, saddr, daddr);
		struct bpfnet_flow *flow = bpf_map_lookup_elem(&flows, &fkey);

		if (!flow) {
			flow = bpf_map_lookup_elem(&flows_unconfirmed, &fkey);
			target->unconfirmed = flow != NULL;
		}
		if (flow)
			return steer_to_flow(flow, target);
	}

	struct bpfnet_service_key skey = {
		.service_ip = *daddr,
		.port_be = pkt->dport,
		.proto = pkt->proto,
	};
	struct bpfnet_service *service = bpf_map_lookup_elem(&services, &skey);
	if (service) {
		if (check_source && (service->flags & BPFNET_SERVICE_SOURCE_RANGES) &&
		    !source_in_ranges(daddr, saddr))
			return STEER_SOURCE_REFUSED;
		target->backend_ip = service->backend_ip;
		target->backend_port = service->backend_port_be;
		target->path = BPFNET_CTR_DNAT_SERVICE;
		target->kind = service->kind;
		target->link = &service->link;
		return STEER_OK;
	}
	if (!known_service_ip && !bpf_map_lookup_elem(&service_ips, daddr))
		return STEER_NOT_SERVICE_IP;
	return STEER_NOT_ALLOWED;
}

/* The drop counter for a packet steer_lookup() found no way for. */
static __always_inline enum bpfnet_counter steer_drop_reason(enum steer_result result)
{
	return result == STEER_SOURCE_REFUSED ? BPFNET_CTR_DROP_SOURCE_RANGE : BPFNET_CTR_DROP_NOT_ALLOWED;
}

/* Now on the flow clock (BPFNET_FLOW_CLOCK_SHIFT). Never 0: a flow whose stamp is 0 was written by a build
 * without the clock, and has no age the loader's sweep could judge until the pod's next packet stamps it. */
static __always_inline __u16 flow_clock(void)
{
	__u16 now = (__u16)(bpf_ktime_get_coarse_ns() >> BPFNET_FLOW_CLOCK_SHIFT);

	return now ? now : 1;
}

/* One more confirmed flow for host, whose entry (share) was looked up already. The first of a host (or of
 * one whose entry the LRU dropped) creates the entry; two CPUs creating it at once both count, one through
 * the entry the other made. */
static __always_inline void flow_share_add(const struct bpfnet_ip *host, struct bpfnet_flow_share *share)
{
	struct bpfnet_flow_share first = {.confirmed = 1};

	if (share) {
		__sync_fetch_and_add(&share->confirmed, 1);
		return;
	}
	if (bpf_map_update_elem(&flow_shares, host, &first, BPF_NOEXIST) == 0)
		return;
	share = bpf_map_lookup_elem(&flow_shares, host);
	if (share)
		__sync_fetch_and_add(&share->confirmed, 1);
}

/*
 * A LAN host's entry: from neighbours, or else from neighbours_unconfirmed (a host known from ARP or NDP
 * only: the answer to the loader's resolution of a miss, or a host whose first accepted packet is yet to
 * come, learn_neighbour_at). Only a miss in neighbours pays for the second lookup.
 */
static __always_inline struct bpfnet_neighbour *known_neighbour(const struct bpfnet_ip *host)
{
	struct bpfnet_neighbour *neighbour = bpf_map_lookup_elem(&neighbours, host);

	return neighbour ? neighbour : bpf_map_lookup_elem(&neighbours_unconfirmed, host);
}

/* The answer comes from the MAC its host is known at: the one the pod's first packet on the flow went to. */
static __always_inline int answer_from_host(const struct bpfnet_ip *host, const __u8 *sender_mac)
{
	struct bpfnet_neighbour *neighbour = known_neighbour(host);

	return neighbour && mac_equal(neighbour->mac, sender_mac);
}

/*
 * The host answered a flow the pod opened, and the answer was accepted: the flow takes its place in flows,
 * unless the host holds its share of them already (then it stays in flows_unconfirmed and still steers
 * there): a host answering every flow it makes the pod open can only fill its own share, never evict the
 * flows of others. Only the host fills its share: an answer in its name from another MAC steers as well but
 * confirms nothing (flow_foreign_answer).
 */
static __always_inline void confirm_flow(const struct lan_ports *pkt, const struct bpfnet_ip *saddr,
					 const struct bpfnet_ip *daddr, const struct steer_target *target,
					 const __u8 *sender_mac)
{
	if (!answer_from_host(saddr, sender_mac)) {
		count(BPFNET_CTR_FLOW_FOREIGN_ANSWER);
		return;
	}
	struct bpfnet_flow_share *share = bpf_map_lookup_elem(&flow_shares, saddr);
	if (share && share->confirmed >= BPFNET_MAX_FLOWS_PER_HOST) {
		count(BPFNET_CTR_FLOW_OVER_SHARE);
		return;
	}
	struct bpfnet_flow_key key = flow_key_from_lan(pkt, saddr, daddr);
	struct bpfnet_flow flow = {.backend_ip = target->backend_ip,
				   .backend_port_be = target->backend_port,
				   .seen = flow_clock()};
	if (bpf_map_update_elem(&flows, &key, &flow, BPF_NOEXIST) == 0) {
		bpf_map_delete_elem(&flows_unconfirmed, &key);
		flow_share_add(saddr, share);
		count(BPFNET_CTR_FLOW_CONFIRMED);
	}
}

/*
 * The MAC of a LAN host for a packet on its way out. On a miss the loader is asked to resolve it (an ARP
 * request from service_ip) and the packet is counted as a neighbour miss, for the caller to drop.
 * tells_hairpin (a constant): the packet is the pod's own, and one whose destination is a service IP (the pod
 * calling a service IP, which would need both addresses rewritten) is refused, visibly, instead. The
 * neighbour table never holds a service IP (learn_neighbour_at() refuses them, and the loader forgets a host
 * whose address becomes one), so such a packet always misses, and only a miss pays for telling the two apart.
 */
static __always_inline int neighbour_mac(const struct bpfnet_ip *host, const struct bpfnet_ip *service_ip,
					 __u8 *mac, const int tells_hairpin)
{
	struct bpfnet_neighbour *neighbour = known_neighbour(host);

	if (neighbour) {
		mac_copy(mac, neighbour->mac);
		return 0;
	}
	if (tells_hairpin && bpf_map_lookup_elem(&service_ips, host)) {
		decide(BPFNET_CTR_DROP_HAIRPIN);
		return -1;
	}
	report_neighbour_miss(host, service_ip);
	decide(BPFNET_CTR_NEIGHBOUR_MISS);
	return -1;
}

static __always_inline int lan_host_mac(const struct bpfnet_ip *host, const struct bpfnet_ip *service_ip,
					__u8 *mac)
{
	return neighbour_mac(host, service_ip, mac, 0);
}

/* lan_host_mac() for a packet of the pod's own (see neighbour_mac). */
static __always_inline int pod_peer_mac(const struct bpfnet_ip *host, const struct bpfnet_ip *service_ip,
					__u8 *mac)
{
	return neighbour_mac(host, service_ip, mac, 1);
}

/* Maps a failed validation to the drop counter that names it. */
static __always_inline enum bpfnet_counter drop_reason(enum parse_verdict verdict)
{
	switch (verdict) {
	case PARSE_FRAGMENT:
		return BPFNET_CTR_DROP_FRAGMENT;
	case PARSE_OTHER_PROTOCOL:
		return BPFNET_CTR_DROP_PROTOCOL;
	case PARSE_EXT_HEADER:
		return BPFNET_CTR_DROP_EXT_HEADER;
	default:
		return BPFNET_CTR_DROP_MALFORMED;
	}
}

#endif /* BPFNET_STEER_H */
