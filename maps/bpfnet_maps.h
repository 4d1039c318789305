/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The one map layout shared by the BPF programs (bpf/) and the C++ control plane (loader/, cli/).
 * Every key, value and constant that crosses the kernel boundary lives here, so the two sides cannot
 * drift apart; maps/layout.hpp pins the sizes on the C++ side.
 *
 * Byte order: fields named *_be, and every struct bpfnet_ip, are in network byte order (as they appear in
 * packets); all other integers are in host byte order.
 */
#ifndef BPFNET_MAPS_H
#define BPFNET_MAPS_H

#include <linux/types.h>

/*
 * Every pinned map, declared once. BPFNET_TABLE_MAPS(X) calls X(name, key type, value type) for the maps
 * read and written as key/value tables; BPFNET_COUNTERS_MAP is the per-CPU counter array
 * (BPFNET_COUNTERS below); BPFNET_RING_MAPS(X) calls X(name) for the ring buffers. The name is the map's
 * variable in bpf/lib/maps.h (so the BPF object's and the skeleton's map name), its pin file under
 * <pinRoot>/<interface>/ and its DatapathMaps member (maps/datapath_maps.hpp), which is built from the
 * skeleton's typed maps: a map listed here and missing from the object does not compile, and
 * tests/bpf/map_table_test.cpp fails on a map in the object that is not listed.
 */
#define BPFNET_TABLE_MAPS(X)                                                                                 \
	X(iface, __u32, struct bpfnet_iface)                                                                 \
	X(heartbeat, __u32, struct bpfnet_heartbeat)                                                         \
	X(service_ips, struct bpfnet_ip, struct bpfnet_service_ip)                                           \
	X(services, struct bpfnet_service_key, struct bpfnet_service)                                        \
	X(backend_ports, struct bpfnet_backend_port_key, struct bpfnet_backend_port)                         \
	X(backends, struct bpfnet_ip, struct bpfnet_backend)                                                 \
	X(flows, struct bpfnet_flow_key, struct bpfnet_flow)                                                 \
	X(flows_unconfirmed, struct bpfnet_flow_key, struct bpfnet_flow)                                     \
	X(flow_shares, struct bpfnet_ip, struct bpfnet_flow_share)                                           \
	X(flow_ports, __u32, struct bpfnet_flow_ports)                                                       \
	X(neighbours, struct bpfnet_ip, struct bpfnet_neighbour)                                             \
	X(neighbours_unconfirmed, struct bpfnet_ip, struct bpfnet_neighbour)                                 \
	X(dhcp_servers, __be32, struct bpfnet_dhcp_server)                                                   \
	X(dhcp_relays, struct bpfnet_ip, struct bpfnet_dhcp_relay)                                           \
	X(conflicts, struct bpfnet_ip, struct bpfnet_conflict)                                               \
	X(source_ranges, struct bpfnet_source_range_key, struct bpfnet_source_range)                         \
	X(trace_control, __u32, struct bpfnet_trace_control)
#define BPFNET_COUNTERS_MAP    counters
#define BPFNET_RING_MAPS(X)    X(events) X(trace)
/* Per-CPU scratch space of the programs: never pinned, never read by C++ (listed so the drift check knows).
 */
#define BPFNET_PRIVATE_MAPS(X) X(dhcp_walk_scratch) X(dhcp6_scratch) X(tftp_request_scratch) X(trace_scratch)
/* A map's name as a string: BPFNET_MAP_NAME(flows) is "flows". */
#define BPFNET_MAP_NAME_(name) #name
#define BPFNET_MAP_NAME(name)  BPFNET_MAP_NAME_(name)

/* Table sizes. Flows and neighbours are LRU maps: under pressure the least recently used entry goes. */
#define BPFNET_MAX_SERVICE_IPS		  256
#define BPFNET_MAX_SERVICES		  256
#define BPFNET_MAX_BACKENDS		  64
#define BPFNET_MAX_FLOWS		  65536
/* Flows the host has not answered yet: a LAN host that makes the pod open flows to spoofed addresses
 * (a TFTP read request per flow) churns this table, never the confirmed one. */
#define BPFNET_MAX_UNCONFIRMED_FLOWS	  16384
/* A host's share of flows: the most confirmed flows one host may hold, so that a host answering the flows
 * it makes the pod open (a TFTP read request each) can only ever evict its own. */
#define BPFNET_MAX_FLOWS_PER_HOST	  512
#define BPFNET_MAX_NEIGHBOURS		  4096
/* Hosts known from ARP or NDP only, before the datapath accepted a packet of theirs: a flood of made-up
 * senders churns this table, never the confirmed one. */
