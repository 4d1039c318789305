/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The datapath's counters (enum bpfnet_counter), per CPU, summed by the loader. */
#ifndef BPFNET_COUNTERS_H
#define BPFNET_COUNTERS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "maps.h"

static __always_inline void count(enum bpfnet_counter ctr)
{
	__u32 key = ctr;
	__u64 *value = bpf_map_lookup_elem(&counters, &key);

	if (value)
		*value += 1; /* per-CPU slot: no other writer */
}

#endif /* BPFNET_COUNTERS_H */
