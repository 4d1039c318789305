// The rules a node's settings obey, whichever mode read them: the config file's keys (standalone/config.cpp)
// and Kubernetes mode's flags (k8s/flags.cpp) are checked by these functions, so both refuse the same
// settings, within the same limits, in the same words; only the spelling of the fields differs.
#pragma once

#include "core/addresses.hpp"
#include "core/node.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace bpfnet {

// The node settings with rules of their own (the rest are spellings, checked where they are parsed).
enum class NodeField {
    Interface,
    Subnet,
    SubnetV6,
    PinRoot,
    ControlSocket,
    DhcpRelays,
    RouterAdvertisements,
    RaInterval
};

// How a mode spells each field: the config file's key ("subnetV6") or the flag ("--subnet-v6"). Messages
// name fields through it, the one at fault and any other they point to ("give subnetV6").
struct NodeFieldNames {
    std::string_view interface;
    std::string_view subnet;
    std::string_view subnet_v6;
    std::string_view pin_root;
    std::string_view control_socket;
    std::string_view dhcp_relays;
    std::string_view router_advertisements;
    std::string_view ra_interval;

    std::string_view operator[](NodeField field) const;
};

struct NodeProblem {
    NodeField field;
    std::optional<size_t> index; // the list entry at fault (a DHCP relay); nullopt: the field as a whole
    std::string detail;          // what is wrong, without the field's name ("prefix length must be ...")
};

// The limits of the IPv4 provisioning subnet: /31 and /32 leave no room for hosts beside the service IP, and
// a LAN wider than a /8 is no provisioning LAN.
inline constexpr unsigned kMinPrefixLen = 8;
inline constexpr unsigned kMaxPrefixLen = 30;
// A Unix socket path fits sockaddr_un.sun_path (108 bytes with its NUL).
inline constexpr size_t kMaxControlSocketLen = 107;
inline constexpr size_t kMaxInterfaceNameLen = 15; // IFNAMSIZ - 1

// A provisioning subnet of `family` (the field Subnet or SubnetV6) from its text, within the subnet limits
// validate_node_settings() applies (here too, as NodeSettings cannot tell a /0 from no subnet); the words are
// those of parse_prefix, or a pointer to the other field when the family is the other one.
ParsedPrefix parse_subnet(std::string_view text, IpFamily family, const NodeFieldNames &names);
// A DHCP relay agent's address from its text (either family); nullopt with `error` set otherwise.
std::optional<bpfnet_ip> parse_relay(std::string_view text, std::string &error);
// Why `name` cannot be a network interface's name ("is not a valid interface name (...)": the kernel's
// dev_valid_name(), no control characters, as the name also becomes a directory); nullopt when it can.
// backend.veth obeys it too.
std::optional<std::string> interface_name_problem(std::string_view name);
// A value as the refusals quote it: "eth0" (the config file's and the flags' messages alike).
std::string in_quotes(std::string_view text);
// pinRoot / --pin-root as both modes store it: without trailing slashes, so pin_dir() never holds "//".
std::string without_trailing_slashes(std::string path);

// The first problem of the node's settings, in NodeField order, or nullopt: the interface's name; an IPv4 or
// IPv6 subnet at least, the IPv4 one /8../30, the IPv6 one /16../124, unicast and without IPv4-mapped
// addresses; the pin root and control socket paths; at most BPFNET_MAX_DHCP_RELAYS relays, each a host of
// the subnet of its family, none twice; router advertisements only with an IPv6 subnet, at 4..1800 s.
// needs_lan: a provisioning subnet of some family is required (false: the node only serves shared addresses,
// standalone mode's sharedAddresses without a provisioning LAN).
std::optional<NodeProblem> validate_node_settings(const NodeSettings &node, const NodeFieldNames &names,
                                                  bool needs_lan = true);

} // namespace bpfnet