#define BPFNET_MAX_UNCONFIRMED_NEIGHBOURS 1024
#define BPFNET_MAX_DHCP_SERVERS		  64
#define BPFNET_MAX_DHCP_RELAYS		  16
/* 64 per service IP (63 ranges, the entry refusing the rest), twice: new ranges are written before old ones
 * go. An LPM trie allocates its entries as they come (BPF_F_NO_PREALLOC): this is a bound, not memory. */
#define BPFNET_MAX_SOURCE_RANGES	  (64 * 2 * BPFNET_MAX_SERVICE_IPS)
#define BPFNET_EVENTS_BYTES		  (64 * 1024)
#define BPFNET_TRACE_BYTES		  (256 * 1024)

/* DHCP relay (RFC 1542): the default hop limit, and the most the loader accepts (the RFC's hard limit). */
#define BPFNET_DHCP_DEFAULT_MAX_HOPS 4
#define BPFNET_DHCP_MAX_HOPS_LIMIT   16

/*
 * An address of either family, as every map holds it: an IPv6 address as is, an IPv4 address as its
 * IPv4-mapped IPv6 address ::ffff:a.b.c.d (RFC 4291 2.5.5.2). One table serves both families, and no IPv4
 * address can equal an IPv6 one. Network byte order.
 */
struct bpfnet_ip {
	__be32 w[4];
};
#define BPFNET_IP_V4_MAPPED_PREFIX_LEN 96 /* ::ffff:0:0/96 */

/*
 * A prefix in map form, either family (IPv4 as IPv4-mapped, like every address in a map): the address with
 * its host bits zero, and the mask of its prefix bits over the 16 bytes (an IPv4 /24's covers the ::ffff:
 * part, 120 bits). An address is in it when (address & mask) == net, word by word: no loop over a length per
 * packet.
 */
struct bpfnet_prefix {
	struct bpfnet_ip net;
	struct bpfnet_ip mask;
	__u32 len; /* the prefix bits of the 16-byte form (an IPv4 /24: 120); 0: no prefix, which nothing is
		      in (so a zeroed entry, as the map starts, puts nothing in a subnet) */
};

/* iface (array, one entry): facts about the provisioning NIC, written once when the loader attaches. */
struct bpfnet_iface {
	__u32 nic_ifindex;
	__u8 nic_mac[6];
	__u8 dhcp_max_hops; /* relayed requests with more hops are dropped (RFC 1542 4.1.1) */
	__u8 hooks;	    /* BPFNET_HOOKS_*: how the loader attached on this kernel; read by bpfnetctl */
	/* Shared addresses present on this node (BPFNET_SERVICE_SHARED; at most BPFNET_MAX_SHARED_ADDRESSES).
	 * Zero: a packet off the provisioning subnets is never looked up, either way. */
	__u8 shared_addresses;
	__u8 pad[3];
	__u64 heartbeat_timeout_ns; /* ARP and NDP answers stop when the loader's heartbeat is older */
	/* The provisioning subnets, IPv4's and IPv6's; service IPs and hosts live there. */
	struct bpfnet_prefix subnet;
	struct bpfnet_prefix subnet6;
	/* The DHCP relays: the service IP whose dhcp port takes broadcast DHCP, the service address whose
	 * dhcpv6 port takes ff02::1:2 (zero: no relay), and the NIC's link-local address, which DHCPv6
	 * replies to clients leave from (zero: none, they leave from the service address). */
	struct bpfnet_ip dhcp_service_ip;
	struct bpfnet_ip dhcp6_service_ip;
	struct bpfnet_ip nic_link_local;
	/* The last byte of every service IP (either family) as a set of 256 bits, bit b at [b / 8] & 1 << b %
	 * 8: a destination whose last byte is not in it is no service IP, known without a lookup. The loader
	 * keeps it a superset of service_ips: an IP's bit is set before the IP is written and cleared after
	 * it is removed. */
	__u8 service_ip_marks[32];
};

/* What the loader chose by probing the kernel at start (bpfnet_iface.hooks). */
#define BPFNET_HOOKS_TCX	   (1u << 0) /* TC programs attached as tcx links (6.6+); else clsact filters */
#define BPFNET_HOOKS_REDIRECT_PEER (1u << 1) /* the kernel has bpf_redirect_peer (5.10+) and it is used */

