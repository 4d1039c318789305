// Which link is the provisioning NIC when a node names it by MAC address. One DaemonSet runs on every
// control-plane node, and their NICs need not have the same name: as ironic-image takes PROVISIONING_MACS,
// `--interface` takes a name or a list of MAC addresses. A value holding ':' is a MAC list: the kernel refuses
// ':' in an interface name.
#pragma once

#include "core/netlink.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace bpfnet {

// value (of --interface) lists MAC addresses rather than naming an interface.
bool lists_macs(std::string_view value);

// The name of the one link in links whose MAC is in mac_list (comma-separated, either case). Throws
// std::invalid_argument, with the flag's name, when an item is not a MAC address, when no link has one of
// them (the links' MACs are listed) or when several do (a VLAN, bridge or bond shares its port's MAC: name
// the interface then).
std::string link_with_mac(std::string_view mac_list, const std::vector<LinkInfo> &links);

} // namespace bpfnet
