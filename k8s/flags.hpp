// Kubernetes mode's command line: its flags (added to the loader's CLI11 app) and the node settings and
// Service policy they stand for, as given (spellings are checked by CLI11, the rest by kubernetes_settings). Checked
// here, so `bpfnet-loader --kubernetes ... --check` and a start refuse the same flags in the same words.
#pragma once

#include "core/node.hpp"
#include "k8s/controller.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <utility>
#include <vector>

namespace bpfnet::k8s {

struct KubernetesFlags {
    bool enabled = false;
    std::string kubeconfig;
    std::string interface;
    std::string interface_macs; // set by the loader when --interface listed MACs: that list (interface: the link)
    std::string subnet;         // IPv4; empty with subnet_v6: an IPv6-only LAN
    std::string subnet_v6;      // empty: no IPv6 on the LAN
    std::string node_name;
    std::vector<std::string> allowed_namespaces;
    std::string lease_namespace; // empty: $POD_NAMESPACE, else bpfnet-system
    std::vector<std::string> allowed_cidrs;
    std::vector<std::string> shared_addresses; // addresses Services may share (IPs or "node"); none: no LAN needed
    std::vector<unsigned> shared_ports{6180, 6183, 6385}; // the ports they may list there: Ironic's ramdisk ones
    std::vector<std::string> dhcp_relays;
    unsigned lease_duration_s = 15;
    unsigned event_refresh_s = 1800;
    unsigned watch_idle_timeout_s = 150;
    unsigned upgrade_grace_s = 60;
    bool router_advertisements = false;
    unsigned ra_interval_s = static_cast<unsigned>(kDefaultRouterAdvertisementInterval.count());
    std::string xdp_mode = "auto";
    std::string tc_attach = "auto";
    std::string redirect_peer = "auto";
    std::string pin_root{kDefaultPinRoot};
    std::string control_socket; // empty: /run/bpfnet/<interface>.sock
};

void add_kubernetes_flags(CLI::App &app, KubernetesFlags &flags);

// The node's datapath settings and the Service policy from the flags; throws std::invalid_argument naming
// the flag.
std::pair<NodeSettings, KubernetesOptions> kubernetes_settings(KubernetesFlags flags);

} // namespace bpfnet::k8s