/*
 * heartbeat (array, one entry): CLOCK_MONOTONIC ns of the loader's last heartbeat (bpf_ktime_get_ns). A
 * loader stopping for an upgrade writes a time in the future (now + its grace): the service IPs stay
 * answered without it until then (and the timeout after), so the next loader can take over without an ARP
 * gap; another MAC claiming one of them ends the grace at once (0). 0: no heartbeat.
 */
struct bpfnet_heartbeat {
	__u64 monotonic_ns;
};

/* service_ips (hash): key = service IP. Every service IP of the node's desired state (a standby node's too:
 * its ARP and NDP for the IP are dropped, never answered by the kernel); active where this node serves it. */
#define BPFNET_SERVICE_IP_ACTIVE	(1u << 0) /* this node owns the IP: answer ARP (NDP) for it */
/* The IP has source ranges (source_ranges): a listed port's packets are checked against them. Without it no
 * packet pays for the LPM lookup. Set with the IP's first range, cleared with its last (the loader writes
 * ranges before the service IP and removes them after it: see reconcile()). */
#define BPFNET_SERVICE_IP_SOURCE_RANGES (1u << 1)
struct bpfnet_service_ip {
	__u32 flags;
};

enum bpfnet_proto {
	BPFNET_PROTO_TCP = 6,  /* IPPROTO_TCP */
	BPFNET_PROTO_UDP = 17, /* IPPROTO_UDP */
};

/*
 * What a listed port carries, declared once: X(ID, CxxName, spelling, value). ID makes BPFNET_KIND_<ID>
 * here; CxxName is bpfnet::PortKind's enumerator and spelling the word of the config file, the Service's
 * appProtocol (or port name) and bpfnetctl (core/node.cpp builds both from this list).
 *   plain: TCP or UDP service: DNAT and reverse SNAT
 *   tftp:  UDP; the server answers from ephemeral ports, recorded as flows; blksize clamped to the pod MTU
 *   dhcp:  UDP 67; relayed (RFC 1542)
 *   dhcpv6: UDP 547 of an IPv6 service address; relayed (RFC 8415 section 19)
 */
#define BPFNET_PORT_KINDS(X)                                                                                 \
	X(PLAIN, Plain, plain, 0)                                                                            \
	X(TFTP, Tftp, tftp, 1)                                                                               \
	X(DHCP, Dhcp, dhcp, 2)                                                                               \
	X(DHCP6, Dhcp6, dhcpv6, 3)

#define BPFNET_PORT_KIND_ENUMERATOR(id, cxx, spelling, value) BPFNET_KIND_##id = value,
enum bpfnet_port_kind { BPFNET_PORT_KINDS(BPFNET_PORT_KIND_ENUMERATOR) };
#undef BPFNET_PORT_KIND_ENUMERATOR

/* services (hash): one listed port of a service IP -> the backend endpoint it is steered to. */
struct bpfnet_service_key {
	struct bpfnet_ip service_ip;
	__be16 port_be;
	__u8 proto; /* enum bpfnet_proto */
	__u8 pad;
};
/*
 * Where a backend pod is attached on this node: what delivering a packet into it takes. Kept in each
 * services entry of the pod's listed ports as well as in its backends entry, so that a listed port's packet
 * is steered and delivered with one lookup (docs/design.md, "Per-packet cost"); the loader writes both from
 * one desired state.
 */
struct bpfnet_pod_link {
	__u32 ifindex;	  /* host side of the pod's veth; 0: the listed port has no backend on this node */
	__u8 pod_mac[6];  /* the pod's interface */
	__u8 veth_mac[6]; /* the host side of the pod's veth */
	__u16 mtu;	  /* of the host side of the pod's veth (the pod's MTU) */
	__u8 flags;	  /* BPFNET_BACKEND_REDIRECT_PEER, BPFNET_BACKEND_ROUTE */
	__u8 pad;
};
/* The service IP has source ranges: the services entry's copy of BPFNET_SERVICE_IP_SOURCE_RANGES. */
#define BPFNET_SERVICE_SOURCE_RANGES (1u << 0)
/*
 * A listed port of a shared address: an address of the node's that bpfnet does not own (the control plane's
 * VIP that kube-vip or keepalived moves, or the node's own address), written only while the node holds it.
 * Not in service_ips: its ARP and NDP, and every port not listed, stay the node's. Its packets come from
 * anywhere (across routers), teach nothing, and the pod's replies leave through the node's routing and
 * neighbour table (bpf_redirect_neigh), not through the learned neighbours (docs/design.md, "Shared
 * addresses").
 */
