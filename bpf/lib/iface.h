/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The NIC's configuration as the loader wrote it (struct bpfnet_iface), and its provisioning subnets. */
#ifndef BPFNET_IFACE_H
#define BPFNET_IFACE_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "maps.h"
#include "ipv6.h"

static __always_inline struct bpfnet_iface *iface_config(void)
{
	__u32 key = 0;

	return bpf_map_lookup_elem(&iface, &key);
}

static __always_inline int in_provisioning_subnet4(const struct bpfnet_iface *cfg, __be32 ip)
{
	return (ip & cfg->subnet_mask_be) == cfg->subnet_be;
}

/* An address on the provisioning subnet of its family (v6: a constant once inlined). */
static __always_inline int in_provisioning_subnet(const struct bpfnet_iface *cfg, const struct bpfnet_ip *ip,
						  const int v6)
{
	return v6 ? in_provisioning_subnet6(cfg, ip) : in_provisioning_subnet4(cfg, ip->w[3]);
}

#endif /* BPFNET_IFACE_H */
