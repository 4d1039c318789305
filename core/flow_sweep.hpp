// The loader's sweep of the flows table: each host's count of confirmed flows (flow_shares), against which
// the datapath keeps a host to its share, is written again from what the table holds (flows the LRU removed
// stop counting), and a host that holds half its share or more loses the flows the pod has not sent on for
// a while, so that flows it no longer uses never lock it out of its share. The pod speaks first on every
// flow it opens (Ironic's calls, TFTP's data): its next packet on a removed flow records it again.
#pragma once

#include "maps/datapath_maps.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace bpfnet {

// How often the sweep runs; how long a flow the pod sends nothing on is kept once its host holds
// kFlowsSweptFrom confirmed flows. Below that nothing of a host's is removed: a connection the pod keeps
// idle for an hour, whose host then speaks first, stays as it always did (the hosts Ironic talks to hold a
// few flows each).
inline constexpr std::chrono::seconds kFlowSweepInterval{30};
inline constexpr std::chrono::seconds kFlowIdleTimeout{600};
inline constexpr uint32_t kFlowsSweptFrom = BPFNET_MAX_FLOWS_PER_HOST / 2;

// Now on the datapath's flow clock (CLOCK_MONOTONIC_COARSE in units of 2^BPFNET_FLOW_CLOCK_SHIFT ns, modulo
// 2^16), and a duration in its units, rounded up.
uint16_t flow_clock_now();
uint16_t flow_clock_units(std::chrono::seconds duration);

// How many flow clock units ago `seen` was at `now`: a signed 16-bit difference, so right up to about 9.7
// hours; a stamp newer than `now` is 0 units old.
uint16_t flow_age(uint16_t seen, uint16_t now);

// Seconds since the pod last sent on `flow` at `now` (flow clock), rounded down; nullopt when the flow was
// written by a build without the clock (seen 0).
std::optional<unsigned> flow_idle_seconds(const bpfnet_flow &flow, uint16_t now);

struct FlowSweepReport {
    size_t removed = 0;   // idle flows removed (of hosts holding swept_from flows or more)
    size_t unstamped = 0; // flows written by a build without the clock (seen 0) the pod has not sent on since
    size_t kept = 0;      // flows left in the table
    size_t hosts = 0;     // hosts holding at least one of them
};

// A flow written by a build without the clock (seen 0) has no known age. The pod's next packet on it stamps
// it, so one still unstamped a whole idle timeout after this loader started is idle: unstamped_idle says so.
// The sweep never writes a flow (an update of an LRU entry takes a new node, which in a full table evicts
// another): it only reads and removes.
struct FlowSweepRule {
    uint16_t idle = 0;                     // flow clock units
    uint32_t swept_from = kFlowsSweptFrom; // a host's flows, from which its idle ones go
    bool unstamped_idle = false;
};

// One sweep at `now` (flow clock): of each host holding `swept_from` flows or more, the flows whose last
// packet from the pod is more than `idle` units old go; flow_shares then holds each host's count of what
// remains, and no entry for a host without flows. A count the datapath raises while the sweep runs may be
// lost: the host can then confirm that many more flows than its share until the next sweep counts them.
FlowSweepReport sweep_flows(DatapathMaps &maps, uint16_t now, const FlowSweepRule &rule);

} // namespace bpfnet