#define BPFNET_SERVICE_SHARED	     (1u << 1)
/*
 * A shared address's listed port whose pod runs on another node (with BPFNET_SERVICE_SHARED): the packet is
 * handed, as it came but a router's hop older (its TTL lowered), to via_node, that node's address on the
 * NIC's network, through the node's neighbour table. That node steers the address's listed ports into the pod
 * while it does not hold it too, and the pod's answers leave there as the address (docs/design.md, "Shared
 * addresses"). backend_ip and backend_port_be name the pod, for bpfnetctl.
 */
#define BPFNET_SERVICE_VIA_NODE	     (1u << 2)
/* The most shared addresses one node steers (either family). */
#define BPFNET_MAX_SHARED_ADDRESSES  8
struct bpfnet_service {
	struct bpfnet_ip backend_ip; /* of the service IP's family */
	__be16 backend_port_be;
	__u8 kind;  /* enum bpfnet_port_kind */
	__u8 flags; /* BPFNET_SERVICE_SOURCE_RANGES, BPFNET_SERVICE_SHARED, BPFNET_SERVICE_VIA_NODE */
	struct bpfnet_pod_link link;
	struct bpfnet_ip via_node; /* BPFNET_SERVICE_VIA_NODE: the pod's node, of the service IP's family */
};

/* backend_ports (hash): the reverse of services, so the pod's replies are SNATed to the service. */
struct bpfnet_backend_port_key {
	struct bpfnet_ip backend_ip;
	__be16 port_be;
	__u8 proto;
	__u8 pad;
};
struct bpfnet_backend_port {
	struct bpfnet_ip service_ip;
	__be16 service_port_be;
	__u8 kind;
	__u8 flags; /* BPFNET_BACKEND_PORT_SHARED */
};
/* The reply of a shared address's listed port (BPFNET_SERVICE_SHARED): routed by the node, not the LAN's. */
#define BPFNET_BACKEND_PORT_SHARED (1u << 0)

/* backends (hash): key = backend pod IP -> where the pod is attached on this node. A dual-stack pod has an
 * entry per address, each with the service IP of its family. */
#define BPFNET_BACKEND_REDIRECT_PEER (1u << 0) /* veth: deliver with bpf_redirect_peer */
/* Deliver through the node's own routing (bpf_fib_lookup, else the stack) instead of into the veth (ifindex,
 * still where the pod hook takes the pod's answers); the MACs unused. */
#define BPFNET_BACKEND_ROUTE	     (1u << 1)
struct bpfnet_backend {
	__u32 ifindex;	  /* host side of the pod's veth */
	__u8 pod_mac[6];  /* the pod's interface */
	__u8 veth_mac[6]; /* the host side of the pod's veth (not a bare-metal host: those are "hosts") */
	struct bpfnet_ip service_ip; /* the address the pod's own connections to the LAN leave with */
	__u32 flags;
	__u16 mtu; /* of the host side of the pod's veth (the pod's MTU): TFTP blocks are clamped to fit it */
	__u8 pad[2];
};

/*
 * flows (LRU hash): connections the datapath learned on the reverse path: the pod's own connections
 * to hosts and replies from ephemeral server ports (TFTP). Keyed as the host's packets arrive on the
 * NIC (remote = host, local = service IP), so the host's next packet is DNATed with one lookup.
 * flows_unconfirmed (LRU hash, same layout): a flow starts there when the pod sends its first packet and
 * moves to flows when the host's first answer is accepted. A host that never answers (a spoofed request
 * made the pod open the flow) never takes a place in flows.
 */
struct bpfnet_flow_key {
	struct bpfnet_ip remote_ip;
	struct bpfnet_ip service_ip;
	__be16 remote_port_be;
	__be16 service_port_be;
	__u8 proto;
	__u8 pad[3];
};
struct bpfnet_flow {
	struct bpfnet_ip backend_ip;
	__be16 backend_port_be;
	__u16 seen; /* when the pod last sent on it, in flow clock units (BPFNET_FLOW_CLOCK_SHIFT) */
};

/*
 * The flow clock: CLOCK_MONOTONIC's coarse clock in units of 2^30 ns (about a second), modulo 2^16, never 0
 * (0: a flow an earlier build wrote, no stamp yet). Ages are read as signed 16-bit differences, so an age
 * is right up to about 9.7 hours; the sweep takes a stamp newer than its own clock for fresh. Kept in what
 * was the flow's padding, so flows pinned by an earlier build stay valid.
 */
#define BPFNET_FLOW_CLOCK_SHIFT 30

