/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The small-packet generator's program: run by BPF_PROG_TEST_RUN in live-frames mode, it sends every frame
 * out of the interface it runs on (XDP_TX becomes a redirect to that device), so the kernel, not a
 * userspace socket loop, paces the packets. It writes the whole frame from the template every time: the
 * kernel recycles the pages of frames the stack has forwarded without restoring them, and forwarding has
 * rewritten their MACs and TTL by then. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define FRAME_WORDS 7 /* 56 bytes as u64, then 4 more: a 60-byte frame (64 on the wire with the FCS) */

const volatile __u64 frame_words[FRAME_WORDS];
const volatile __u32 frame_tail;

SEC("xdp")
int xdp_transmit(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 *words = data;

	if (data + FRAME_WORDS * 8 + 4 > data_end)
		return XDP_ABORTED;
#pragma unroll
	for (int i = 0; i < FRAME_WORDS; i++)
		words[i] = frame_words[i];
	*(__u32 *)(words + FRAME_WORDS) = frame_tail;
	return XDP_TX;
}
