// `bpfnetctl services | backends | flows | neighbours`: the maps as tables, sorted by address. Each
// command reads its map into plain rows; the renderers take rows only, so they are unit-tested with fakes.
#pragma once

#include "cli/output.hpp"
#include "maps/bpfnet_maps.h"

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace bpfnet::cli {

using ServiceEntries = std::vector<std::pair<bpfnet_service_key, bpfnet_service>>;
// A flow and its table: confirmed (the host answered; in flows) or still waiting (flows_unconfirmed).
struct FlowRow {
    bpfnet_flow_key key{};
    bpfnet_flow flow{};
    bool confirmed = true;
    // Seconds since the pod last sent on the flow (its seen stamp read against the flow clock, to about a
    // second); nullopt for a flow stamped by a build without the clock.
    std::optional<unsigned> idle_s;
};
using FlowEntries = std::vector<FlowRow>;
// A neighbour and its table: confirmed (the datapath accepted a packet of the host's; in neighbours) or known
// from ARP or NDP only (neighbours_unconfirmed).
struct NeighbourRow {
    bpfnet_ip ip{};
    bpfnet_neighbour neighbour{};
    bool confirmed = true;
};
using NeighbourEntries = std::vector<NeighbourRow>;

struct BackendRow {
    bpfnet_ip ip{};
    bpfnet_backend entry{};
    std::string veth; // if_indextoname of entry.ifindex; empty when the veth is gone
};

// Filters of `flows`: by host address, and by port (the host's or the service's).
struct FlowFilter {
    std::optional<bpfnet_ip> host;
    std::optional<__u16> port; // host byte order
    bool matches(const bpfnet_flow_key &key) const;
};

void print_services_table(std::ostream &out, ServiceEntries entries);
Json services_json(ServiceEntries entries);

void print_backends_table(std::ostream &out, std::vector<BackendRow> rows);
Json backends_json(std::vector<BackendRow> rows);

void print_flows_table(std::ostream &out, FlowEntries entries);
Json flows_json(FlowEntries entries);

void print_neighbours_table(std::ostream &out, NeighbourEntries entries);
Json neighbours_json(NeighbourEntries entries);

} // namespace bpfnet::cli
