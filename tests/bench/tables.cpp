#include "tests/bench/tables.hpp"

#include "maps/flow_ports.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace bpfnet::bench {

namespace {

constexpr uint32_t kFlowHosts = 0xc6138000;  // 198.19.128.0
constexpr uint32_t kNeighbours = 0xc6124000; // 198.18.64.0
constexpr uint32_t kPortsPerHost = 50000;
constexpr uint16_t kFirstPort = 10000;

bpfnet_ip service_ip(const DatapathMaps &maps) {
    const auto ips = maps.service_ips.entries();
    return ips.empty() ? ip_from_v4(htonl(0xc6120002)) : ips.front().first; // 198.18.0.2 before any is configured
}

template <typename Map>
void clear(Map &map) {
    for (const auto &[key, value] : map.entries())
        map.erase(key);
}

} // namespace

void fill_tables(DatapathMaps &maps, size_t count) {
    const bpfnet_ip service = service_ip(maps);
    FlowPortMarks(maps.flow_ports).mark(htons(6385)); // the flows' port, as the datapath marks it first
    for (size_t i = 0; i < count; i++) {
        const auto n = static_cast<uint32_t>(i);
        bpfnet_flow_key key{};
        key.remote_ip = ip_from_v4(htonl(kFlowHosts + n / kPortsPerHost));
        key.service_ip = service;
        key.remote_port_be = htons(static_cast<uint16_t>(kFirstPort + n % kPortsPerHost));
        key.service_port_be = htons(6385);
        key.proto = IPPROTO_TCP;
        maps.flows.update(key, bpfnet_flow{ip_from_v4(htonl(0xc6126402)), htons(6385), 0}); // 198.18.100.2
        const bpfnet_neighbour neighbour{{0x02, 0xbe, static_cast<uint8_t>(n >> 24), static_cast<uint8_t>(n >> 16),
                                          static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)},
                                         {0, 0}};
        maps.neighbours.update(ip_from_v4(htonl(kNeighbours + n)), neighbour);
    }
}

void clear_tables(DatapathMaps &maps) {
    clear(maps.flows);
    clear(maps.neighbours);
}

} // namespace bpfnet::bench
