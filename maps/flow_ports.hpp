// Marks in flow_ports (maps/bpfnet_maps.h, struct bpfnet_flow_ports) for flows written from outside the
// datapath: a loader adopting flows pinned by a build that had no flow_ports, and tests that lay flows down
// as the datapath would have recorded them. A flow whose port is not marked is invisible to packets of a
// listed port, so the mark comes before the flow.
#pragma once

#include "bpfnet_maps.h"
#include "datapath_maps.hpp"
#include "pinned_map.hpp"
#include "system_error.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <initializer_list>

namespace bpfnet {

// The map's memory (it is BPF_F_MMAPABLE): marks are single bytes written in place, so a mark the running
// programs set at the same time is never overwritten by a stale copy of the entry, as a map update would.
class FlowPortMarks {
public:
    explicit FlowPortMarks(const PinnedMap<__u32, bpfnet_flow_ports> &map)
        : mem_(::mmap(nullptr, sizeof(bpfnet_flow_ports), PROT_READ | PROT_WRITE, MAP_SHARED, map.fd(), 0)) {
        if (mem_ == MAP_FAILED)
            throw SystemError("mmap flow_ports", errno);
    }
    ~FlowPortMarks() { ::munmap(mem_, sizeof(bpfnet_flow_ports)); }
    FlowPortMarks(const FlowPortMarks &) = delete;
    FlowPortMarks &operator=(const FlowPortMarks &) = delete;

    // port_be as the flow key carries it (network byte order).
    void mark(__be16 port_be) { used()[port_be] = 1; }
    bool marked(__be16 port_be) const { return used()[port_be] != 0; }

private:
    volatile __u8 *used() const { return static_cast<volatile __u8 *>(mem_); }
    void *mem_;
};

// Marks the service-side port of every flow in both flow tables; returns how many flows there were.
inline std::size_t mark_ports_of_flows(const DatapathMaps &maps) {
    FlowPortMarks marks(maps.flow_ports);
    std::size_t flows = 0;
    for (const auto *table : {&maps.flows, &maps.flows_unconfirmed}) {
        for (const auto &[key, flow] : table->entries()) {
            marks.mark(key.service_port_be);
            ++flows;
        }
    }
    return flows;
}

} // namespace bpfnet
