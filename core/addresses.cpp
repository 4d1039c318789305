#include "core/addresses.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>

namespace bpfnet {

std::string to_string(IpFamily family) {
    return family == IpFamily::V4 ? "IPv4" : "IPv6";
}

std::string format_ipv4(uint32_t be) {
    char text[INET_ADDRSTRLEN];
    in_addr addr{};
    addr.s_addr = be;
    inet_ntop(AF_INET, &addr, text, sizeof(text));
    return text;
}

std::optional<uint32_t> parse_ipv4(const std::string &text) {
    in_addr addr{};
    if (inet_pton(AF_INET, text.c_str(), &addr) != 1)
        return std::nullopt;
    return addr.s_addr;
}

std::string format_ip(const bpfnet_ip &ip) {
    if (is_v4(ip))
        return format_ipv4(ip.w[3]);
    char text[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &ip, text, sizeof(text));
    return text;
}

std::optional<bpfnet_ip> parse_ip(const std::string &text) {
    if (auto v4 = parse_ipv4(text))
        return ip_from_v4(*v4);
    bpfnet_ip ip{};
    if (inet_pton(AF_INET6, text.c_str(), &ip) != 1 || is_v4(ip))
        return std::nullopt; // "::ffff:1.2.3.4" is written as the IPv4 address it is
    return ip;
}

std::string format_mac(const uint8_t *mac) {
    char text[18];
    std::snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
    return text;
}

std::optional<std::array<uint8_t, 6>> parse_mac(std::string_view text) {
    std::array<uint8_t, 6> mac{};
    for (size_t i = 0; i < mac.size(); i++) {
        const size_t end = i + 1 < mac.size() ? text.find(':') : text.size();
        const std::string_view group = text.substr(0, end);
        if (end == std::string_view::npos || group.empty() || group.size() > 2 ||
            !std::all_of(group.begin(), group.end(),
                         [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
            return std::nullopt;
        mac[i] = static_cast<uint8_t>(std::stoul(std::string(group), nullptr, 16));
        text.remove_prefix(i + 1 < mac.size() ? end + 1 : end);
    }
    return mac;
}

uint32_t prefix_mask_be(unsigned prefix_len) {
    if (prefix_len == 0)
        return 0;
    return htonl(~uint32_t{0} << (32 - std::min(prefix_len, 32u)));
}

std::string format_prefix(uint32_t network_be, uint8_t prefix_len) {
    return format_ipv4(network_be) + "/" + std::to_string(prefix_len);
}

bool in_prefix(uint32_t ip_be, uint32_t network_be, uint8_t prefix_len) {
    return (ip_be & prefix_mask_be(prefix_len)) == network_be;
}

std::optional<std::string> non_unicast_reason(uint32_t ip_be) {
    const uint32_t ip = ntohl(ip_be);
    if (ip == 0xffffffff)
        return "the limited broadcast address";
    if ((ip >> 24) == 0)
        return "in 0.0.0.0/8 (\"this network\")";
    if ((ip >> 24) == 127)
        return "a loopback address";
    if ((ip >> 28) == 0xe)
        return "a multicast address";
    return std::nullopt;
}

std::optional<std::string> lan_host_problem(uint32_t ip_be, uint32_t network_be, uint8_t prefix_len) {
    const std::string where = "subnet " + format_prefix(network_be, prefix_len);
    if (const auto reason = non_unicast_reason(ip_be))
        return "must be a unicast address, got " + format_ipv4(ip_be) + ", " + *reason;
    if (!in_prefix(ip_be, network_be, prefix_len))
        return format_ipv4(ip_be) + " is not inside " + where;
    if (prefix_len <= 30 && ip_be == network_be)
        return format_ipv4(ip_be) + " is the network address of " + where;
    if (prefix_len <= 30 && ip_be == (network_be | ~prefix_mask_be(prefix_len)))
        return format_ipv4(ip_be) + " is the broadcast address of " + where;
    return std::nullopt;
}

std::optional<std::string> backend_ip_problem(uint32_t ip_be, const std::vector<uint32_t> &service_ips,
                                              uint32_t network_be, uint8_t prefix_len) {
    if (const auto reason = non_unicast_reason(ip_be))
        return "must be a unicast address, got " + format_ipv4(ip_be) + ", " + *reason;
    if (std::find(service_ips.begin(), service_ips.end(), ip_be) != service_ips.end())
        return "must not be the service IP " + format_ipv4(ip_be) + ": it is the pod's own address on the pod network";
    if (prefix_len != 0 && in_prefix(ip_be, network_be, prefix_len))
        return format_ipv4(ip_be) + " is inside subnet " + format_prefix(network_be, prefix_len) +
               ": the pod lives on the pod network, not on the provisioning LAN";
    return std::nullopt;
}

bpfnet_ip prefix6_network(const bpfnet_ip &ip, uint8_t prefix_len) {
    bpfnet_ip network = ip;
    auto *bytes = reinterpret_cast<uint8_t *>(&network);
    for (unsigned bit = prefix_len; bit < 128; bit++)
        bytes[bit / 8] = static_cast<uint8_t>(bytes[bit / 8] & ~(0x80u >> (bit % 8)));
    return network;
}

bool in_prefix6(const bpfnet_ip &ip, const bpfnet_ip &network, uint8_t prefix_len) {
    return prefix6_network(ip, prefix_len) == prefix6_network(network, prefix_len);
}

std::string format_prefix6(const bpfnet_ip &network, uint8_t prefix_len) {
    return format_ip(network) + "/" + std::to_string(prefix_len);
}

std::optional<std::string> non_unicast_reason6(const bpfnet_ip &ip) {
    const auto *b = reinterpret_cast<const uint8_t *>(&ip);
    if (is_v4(ip))
        return "an IPv4-mapped address";
    if (ip == bpfnet_ip{})
        return "the unspecified address";
    if (b[0] == 0xff)
        return "a multicast address";
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
        return "a link-local address";
    bpfnet_ip loopback{};
    loopback.w[3] = htonl(1);
    if (ip == loopback)
        return "the loopback address";
    return std::nullopt;
}

std::optional<std::string> lan_host_problem6(const bpfnet_ip &ip, const bpfnet_ip &network, uint8_t prefix_len) {
    const std::string where = "subnet " + format_prefix6(network, prefix_len);
    if (const auto reason = non_unicast_reason6(ip))
        return "must be a unicast address, got " + format_ip(ip) + ", " + *reason;
    if (!in_prefix6(ip, network, prefix_len))
        return format_ip(ip) + " is not inside " + where;
    if (ip == prefix6_network(network, prefix_len))
        return format_ip(ip) + " is the subnet-router anycast address of " + where;
    return std::nullopt;
}

std::optional<std::string> backend_ip6_problem(const bpfnet_ip &ip, const bpfnet_ip &service_ip,
                                               const bpfnet_ip &network, uint8_t prefix_len) {
    if (const auto reason = non_unicast_reason6(ip))
        return "must be a unicast address, got " + format_ip(ip) + ", " + *reason;
    if (ip == service_ip)
        return "must not be the service IP " + format_ip(ip) + ": it is the pod's own address on the pod network";
    if (prefix_len != 0 && in_prefix6(ip, network, prefix_len))
        return format_ip(ip) + " is inside subnet " + format_prefix6(network, prefix_len) +
               ": the pod lives on the pod network, not on the provisioning LAN";
    return std::nullopt;
}

bool Prefix::contains(const bpfnet_ip &ip) const {
    if (family_of(ip) != family())
        return false;
    return is_v4(ip) ? in_prefix(v4_of(ip), v4_of(network), prefix_len) : in_prefix6(ip, network, prefix_len);
}

std::string format_prefix(const Prefix &prefix) {
    return is_v4(prefix.network) ? format_prefix(v4_of(prefix.network), prefix.prefix_len)
                                 : format_prefix6(prefix.network, prefix.prefix_len);
}

namespace {

/* The first prefix_len bits of ip in its family, the rest zero. */
bpfnet_ip network_of(const bpfnet_ip &ip, uint8_t prefix_len) {
    return is_v4(ip) ? ip_from_v4(v4_of(ip) & prefix_mask_be(prefix_len)) : prefix6_network(ip, prefix_len);
}

/* A prefix length as written: decimal, no sign, no leading zero (octal in some readers), at most 3 digits. */
std::optional<unsigned> parse_prefix_len(std::string_view digits) {
    if (digits.empty() || digits.size() > 3 || (digits.size() > 1 && digits.front() == '0'))
        return std::nullopt;
    unsigned len = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), len);
    if (ec != std::errc() || end != digits.data() + digits.size())
        return std::nullopt;
    return len;
}

ParsedPrefix prefix_error(std::string_view text, std::string_view why) {
    return {std::nullopt, "must be a CIDR like 198.18.0.0/24 or fd00:1::/64, got \"" + std::string(text) + "\" (" +
                              std::string(why) + ")"};
}

} // namespace

ParsedPrefix parse_prefix(std::string_view text, HostBits host_bits) {
    const size_t slash = text.find('/');
    if (slash == std::string_view::npos)
        return prefix_error(text, "no /length");
    const std::optional<bpfnet_ip> address = parse_ip(std::string(text.substr(0, slash)));
    if (!address)
        return prefix_error(text, "not an IPv4 or IPv6 address before the /");
    const unsigned width = is_v4(*address) ? 32 : 128;
    const std::optional<unsigned> len = parse_prefix_len(text.substr(slash + 1));
    if (!len || *len > width)
        return prefix_error(text, "the length must be 0 to " + std::to_string(width) + ", without leading zeros");
    const Prefix prefix{network_of(*address, static_cast<uint8_t>(*len)), static_cast<uint8_t>(*len)};
    if (prefix.network != *address && host_bits == HostBits::Refused)
        return {std::nullopt,
                "has host bits set: \"" + std::string(text) + "\"; did you mean " + format_prefix(prefix) + "?"};
    return {prefix, ""};
}

} // namespace bpfnet
