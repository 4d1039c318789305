// `bpfnetctl backend set IP [--veth NAME]` and `backend clear`: standalone mode's manual switch of the pod
// that backs the service IPs. The maps are written by the loader's own code (desired_state, reconcile),
// fed with the loader's configuration as the maps tell it, so the result is exactly what the loader would
// write for a config naming that backend. Lasts until the loader re-applies its config (see docs/cli.md).
#pragma once

#include "cli/commands_tables.hpp"
#include "loader/config.hpp"
#include "loader/desired_state.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bpfnet::cli {

// What the maps hold of the loader's configuration.
struct DatapathContents {
    bpfnet_iface iface{};
    std::vector<std::pair<__be32, bpfnet_service_ip>> service_ips;
    ServiceEntries services;
};

// One Config per service IP, with its listed ports (protocol, port, target port, kind) and the subnet, in
// the order their backend entries are preferred: the DHCP service IP first, then by address. Port names
// are not in the maps and stay empty.
std::vector<Config> configs_from_maps(const DatapathContents &contents, const std::optional<Backend> &backend);

// The maps' desired state with `backend` (located at `where`) behind every service IP, or with no backend.
// The backend's egress service IP is that of the first config (see configs_from_maps).
DesiredState desired_from_maps(const DatapathContents &contents, const std::optional<Backend> &backend,
                               const std::optional<BackendLocation> &where);

// Why ip cannot be a backend of this datapath (the loader's config rules), or empty when it can.
std::string backend_ip_problem(const DatapathContents &contents, __be32 ip_be);

} // namespace bpfnet::cli
