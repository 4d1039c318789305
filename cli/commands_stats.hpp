// `bpfnetctl stats`: every datapath counter, summed over CPUs, by kind (maps/bpfnet_maps.h, BPFNET_COUNTERS):
// paths (what the datapath did with packets), drops (by reason: the counter name without "drop_") and events
// along a path. `--watch` samples every interval and adds rates per second.
#pragma once

#include "cli/output.hpp"

#include <linux/types.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace bpfnet::cli {

// Indexed by enum bpfnet_counter.
using CounterValues = std::vector<__u64>;

// Per second between two samples `seconds` apart; a counter that went down (datapath re-created) is 0.
std::vector<double> counter_rates(const CounterValues &before, const CounterValues &after, double seconds);

// rates: only in --watch, one per counter.
void print_stats_table(std::ostream &out, const CounterValues &totals, const std::vector<double> *rates = nullptr);
Json stats_json(const CounterValues &totals);
// A --watch line: the totals, the seconds between the two samples, and the rates.
Json stats_watch_json(const CounterValues &totals, const std::vector<double> &rates, double seconds);

} // namespace bpfnet::cli
