// IPv6's counterparts of ArpSender, for the service addresses that exist only in the datapath: unsolicited
// neighbour advertisements when this node takes an address over (RFC 4861 7.2.6, as gratuitous ARP), and
// neighbour solicitations when the datapath misses a host. And the solicited-node group memberships that make
// MLD-snooping switches (and the NIC's own multicast filter) deliver the hosts' solicitations to this NIC.
#pragma once

#include "maps/bpfnet_maps.h"
#include "maps/unique_fd.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bpfnet {

using Frame = std::vector<uint8_t>;

// The frames, built whole (Ethernet, IPv6 with hop limit 255, ICMPv6 with its checksum); exposed for tests.
// An unsolicited advertisement of `address` at `mac`, to all nodes, overriding caches (not solicited).
Frame unsolicited_advertisement(const bpfnet_ip &address, const std::array<uint8_t, 6> &mac);
// A solicitation for `target` from `source` (a service address) at `mac`, to target's solicited-node group.
Frame neighbour_solicitation(const bpfnet_ip &source, const std::array<uint8_t, 6> &mac, const bpfnet_ip &target);
// Duplicate address detection's probe (RFC 4862 5.4.2): a solicitation for `target` from the unspecified address,
// without a link-layer option, to target's solicited-node group.
Frame duplicate_address_probe(const std::array<uint8_t, 6> &mac, const bpfnet_ip &target);
// Where a router advertisement goes: to all nodes, or to one host (the answer to its solicitation).
struct RaDestination {
    bpfnet_ip ip;
    std::array<uint8_t, 6> mac;
};
// A router advertisement (RFC 4861 4.2) from `source` (the NIC's link-local address) at `mac`, to all nodes
// (nullopt) or to one host: the M and O flags (addresses and other configuration by DHCPv6), router lifetime 0
// (this is no default router), the source link-layer address and the prefix `prefix`/`prefix_len` as on-link,
// not for autoconfiguration.
Frame router_advertisement(const bpfnet_ip &source, const std::array<uint8_t, 6> &mac, const bpfnet_ip &prefix,
                           uint8_t prefix_len, uint32_t valid_lifetime_s,
                           const std::optional<RaDestination> &to = std::nullopt);

// A router solicitation as received: who sent it. A host without an address yet sends from :: and must not
// carry its link-layer address (RFC 4861 4.1); one with an address should.
struct RouterSolicitation {
    bpfnet_ip source{};
    std::optional<std::array<uint8_t, 6>> link_layer; // its Source Link-Layer Address option
};
// The solicitation in an ICMPv6 message (the IPv6 header's source and hop limit beside it), or nullopt when
// RFC 4861 6.1.1 says to discard it: hop limit not 255, not type 133 code 0, shorter than 8 bytes, an option
// of length 0 or running past the end, or a link-layer address option from the unspecified address.
std::optional<RouterSolicitation> parse_router_solicitation(const uint8_t *message, size_t length,
                                                            const bpfnet_ip &source, int hop_limit);
// ff02::1:ffXX:XXXX for an address (RFC 4291 2.7.1).
bpfnet_ip solicited_node_group(const bpfnet_ip &address);
// The IPv6 multicast groups interface ifindex is a member of, as the kernel of the calling thread's network
// namespace lists them (/proc/net/igmp6): what MLD reports, whoever joined. Empty when it cannot be read.
std::vector<bpfnet_ip> ipv6_groups_of(int ifindex);
// The same parse, of that file's text (unit-tested).
std::vector<bpfnet_ip> parse_igmp6(const std::string &text, int ifindex);

class NdpSender {
public:
    // Throws bpfnet::SystemError if the socket cannot be opened or ifindex does not exist.
    explicit NdpSender(int ifindex);

    void send_unsolicited_advertisement(const bpfnet_ip &address, const std::array<uint8_t, 6> &mac);
    void send_solicitation(const bpfnet_ip &source, const std::array<uint8_t, 6> &mac, const bpfnet_ip &target);
    void send_duplicate_address_probe(const std::array<uint8_t, 6> &mac, const bpfnet_ip &target);
    void send_router_advertisement(const bpfnet_ip &source, const std::array<uint8_t, 6> &mac, const bpfnet_ip &prefix,
                                   uint8_t prefix_len, uint32_t valid_lifetime_s,
                                   const std::optional<RaDestination> &to = std::nullopt);

private:
    void send(const Frame &frame, const std::string &what);

    UniqueFd fd_;
    int ifindex_;
};

// The NIC's memberships in IPv6 multicast groups: the solicited-node groups of the service addresses, and
// All_DHCP_Relay_Agents_and_Servers (ff02::1:2) while the DHCPv6 relay is on. The kernel then reports them by
// MLD and accepts their frames through the NIC's multicast filter. Joined for every address listed,
// active or not, so that a takeover waits for no MLD report to propagate.
class NicMulticastGroups {
public:
    explicit NicMulticastGroups(int ifindex);

    // Joins the groups not joined yet and leaves the others. Returns what could not be joined (the NIC has
    // IPv6 disabled, say), with why; the rest is joined either way.
    std::vector<std::pair<bpfnet_ip, std::string>> set(const std::vector<bpfnet_ip> &groups);
    std::vector<bpfnet_ip> joined() const;

private:
    UniqueFd fd_;
    int ifindex_;
    std::vector<bpfnet_ip> groups_; // joined
};

// ff02::1:2, where DHCPv6 clients send (RFC 8415 section 7.1).
bpfnet_ip all_dhcp_relay_agents_and_servers();

// ff02::2, where hosts send router solicitations (RFC 4291 2.7.1).
bpfnet_ip all_routers();

// The groups the NIC must be in: the solicited-node group of every IPv6 address in service_ips, ff02::1:2
// when `relays_dhcp6`, ff02::2 when `advertises_router`.
std::vector<bpfnet_ip> nic_groups(const std::vector<bpfnet_ip> &service_ips, bool relays_dhcp6, bool advertises_router);

// The router solicitations (RFC 4861 4.1) that hosts send on the NIC, read through a raw ICMPv6 socket bound to
// it that takes nothing else (ICMP6_FILTER). They reach it when the NIC is in ff02::2 (NicMulticastGroups).
class RouterSolicitations {
public:
    // Throws bpfnet::SystemError when the socket cannot be opened or bound (no IPv6, no such interface).
    explicit RouterSolicitations(const std::string &interface);
    int fd() const { return fd_.get(); }
    // Reads everything queued (non-blocking): the valid solicitations among it.
    std::vector<RouterSolicitation> drain();

private:
    UniqueFd fd_;
};

} // namespace bpfnet
