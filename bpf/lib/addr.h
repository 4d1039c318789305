/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Addresses as the maps hold them (struct bpfnet_ip: IPv6, or IPv4 as ::ffff:a.b.c.d). */
#ifndef BPFNET_ADDR_H
#define BPFNET_ADDR_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "bpfnet_maps.h"

/* The map form of an IPv4 address (its IPv4-mapped IPv6 address). */
static __always_inline struct bpfnet_ip ip_v4(__be32 v4)
{
	struct bpfnet_ip ip = {.w = {0, 0, bpf_htonl(0xffff), v4}};

	return ip;
}

static __always_inline int ip_equal(const struct bpfnet_ip *a, const struct bpfnet_ip *b)
{
	return ((a->w[0] ^ b->w[0]) | (a->w[1] ^ b->w[1]) | (a->w[2] ^ b->w[2]) | (a->w[3] ^ b->w[3])) == 0;
}

static __always_inline int ip_is_v4(const struct bpfnet_ip *ip)
{
	return ip->w[0] == 0 && ip->w[1] == 0 && ip->w[2] == bpf_htonl(0xffff);
}

/* No address: a zero entry (a listed port without a backend, say). */
static __always_inline int ip_is_unset(const struct bpfnet_ip *ip)
{
	return (ip->w[0] | ip->w[1] | ip->w[2] | ip->w[3]) == 0;
}

#endif /* BPFNET_ADDR_H */
