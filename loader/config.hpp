/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The standalone loader's configuration file: what the provisioning service looks like on this node.
 * The format is documented in docs/config.md; loader/example-config.yaml is a commented example.
 *
 * Parsing is strict on purpose: an unknown key, a wrong type or an out-of-range value is an error that
 * names the file, the line and the field, because a typo that silently falls back to a default would
 * expose or hide a provisioning port without anyone noticing.
 */
#ifndef BPFNET_LOADER_CONFIG_HPP
#define BPFNET_LOADER_CONFIG_HPP

#include "maps/pin_layout.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bpfnet_maps.h"

namespace bpfnet {

/* Values match enum bpfnet_proto, so they go into map keys unchanged. */
enum class Protocol : uint8_t { Tcp = 6, Udp = 17 };

/* Values match enum bpfnet_port_kind. */
enum class PortKind : uint8_t { Plain = 0, Tftp = 1, Dhcp = 2 };

/* auto: native where the driver supports it, else generic (logged). */
enum class XdpMode { Auto, Native, Generic };

/* How the TC programs attach. auto: tcx links where the kernel has them (6.6+), else clsact filters. */
enum class TcAttach { Auto, Tcx, Clsact };

/* auto: deliver into the pod with bpf_redirect_peer where the kernel has it (5.10+); off: always through
 * the host side of the pod's veth (slower; for a kernel whose helper misbehaves). */
enum class RedirectPeer { Auto, Off };

/* One listed port of the service IP and the pod port it is steered to. Ports in host byte order. */
struct PortRule {
    std::string name;
    Protocol protocol = Protocol::Tcp;
    uint16_t port = 0;
    uint16_t target_port = 0; /* equals port unless the config translates it */
    PortKind kind = PortKind::Plain;

    bool operator==(const PortRule &) const = default;
};

/* The pod that currently backs the service IP. */
struct Backend {
    uint32_t ip_be = 0;
    std::string veth; /* host side of the pod's veth; empty = auto (found through the route to ip) */

    bool operator==(const Backend &) const = default;
};

/* Defaults for the optional fields; docs/config.md lists the same values. */
inline constexpr std::string_view kDefaultPinRoot = BPFNET_DEFAULT_PIN_ROOT;
/* The loader's control socket (loader/control_socket.hpp): <control dir>/<interface>.sock, the interface name
 * as the kernel spells it. */
inline constexpr std::string_view kDefaultControlDir = "/run/bpfnet";
std::string default_control_socket(const std::string &interface);
inline constexpr std::chrono::milliseconds kDefaultHeartbeatInterval{1000};
inline constexpr std::chrono::milliseconds kDefaultHeartbeatTimeout{5000};
inline constexpr uint32_t kDefaultGarpCount = 3;
inline constexpr std::chrono::milliseconds kDefaultGarpInterval{200};

struct Config {
    std::string interface; /* the provisioning NIC */
    uint32_t service_ip_be = 0;
    uint32_t subnet_be = 0; /* network address of the provisioning subnet */
    uint8_t prefix_len = 0;
    std::string pin_root{kDefaultPinRoot}; /* absolute, without a trailing '/' */
    std::string control_socket;            /* empty: /run/bpfnet/<interface>.sock (loader/control_socket.hpp) */
    XdpMode xdp_mode = XdpMode::Auto;
    TcAttach tc_attach = TcAttach::Auto;
    RedirectPeer redirect_peer = RedirectPeer::Auto;
    std::chrono::milliseconds heartbeat_interval = kDefaultHeartbeatInterval;
    std::chrono::milliseconds heartbeat_timeout = kDefaultHeartbeatTimeout;
    uint32_t garp_count = kDefaultGarpCount; /* gratuitous ARPs sent on taking ownership */
    std::chrono::milliseconds garp_interval = kDefaultGarpInterval;
    uint8_t dhcp_max_hops = BPFNET_DHCP_DEFAULT_MAX_HOPS; /* relayed DHCP requests with more hops are dropped */
    std::vector<uint32_t> dhcp_relays; /* relay agents on the LAN whose giaddr is accepted (docs/design.md) */
    std::vector<PortRule> ports;
    std::optional<Backend> backend; /* absent: service traffic is dropped until a backend is set */

    uint32_t subnet_mask_be() const;
    /* Where this interface's maps and programs are pinned: <pin root>/<interface> (maps/pin_layout.hpp). */
    std::string pin_dir() const { return interface_pin_dir(pin_root, interface); }
    /* Where bpfnetctl reaches this loader: control_socket, or the default for the interface. */
    std::string control_socket_path() const;

    bool operator==(const Config &) const = default;
};

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

/* Dotted quad of an address in network byte order. */
std::string format_ipv4(uint32_t be);
std::optional<uint32_t> parse_ipv4(const std::string &text); /* dotted quad -> network byte order */
/*
 * Why ip_be cannot be a host on the provisioning subnet (network_be/prefix_len): outside it, its network or
 * broadcast address, or not unicast at all. nullopt when it can. Shared by the config file and the flags.
 */
std::optional<std::string> lan_host_problem(uint32_t ip_be, uint32_t network_be, uint8_t prefix_len);
/*
 * Why ip_be cannot be the backend pod's address behind service_ips on the provisioning subnet: not unicast,
 * one of the service IPs, or inside the subnet (the pod lives on the pod network). nullopt when it can. The
 * one rule for the config file's backend.ip and for `bpfnetctl backend set` (checked by the loader).
 */
std::optional<std::string> backend_ip_problem(uint32_t ip_be, const std::vector<uint32_t> &service_ips,
                                              uint32_t network_be, uint8_t prefix_len);

/* "aa:bb:cc:dd:ee:ff" of the 6 bytes at mac. */
std::string format_mac(const uint8_t *mac);

/* The spellings used in the config file: "tcp", "udp"; "plain", "tftp", "dhcp"; "auto", "native", "generic";
 * "auto", "tcx", "clsact"; "auto", "off". */
std::string to_string(Protocol protocol);
std::string to_string(PortKind kind);
std::string to_string(XdpMode mode);
std::string to_string(TcAttach attach);
std::string to_string(RedirectPeer redirect_peer);

/* Parses the spellings above (command-line flags); nullopt for anything else. */
std::optional<XdpMode> parse_xdp_mode(std::string_view text);
std::optional<TcAttach> parse_tc_attach(std::string_view text);
std::optional<RedirectPeer> parse_redirect_peer(std::string_view text);

} // namespace bpfnet

#endif /* BPFNET_LOADER_CONFIG_HPP */
