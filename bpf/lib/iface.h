/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The NIC's configuration as the loader wrote it (struct bpfnet_iface), and its provisioning subnets. */
#ifndef BPFNET_IFACE_H
#define BPFNET_IFACE_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "maps.h"

static __always_inline struct bpfnet_iface *iface_config(void)
{
	__u32 key = 0;

	return bpf_map_lookup_elem(&iface, &key);
}

/* An IPv4 address (network byte order) on the IPv4 provisioning subnet. */
static __always_inline int in_provisioning_subnet4(const struct bpfnet_iface *cfg, __be32 ip)
{
	/* The last word decides: the first three of a mapped address are ::ffff:, which the prefix holds too.
	 */
	return cfg->subnet.len != 0 && (ip & cfg->subnet.mask.w[3]) == cfg->subnet.net.w[3];
}

static __always_inline int in_prefix(const struct bpfnet_ip *ip, const struct bpfnet_prefix *p)
{
	return p->len != 0 &&
	       (((ip->w[0] & p->mask.w[0]) ^ p->net.w[0]) | ((ip->w[1] & p->mask.w[1]) ^ p->net.w[1]) |
		((ip->w[2] & p->mask.w[2]) ^ p->net.w[2]) | ((ip->w[3] & p->mask.w[3]) ^ p->net.w[3])) == 0;
}

/* An address on the provisioning subnet of its family (v6: a constant once inlined). */
static __always_inline int in_provisioning_subnet(const struct bpfnet_iface *cfg, const struct bpfnet_ip *ip,
						  const int v6)
{
	return v6 ? in_prefix(ip, &cfg->subnet6) : in_provisioning_subnet4(cfg, ip->w[3]);
}

/* Whether ip may be a service IP: its last byte is marked (bpfnet_iface.service_ip_marks); when not, it is
 * none, and no lookup is needed to know it. */
static __always_inline int service_ip_marked(const struct bpfnet_iface *cfg, const struct bpfnet_ip *ip)
{
	__u8 last = ((const __u8 *)ip)[sizeof(*ip) - 1];

	return (cfg->service_ip_marks[last >> 3] >> (last & 7)) & 1;
}

/* A destination that may be a service IP: on the provisioning subnet of its family, and marked. */
static __always_inline int maybe_service_ip(const struct bpfnet_iface *cfg, const struct bpfnet_ip *ip,
					    const int v6)
{
	return in_provisioning_subnet(cfg, ip, v6) && service_ip_marked(cfg, ip);
}

/* A destination off the provisioning subnets that may be a shared address (BPFNET_SERVICE_SHARED): the node
 * holds some, and its last byte is marked (the loader marks shared addresses with the service IPs). */
static __always_inline int maybe_shared_address(const struct bpfnet_iface *cfg, const struct bpfnet_ip *ip,
						const int v6)
{
	return cfg->shared_addresses && !in_provisioning_subnet(cfg, ip, v6) && service_ip_marked(cfg, ip);
}

#endif /* BPFNET_IFACE_H */