/*
 * flow_shares (LRU hash): key = LAN host IP -> how many confirmed flows (flows) it holds. The datapath
 * confirms no flow of a host at its share (BPFNET_MAX_FLOWS_PER_HOST): the flow stays in flows_unconfirmed,
 * where it still steers. The datapath adds; the loader's sweep, which removes idle flows, writes the
 * counts again from the table (so flows the LRU or the sweep removed stop counting). An entry lost to the
 * LRU only gives its host a fresh count until the next sweep, never less room.
 */
struct bpfnet_flow_share {
	__u32 confirmed;
};

/*
 * flow_ports (array, one entry): used[port_be] is set once a flow was recorded with that port on the service
 * IP's side, before the flow is written, and never cleared while the pin lives. The index is the port as
 * the packet and the flow key carry it (network byte order, read as a 16-bit number: used[htons(69)] for
 * port 69), so the programs need no byte swap whose result the verifier could not bound. A packet from the
 * LAN to a port not set can have no recorded flow, so it skips the lookups in flows and flows_unconfirmed: a
 * listed port is seldom also one the pod's own connections leave from (those come from the pod's ephemeral
 * range). One byte per port, so that CPUs marking neighbouring ports never overwrite each other's mark. A
 * loader that finds flows pinned without this map marks their ports first.
 */
#define BPFNET_PORTS 65536
struct bpfnet_flow_ports {
	__u8 used[BPFNET_PORTS];
};

/*
 * neighbours (LRU hash): key = host IP on the provisioning LAN -> its MAC, for the hosts the datapath
 * accepted a packet from (a request to a listed port, a TCP SYN, an answer on a flow). ARP (NDP) may change
 * an entry; an accepted packet may only add one. neighbours_unconfirmed (LRU hash, same layout): hosts known
 * from ARP (NDP) only, the answers to the loader's resolution of a miss among them; a host's entry moves to
 * neighbours with its first accepted packet. A flood of ARP or NDP from made-up addresses churns this table
 * only.
 */
struct bpfnet_neighbour {
	__u8 mac[6];
	__u8 pad[2];
};

/*
 * dhcp_servers (LRU hash): key = backend IPv4 address (__be32; DHCPv4 only) -> the server identifier (option
 * 54) the DHCP server in that pod names itself with, learned from its replies. A server that names the pod
 * (Kea by default) has option 54 rewritten to the service IP in its replies; clients then send the service IP
 * back in REQUEST, DECLINE and RELEASE, and the relay must hand the server its own identifier again.
 */
struct bpfnet_dhcp_server {
	__be32 server_id_be;
	__u32 pad;
};

/*
 * dhcp_relays (hash): key = IP of a DHCP relay agent on the provisioning LAN that the operator
 * configured (dhcpRelay.relays, --dhcp-relays). Only these may put their address in giaddr: the server's
 * replies go to giaddr, so an unlisted one would let any host have other hosts' replies sent to it.
 */
struct bpfnet_dhcp_relay {
	__u32 flags; /* none yet */
};

/*
 * counters (per-CPU array): one slot per counter, declared once here and nowhere else. Each entry is
 * X(ID, name, kind, help): BPFNET_CTR_<ID> is its slot, `name` what bpfnetctl and the metrics show, and
 * `kind` what it counts:
 *   PATH   a way a packet went (steered, relayed, answered, handed on)
 *   DROP   why a packet was dropped; shown without the drop_ prefix as a drop reason
 *   EVENT  something that happened along a path (a neighbour learned, a flow recorded, a rewrite)
 * maps/layout.hpp derives the C++ tables from it, and tests/unit/counter_table_test.cpp checks that
 * docs/observability.md lists every counter under its kind. A new counter is one line here and one row
 * there.
 */
