// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The loader's probe of whether a TC program may read the skb's checksum state (core/kernel_probe.cpp): the
 * datapath's own read (lib/csum.h), loaded with it switched on. Where this loads, bpfnet.bpf.c computes
 * TCP/UDP checksums itself; where the kernel refuses it (no bpf_cast_to_kern_ctx before 6.2), the datapath
 * keeps the read switched off and uses the kernel's helpers.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "lib/csum.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tc")
int probe_skb_csum(struct __sk_buff *skb)
{
	return skb_csum_state(skb) == SKB_CSUM_UNKNOWN ? TC_ACT_SHOT : TC_ACT_OK;
}
