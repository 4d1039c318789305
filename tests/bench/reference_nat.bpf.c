/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The least work a correct TC DNAT to a pod does, as a second reference beside the floor
 * (tests/bench/path_cost.cpp): the Ethernet, IPv4 and TCP headers bounds-checked, one hash lookup of
 * (destination, port), the rewrite made as bpfnet's tc_nic_ingress makes it (the destination, the IPv4 header
 * checksum and the MACs written directly; the TCP checksum through bpf_l4_csum_replace, the one helper that
 * knows the skb's checksum state: a CHECKSUM_PARTIAL field holds the pseudo-header's sum, and a
 * CHECKSUM_COMPLETE skb's csum must follow the change), and bpf_redirect_peer. No trust rule, no flow, no
 * neighbour, no counter: what bpfnet's "DNAT listed port" path costs above this is what its rules add.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <stddef.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct reference_key {
	__u32 daddr;
	__u16 dport;
	__u16 protocol;
};

struct reference_target {
	__u32 backend;
	__u32 ifindex;
	__u8 macs[12]; /* destination, then source: the Ethernet header's first 12 bytes */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct reference_key);
	__type(value, struct reference_target);
} reference_dnat SEC(".maps");

#define IP_OFF	sizeof(struct ethhdr)
#define TCP_OFF (IP_OFF + sizeof(struct iphdr))

/* The IPv4 header checksum after a 32-bit word it covers changed (RFC 1624 eqn. 3). */
static __always_inline __u16 ipv4_check_replace4(__u16 check, __u32 from, __u32 to)
{
	__u64 sum = (__u16)~check;

	sum += (__u16)~from + (__u16) ~(from >> 16) + (to & 0xffff) + (to >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

SEC("tc")
int tc_reference_dnat(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + IP_OFF;
	struct tcphdr *tcp = data + TCP_OFF;

	if ((void *)(tcp + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_TCP)
		return TC_ACT_OK;
	struct reference_key key = {.daddr = ip->daddr, .dport = tcp->dest, .protocol = IPPROTO_TCP};
	struct reference_target *target = bpf_map_lookup_elem(&reference_dnat, &key);
	if (!target)
		return TC_ACT_OK;
	__u32 from = ip->daddr, to = target->backend, ifindex = target->ifindex;

	ip->check = ipv4_check_replace4(ip->check, from, to);
	ip->daddr = to;
	__builtin_memcpy(eth, target->macs, sizeof(target->macs));
	/* Last: the helper may move the packet, which ends the pointers above. */
	bpf_l4_csum_replace(skb, TCP_OFF + offsetof(struct tcphdr, check), from, to,
			    BPF_F_PSEUDO_HDR | sizeof(to));
	return bpf_redirect_peer(ifindex, 0);
}