#define BPFNET_COUNTERS(X)                                                                                   \
	X(PASS, "pass", PATH, "not for a service IP: handed to the kernel untouched")                        \
	X(ARP_REPLY, "arp_reply", PATH, "answered a who-has for a service IP")                               \
	X(ARP_NOT_ACTIVE, "arp_not_active", PATH,                                                            \
	  "who-has for a service IP this node does not own: dropped, so that only the owner answers")        \
	X(ARP_STALE_HEARTBEAT, "arp_stale_heartbeat", PATH,                                                  \
	  "who-has for a service IP while the loader's heartbeat is stale: handed to the kernel")            \
	X(NDP_REPLY, "ndp_reply", PATH, "answered a neighbour solicitation for a service IPv6 address")      \
	X(NDP_NOT_ACTIVE, "ndp_not_active", PATH,                                                            \
	  "neighbour solicitation for a service IPv6 address this node does not own: dropped")               \
	X(NDP_STALE_HEARTBEAT, "ndp_stale_heartbeat", PATH,                                                  \
	  "solicitation for a service IPv6 address while the loader's heartbeat is stale: handed to the "    \
	  "kernel")                                                                                          \
	X(ARP_CONFLICT, "arp_conflict", EVENT,                                                               \
	  "another MAC claims a service IP (ARP reply or announcement, NDP advertisement or DAD probe)")     \
	X(NEIGHBOUR_LEARNED, "neighbour_learned", EVENT, "a new or changed neighbour entry was written")     \
	X(NEIGHBOUR_REFUSED, "neighbour_refused", EVENT,                                                     \
	  "a frame offered a neighbour never learned (group or zero MAC, network, broadcast or service "     \
	  "address)")                                                                                        \
	X(NEIGHBOUR_CONFIRMED, "neighbour_confirmed", EVENT,                                                 \
	  "a host known from ARP or NDP only sent a packet the datapath accepted: its entry moved to "       \
	  "neighbours")                                                                                      \
	X(NEIGHBOUR_KEPT, "neighbour_kept", EVENT,                                                           \
	  "an accepted packet came from a known host's address with another MAC: the entry is kept")         \
	X(DNAT_SERVICE, "dnat_service", PATH, "host -> listed port, steered to the backend")                 \
	X(DNAT_FLOW, "dnat_flow", PATH, "host -> recorded flow, steered to the backend")                     \
	X(SNAT_REPLY, "snat_reply", PATH, "backend reply from a listed port, sent as the service IP")        \
	X(SNAT_FLOW, "snat_flow", PATH, "backend packet on a recorded flow, sent as the service IP")         \
	X(FLOW_CREATED, "flow_created", EVENT, "a new flow was recorded on the reverse path (unconfirmed)")  \
	X(FLOW_CONFIRMED, "flow_confirmed", EVENT,                                                           \
	  "the host answered an unconfirmed flow: it moved to flows")                                        \
	X(FLOW_OVER_SHARE, "flow_over_share", EVENT,                                                         \
	  "a host at its share of flows answered an unconfirmed flow: it stays unconfirmed")                 \
	X(FLOW_FOREIGN_ANSWER, "flow_foreign_answer", EVENT,                                                 \
	  "an answer on an unconfirmed flow came from another MAC than its host's: steered, not confirmed")  \
	X(NEIGHBOUR_MISS, "neighbour_miss", DROP,                                                            \
	  "the reverse path had no MAC for the host: reported, dropped")                                     \
	X(EVENT_LOST, "event_lost", EVENT, "the events or trace ring buffer was full")                       \
	X(DROP_NOT_ALLOWED, "drop_not_allowed", DROP,                                                        \
	  "to a service IP, no listed port and no recorded flow")                                            \
	X(DROP_PROTOCOL, "drop_protocol", DROP, "to a service IP, neither TCP, UDP, ARP nor an ICMP error")  \
	X(DROP_MALFORMED, "drop_malformed", DROP, "to a service IP, headers truncated or inconsistent")      \
	X(DROP_FRAGMENT, "drop_fragment", DROP, "to a service IP, an IP fragment (ports not trustworthy)")   \
	X(DROP_EXT_HEADER, "drop_ext_header", DROP,                                                          \
	  "to a service IPv6 address, an extension header the datapath does not walk")                       \
	X(DROP_NO_BACKEND, "drop_no_backend", DROP,                                                          \
	  "listed port or flow, but its backend is not on this node")                                        \
	X(DROP_BACKEND_PROTOCOL, "drop_backend_protocol", DROP,                                              \
	  "backend -> provisioning LAN, neither TCP nor UDP")                                                \
	X(DROP_HAIRPIN, "drop_hairpin", DROP, "backend -> a service IP (hairpin): not supported yet")        \
	X(DHCP_REQUEST_RELAYED, "dhcp_request_relayed", PATH,                                                \
	  "client (or LAN relay) -> server, relayed into the pod")                                           \
	X(DHCP_REPLY_RELAYED, "dhcp_reply_relayed", PATH,                                                    \
	  "server -> client (or LAN relay), delivered per RFC 2131 4.1")                                     \
	X(DHCP_SERVER_ID_REWRITTEN, "dhcp_server_id_rewritten", EVENT,                                       \
	  "a reply named the pod in option 54 or siaddr: rewritten to the service IP")                       \
	X(DHCP_SERVER_ID_RESTORED, "dhcp_server_id_restored", EVENT,                                         \
	  "a request named the service IP: the server's own identifier restored")                            \
	X(DHCP_OPTIONS_MALFORMED, "dhcp_options_malformed", EVENT,                                           \
	  "option list broken: delivered without option rewriting")                                          \
	X(DHCP_STALE_HEARTBEAT, "dhcp_stale_heartbeat", PATH,                                                \
	  "a DHCP or DHCPv6 request, the loader's heartbeat stale: not relayed (broadcasts and multicasts "  \
	  "handed on, unicast dropped)")                                                                     \
	X(DHCP6_REQUEST_RELAYED, "dhcp6_request_relayed", PATH,                                              \
	  "DHCPv6 client (or LAN relay) -> server: wrapped in a Relay-Forward, into the pod")                \
	X(DHCP6_REPLY_RELAYED, "dhcp6_reply_relayed", PATH,                                                  \
	  "the pod's Relay-Reply unwrapped: its message sent to the client (or LAN relay)")                  \
	X(TFTP_BLKSIZE_CLAMPED, "tftp_blksize_clamped", EVENT,                                               \
	  "a TFTP read request asked for blocks the pod's MTU cannot carry: blksize lowered")                \
	X(ICMP_ERROR_TO_POD, "icmp_error_to_pod", PATH,                                                      \
	  "an ICMP or ICMPv6 error about a steered packet, translated into the pod")                         \
	X(ICMP_ERROR_TO_LAN, "icmp_error_to_lan", PATH,                                                      \
	  "the pod's ICMP or ICMPv6 error about a steered packet, sent as the service IP")                   \
	X(DROP_DHCP_MALFORMED, "drop_dhcp_malformed", DROP,                                                  \
	  "BOOTP header truncated, wrong op or inconsistent")                                                \
	X(DROP_DHCP6_MALFORMED, "drop_dhcp6_malformed", DROP,                                                \
	  "DHCPv6 message truncated, too long, of a type not relayed that way, or a Relay-Reply without "    \
	  "one Relay Message and the relay's Interface-ID")                                                  \
	X(DROP_DHCP_HOPS, "drop_dhcp_hops", DROP,                                                            \
	  "a relayed DHCP request (DHCPv6 Relay-Forward) with more hops than the limit")                     \
	X(DROP_DHCP_FOREIGN_RELAY, "drop_dhcp_foreign_relay", DROP,                                          \
	  "giaddr (a DHCPv6 Relay-Forward's source, a Relay-Reply's peer) is no configured relay")           \
	X(DROP_DHCP_OFF_SUBNET, "drop_dhcp_off_subnet", DROP,                                                \
	  "a reply to unicast to ciaddr or yiaddr (DHCPv6: a peer-address) off the provisioning subnet")     \
	X(DROP_ICMP_UNMATCHED, "drop_icmp_unmatched", DROP,                                                  \
	  "an ICMP error about no packet the datapath steered")                                              \
	X(DROP_OFF_SUBNET, "drop_off_subnet", DROP,                                                          \
	  "to a service IP from off the provisioning subnet: no way back")                                   \
	X(DROP_SOURCE_RANGE, "drop_source_range", DROP,                                                      \
	  "to a listed port of a service IP from a source outside its source ranges")                        \
	X(DROP_REWRITE_FAILED, "drop_rewrite_failed", DROP, "a kernel helper refused to rewrite the packet") \
	X(ROUTE_TO_STACK, "route_to_stack", EVENT,                                                           \
	  "delivered through the node's routing: handed to the kernel after the rewrite (next hop not "      \
	  "resolved yet, too big for the route, or local)")                                                  \
	X(DROP_NO_ROUTE, "drop_no_route", DROP,                                                              \
	  "delivered through the node's routing: the route to the backend refuses it (unreachable, "         \
	  "blackhole, prohibit) or leads back out of the NIC, or forwarding is off on the NIC")              \
	X(FORWARD_TO_NODE, "forward_to_node", PATH,                                                          \
	  "host -> a shared address's listed port whose pod runs on another node: handed to that node, a "   \
	  "hop older")                                                                                       \
	X(DROP_HOP_LIMIT, "drop_hop_limit", DROP,                                                            \
	  "to be handed to the pod's node, but its TTL (hop limit) was used up")

