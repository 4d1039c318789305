/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A do-nothing XDP program for the LAN-side peer of the test veth. A veth drops frames that its peer
 * sends with XDP_TX (bpfnet's ARP answers) unless the receiving end has an XDP program of its own
 * (docs: /work/shared/testing.md, "veth facts"); this one passes every frame to the kernel.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}
