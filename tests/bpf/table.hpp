// The packet-table format shared by the table tests: one row per behaviour, with the input frame, the
// verdict, the exact output frame (checksums recomputed independently by the packet builder) and the
// counters that must move.
#pragma once

#include "datapath_fixture.hpp"
#include "packet6.hpp"

#include <functional>
#include <optional>
#include <ostream>
#include <set>
#include <string>

namespace bpfnet::test {

struct Row {
    std::string name;
    Program program;
    Bytes input;
    int verdict;
    std::optional<Bytes> output;      // nullopt: the frame must come out unchanged
    std::set<bpfnet_counter> counted; // each goes up by exactly one; every other counter stays
    std::function<void(DatapathTest &)> prepare = nullptr;
};

std::ostream &operator<<(std::ostream &os, const Row &row);
std::string row_test_name(const ::testing::TestParamInfo<Row> &info);

// Frames as they arrive on the NIC from the host, and on the veth from the pod.
Bytes from_host(Packet p);
Bytes from_pod(Packet p);
// Frames as the datapath must deliver them into the pod, and out of the NIC to the host.
Bytes into_pod(Packet p);
Bytes to_host(Packet p, const Mac &host = world::host_mac);
// The same for IPv6 packets.
Bytes from_host6(Packet6 p, const Mac &dst = world::nic_mac);
Bytes from_pod6(Packet6 p);
Bytes into_pod6(Packet6 p);
Bytes to_host6(Packet6 p);

// The flows key of host:host_port <-> service IP (the world's IPv4 one):service_port.
bpfnet_flow_key flow_key(const std::string &host, uint16_t host_port, uint16_t service_port, uint8_t proto);

// Runs one row; each table file instantiates it with its own rows.
class DatapathTable : public DatapathTest, public ::testing::WithParamInterface<Row> {};

} // namespace bpfnet::test