#define BPFNET_COUNTER_SLOT(id, name, kind, help) BPFNET_CTR_##id,
enum bpfnet_counter { BPFNET_COUNTERS(BPFNET_COUNTER_SLOT) BPFNET_CTR_MAX };
#undef BPFNET_COUNTER_SLOT

/* events (ring buffer): what the datapath asks the loader to do, or tells it. */
enum bpfnet_event_type {
	BPFNET_EVENT_NEIGHBOUR_MISS =
		1,		   /* resolve ip with an ARP request (NDP solicitation) from service_ip */
	BPFNET_EVENT_CONFLICT = 2, /* mac claims service_ip: another owner on the LAN */
	BPFNET_EVENT_NEIGHBOUR_VERIFY = 3, /* ip was learned from a packet, not ARP (NDP): confirm it */
};
struct bpfnet_event {
	__u32 type;
	struct bpfnet_ip ip;
	struct bpfnet_ip service_ip;
	__u8 mac[6];
	__u8 pad[2];
};

/*
 * conflicts (hash): key = service IP -> the last other MAC seen claiming it. A second owner on the
 * LAN (a pivot gone wrong, another cluster) shows here, in the arp_conflict counter and in the loader's log.
 */
struct bpfnet_conflict {
	__u8 mac[6];
	__u8 pad[2];
	__u64 last_seen_ns; /* bpf_ktime_get_ns() */
};

