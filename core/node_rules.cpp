#include "core/node_rules.hpp"

#include <algorithm>

namespace bpfnet {

std::string in_quotes(std::string_view text) {
    return "\"" + std::string(text) + "\"";
}

namespace {

std::string between(unsigned min, unsigned max, long long got) {
    return "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + std::to_string(got);
}

bool has_control_characters(std::string_view text) {
    return std::any_of(text.begin(), text.end(),
                       [](char c) { return static_cast<unsigned char>(c) < ' ' || c == 0x7f; });
}

// The kernel's dev_valid_name() rules, plus control characters.
std::optional<std::string> interface_name_rule_broken(std::string_view name) {
    if (name.empty())
        return "must not be empty";
    if (name.size() > kMaxInterfaceNameLen)
        return "must be at most " + std::to_string(kMaxInterfaceNameLen) + " characters";
    if (name == "." || name == "..")
        return "must not be \".\" or \"..\"";
    for (const char c : name) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '/' || c == ':')
            return std::string("must not contain '") + c + "'";
        if (byte <= ' ' || byte == 0x7f)
            return "must not contain whitespace or control characters";
    }
    return std::nullopt;
}

// The limits of a provisioning subnet of either family, whichever field holds it.
std::optional<std::string> subnet_problem(const Prefix &subnet) {
    const bool v4 = subnet.family() == IpFamily::V4;
    const unsigned min = v4 ? kMinPrefixLen : kMinPrefix6Len;
    const unsigned max = v4 ? kMaxPrefixLen : kMaxPrefix6Len;
    if (subnet.prefix_len < min || subnet.prefix_len > max)
        return "prefix length " + between(min, max, subnet.prefix_len);
    if (v4)
        return std::nullopt;
    const std::string text = in_quotes(format_prefix(subnet));
    if (const auto reason = non_unicast_reason6(subnet.network))
        return "must be a unicast prefix, got " + text + ", " + *reason;
    // The IPv4-mapped addresses are the maps' IPv4 entries: no IPv6 subnet may hold them.
    if (in_prefix6(ip_from_v4(0), subnet.network, subnet.prefix_len))
        return "must not contain ::ffff:0:0/96, the IPv4-mapped addresses, got " + text;
    return std::nullopt;
}

std::optional<std::string> pin_root_problem(const std::string &root) {
    if (!root.starts_with('/'))
        return "must be an absolute path, got " + in_quotes(root);
    if (root == "/")
        return "must be a directory below \"/\" (normally on bpffs, e.g. " + std::string(kDefaultPinRoot) + ")";
    if (root.find("/../") != std::string::npos || root.ends_with("/.."))
        return "must not contain \"..\", got " + in_quotes(root);
    if (has_control_characters(root))
        return "must not contain control characters";
    return std::nullopt;
}

// Empty: the default under /run/bpfnet.
std::optional<std::string> control_socket_problem(const std::string &path) {
    if (path.empty())
        return std::nullopt;
    if (!path.starts_with('/') || path.ends_with('/'))
        return "must be the absolute path of a socket file, got " + in_quotes(path);
    if (has_control_characters(path))
        return "must not contain control characters";
    if (path.size() > kMaxControlSocketLen)
        return "must be at most " + std::to_string(kMaxControlSocketLen) + " bytes long (a Unix socket path), got " +
               std::to_string(path.size());
    return std::nullopt;
}

// Relay agents on the LAN (routers forwarding other segments' DHCP) get the server's replies: IPv4 ones are
// hosts of the IPv4 subnet (giaddr), IPv6 ones of the IPv6 subnet (a Relay-Forward's source).
std::optional<std::string> relay_problem(const NodeSettings &node, size_t i, const NodeFieldNames &names) {
    const bpfnet_ip &relay = node.dhcp_relays[i];
    const bool v4 = is_v4(relay);
    if (v4 ? node.prefix_len == 0 : node.prefix6_len == 0)
        return format_ip(relay) + " is " + to_string(family_of(relay)) + ", and there is no " +
               std::string(v4 ? names.subnet : names.subnet_v6);
    if (const auto problem = v4 ? lan_host_problem(v4_of(relay), node.subnet_be, node.prefix_len)
                                : lan_host_problem6(relay, node.subnet6, node.prefix6_len))
        return problem;
    if (std::find(node.dhcp_relays.begin(), node.dhcp_relays.begin() + static_cast<std::ptrdiff_t>(i), relay) !=
        node.dhcp_relays.begin() + static_cast<std::ptrdiff_t>(i))
        return format_ip(relay) + " is listed twice";
    return std::nullopt;
}

