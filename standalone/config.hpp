/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The standalone loader's configuration file: what the provisioning service looks like on this node.
 * The format is documented in docs/config.md; standalone/example-config.yaml is a commented example.
 *
 * Parsing is strict on purpose: an unknown key, a wrong type or an out-of-range value is an error that
 * names the file, the line and the field, because a typo that silently falls back to a default would
 * expose or hide a provisioning port without anyone noticing.
 */
#ifndef BPFNET_STANDALONE_CONFIG_HPP
#define BPFNET_STANDALONE_CONFIG_HPP

#include "core/addresses.hpp"
#include "core/desired_state.hpp"
#include "core/netlink.hpp"
#include "core/node.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace bpfnet {

/*
 * An address of the node's whose listed ports are steered to the backend while the node holds it, without
 * bpfnet owning it (docs/config.md, "sharedAddresses"; docs/design.md, "Shared addresses"): the control
 * plane's VIP that kube-vip or keepalived moves, or the node's own address.
 */
struct SharedAddress {
    std::optional<bpfnet_ip> ip; /* nullopt: "node", the interface's own IPv4 address */
    std::vector<PortRule> ports; /* plain ports only */

    bool operator==(const SharedAddress &) const = default;
};

/* The file: the node's settings (NodeSettings, shared with Kubernetes mode) and its one service. */
struct Config : NodeSettings {
    uint32_t service_ip_be = 0;           /* the IPv4 service IP; 0: none (an IPv6-only LAN) */
    std::optional<bpfnet_ip> service_ip6; /* the IPv6 service address, beside or instead of IPv4 */
    std::vector<PortRule> ports;
    std::optional<Backend> backend;         /* absent: service traffic is dropped until a backend is set */
    std::vector<SourceRange> source_ranges; /* who may reach the listed ports; empty: every source */
    std::vector<SharedAddress> shared_addresses;

    bool operator==(const Config &) const = default;
};

/* Which of the config's shared addresses the node holds, in the config's order (nullopt: not held here), as
 * read from the node's addresses of each family: an address is held when an interface has it; "node" is
 * the interface's own IPv4 address (nic_ifindex's first primary one with a subnet, not a /32 VIP). */
using HeldAddresses = std::vector<std::optional<bpfnet_ip>>;
HeldAddresses held_shared_addresses(const Config &config, int nic_ifindex,
                                    const std::vector<InterfaceAddress> &addresses);
/* The pod address is one of the config's shared addresses (why, in words); nullopt when it is none. */
std::optional<std::string> shared_address_problem(const bpfnet_ip &pod, const Config &config);
/* Whether the service or a shared address has an address of the family: the backend needs one of it. */
bool serves_family(const Config &config, bool v4);

/*
 * A config that cannot be used. what() reads "<source>:<line>: <field>: <detail>"; the line is left out
 * when it is not known (e.g. a required field that is missing at the top level), the field when the
 * error concerns the whole file.
 */
class ConfigError : public std::runtime_error {
public:
    ConfigError(std::string_view source, std::optional<int> line, std::string_view field, std::string_view detail);

    /* The offending field as a path, e.g. "ports[1].targetPort"; empty for whole-file errors. */
    const std::string &field() const noexcept { return field_; }
    /* 1-based line number, when known. */
    std::optional<int> line() const noexcept { return line_; }

private:
    std::string field_;
    std::optional<int> line_;
};

/* Parses and validates a config; source_name is only used in error messages (usually the path). */
Config parse_config(std::string_view yaml_text, std::string_view source_name);

/* Reads and parses a config file; read errors are ConfigErrors naming the path and the errno text. */
Config load_config_file(const std::string &path);

/* The config's one service as the core's mode-neutral desired state, with its backend located at `where`
 * (nullopt: no backend here): a spec per service IP (IPv4, IPv6), with the same ports. The IPv4 DHCP port
 * is IPv4's: an IPv6 service address does not list it. */
std::vector<ServiceSpec> service_specs(const Config &config, const std::optional<BackendLocation> &where,
                                       const HeldAddresses &held = {});
DesiredState desired_state(const Config &config, const std::optional<BackendLocation> &where,
                           const HeldAddresses &held = {});
/* The iface entry for the config: DHCP is relayed for its service IP when its ports list the DHCP port. */
bpfnet_iface iface_entry(const Config &config, int nic_ifindex, const MacAddress &nic_mac);

} // namespace bpfnet

#endif /* BPFNET_STANDALONE_CONFIG_HPP */
