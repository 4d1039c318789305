#include "core/shared_addresses.hpp"

#include "core/addresses.hpp"

#include <algorithm>

namespace bpfnet {

std::string describe(const SharedChoice &choice) {
    return choice ? format_ip(*choice) : "node";
}

ParsedSharedChoice parse_shared_choice(std::string_view text, const NodeSettings &node) {
    if (text == "node")
        return {SharedChoice{}, ""};
    const std::optional<bpfnet_ip> ip = parse_ip(std::string(text));
    if (!ip)
        return {std::nullopt, "must be an IP address of the node's (the control plane's VIP, say 192.0.2.10) or "
                              "\"node\", got \"" +
                                  std::string(text) + "\""};
    if (const auto reason = is_v4(*ip) ? non_unicast_reason(v4_of(*ip)) : non_unicast_reason6(*ip))
        return {std::nullopt, "must be a unicast address, got " + std::string(text) + ", " + *reason};
    const bool provisioning = is_v4(*ip)
                                  ? node.prefix_len != 0 && in_prefix(v4_of(*ip), node.subnet_be, node.prefix_len)
                                  : node.prefix6_len != 0 && in_prefix6(*ip, node.subnet6, node.prefix6_len);
    if (provisioning)
        return {std::nullopt, std::string(text) +
                                  " is inside the provisioning subnet, where addresses are the datapath's to own: a "
                                  "shared address is one of the node's other networks (its control-plane VIP, its "
                                  "own address)"};
    return {SharedChoice{*ip}, ""};
}

std::vector<InterfaceAddress> node_addresses() {
    std::vector<InterfaceAddress> addresses = local_addresses(false);
    for (const InterfaceAddress &address : local_addresses(true))
        addresses.push_back(address);
    return addresses;
}

bool held_here(const bpfnet_ip &ip, const std::vector<InterfaceAddress> &addresses) {
    return std::any_of(addresses.begin(), addresses.end(),
                       [&ip](const InterfaceAddress &a) { return a.ip == ip && !a.tentative; });
}

std::optional<bpfnet_ip> node_address(const NodeSettings &node, int nic_ifindex,
                                      const std::vector<InterfaceAddress> &addresses,
                                      const std::vector<SharedChoice> &named) {
    auto is_named = [&named](const bpfnet_ip &ip) {
        return std::find(named.begin(), named.end(), SharedChoice{ip}) != named.end();
    };
    // An address of the provisioning subnet is the datapath's to own: never the node's shared one.
    auto provisioning = [&node](const bpfnet_ip &ip) {
        return node.prefix_len != 0 && in_prefix(v4_of(ip), node.subnet_be, node.prefix_len);
    };
    std::optional<bpfnet_ip> first;
    for (const InterfaceAddress &address : addresses) {
        if (address.ifindex != nic_ifindex || !is_v4(address.ip) || address.secondary || is_named(address.ip) ||
            provisioning(address.ip))
            continue;
        if (address.prefix_len < 32)
            return address.ip;
        if (!first)
            first = address.ip;
    }
    return first;
}

std::optional<bpfnet_ip> held_address(const SharedChoice &choice, const NodeSettings &node, int nic_ifindex,
                                      const std::vector<InterfaceAddress> &addresses,
                                      const std::vector<SharedChoice> &named) {
    if (!choice)
        return node_address(node, nic_ifindex, addresses, named);
    return held_here(*choice, addresses) ? choice : std::nullopt;
}

} // namespace bpfnet
