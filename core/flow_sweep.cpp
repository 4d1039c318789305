#include "core/flow_sweep.hpp"

#include "maps/layout.hpp"

#include <ctime>
#include <map>
#include <vector>

namespace bpfnet {

uint16_t flow_clock_now() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    const uint64_t ns = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
    return static_cast<uint16_t>(ns >> BPFNET_FLOW_CLOCK_SHIFT);
}

uint16_t flow_clock_units(std::chrono::seconds duration) {
    const uint64_t ns = static_cast<uint64_t>(std::chrono::nanoseconds(duration).count());
    const uint64_t unit = uint64_t{1} << BPFNET_FLOW_CLOCK_SHIFT;
    return static_cast<uint16_t>((ns + unit - 1) / unit);
}

std::optional<unsigned> flow_idle_seconds(const bpfnet_flow &flow, uint16_t now) {
    if (flow.seen == 0)
        return std::nullopt;
    const uint64_t units = static_cast<uint16_t>(now - flow.seen);
    return static_cast<unsigned>((units << BPFNET_FLOW_CLOCK_SHIFT) / 1'000'000'000ull);
}

namespace {

using HostCounts = std::map<bpfnet_ip, __u32>;

struct HostFlows {
    __u32 count = 0;
    std::vector<bpfnet_flow_key> idle;
};

// Each host's flows: how many, and which are idle.
std::map<bpfnet_ip, HostFlows> read_host_flows(const DatapathMaps &maps, uint16_t now, const FlowSweepRule &rule,
                                               FlowSweepReport &report) {
    std::map<bpfnet_ip, HostFlows> hosts;
    for (const auto &[key, flow] : maps.flows.entries()) {
        HostFlows &host = hosts[key.remote_ip];
        host.count++;
        if (flow.seen == 0)
            report.unstamped++;
        if (flow.seen == 0 ? rule.unstamped_idle : static_cast<uint16_t>(now - flow.seen) > rule.idle)
            host.idle.push_back(key);
    }
    return hosts;
}

// Removes the idle flows of the hosts holding swept_from or more; what each host holds after.
HostCounts remove_idle_flows(DatapathMaps &maps, const std::map<bpfnet_ip, HostFlows> &hosts, uint32_t swept_from,
                             FlowSweepReport &report) {
    HostCounts counts;
    for (const auto &[ip, host] : hosts) {
        __u32 count = host.count;
        if (count >= swept_from)
            for (const bpfnet_flow_key &key : host.idle)
                if (maps.flows.erase(key)) {
                    count--;
                    report.removed++;
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
    const HostCounts counts =
        remove_idle_flows(maps, read_host_flows(maps, now, rule, report), rule.swept_from, report);
    write_shares(maps, counts);
    report.hosts = counts.size();
    return report;
}

} // namespace bpfnet
