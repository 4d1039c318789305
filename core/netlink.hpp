// Read-only rtnetlink queries the loader needs about links, routes and neighbours (libmnl underneath).
// Every call opens its own short-lived netlink socket, so it answers for the network namespace the calling
// thread is in at that moment (a caller inside setns() gets that namespace's view). Failures throw
// bpfnet::SystemError naming the request and its object.
#pragma once

#include "maps/bpfnet_maps.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bpfnet {

using MacAddress = std::array<uint8_t, 6>;

struct LinkInfo {
    int ifindex;
    std::string name;
    MacAddress mac; // all zero when the link has no Ethernet address (e.g. tun, ipip)
    bool is_veth;
    int peer_ifindex; // -1 unless veth; an ifindex in the peer's namespace
    int peer_netnsid; // -1 if the peer is in the same namespace (or unknown); else the id this namespace gives it
    bool up;          // administratively up (IFF_UP)
    bool carrier;     // up and with carrier (IFF_LOWER_UP): it can reach what it is cabled to
    unsigned mtu;
    std::string kind; // IFLA_INFO_KIND: "veth", "bridge", ...; empty for links without one (e.g. lo)
};

// Whether a link with these ifinfomsg flags is up and has carrier (IFF_UP and IFF_LOWER_UP).
bool has_carrier(unsigned link_flags);

LinkInfo link_by_name(const std::string &name);
LinkInfo link_by_index(int ifindex);
// The interface's name, for output; empty when the ifindex no longer exists (a pod's veth that went).
std::string interface_name(int ifindex);

// The MAC of the other end of a veth, also when that end lives in another namespace (IFLA_TARGET_NETNSID,
// kernel >= 4.20). nullopt if `veth` is not a veth or its peer has no Ethernet address or is gone.
std::optional<MacAddress> peer_mac(const LinkInfo &veth);

// Every link of this namespace (an RTM_GETLINK dump). A veth's peer_netnsid is set when its peer lives in
// another namespace (the kernel allocates the id while it answers).
std::vector<LinkInfo> all_links();

// An address and the interface that holds it, in some namespace.
struct InterfaceAddress {
    int ifindex;
    bpfnet_ip ip;
    uint8_t prefix_len = 0;
    bool secondary = false; // IFA_F_SECONDARY: an IPv4 address inside the subnet of a primary one
    bool tentative = false; // IPv6: still in duplicate address detection, or failed it (not the interface's)
};
// The IPv4 (or IPv6) addresses of the namespace this one calls netnsid (an RTM_GETADDR dump with
// IFA_TARGET_NETNSID, kernel >= 4.20; the caller needs CAP_NET_ADMIN over that namespace). Empty when the
// namespace has none of that family; throws when the kernel answers for another namespace instead.
std::vector<InterfaceAddress> addresses_in_namespace(int netnsid, bool ipv6);
// The addresses of one family on this namespace's interfaces (an RTM_GETADDR dump).
std::vector<InterfaceAddress> local_addresses(bool ipv6);

// The interface's IPv6 link-local address (fe80::/10, the first one the kernel lists); nullopt when it has
// none (IPv6 disabled on it, or no IPv6 in the kernel).
std::optional<bpfnet_ip> link_local_address(const std::string &interface);

// The output ifindex the kernel would use to reach dst (like `ip route get`). Throws when unreachable.
int route_oif(uint32_t dst_be);
int route_oif(const bpfnet_ip &dst); // either family

// The link-layer address the kernel knows for ip_be on ifindex, if the entry is usable (reachable, stale,
// being reconfirmed, or permanent); nullopt when there is no such entry or it is incomplete or failed.
std::optional<MacAddress> neighbour_mac(int ifindex, uint32_t ip_be);
std::optional<MacAddress> neighbour_mac(int ifindex, const bpfnet_ip &ip); // either family (IPv6: the NDP cache)

} // namespace bpfnet
