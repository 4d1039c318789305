// Synthetic entries for the flows and neighbours tables, to measure the datapath and the loader with the
// tables as full as a busy provisioning network makes them.
#pragma once

#include "maps/datapath_maps.hpp"

#include <cstddef>

namespace bpfnet::bench {

// Offers COUNT distinct entries to each table: flows from hosts in 198.19.128.0/17 to the service IP's
// port 6385, neighbours 198.18.64.0 onwards. Both tables are LRU hashes: beyond their size
// (BPFNET_MAX_FLOWS, BPFNET_MAX_NEIGHBOURS) the oldest entries go. Returns nothing; read the counts back.
void fill_tables(DatapathMaps &maps, size_t count);

// Deletes every entry of both tables.
void clear_tables(DatapathMaps &maps);

} // namespace bpfnet::bench