std::optional<NodeProblem> relays_problem(const NodeSettings &node, const NodeFieldNames &names) {
    if (node.dhcp_relays.size() > BPFNET_MAX_DHCP_RELAYS)
        return NodeProblem{NodeField::DhcpRelays, std::nullopt,
                           "must list at most " + std::to_string(BPFNET_MAX_DHCP_RELAYS) + " relays, got " +
                               std::to_string(node.dhcp_relays.size())};
    for (size_t i = 0; i < node.dhcp_relays.size(); i++)
        if (auto problem = relay_problem(node, i, names))
            return NodeProblem{NodeField::DhcpRelays, i, std::move(*problem)};
    return std::nullopt;
}

std::optional<NodeProblem> whole(NodeField field, std::optional<std::string> problem) {
    if (!problem)
        return std::nullopt;
    return NodeProblem{field, std::nullopt, std::move(*problem)};
}

} // namespace

std::string_view NodeFieldNames::operator[](NodeField field) const {
    switch (field) {
    case NodeField::Interface:
        return interface;
    case NodeField::Subnet:
        return subnet;
    case NodeField::SubnetV6:
        return subnet_v6;
    case NodeField::PinRoot:
        return pin_root;
    case NodeField::ControlSocket:
        return control_socket;
    case NodeField::DhcpRelays:
        return dhcp_relays;
    case NodeField::RouterAdvertisements:
        return router_advertisements;
    case NodeField::RaInterval:
        return ra_interval;
    }
    return "";
}

ParsedPrefix parse_subnet(std::string_view text, IpFamily family, const NodeFieldNames &names) {
    ParsedPrefix subnet = parse_prefix(text);
    if (!subnet.prefix)
        return subnet;
    if (subnet.prefix->family() == family) {
        // Checked here too: a /0 would read as no subnet at all once it is in NodeSettings.
        if (auto problem = subnet_problem(*subnet.prefix))
            return {std::nullopt, std::move(*problem)};
        return subnet;
    }
    const bool v4 = family == IpFamily::V4;
    return {std::nullopt, "must be an " + to_string(family) + " CIDR like " + (v4 ? "198.18.0.0/24" : "fd00:1::/64") +
                              ", got " + in_quotes(text) + ": an " + to_string(subnet.prefix->family()) +
                              " subnet goes in " + std::string(v4 ? names.subnet_v6 : names.subnet)};
}

std::optional<bpfnet_ip> parse_relay(std::string_view text, std::string &error) {
    const std::optional<bpfnet_ip> ip = parse_ip(std::string(text));
    if (!ip)
        error = "must be an IPv4 or IPv6 address like 198.18.0.1 or fd00:1::1, got " + in_quotes(text);
    return ip;
}

std::optional<std::string> interface_name_problem(std::string_view name) {
    if (const auto rule = interface_name_rule_broken(name))
        return "is not a valid interface name (" + *rule + "), got " + in_quotes(name);
    return std::nullopt;
}

std::string without_trailing_slashes(std::string path) {
    while (path.size() > 1 && path.ends_with('/'))
        path.pop_back();
    return path;
}

std::optional<NodeProblem> validate_node_settings(const NodeSettings &node, const NodeFieldNames &names,
                                                  bool needs_lan) {
    if (auto problem = whole(NodeField::Interface, interface_name_problem(node.interface)))
        return problem;
    if (needs_lan && node.prefix_len == 0 && node.prefix6_len == 0)
        return NodeProblem{NodeField::Subnet, std::nullopt,
                           "is required (the IPv4 provisioning subnet), or " + std::string(names.subnet_v6) +
                               " for an IPv6-only LAN; both on a dual-stack LAN"};
    if (node.prefix_len != 0)
        if (auto problem = whole(NodeField::Subnet, subnet_problem({ip_from_v4(node.subnet_be), node.prefix_len})))
            return problem;
    if (node.prefix6_len != 0)
        if (auto problem = whole(NodeField::SubnetV6, subnet_problem({node.subnet6, node.prefix6_len})))
            return problem;
    if (auto problem = whole(NodeField::PinRoot, pin_root_problem(node.pin_root)))
        return problem;
    if (auto problem = whole(NodeField::ControlSocket, control_socket_problem(node.control_socket)))
        return problem;
    if (auto problem = relays_problem(node, names))
        return problem;
    if (node.router_advertisements && node.prefix6_len == 0)
        return NodeProblem{NodeField::RouterAdvertisements, std::nullopt,
                           "router advertisements are for an IPv6 LAN: give " + std::string(names.subnet_v6)};
    const long long ra_seconds = node.ra_interval.count();
    if (ra_seconds < kMinRaIntervalSeconds || ra_seconds > kMaxRaIntervalSeconds)
        return NodeProblem{NodeField::RaInterval, std::nullopt,
                           between(kMinRaIntervalSeconds, kMaxRaIntervalSeconds, ra_seconds)};
    return std::nullopt;
}

} // namespace bpfnet
