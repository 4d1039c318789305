// Addresses as every layer writes and reads them (dotted quads, RFC 5952 IPv6 text, prefixes of either family,
// MACs), and the rules about which address may be what on the provisioning LAN. One copy, used by both modes
// and by bpfnetctl.
#pragma once

#include "maps/layout.hpp"

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bpfnet {

/* An address family, as messages and the Kubernetes API spell it: "IPv4", "IPv6". */
enum class IpFamily { V4, V6 };
inline IpFamily family_of(const bpfnet_ip &ip) {
    return is_v4(ip) ? IpFamily::V4 : IpFamily::V6;
}
std::string to_string(IpFamily family);

/* Dotted quad for IPv4, RFC 5952 text for IPv6. */
std::string format_ip(const bpfnet_ip &ip);
/* Either family's text form; nullopt when it is neither. */
std::optional<bpfnet_ip> parse_ip(const std::string &text);

/* Dotted quad of an address in network byte order. */
std::string format_ipv4(uint32_t be);
/* Dotted quad (inet_pton's strict form: four decimal octets) to network byte order; nullopt otherwise. */
std::optional<uint32_t> parse_ipv4(const std::string &text);
/* "aa:bb:cc:dd:ee:ff" of the 6 bytes at mac. */
std::string format_mac(const uint8_t *mac);
/* Six groups of one or two hex digits, either case, separated by ':'; nullopt otherwise. */
std::optional<std::array<uint8_t, 6>> parse_mac(std::string_view text);

/* The netmask of a prefix length, in network byte order (0 for /0). */
uint32_t prefix_mask_be(unsigned prefix_len);
/* "198.18.0.0/24". */
std::string format_prefix(uint32_t network_be, uint8_t prefix_len);
bool in_prefix(uint32_t ip_be, uint32_t network_be, uint8_t prefix_len);

/* Why ip_be can never be a host's address (broadcast, 0.0.0.0/8, loopback, multicast); nullopt when it can. */
std::optional<std::string> non_unicast_reason(uint32_t ip_be);
/*
 * Why ip_be cannot be a host on the provisioning subnet (network_be/prefix_len): outside it, its network or
 * broadcast address, or not unicast at all. nullopt when it can. Service IPs and DHCP relays obey it.
 */
std::optional<std::string> lan_host_problem(uint32_t ip_be, uint32_t network_be, uint8_t prefix_len);
/*
 * Why ip_be cannot be the backend pod's address behind service_ips on the provisioning subnet: not unicast,
 * one of the service IPs, or inside the subnet (the pod lives on the pod network). nullopt when it can. The
 * one rule for the config file's backend.ip and for `bpfnetctl backend set` (checked by the loader).
 */
std::optional<std::string> backend_ip_problem(uint32_t ip_be, const std::vector<uint32_t> &service_ips,
                                              uint32_t network_be, uint8_t prefix_len);

/* ---- IPv6 (addresses in their map form, struct bpfnet_ip) ---- */

/* The first prefix_len bits of ip, the rest zero. */
bpfnet_ip prefix6_network(const bpfnet_ip &ip, uint8_t prefix_len);
bool in_prefix6(const bpfnet_ip &ip, const bpfnet_ip &network, uint8_t prefix_len);
/* "2001:db8::/64". */
std::string format_prefix6(const bpfnet_ip &network, uint8_t prefix_len);
/* "fe80::/10"-style ranges no provisioning subnet, service address or pod address can be in; nullopt else. */
std::optional<std::string> non_unicast_reason6(const bpfnet_ip &ip);
/* lan_host_problem() for IPv6: outside the subnet, its subnet-router anycast address (RFC 4291 2.6.1), or
 * not a global unicast address at all. */
std::optional<std::string> lan_host_problem6(const bpfnet_ip &ip, const bpfnet_ip &network, uint8_t prefix_len);
/* backend_ip_problem() for IPv6. */
std::optional<std::string> backend_ip6_problem(const bpfnet_ip &ip, const bpfnet_ip &service_ip,
                                               const bpfnet_ip &network, uint8_t prefix_len);

/* ---- prefixes of either family ---- */

/*
 * A CIDR prefix: its network (host bits zero; IPv4 in its IPv4-mapped form) and its length within its
 * family (0..32 for IPv4, 0..128 for IPv6). A provisioning subnet, an allowed range of service IPs, a
 * source range.
 */
struct Prefix {
    bpfnet_ip network{};
    uint8_t prefix_len = 0;

    IpFamily family() const { return family_of(network); }
    /* ip is of the prefix's family and inside it. */
    bool contains(const bpfnet_ip &ip) const;

    bool operator==(const Prefix &) const = default;
    auto operator<=>(const Prefix &) const = default;
};

/* "198.18.0.0/24", "fd00:1::/64". */
std::string format_prefix(const Prefix &prefix);

/* What parse_prefix does with host bits: a subnet or a flag written with them is a typo worth refusing;
 * Kubernetes clears them in a Service's loadBalancerSourceRanges, so a Service may have them. */
enum class HostBits { Refused, Cleared };

/* A prefix, or why its text is not one: words that follow the field's name ("subnet: <error>"). */
struct ParsedPrefix {
    std::optional<Prefix> prefix;
    std::string error; /* empty when prefix is set */
};

/*
 * The one parser of CIDR text, either family: "198.18.0.0/24" (strict dotted quad) or "fd00:1::/64" (not
 * IPv4-mapped), the length decimal without sign or leading zero and at most the family's width.
 */
ParsedPrefix parse_prefix(std::string_view text, HostBits host_bits = HostBits::Refused);

} // namespace bpfnet
