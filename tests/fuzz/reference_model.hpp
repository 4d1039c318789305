// A reference model of bpfnet's datapath, written from docs/design.md (the packet walks and the trust
// model), not from bpf/: for a frame and the state of the maps it says what each program must do with it.
// The fuzzer (fuzz_datapath.cpp) runs the same frame through the real program and compares.
//
// The model says which bytes change and to what, but not what a checksum field becomes: a rewrite must keep
// each checksum exactly as right (or as wrong) as it was, which the fuzzer checks from the bytes
// themselves (ChecksumRule). That way the model never repeats the datapath's checksum arithmetic.
#pragma once

#include "bpfnet_maps.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace bpfnet::fuzz {

using Bytes = std::vector<uint8_t>;
using Mac = std::array<uint8_t, 6>;
using Ip = uint32_t;   // network byte order, as in packets and map keys
using Port = uint16_t; // network byte order

enum class Program { XdpNic, TcNic, TcPod };
const char *name(Program program);

// Verdicts as BPF_PROG_TEST_RUN returns them.
inline constexpr int kXdpDrop = 1, kXdpPass = 2;
inline constexpr int kTcNext = -1, kTcShot = 2, kTcRedirect = 7;

struct FlowKey {
    Ip host = 0, service_ip = 0;
    Port host_port = 0, service_port = 0;
    uint8_t proto = 0;
    auto operator<=>(const FlowKey &) const = default;
};
struct FlowTarget {
    Ip backend_ip = 0;
    Port backend_port = 0;
    auto operator<=>(const FlowTarget &) const = default;
};

struct ListedPort {
    Ip backend_ip = 0;
    Port backend_port = 0;
    uint8_t kind = BPFNET_KIND_PLAIN;
};
struct BackendPort {
    Ip service_ip = 0;
    Port service_port = 0;
    uint8_t kind = BPFNET_KIND_PLAIN;
};
struct Backend {
    Mac pod_mac{}, veth_mac{};
    Ip service_ip = 0; // what the pod's own connections leave as
    uint16_t mtu = 0;
};

// What the loader configured: fixed while frames run, except the two switches between batches.
struct ModelConfig {
    Ip subnet = 0, mask = 0;
    Mac nic_mac{};
    Ip dhcp_service_ip = 0;
    uint8_t dhcp_max_hops = 4;
    std::map<Ip, bool> service_ips; // -> active (this node owns it)
    std::map<std::tuple<Ip, Port, uint8_t>, ListedPort> services;
    std::map<std::tuple<Ip, Port, uint8_t>, BackendPort> backend_ports;
    std::map<Ip, Backend> backends;
    std::set<Ip> relays;
    bool loader_alive = true;
};

// What the datapath learns from packets.
struct ModelState {
    std::map<Ip, Mac> neighbours;             // hosts the datapath accepted a packet from
    std::map<Ip, Mac> neighbours_unconfirmed; // hosts known from ARP only
    std::map<FlowKey, FlowTarget> flows, flows_unconfirmed;
    std::map<Ip, uint32_t> flow_shares; // host -> its confirmed flows (at BPFNET_MAX_FLOWS_PER_HOST: no more)
    std::map<Ip, Ip> dhcp_servers;      // backend IP -> the identifier its server names itself with
    std::map<Ip, Mac> conflicts;        // service IP -> last other MAC claiming it
    bool operator==(const ModelState &) const = default;
};

// How a checksum in the output must relate to the input's.
struct ChecksumRule {
    enum Kind {
        IpHeader,  // [offset, offset+length) sums to the same as before (valid stays valid)
        Transport, // TCP/UDP at offset with length, pseudo-header from the IP header at ip_offset
        Plain,     // ICMP: [offset, offset+length)
        QuotedUdp, // the checksum field at offset must become `expected` (0 stays 0)
    } kind;
    size_t offset = 0, length = 0, ip_offset = 0;
    uint8_t proto = 0;
    uint16_t expected = 0; // QuotedUdp, network order as read big-endian
    size_t field = 0;      // the checksum field itself, excluded from the byte comparison
};

struct ExpectedEvent {
    uint32_t type = 0;
    Ip ip = 0, service_ip = 0;
    Mac mac{};
    bool optional = false; // a conflict report may be held back (once per IP and MAC per second)
};

struct Expectation {
    int verdict = 0;
    bool rewritten = false;   // out differs from the frame as `out` says; else out must equal the frame
    bool bytes_matter = true; // false for a drop: what a dropped frame looked like is nobody's business
    Bytes out;
    std::vector<ChecksumRule> checksums;
    std::optional<uint32_t> traced; // the decision of the one trace record, if the frame is one of ours
    uint8_t hook = 0;
    Ip trace_saddr = 0, trace_daddr = 0;
    std::vector<uint32_t> counted; // every counter the frame increments (decision included)
    std::vector<ExpectedEvent> events;
    std::string walk; // what the model did, for a readable report
};

struct IcmpError;

class ReferenceModel {
public:
    ReferenceModel(ModelConfig config, ModelState state) : cfg_(std::move(config)), st_(std::move(state)) {}

    Expectation xdp_nic(const Bytes &frame);
    Expectation tc_nic_ingress(const Bytes &frame);
    Expectation tc_pod_ingress(const Bytes &frame);
    Expectation run(Program program, const Bytes &frame);

    ModelConfig &config() { return cfg_; }
    const ModelState &state() const { return st_; }
    // IPs whose neighbour entry ARP changed (not added) since the last call: the only changes allowed.
    std::set<Ip> take_arp_moves();

private:
    struct Ctx; // one frame's run
    ModelConfig cfg_;
    ModelState st_;
    std::set<Ip> arp_moves_;

    // Where a packet from the LAN to a service IP goes (walk 4): a flow or a listed port.
    struct Steering {
        FlowTarget target;
        uint8_t kind;
        bool unconfirmed;
        uint32_t path; // BPFNET_CTR_DNAT_FLOW or _SERVICE
    };
    std::optional<Steering> steering(const FlowKey &key) const;
    std::optional<FlowTarget> quoted_target(const IcmpError &error, Ip service_ip) const;
    bool in_subnet(Ip ip) const;
    bool neighbour_acceptable(Ip ip, const Mac &mac) const;
    void learn_neighbour(Ctx &c, Ip ip, const Mac &mac, bool from_arp, Ip service_ip);
    void observe_arp(Ctx &c, const Bytes &f);
    void see_conflict(Ctx &c, Ip service_ip, const Mac &mac);
    int answer_arp(Ctx &c, const Bytes &f);
    int steer_from_lan(Ctx &c, const Bytes &f);
    int relay_broadcast_dhcp(Ctx &c);
    int relay_dhcp_request(Ctx &c, Ip service_ip, const FlowTarget &to);
    int icmp_error_to_pod(Ctx &c);
    int steer_from_pod(Ctx &c, const Backend &backend);
    int relay_dhcp_reply(Ctx &c, const BackendPort &listed);
    int icmp_error_to_lan(Ctx &c, const Backend &backend);
    bool neighbour_for(Ctx &c, Ip host, Ip service_ip, Mac &mac);
    void record_flow(Ctx &c, const FlowKey &key, const FlowTarget &target);
    void clamp_tftp_blksize(Ctx &c, uint16_t mtu);
    void hide_backend(Ctx &c, Ip backend_ip, Ip service_ip);
    void restore_server_id(Ctx &c, Ip backend_ip, Ip service_ip);
    void translate_icmp_error(Ctx &c, const IcmpError &error, bool outer_source, Ip to_ip, Port to_port);
};

} // namespace bpfnet::fuzz