/*
 * source_ranges (LPM trie): the sources that may reach a service IP's listed ports (Kubernetes
 * loadBalancerSourceRanges). Key: prefixlen = 128 + the range's length as an IPv6 prefix (an IPv4 range
 * a.b.c.d/n is ::ffff:a.b.c.d/(96 + n)), the service IP, the range's network. A service IP without entries
 * takes every source. One with ranges also has the entry {128, IP, ::} with allowed 0 (1 when a range covers
 * every address of the IP's family), which a source outside every range matches. Not asked for the host's
 * answers to flows the pod opened (the pod chose that host), nor for broadcast DHCP (from 0.0.0.0).
 */
struct bpfnet_source_range_key {
	__u32 prefixlen;
	struct bpfnet_ip service_ip;
	struct bpfnet_ip source;
};
struct bpfnet_source_range {
	__u8 allowed;
	__u8 pad[3];
};

/* trace_control (array, one entry): switched on by `bpfnetctl trace`; off, the datapath pays one lookup. */
struct bpfnet_trace_control {
	__u32 enabled;
	__u32 pad;
};

enum bpfnet_hook {
	BPFNET_HOOK_XDP_NIC = 1,	/* XDP on the provisioning NIC */
	BPFNET_HOOK_TC_NIC_INGRESS = 2, /* TC ingress on the NIC: LAN -> pod */
	BPFNET_HOOK_TC_POD_INGRESS = 3, /* TC ingress on the pod's veth: pod -> LAN */
};

/* trace (ring buffer): one record per steering decision while tracing is on. */
struct bpfnet_trace {
	__u64 time_ns;	/* bpf_ktime_get_ns() */
	__u32 decision; /* enum bpfnet_counter: the path taken or the drop reason */
	__u8 hook;	/* enum bpfnet_hook */
	__u8 proto;	/* IPPROTO_TCP/UDP/ICMP..., 0 for ARP */
	__u8 dhcp_type; /* DHCP message type (option 53) or DHCPv6 msg-type, 0 if none */
	__u8 tftp_op;	/* TFTP opcode (1 RRQ, 2 WRQ, 3 DATA, 4 ACK, 5 ERROR, 6 OACK), 0 if not TFTP */
	struct bpfnet_ip saddr; /* addresses and ports as the packet arrived */
	struct bpfnet_ip daddr;
	struct bpfnet_ip
		to_addr; /* where it was steered (backend, service IP, client), zero if not rewritten */
	__be16 sport_be;
	__be16 dport_be;
	__be16 to_port_be;
	__u8 mac[6];	    /* DHCP client hardware address, else the frame's source MAC */
	__be32 dhcp_xid_be; /* DHCP xid, or the DHCPv6 transaction id (3 bytes, in the low ones) */
	char tftp_file[64]; /* TFTP read/write request: the file name, NUL-terminated */
};

/* Pin layout: <pin root>/<interface name>/<map or program name>. */
#define BPFNET_DEFAULT_PIN_ROOT "/sys/fs/bpf/bpfnet"
#define BPFNET_PROG_XDP_NIC	"xdp_nic"
#define BPFNET_PROG_TC_NIC	"tc_nic_ingress"
#define BPFNET_PROG_TC_POD	"tc_pod_ingress"

/* TC filters are ours when they carry this handle and priority; nobody else's filter is touched. */
#define BPFNET_TC_HANDLE   0xb9f
#define BPFNET_TC_PRIORITY 0xb9f

#endif /* BPFNET_MAPS_H */
