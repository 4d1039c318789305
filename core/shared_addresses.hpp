// Shared addresses (docs/design.md, "Shared addresses"): addresses of the node's that bpfnet does not own (the
// control plane's VIP, the node's own address) on which it steers a few listed ports to the pod. Both modes
// name them the same way (the config file's sharedAddresses[].address, the loader's --shared-addresses and a
// Service's bpfnet.io/shared-address) and follow them the same way: these rules are theirs.
#pragma once

#include "core/netlink.hpp"
#include "core/node.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bpfnet {

// A shared address as named: an IP address, or nullopt for "node" (the node's own IPv4 address on the NIC).
using SharedChoice = std::optional<bpfnet_ip>;

// "node", or the address.
std::string describe(const SharedChoice &choice);

struct ParsedSharedChoice {
    std::optional<SharedChoice> choice; // set when the text names one
    std::string error;                  // why not, otherwise
};
// `text` as a shared address: "node", or a unicast IP address outside the node's provisioning subnets (where
// addresses are the datapath's to own).
ParsedSharedChoice parse_shared_choice(std::string_view text, const NodeSettings &node);

// This namespace's addresses of both families (IPv4 first), as the rules below read them.
std::vector<InterfaceAddress> node_addresses();

// Whether an interface of this namespace has `ip` (an IPv6 address still in duplicate address detection does
// not count: the kernel does not take it as its own yet).
bool held_here(const bpfnet_ip &ip, const std::vector<InterfaceAddress> &addresses);

// The node's own IPv4 address on the NIC: its first primary address with a subnet (a VIP that kube-vip or
// keepalived adds is a /32), else its first primary one; never an address of the provisioning subnet, nor one
// of `named` (the shared addresses named as IPs). nullopt when the NIC has none.
std::optional<bpfnet_ip> node_address(const NodeSettings &node, int nic_ifindex,
                                      const std::vector<InterfaceAddress> &addresses,
                                      const std::vector<SharedChoice> &named);

// Where `choice` is on this node: the address when an interface holds it ("node": the node's address), else
// nullopt.
std::optional<bpfnet_ip> held_address(const SharedChoice &choice, const NodeSettings &node, int nic_ifindex,
                                      const std::vector<InterfaceAddress> &addresses,
                                      const std::vector<SharedChoice> &named);

} // namespace bpfnet
