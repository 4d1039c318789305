/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mode-neutral description of what this node's datapath is for, as the core takes it from either mode
 * (standalone/ reads it from the config file, k8s/ from flags and API objects): the node's settings
 * (NodeSettings), each service IP's listed ports (PortRule) and the pod behind them (Backend). The core
 * knows no YAML and no Kubernetes; the desired state it writes is computed from these (desired_state.hpp).
 */
#ifndef BPFNET_CORE_NODE_HPP
#define BPFNET_CORE_NODE_HPP

#include "maps/bpfnet_maps.h"
#include "maps/layout.hpp"
#include "maps/pin_layout.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bpfnet {

/* Values match enum bpfnet_proto, so they go into map keys unchanged. */
enum class Protocol : uint8_t { Tcp = 6, Udp = 17 };

/* Values match enum bpfnet_port_kind; both come from BPFNET_PORT_KINDS (maps/bpfnet_maps.h). */
#define BPFNET_PORT_KIND_CXX(id, cxx, spelling, value) cxx = value,
enum class PortKind : uint8_t { BPFNET_PORT_KINDS(BPFNET_PORT_KIND_CXX) };
#undef BPFNET_PORT_KIND_CXX

/* auto: native where the driver supports it, else generic (logged). */
enum class XdpMode { Auto, Native, Generic };

/* How the TC programs attach. auto: tcx links where the kernel has them (6.6+), else clsact filters. */
enum class TcAttach { Auto, Tcx, Clsact };

/* auto: deliver into the pod with bpf_redirect_peer where the kernel has it (5.10+); off: always through
 * the host side of the pod's veth (slower; for a kernel whose helper misbehaves). */
enum class RedirectPeer { Auto, Off };

/* How a backend's packets reach its pod (docs/design.md, "Pod delivery"). auto: into the pod's veth
 * (bpf_redirect_peer where RedirectPeer allows); route: through the node's routing (a bpf_fib_lookup toward
 * the pod, as the kernel forwards every other packet to it), so that the CNI's own bridge, programs and rules
 * on the way see bpfnet's packets too. Either way the pod's veth is found and its answers are taken there. */
enum class PodDelivery { Auto, Route };

/* One listed port of a service IP and the pod port it is steered to. Ports in host byte order. */
struct PortRule {
    std::string name;
    Protocol protocol = Protocol::Tcp;
    uint16_t port = 0;
    uint16_t target_port = 0; /* equals port unless the service translates it; 0 only in a Kubernetes Service
                                 whose named targetPort no endpoint has resolved yet (never in the maps) */
    PortKind kind = PortKind::Plain;

    bool operator==(const PortRule &) const = default;
};

/* The pod that backs a service IP. */
struct Backend {
    uint32_t ip_be = 0;           /* its IPv4 address; 0: none (an IPv6-only backend) */
    std::optional<bpfnet_ip> ip6; /* its IPv6 address, for an IPv6 service IP */
    std::string veth;             /* host side of the pod's veth; empty = found through the route to its address */
    PodDelivery delivery = PodDelivery::Auto;
    // The pod runs on another node (shared addresses only): that node's address of each family on the NIC's
    // network, to which the shared addresses' listed ports are handed (ServiceSpec::via_node). Unset: here.
    std::optional<bpfnet_ip> node;
    std::optional<bpfnet_ip> node6;

    bool elsewhere() const { return node || node6; }
    bool operator==(const Backend &) const = default;
};

/* Defaults for the optional settings; docs/config.md lists the same values. */
inline constexpr std::string_view kDefaultPinRoot = BPFNET_DEFAULT_PIN_ROOT;
/* The loader's control socket (core/control_socket.hpp): <control dir>/<interface>.sock. */
inline constexpr std::string_view kDefaultControlDir = "/run/bpfnet";
inline constexpr std::chrono::milliseconds kDefaultHeartbeatInterval{1000};
inline constexpr std::chrono::milliseconds kDefaultHeartbeatTimeout{5000};
inline constexpr uint32_t kDefaultGarpCount = 3;
inline constexpr std::chrono::milliseconds kDefaultGarpInterval{200};
inline constexpr std::chrono::seconds kDefaultRouterAdvertisementInterval{10};
/* Limits both modes apply. The IPv6 provisioning subnet: a /64 as a rule (SLAAC, metal3-dev-env's ULA). */
inline constexpr unsigned kMinPrefix6Len = 16;
inline constexpr unsigned kMaxPrefix6Len = 124;
/* Router advertisement interval, seconds: RFC 4861 6.2.1's MinRtrAdvInterval floor and MaxRtrAdvInterval. */
inline constexpr unsigned kMinRaIntervalSeconds = 4;
inline constexpr unsigned kMaxRaIntervalSeconds = 1800;

