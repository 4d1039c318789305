#include "table.hpp"

#include "maps/layout.hpp"

#include <cctype>

namespace bpfnet::test {

using namespace world;

std::ostream &operator<<(std::ostream &os, const Row &row) {
    return os << row.name;
}

std::string row_test_name(const ::testing::TestParamInfo<Row> &info) {
    std::string out;
    for (char c : info.param.name)
        out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return std::to_string(info.index) + "_" + out;
}

Bytes from_host(Packet p) {
    return p.macs(nic_mac, host_mac).bytes();
}
Bytes from_pod(Packet p) {
    return p.macs(veth_mac, pod_mac).bytes();
}
bpfnet_flow_key flow_key(const std::string &host, uint16_t host_port, uint16_t service_port, uint8_t proto) {
    bpfnet_flow_key key{};
    key.remote_ip = key_ip(host);
    key.service_ip = key_ip(service_ip);
    key.remote_port_be = htons(host_port);
    key.service_port_be = htons(service_port);
    key.proto = proto;
    return key;
}
Bytes into_pod(Packet p) {
    return p.macs(pod_mac, veth_mac).bytes();
}
Bytes to_host(Packet p, const Mac &host) {
    return p.macs(host, nic_mac).bytes();
}
Bytes from_host6(Packet6 p, const Mac &dst) {
    return p.macs(dst, host_mac).bytes();
}
Bytes from_pod6(Packet6 p) {
    return p.macs(veth_mac, pod_mac).bytes();
}
Bytes into_pod6(Packet6 p) {
    return p.macs(pod_mac, veth_mac).bytes();
}
Bytes to_host6(Packet6 p) {
    return p.macs(host_mac, nic_mac).bytes();
}

TEST_P(DatapathTable, Row) {
    const Row &row = GetParam();
    if (row.prepare)
        row.prepare(*this);
    auto before = counters();
    RunResult result = run(row.program, row.input);
    if (result.refused)
        GTEST_SKIP() << "this kernel's BPF_PROG_TEST_RUN refuses a " << row.input.size() << "-byte frame";

    EXPECT_EQ(result.retval, row.verdict) << name(row.program);
    const Bytes &want = row.output ? *row.output : row.input;
    EXPECT_EQ(result.out, want) << describe_difference(result.out, want);

    auto after = counters();
    for (size_t i = 0; i < after.size(); i++) {
        uint64_t expected = row.counted.contains(static_cast<bpfnet_counter>(i)) ? 1 : 0;
        EXPECT_EQ(after[i] - before[i], expected) << "counter " << counter_names[i];
    }
}

} // namespace bpfnet::test
