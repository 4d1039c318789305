#include "core/flow_sweep.hpp"

#include "maps/layout.hpp"

#include <cstring>
#include <ctime>
#include <map>
#include <vector>

namespace bpfnet {

uint16_t flow_clock_now() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    const uint64_t ns = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
    const auto units = static_cast<uint16_t>(ns >> BPFNET_FLOW_CLOCK_SHIFT);
    return units != 0 ? units : 1; // as the datapath's flow_clock()
}

// How many units ago `seen` was at `now`, as a signed difference: a stamp newer than `now` (the datapath
// stamped it after the sweep read its clock) is 0 units old, not 65,535.
uint16_t flow_age(uint16_t seen, uint16_t now) {
    const auto age = static_cast<int16_t>(static_cast<uint16_t>(now - seen));
    return age < 0 ? 0 : static_cast<uint16_t>(age);
}

uint16_t flow_clock_units(std::chrono::seconds duration) {
    const uint64_t ns = static_cast<uint64_t>(std::chrono::nanoseconds(duration).count());
    const uint64_t unit = uint64_t{1} << BPFNET_FLOW_CLOCK_SHIFT;
    return static_cast<uint16_t>((ns + unit - 1) / unit);
}

std::optional<unsigned> flow_idle_seconds(const bpfnet_flow &flow, uint16_t now) {
    if (flow.seen == 0)
        return std::nullopt;
    const uint64_t units = flow_age(flow.seen, now);
    return static_cast<unsigned>((units << BPFNET_FLOW_CLOCK_SHIFT) / 1'000'000'000ull);
}

namespace {

using HostCounts = std::map<bpfnet_ip, __u32>;

struct HostFlows {
    __u32 count = 0;
    std::vector<bpfnet_flow_key> idle;
};

struct KeyLess {
    bool operator()(const bpfnet_flow_key &a, const bpfnet_flow_key &b) const {
        return std::memcmp(&a, &b, sizeof(a)) < 0;
    }
};

bool is_idle(const bpfnet_flow &flow, uint16_t now, const FlowSweepRule &rule) {
    return flow.seen == 0 ? rule.unstamped_idle : flow_age(flow.seen, now) > rule.idle;
}

// Each host's flows: how many, and which are idle. A walk of a hash map starts again from its first key when
// the key it stood on was evicted meanwhile (under a flood, when it matters most): a key seen twice counts once.
std::map<bpfnet_ip, HostFlows> read_host_flows(const DatapathMaps &maps, uint16_t now, const FlowSweepRule &rule,
                                               FlowSweepReport &report) {
    std::map<bpfnet_flow_key, bpfnet_flow, KeyLess> flows;
    for (const auto &[key, flow] : maps.flows.entries())
        flows.emplace(key, flow);
    std::map<bpfnet_ip, HostFlows> hosts;
    for (const auto &[key, flow] : flows) {
        HostFlows &host = hosts[key.remote_ip];
        host.count++;
        if (flow.seen == 0)
            report.unstamped++;
        if (is_idle(flow, now, rule))
            host.idle.push_back(key);
    }
    return hosts;
}

// Removes the idle flows of the hosts holding swept_from or more, each read again first (the pod may have
// sent on it since the walk); what each host holds after.
HostCounts remove_idle_flows(DatapathMaps &maps, const std::map<bpfnet_ip, HostFlows> &hosts, uint16_t now,
                             const FlowSweepRule &rule, FlowSweepReport &report) {
    HostCounts counts;
    for (const auto &[ip, host] : hosts) {
        __u32 count = host.count;
        if (count >= rule.swept_from)
            for (const bpfnet_flow_key &key : host.idle) {
                auto flow = maps.flows.lookup(key);
                if (flow && !is_idle(*flow, now, rule))
                    continue;
                if (!flow || maps.flows.erase(key)) {
                    count--;
                    report.removed += flow ? 1 : 0;
                }
            }
        if (count != 0)
            counts[ip] = count;
        report.kept += count;
    }
    return counts;
}

// flow_shares holds `counts` and nothing else.
void write_shares(DatapathMaps &maps, const HostCounts &counts) {
    for (const auto &[host, share] : maps.flow_shares.entries()) {
        auto it = counts.find(host);
        if (it == counts.end())
            maps.flow_shares.erase(host);
        else if (share.confirmed != it->second)
            maps.flow_shares.update(host, bpfnet_flow_share{it->second});
    }
    for (const auto &[host, count] : counts)
        if (!maps.flow_shares.lookup(host))
            maps.flow_shares.update(host, bpfnet_flow_share{count});
}

} // namespace

FlowSweepReport sweep_flows(DatapathMaps &maps, uint16_t now, const FlowSweepRule &rule) {
    FlowSweepReport report;
    const HostCounts counts = remove_idle_flows(maps, read_host_flows(maps, now, rule, report), now, rule, report);
    write_shares(maps, counts);
    report.hosts = counts.size();
    return report;
}

} // namespace bpfnet