std::string default_control_socket(const std::string &interface);

/* The provisioning NIC and how the datapath on it behaves, whatever decides the services. */
struct NodeSettings {
    std::string interface;                 /* the provisioning NIC */
    std::string interface_macs;            /* the MAC list the NIC was chosen by (--interface); empty: named */
    uint32_t subnet_be = 0;                /* network address of the IPv4 provisioning subnet */
    uint8_t prefix_len = 0;                /* 0: no IPv4 provisioning subnet (an IPv6-only LAN) */
    bpfnet_ip subnet6{};                   /* the IPv6 provisioning subnet, host bits zero */
    uint8_t prefix6_len = 0;               /* 0: no IPv6 provisioning subnet */
    std::string pin_root{kDefaultPinRoot}; /* absolute, without a trailing '/' */
    std::string control_socket;            /* empty: default_control_socket(interface) */
    XdpMode xdp_mode = XdpMode::Auto;
    TcAttach tc_attach = TcAttach::Auto;
    RedirectPeer redirect_peer = RedirectPeer::Auto;
    std::chrono::milliseconds heartbeat_interval = kDefaultHeartbeatInterval;
    std::chrono::milliseconds heartbeat_timeout = kDefaultHeartbeatTimeout;
    uint32_t garp_count = kDefaultGarpCount; /* gratuitous ARPs sent on taking ownership */
    std::chrono::milliseconds garp_interval = kDefaultGarpInterval;
    uint8_t dhcp_max_hops = BPFNET_DHCP_DEFAULT_MAX_HOPS; /* relayed DHCP requests with more hops are dropped */
    /* relay agents on the LAN whose giaddr (IPv6: Relay-Forward) is accepted (docs/design.md) */
    std::vector<bpfnet_ip> dhcp_relays;
    /* Router advertisements for subnet6 from the NIC (managed: hosts ask DHCPv6), while an IPv6 service
     * address is active here: what dnsmasq's enable-ra does on a host network, for a pod that cannot. */
    bool router_advertisements = false;
    std::chrono::seconds ra_interval = kDefaultRouterAdvertisementInterval;

    uint32_t subnet_mask_be() const;
    /* Where this interface's maps and programs are pinned: <pin root>/<interface> (maps/pin_layout.hpp). */
    std::string pin_dir() const { return interface_pin_dir(pin_root, interface); }
    /* Where bpfnetctl reaches this loader: control_socket, or the default for the interface. */
    std::string control_socket_path() const;

    bool operator==(const NodeSettings &) const = default;
};

/* The settings a running datapath was attached with, which only a restart changes: the NIC, where it pins
 * and listens, how its programs attach (kAttachmentSettings, as the config file spells them). Every other
 * setting a reload may change. */
inline constexpr std::string_view kAttachmentSettings =
    "interface, pinRoot, controlSocket, xdpMode, tcAttach and redirectPeer";
bool same_attachment(const NodeSettings &a, const NodeSettings &b);
/* What a running datapath takes from next: all of it but the attachment, which stays running's. */
NodeSettings reloaded(const NodeSettings &running, NodeSettings next);

/* The spellings used in the config file, the flags and bpfnetctl: "tcp", "udp"; the port kinds of
 * BPFNET_PORT_KINDS ("plain", "tftp", "dhcp", "dhcpv6"); "auto", "native", "generic"; "auto", "tcx", "clsact"; "auto",
 * "off". A value without a spelling (a map entry of another version) is written as its number. */
std::string to_string(Protocol protocol);
std::string to_string(PortKind kind);
std::string to_string(XdpMode mode);
std::string to_string(TcAttach attach);
std::string to_string(RedirectPeer redirect_peer);
std::string to_string(PodDelivery delivery);

/* Every spelling of T, in order (for "must be one of: ..."); specialised for the enums above. */
template <typename T>
std::vector<std::string_view> spellings();

/* Parses the spellings above; nullopt for anything else. */
std::optional<Protocol> parse_protocol(std::string_view text);
std::optional<PortKind> parse_port_kind(std::string_view text);
std::optional<XdpMode> parse_xdp_mode(std::string_view text);
std::optional<TcAttach> parse_tc_attach(std::string_view text);
std::optional<RedirectPeer> parse_redirect_peer(std::string_view text);
std::optional<PodDelivery> parse_pod_delivery(std::string_view text);

} // namespace bpfnet

#endif /* BPFNET_CORE_NODE_HPP */
