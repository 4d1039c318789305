/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The cheapest possible XDP and TC programs: the floor every datapath path is measured against. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int xdp_floor(struct xdp_md *ctx __attribute__((unused)))
{
	return XDP_PASS;
}

SEC("tc")
int tc_floor(struct __sk_buff *skb __attribute__((unused)))
{
	return TC_ACT_OK;
}
