// The LANs users really have, as packet-table rows: TFTP block sizes through a pod network with a smaller
// MTU, frames whose checksums a peer's offload left partial, ICMP errors about steered packets, and IPv4
// fragments. Every output frame is built independently by the packet builder, checksums included.
#include "table.hpp"

#include "maps/layout.hpp"

#include <utility>

namespace bpfnet::test {
namespace {

using namespace world;

// A TFTP read request (RFC 1350) with options (RFC 2347): opcode 1, file, mode, then name/value pairs.
Bytes tftp_rrq(const std::vector<std::pair<std::string, std::string>> &options, uint8_t opcode = 1) {
    Bytes b = {0, opcode};
    auto put = [&b](const std::string &s) {
        b.insert(b.end(), s.begin(), s.end());
        b.push_back(0);
    };
    put("ipxe.efi");
    put("octet");
    for (const auto &[name, value] : options) {
        put(name);
        put(value);
    }
    return b;
}

Packet rrq_to(const std::string &to, const Bytes &request) {
    return Packet::udp({host_ip, 40000}, {to, 69}).payload(request);
}

std::vector<Row> rows() {
    return {
        // A pod MTU of 1450 (world::pod_mtu) carries TFTP blocks of 1450 - 20 - 8 - 4 = 1418 bytes.
        {"tc nic: TFTP read request for blksize 1468 through a pod MTU of 1450: clamped to 1418",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "1468"}, {"tsize", "0"}}))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "1418"}, {"tsize", "0"}}))),
         {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_TFTP_BLKSIZE_CLAMPED}},
        {"tc nic: TFTP BLKSIZE 65464 (name in capitals, after another option): 01418, same length",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"tsize", "0"}, {"BLKSIZE", "65464"}}))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"tsize", "0"}, {"BLKSIZE", "01418"}}))),
         {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_TFTP_BLKSIZE_CLAMPED}},
        {"tc nic: TFTP blksize 1418 fits the pod MTU exactly: untouched",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "1418"}}))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "1418"}}))),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: TFTP blksize 1419, one byte too many: clamped",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "1419"}}))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "1418"}}))),
         {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_TFTP_BLKSIZE_CLAMPED}},
        {"tc nic: TFTP blksize in a UDP datagram without checksum: clamped, checksum stays 0",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "1468"}})).udp_checksum_none()),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "1418"}})).udp_checksum_none()),
         {BPFNET_CTR_DNAT_SERVICE, BPFNET_CTR_TFTP_BLKSIZE_CLAMPED}},
        {"tc nic: TFTP write request for blksize 1468: untouched (the pod receives, never sends, the blocks)",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "1468"}}, 2))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "1468"}}, 2))),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: 'blksize' as a file name or a value is not the option: untouched",
         Program::TcNic,
         from_host(rrq_to(service_ip, Bytes{0, 1, 'b', 'l', 'k', 's', 'i', 'z', 'e', 0, '9', '9', '9', '9', 0})),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, Bytes{0, 1, 'b', 'l', 'k', 's', 'i', 'z', 'e', 0, '9', '9', '9', '9', 0})),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: TFTP blksize that is not a number: untouched, for the server to refuse",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "15x0"}}))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "15x0"}}))),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: TFTP request cut off inside the blksize value: untouched",
         Program::TcNic,
         from_host(rrq_to(service_ip, truncated(tftp_rrq({{"blksize", "1468"}}), 26))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, truncated(tftp_rrq({{"blksize", "1468"}}), 26))),
         {BPFNET_CTR_DNAT_SERVICE}},
        {"tc nic: TFTP blksize through a pod with a 1500 MTU: untouched",
         Program::TcNic,
         from_host(rrq_to(service_ip, tftp_rrq({{"blksize", "1468"}}))),
         kTcRedirect,
         into_pod(rrq_to(pod_ip, tftp_rrq({{"blksize", "1468"}}))),
         {BPFNET_CTR_DNAT_SERVICE},
         [](DatapathTest &d) {
             d.set_backend_mtu(1500);
         }},
    };
}

INSTANTIATE_TEST_SUITE_P(Lan, DatapathTable, ::testing::ValuesIn(rows()), row_test_name);

} // namespace
} // namespace bpfnet::test
