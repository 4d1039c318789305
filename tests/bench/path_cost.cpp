// Per-path cost of the datapath programs, in ns per packet, through BPF_PROG_TEST_RUN, against the trivial
// floor program of each hook (XDP_PASS / TC_ACT_OK). One packet per run, so that rewriting paths always see
// a fresh input. Each round runs, per hook, the floor and every path of that hook RUNS times each, in an
// order that rotates from round to round; a block's value is the mean of its runs' middle half. The report gives
// the medians over the rounds and each path's ratio to the floor of the same round. Not a test: nothing
// here passes or fails on time.
//
// With --baseline OBJ, a second datapath loaded from the object file OBJ (an earlier build's
// bpf/bpfnet.bpf.o) runs beside the built-in one, its paths in the same rotation: each path's ratio to the
// floor is given for both, and the built-in one's ns per packet relative to the baseline's (per round,
// then the median). Before and after measured in one run, on the same machine.
//
// Each datapath is loaded --copies times (default 5), the built-in and the baseline in turn, and a path's
// value in a round is the median over its copies: identical copies side by side differ by up to 10% (where
// each one's code and tables land), which one copy each would report as a difference between the builds.
//
// With --scale, instead: the paths that look up or learn table entries, with the flows and neighbours
// tables filled to 10, 1,000 and 100,000 entries (three copies of the datapath side by side, one per
// size, in rotating order; tests/bench/tables.hpp), and the 10-entry copy as the baseline.
//
//   bench_path_cost [--scale] [--baseline OBJ] [--copies K] [--only TEXT] [--rounds R] [--runs N] [--json FILE]
//                   (defaults 5, 20, 1000; FILE: tests/bench/report.py)
#include "bpfnet.skel.h"
#include "core/kernel_probe.hpp"
#include "floor.skel.h"
#include "reference_nat.skel.h"
#include "tests/bench/tables.hpp"
#include "tests/bpf/object_constants.hpp"
#include "tests/bpf/packet.hpp"
#include "tests/bpf/packet6.hpp"
#include "tests/bpf/shell.hpp"
#include "tests/bpf/world.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace bpfnet;
using namespace bpfnet::test;
using namespace bpfnet::test::world;

// bpfnet's object as the loader loads it on this kernel (its load-time constants from the kernel probe).
bpfnet_bpf *load_as_the_loader_does() {
    bpfnet_bpf *skel = bpfnet_bpf__open();
    if (!skel)
        return nullptr;
    skel->rodata->kernel_reads_skb_csum = probe_skb_csum_state();
    if (bpfnet_bpf__load(skel) != 0) {
        bpfnet_bpf__destroy(skel);
        return nullptr;
    }
    return skel;
}

struct Path {
    std::string name;
    int prog_fd;
    Bytes frame;
    int copy = 0; // which loaded copy of its datapath (--copies)
};

// The paths of one hook and the floor program they are measured against.
struct Hook {
    const char *title;
    const char *floor_name;
    int floor_fd;
    std::vector<Path> paths;
};

struct Stats {
    double p10, median, p90;
};

Stats stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    auto at = [&v](double q) {
        return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
    };
    return {at(0.10), at(0.50), at(0.90)};
}

struct Run {
    double ns;
    __u32 verdict;
};

Run run_packet(int prog_fd, const Bytes &frame) {
    Bytes out(frame.size() + 256);
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_out = out.data(),
                .data_size_in = static_cast<__u32>(frame.size()), .data_size_out = static_cast<__u32>(out.size()),
                .repeat = 1);
    if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) {
        std::perror("BPF_PROG_TEST_RUN");
        std::exit(1);
    }
    return {static_cast<double>(opts.duration), opts.retval};
}

double run_once(int prog_fd, const Bytes &frame) {
    return run_packet(prog_fd, frame).ns;
}

__u32 verdict_of(int prog_fd, const Bytes &frame) {
    return run_packet(prog_fd, frame).verdict;
}

Bytes from_host(Packet p) {
    return p.macs(nic_mac, host_mac).bytes();
}
Bytes discover_frame() {
    Dhcp discover;
    discover.chaddr = client_mac;
    discover.option(53, Bytes{1});
    return Packet::udp({"0.0.0.0", 68}, {broadcast_ip, 67})
        .payload(discover.bytes())
        .macs(broadcast, client_mac)
        .bytes();
}

Bytes offer_frame() {
    Dhcp offer;
    offer.op = 2;
    offer.yiaddr = client_ip;
    offer.siaddr = pod_ip;
    offer.giaddr = service_ip;
    offer.chaddr = client_mac;
    offer.option(53, Bytes{2}).option(54, pod_ip);
    return Packet::udp({pod_ip, 67}, {service_ip, 67}).payload(offer.bytes()).macs(veth_mac, pod_mac).bytes();
}

Bytes from_pod(Packet p) {
    return p.macs(veth_mac, pod_mac).bytes();
}

// IPv6 counterparts of the IPv4 paths (the same world, dual stack: tests/bpf/world.cpp).
Bytes from_host6(Packet6 p) {
    return p.macs(nic_mac, host_mac).bytes();
}
Bytes from_pod6(Packet6 p) {
    return p.macs(veth_mac, pod_mac).bytes();
}
Bytes solicitation_frame() {
    const std::string group = solicited_node(service_ip6);
    return Packet6::icmp(host_ip6, group, kNeighbourSolicit, 0, ns_body(service_ip6, host_mac))
        .hop_limit(255)
        .macs(multicast_mac(group), host_mac)
        .bytes();
}
// DHCPv6 (RFC 8415): option code, length, data.
Bytes dhcp6_option(uint16_t code, const Bytes &data) {
    // Built by appending: GCC 12 warns (-Warray-bounds, wrongly) about an insert into the 4-byte header.
    Bytes o;
    o.reserve(4 + data.size());
    for (uint16_t field : {code, static_cast<uint16_t>(data.size())}) {
        o.push_back(static_cast<uint8_t>(field >> 8));
        o.push_back(static_cast<uint8_t>(field));
    }
    o.insert(o.end(), data.begin(), data.end());
    return o;
}
Bytes dhcp6_message(uint8_t type) {
    Bytes m = {type, 0x12, 0x34, 0x56};
    Bytes duid = {0, 3, 0, 1};
    duid.insert(duid.end(), client_mac.begin(), client_mac.end());
    Bytes id = dhcp6_option(1, duid);
    m.insert(m.end(), id.begin(), id.end());
    return m;
}
const std::string client_link_local = "fe80::99";
Bytes solicit_frame() {
    return Packet6::udp({client_link_local, 546}, {"ff02::1:2", 547})
        .payload(dhcp6_message(1))
        .macs(multicast_mac("ff02::1:2"), client_mac)
        .bytes();
}
Bytes relay_reply_frame() {
    Bytes r = {13, 0};
    auto link = ip6(service_ip6), peer = ip6(client_link_local);
    r.insert(r.end(), link.begin(), link.end());
    r.insert(r.end(), peer.begin(), peer.end());
    Bytes id = dhcp6_option(18, Bytes(client_mac.begin(), client_mac.end()));
    Bytes msg = dhcp6_option(9, dhcp6_message(2));
    r.insert(r.end(), id.begin(), id.end());
    r.insert(r.end(), msg.begin(), msg.end());
    return from_pod6(Packet6::udp({pod_ip6, 547}, {service_ip6, 547}).payload(r));
}

// A block's value: the mean of its runs' middle half. The kernel's durations come in steps of about 10 ns
// here, so a median is one of those steps; the middle half's mean resolves less than a step and, like the
// median, leaves out the runs an interrupt or a cold cache lengthened.
double block_value(int prog_fd, const Bytes &frame, int runs) {
    std::vector<double> v;
    v.reserve(static_cast<size_t>(runs));
    for (int i = 0; i < runs; i++)
        v.push_back(run_once(prog_fd, frame));
    std::sort(v.begin(), v.end());
    const size_t from = v.size() / 4, to = std::max(from + 1, v.size() - v.size() / 4);
    double sum = 0;
    for (size_t i = from; i < to; i++)
        sum += v[i];
    return sum / static_cast<double>(to - from);
}

// Per round, the floor and every path of the hook, rotating the order: the floor with each path's frame
// (a floor does not look at the packet, so its frame does not matter; the first path's is used).
std::map<std::string, std::vector<double>> measure(const Hook &hook, int rounds, int runs,
                                                   const std::vector<int> &heartbeat_fds) {
    std::map<std::string, std::vector<double>> series;
    const size_t n = hook.paths.size() + 1;
    for (int round = 0; round < rounds; round++) {
        // The relays work only while the heartbeat is fresh: keep it so however long the run takes.
        for (int fd : heartbeat_fds) {
            const __u32 key = 0;
            const bpfnet_heartbeat beat{monotonic_ns()};
            bpf_map_update_elem(fd, &key, &beat, BPF_ANY);
        }
        std::map<std::string, std::vector<double>> by_copy;
        for (size_t k = 0; k < n; k++) {
            const size_t which = (k + static_cast<size_t>(round)) % n;
            if (which == hook.paths.size())
                series[hook.floor_name].push_back(block_value(hook.floor_fd, hook.paths.front().frame, runs));
            else
                by_copy[hook.paths[which].name].push_back(
                    block_value(hook.paths[which].prog_fd, hook.paths[which].frame, runs));
        }
        for (auto &[name, values] : by_copy)
            series[name].push_back(stats(std::move(values)).median);
    }
    return series;
}

// One copy of the datapath with its tables filled to a size.
struct Copy {
    std::string name;
    bpfnet_bpf *skel;
};

// A path measured at every table size: which program, and the frame.
struct ScalePath {
    const char *name;
    int (*prog)(const bpfnet_bpf *);
    Bytes frame;
};

nlohmann::ordered_json scale_tables(int rounds, int runs) {
    const std::vector<std::pair<size_t, std::string>> sizes = {
        {10, "10 entries"}, {1000, "1,000 entries"}, {100000, "100,000 offered (tables full)"}};
    std::vector<Copy> copies;
    std::string held = "Entries held (flows / neighbours):";
    for (const auto &[count, name] : sizes) {
        bpfnet_bpf *skel = load_as_the_loader_does();
        if (!skel) {
            std::fprintf(stderr, "cannot load the BPF object (root needed): %s\n", std::strerror(errno));
            std::exit(1);
        }
        DatapathMaps maps = DatapathMaps::from_skeleton(*skel);
        bench::fill_tables(maps, count);
        fill_world(maps); // last: the world's entries are the most recent, never the LRU's victims
        held += " " + name + ": " + std::to_string(maps.flows.entries().size()) + " / " +
                std::to_string(maps.neighbours.entries().size()) + ";";
        copies.push_back({name, skel});
    }
    const std::vector<ScalePath> paths = {
        {"TC NIC: DNAT of a recorded flow (flows lookup)",
         [](const bpfnet_bpf *s) { return bpf_program__fd(s->progs.tc_nic_ingress); },
         from_host(Packet::udp({host_ip, flow_host_port}, {service_ip, flow_pod_port}))},
        {"TC pod: reverse SNAT of a reply (neighbour lookup)",
         [](const bpfnet_bpf *s) { return bpf_program__fd(s->progs.tc_pod_ingress); },
         from_pod(Packet::tcp({pod_ip, 6385}, {host_ip, 40000}))},
        {"TC pod: SNAT of a pod-initiated flow (flows and neighbour lookups)",
         [](const bpfnet_bpf *s) { return bpf_program__fd(s->progs.tc_pod_ingress); },
         from_pod(Packet::tcp({pod_ip, 45000}, {host_ip, 9999}))},
        {"XDP: ARP who-has service IP (neighbour learned)",
         [](const bpfnet_bpf *s) { return bpf_program__fd(s->progs.xdp_nic); },
         arp(1, broadcast, host_mac, host_ip, zero_mac, service_ip)},
    };
    nlohmann::ordered_json tables = nlohmann::ordered_json::array();
    for (const ScalePath &path : paths) {
        // The same verdict from every copy, or the sizes are not measuring the same path.
        const __u32 verdict = verdict_of(path.prog(copies.front().skel), path.frame);
        for (const Copy &copy : copies)
            if (verdict_of(path.prog(copy.skel), path.frame) != verdict) {
                std::fprintf(stderr, "%s: another verdict with %s\n", path.name, copy.name.c_str());
                std::exit(1);
            }
        std::map<std::string, std::vector<double>> series;
        for (int round = 0; round < rounds; round++)
            for (size_t k = 0; k < copies.size(); k++) {
                const Copy &copy = copies[(k + static_cast<size_t>(round)) % copies.size()];
                series[copy.name].push_back(block_value(path.prog(copy.skel), path.frame, runs));
            }
        nlohmann::ordered_json table = {{"title", std::string(path.name) + ": ns per packet by table size"},
                                        {"unit", "ns"},
                                        {"better", "lower"},
                                        {"baseline", copies.front().name},
                                        {"paired", true}};
        for (const Copy &copy : copies)
            table["series"][copy.name] = series[copy.name];
        table["notes"] =
            std::to_string(rounds) + " rounds; per round, each copy " + std::to_string(runs) +
            " runs of one packet in rotating order; a block's value is the mean of its runs' middle half. " + held +
            " the tables hold " + std::to_string(BPFNET_MAX_FLOWS) + " / " + std::to_string(BPFNET_MAX_NEIGHBOURS) +
            " (LRU: the oldest go).";
        tables.push_back(table);
    }
    for (Copy &copy : copies)
        bpfnet_bpf__destroy(copy.skel);
    return tables;
}

// The programs of one copy of the datapath.
struct Programs {
    int xdp, tc_nic, tc_pod;
};

// The reference DNAT (tests/bench/reference_nat.bpf.c) told the world's service IP and port 6385: to the pod.
bool reference_dnat_fill(reference_nat_bpf &reference) {
    struct Key {
        __u32 daddr;
        __u16 dport, protocol;
    } key = {ip(service_ip), htons(6385), IPPROTO_TCP};
    struct Target {
        __u32 backend, ifindex;
        __u8 macs[12];
    } target = {ip(pod_ip), static_cast<__u32>(veth_ifindex), {}};
    std::copy(pod_mac.begin(), pod_mac.end(), target.macs);
    std::copy(veth_mac.begin(), veth_mac.end(), target.macs + 6);
    return bpf_map__update_elem(reference.maps.reference_dnat, &key, sizeof(key), &target, sizeof(target), BPF_ANY) ==
           0;
}

// Every path of every hook, through the given datapath's programs.
std::vector<Hook> hooks_of(const Programs &p, int xdp_floor, int tc_floor) {
    const Bytes tcp_other = from_host(Packet::tcp({host_ip, 40000}, {other_lan_ip, 6385}));
    const Bytes tcp_listed = from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385}));
    const Bytes tcp_listed6 = from_host6(Packet6::tcp({host_ip6, 40000}, {service_ip6, 6385}));
    return {
        {"XDP on the NIC",
         "floor (XDP_PASS)",
         xdp_floor,
         {{"pass-through (not a service IP)", p.xdp, tcp_other},
          {"ARP who-has service IP (learn, on to tc)", p.xdp,
           arp(1, broadcast, host_mac, host_ip, zero_mac, service_ip)},
          {"listed port, on to tc", p.xdp, tcp_listed},
          {"drop (unlisted port)", p.xdp, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 22}))},
          {"IPv6: neighbour solicitation for the service address (observed, on to tc)", p.xdp, solicitation_frame()},
          {"IPv6: listed port, on to tc", p.xdp, tcp_listed6}}},
        {"TC on the NIC ingress",
         "floor (TC_ACT_OK)",
         tc_floor,
         {{"pass-through (not a service IP)", p.tc_nic, tcp_other},
          {"ARP reply + redirect to the NIC's egress", p.tc_nic,
           arp(1, broadcast, host_mac, host_ip, zero_mac, service_ip)},
          {"DNAT listed port + redirect_peer", p.tc_nic, tcp_listed},
          {"DNAT recorded flow + redirect_peer", p.tc_nic,
           from_host(Packet::udp({host_ip, flow_host_port}, {service_ip, flow_pod_port}))},
          {"DHCP relay request (broadcast DISCOVER)", p.tc_nic, discover_frame()},
          {"IPv6: neighbour advertisement + redirect to the NIC's egress", p.tc_nic, solicitation_frame()},
          {"IPv6: NAT66 listed port + redirect_peer", p.tc_nic, tcp_listed6},
          {"IPv6: DHCPv6 relay request (Solicit wrapped in a Relay-Forward)", p.tc_nic, solicit_frame()}}},
        {"TC on the pod veth",
         "floor (TC_ACT_OK)",
         tc_floor,
         {{"reverse SNAT (reply) + redirect", p.tc_pod, from_pod(Packet::tcp({pod_ip, 6385}, {host_ip, 40000}))},
          {"SNAT pod-initiated flow + redirect", p.tc_pod, from_pod(Packet::tcp({pod_ip, 45000}, {host_ip, 9999}))},
          {"DHCP relay reply (OFFER, server id rewritten)", p.tc_pod, offer_frame()},
          {"IPv6: reverse NAT66 (reply) + redirect", p.tc_pod,
           from_pod6(Packet6::tcp({pod_ip6, 6385}, {host_ip6, 40000}))},
          {"IPv6: DHCPv6 relay reply (Relay-Reply unwrapped)", p.tc_pod, relay_reply_frame()}}},
    };
}

// The iface entry as builds before 2026-12-03 laid it out (4-byte IPv4 fields, value size 88), so that such a
// build can still be the baseline: its iface map is given this build's value size before it loads (its
// programs read only the first 88 bytes), and the entry fill_world() wrote is written again in that layout.
struct LegacyIface {
    __u32 nic_ifindex;
    __u8 nic_mac[6];
    __u8 dhcp_max_hops;
    __u8 hooks;
    __be32 subnet_be;
    __be32 subnet_mask_be;
    __be32 dhcp_service_ip_be;
    __u64 heartbeat_timeout_ns;
    bpfnet_ip subnet6;
    bpfnet_ip nic_link_local;
    bpfnet_ip dhcp6_service_ip;
    __u8 subnet6_prefix_len;
    __u8 pad[7];
};
static_assert(sizeof(LegacyIface) == 88);

bool widen_legacy_iface(bpf_object *obj) {
    bpf_map *iface = bpf_object__find_map_by_name(obj, "iface");
    if (!iface || bpf_map__value_size(iface) != sizeof(LegacyIface))
        return false;
    return bpf_map__set_value_size(iface, sizeof(bpfnet_iface)) == 0;
}

// Builds from 2026-12-03 to 2026-12-04 laid the iface entry out as this one without the service IP marks at its
// end (value size 144): widened like the services entry below, their programs read the prefix they know.
void widen_iface_without_marks(bpf_object *obj) {
    bpf_map *iface = bpf_object__find_map_by_name(obj, "iface");
    if (iface && bpf_map__value_size(iface) == offsetof(bpfnet_iface, service_ip_marks))
        bpf_map__set_value_size(iface, sizeof(bpfnet_iface));
}

// The services entry as builds before 2026-12-04 laid it out (20 bytes: no source-ranges flag, no pod link),
// so that such a build can still be the baseline: the fields it has keep their offsets, so its map is given
// this build's value size before it loads and its programs read the prefix they know.
constexpr __u32 kLegacyServiceSize = offsetof(bpfnet_service, link);

bool widen_legacy_services(bpf_object *obj) {
    bpf_map *services = bpf_object__find_map_by_name(obj, "services");
    if (!services || bpf_map__value_size(services) != kLegacyServiceSize)
        return false;
    return bpf_map__set_value_size(services, sizeof(bpfnet_service)) == 0;
}

void write_legacy_iface(int fd, const bpfnet_iface &now) {
    LegacyIface old{};
    old.nic_ifindex = now.nic_ifindex;
    std::memcpy(old.nic_mac, now.nic_mac, sizeof(old.nic_mac));
    old.dhcp_max_hops = now.dhcp_max_hops;
    old.hooks = now.hooks;
    old.subnet_be = now.subnet.len != 0 ? now.subnet.net.w[3] : 0xffffffff;
    old.subnet_mask_be = now.subnet.mask.w[3];
    old.dhcp_service_ip_be = v4_of(now.dhcp_service_ip);
    old.heartbeat_timeout_ns = now.heartbeat_timeout_ns;
    old.subnet6 = now.subnet6.net;
    old.nic_link_local = now.nic_link_local;
    old.dhcp6_service_ip = now.dhcp6_service_ip;
    old.subnet6_prefix_len = static_cast<__u8>(now.subnet6.len);
    unsigned char value[sizeof(bpfnet_iface)] = {};
    std::memcpy(value, &old, sizeof(old));
    const __u32 key = 0;
    if (bpf_map_update_elem(fd, &key, value, BPF_ANY) != 0)
        throw SystemError("bpf_map_update_elem iface (baseline)", errno);
}

// The fd of a loaded copy's map called name, or, for a baseline built before that map existed (flow_ports came
// on 2026-12-03), of a stand-in with the layout's sizes: its programs never see it, the world's set-up writes
// into it as into the built-in copy's.
UniqueFd object_map_fd(bpf_object *obj, const char *name, __u32 key_size, __u32 value_size) {
    if (const bpf_map *map = bpf_object__find_map_by_name(obj, name); map && bpf_map__fd(map) >= 0)
        return dup_fd(bpf_map__fd(map), name);
    LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = key_size == sizeof(__u32) ? __u32{BPF_F_MMAPABLE} : 0u);
    const bpf_map_type type = key_size == sizeof(__u32) ? BPF_MAP_TYPE_ARRAY : BPF_MAP_TYPE_HASH;
    const int fd = bpf_map_create(type, name, key_size, value_size, type == BPF_MAP_TYPE_ARRAY ? 1 : 1024, &opts);
    if (fd < 0)
        throw SystemError(std::string("bpf_map_create (stand-in for the baseline's) ") + name, errno);
    return UniqueFd(fd);
}

DatapathMaps object_maps_of(bpf_object *obj) {
#define BASELINE_MAP(name, key, value)                                                                                 \
    .name = {object_map_fd(obj, BPFNET_MAP_NAME(name), sizeof(key), sizeof(value)), BPFNET_MAP_NAME(name)},
    return DatapathMaps{
        BPFNET_TABLE_MAPS(BASELINE_MAP).counters = {
            dup_fd(bpf_map__fd(bpf_object__find_map_by_name(obj, BPFNET_MAP_NAME(BPFNET_COUNTERS_MAP))), "counters"),
            BPFNET_MAP_NAME(BPFNET_COUNTERS_MAP)}};
#undef BASELINE_MAP
}

// A path of the baseline copy is named after the built-in one's.
std::string baseline_name(const std::string &name) {
    return "baseline: " + name;
}

} // namespace

// Delivery through the node's routing (BPFNET_BACKEND_ROUTE) asks the node's FIB, so its path needs a node that
// routes: a network namespace of the bench's own (nothing of the machine's is touched, however the bench is
// run), whose loopback (the device BPF_PROG_TEST_RUN's packets come in by) forwards, with the world's pod
// address behind a veth whose peer is in a namespace a child of ours holds, the next hop resolved by the
// kernel's own ARP (a datagram to it). The child dies with the bench.
class RoutedNode {
public:
    RoutedNode() = default;
    RoutedNode(const RoutedNode &) = delete;
    RoutedNode &operator=(const RoutedNode &) = delete;
    ~RoutedNode() {
        if (pod_ > 0) {
            kill(pod_, SIGKILL);
            waitpid(pod_, nullptr, 0);
        }
    }
    // Empty when the node routes to the pod; else why not.
    std::string make() {
        if (unshare(CLONE_NEWNET) != 0)
            return std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
        int ready[2];
        if (pipe(ready) != 0)
            return std::string("pipe: ") + std::strerror(errno);
        pod_ = fork();
        if (pod_ == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            const char ok = unshare(CLONE_NEWNET) == 0 ? 'y' : 'n';
            if (write(ready[1], &ok, 1) != 1 || ok != 'y')
                _exit(1);
            pause();
            _exit(0);
        }
        close(ready[1]);
        char ok = 'n';
        const bool told = pod_ > 0 && read(ready[0], &ok, 1) == 1;
        close(ready[0]);
        if (!told || ok != 'y')
            return "the pod namespace's process did not start";
        const std::string pod = std::to_string(pod_);
        const std::string script =
            "set -e; ip link set lo up; sysctl -qw net.ipv4.conf.all.forwarding=1 net.ipv4.conf.lo.forwarding=1; "
            "ip link add bpc0 type veth peer name eth0 netns " +
            pod + "; ip addr add 198.18.100.1/24 dev bpc0; ip link set bpc0 up; nsenter -t " + pod +
            " -n sh -c 'ip link set lo up; ip addr add " + pod_ip +
            "/24 dev eth0; ip link set eth0 up'; "
            // A datagram to the pod makes the node's kernel resolve it by ARP.
            "for try in $(seq 50); do echo > /dev/udp/" +
            pod_ip + "/9; ip neigh show " + pod_ip + " | grep -q lladdr && exit 0; sleep 0.1; done; exit 1";
        if (run_bash(script) != 0)
            return "could not make the pod's namespace and the node's route to it (ip, nsenter, ARP)";
        return "";
    }

private:
    pid_t pod_ = -1;
};

int main(int argc, char **argv) {
    int rounds = 20;
    int runs = 1000;
    int copies = 5;
    std::string json_path, baseline_path, only;
    bool scale = false;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--scale"))
            scale = true;
        else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--copies") && i + 1 < argc)
            copies = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
            json_path = argv[++i];
        else if (!std::strcmp(argv[i], "--baseline") && i + 1 < argc)
            baseline_path = argv[++i];
        else {
            std::fprintf(stderr,
                         "usage: %s [--scale] [--baseline OBJ] [--copies K] [--only TEXT] [--rounds R] [--runs N] "
                         "[--json FILE]\n",
                         argv[0]);
            return 2;
        }
    }
    if (scale) {
        nlohmann::ordered_json tables = scale_tables(rounds, runs);
        if (!json_path.empty())
            std::ofstream(json_path) << nlohmann::ordered_json{{"benchmark", "scale"}, {"tables", tables}}.dump(1)
                                     << "\n";
        return 0;
    }
    floor_bpf *floor = floor_bpf__open_and_load();
    reference_nat_bpf *reference = reference_nat_bpf__open_and_load();
    if (!floor || !reference || !reference_dnat_fill(*reference)) {
        std::fprintf(stderr, "cannot load the BPF objects (root needed): %s\n", std::strerror(errno));
        return 1;
    }
    const int xdp_floor = bpf_program__fd(floor->progs.xdp_floor);
    const int tc_floor = bpf_program__fd(floor->progs.tc_floor);
    std::vector<Hook> hooks;
    std::vector<int> heartbeat_fds;
    // Adds a loaded copy's paths to the hooks (the first copy makes them), named with prefix.
    auto add_paths = [&](const Programs &programs, const std::string &prefix, int copy) {
        std::vector<Hook> theirs = hooks_of(programs, xdp_floor, tc_floor);
        if (hooks.empty())
            for (Hook &hook : theirs)
                hooks.push_back({hook.title, hook.floor_name, hook.floor_fd, {}});
        for (size_t h = 0; h < hooks.size(); h++)
            for (const Path &path : theirs[h].paths)
                hooks[h].paths.push_back({prefix + path.name, path.prog_fd, path.frame, copy});
    };
    // Copies of the same object loaded side by side run at speeds up to 10% apart (where each one's code and
    // tables land): each copy is measured, a round's value is the median over a path's copies, and the
    // built-in and baseline copies are loaded in turn so that neither gets the first or the last places.
    // Both are loaded the same way, from their ELF images (the built-in's embedded in its skeleton).
    const unsigned char reads_skb_csum = probe_skb_csum_state() ? 1 : 0;
    std::vector<bpf_object *> objects;
    // Opens, loads and fills one copy of a datapath; false (said) when it cannot.
    auto load_copy = [&](bpf_object *obj, const std::string &what, const std::string &prefix, int copy) {
        const bool legacy_iface = obj && widen_legacy_iface(obj);
        if (obj) {
            // The constant as the loader would set it here.
            set_byte_constant(obj, "kernel_reads_skb_csum", reads_skb_csum);
            widen_iface_without_marks(obj);
            widen_legacy_services(obj);
        }
        if (!obj || bpf_object__load(obj) != 0) {
            std::fprintf(stderr, "cannot load %s (root needed): %s\n", what.c_str(), std::strerror(errno));
            return false;
        }
        objects.push_back(obj);
        DatapathMaps maps = object_maps_of(obj);
        fill_world(maps);
        if (legacy_iface) {
            DatapathMaps world = object_maps_of(objects.front());
            write_legacy_iface(maps.iface.fd(), world.iface.lookup(0).value());
        }
        heartbeat_fds.push_back(bpf_map__fd(bpf_object__find_map_by_name(obj, "heartbeat")));
        auto prog = [obj](const char *name) {
            return bpf_program__fd(bpf_object__find_program_by_name(obj, name));
        };
        add_paths({prog("xdp_nic"), prog("tc_nic_ingress"), prog("tc_pod_ingress")}, prefix, copy);
        return true;
    };
    size_t built_in_size = 0;
    const void *built_in_elf = bpfnet_bpf::elf_bytes(&built_in_size);
    auto load_built_in = [&](int copy) {
        return load_copy(bpf_object__open_mem(built_in_elf, built_in_size, nullptr), "the built-in datapath", "", copy);
    };
    auto load_baseline = [&](int copy) {
        return baseline_path.empty() || load_copy(bpf_object__open_file(baseline_path.c_str(), nullptr),
                                                  "the baseline object " + baseline_path, baseline_name(""), copy);
    };
    for (int copy = 0; copy < copies; copy++) {
        // The first copy is the built-in's (the hooks take their paths' order from it); then each of the two
        // loads first in turn.
        const bool built_in_first = copy % 2 == 0;
        if (!(built_in_first ? load_built_in(copy) && load_baseline(copy) : load_baseline(copy) && load_built_in(copy)))
            return 1;
    }
    // Beside the NIC's DNAT: the least a DNAT does, to tell what bpfnet's rules add from what any DNAT costs.
    hooks[1].paths.push_back({"reference: the least a DNAT does (one lookup, the rewrite, redirect_peer)",
                              bpf_program__fd(reference->progs.tc_reference_dnat),
                              from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385}))});
    if (verdict_of(hooks[1].paths.back().prog_fd, hooks[1].paths.back().frame) != TC_ACT_REDIRECT) {
        std::fprintf(stderr, "the reference DNAT did not redirect its packet: it would measure another path\n");
        return 1;
    }
    // Beside the DNAT into the veth: the same listed port delivered through the node's routing, from a copy whose
    // backend says so (the loader's backend.delivery: route).
    RoutedNode routed_node;
    if (const std::string why = routed_node.make(); !why.empty()) {
        std::fprintf(stderr, "the route delivery path is not measured: %s\n", why.c_str());
    } else {
        bpf_object *obj = bpf_object__open_mem(built_in_elf, built_in_size, nullptr);
        if (!obj)
            return 1;
        set_byte_constant(obj, "kernel_reads_skb_csum", reads_skb_csum);
        if (bpf_object__load(obj) != 0) {
            std::fprintf(stderr, "cannot load the route copy: %s\n", std::strerror(errno));
            return 1;
        }
        objects.push_back(obj);
        DatapathMaps maps = object_maps_of(obj);
        fill_world(maps);
        bpfnet_backend backend = maps.backends.lookup(key_ip(pod_ip)).value();
        backend.flags = BPFNET_BACKEND_ROUTE;
        maps.backends.update(key_ip(pod_ip), backend);
        derive_loader_fields(maps);
        heartbeat_fds.push_back(bpf_map__fd(bpf_object__find_map_by_name(obj, "heartbeat")));
        hooks[1].paths.push_back({"DNAT listed port + route (bpf_fib_lookup, next hop resolved)",
                                  bpf_program__fd(bpf_object__find_program_by_name(obj, "tc_nic_ingress")),
                                  from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385}))});
        if (verdict_of(hooks[1].paths.back().prog_fd, hooks[1].paths.back().frame) != TC_ACT_REDIRECT) {
            std::fprintf(stderr, "the route copy did not redirect its packet: it would measure another path\n");
            return 1;
        }
    }
    const bool baseline = !baseline_path.empty();
    // --only: the paths whose name holds the text (a profile of one path: tests/bench/profile.sh); a hook
    // left with none is not run.
    if (!only.empty()) {
        for (Hook &hook : hooks)
            std::erase_if(hook.paths, [&](const Path &path) { return path.name.find(only) == std::string::npos; });
        std::erase_if(hooks, [](const Hook &hook) { return hook.paths.empty(); });
    }
    // Warm: the pod-initiated path records its flow once, so every measured run sees the same state.
    for (const Hook &hook : hooks)
        for (const Path &path : hook.paths)
            run_once(path.prog_fd, path.frame);
    // Both copies should take the same way, or they are not measuring the same path: said, not refused (an
    // experiment may leave a piece out on purpose).
    if (baseline)
        for (const Hook &hook : hooks)
            for (const Path &path : hook.paths)
                for (const Path &other : hook.paths)
                    if (other.copy == path.copy && other.name == baseline_name(path.name) &&
                        verdict_of(path.prog_fd, path.frame) != verdict_of(other.prog_fd, other.frame))
                        std::fprintf(stderr, "warning: %s: another verdict from the baseline\n", path.name.c_str());

    nlohmann::ordered_json tables = nlohmann::ordered_json::array();
    for (const Hook &hook : hooks) {
        auto series = measure(hook, rounds, runs, heartbeat_fds);
        const std::vector<double> &floor_values = series[hook.floor_name];
        const double floor_median = stats(floor_values).median;
        std::printf("\n%s\n\n| path | ns/packet (median of rounds) | floor | ratio to floor |\n|---|---|---|---|\n",
                    hook.title);
        nlohmann::ordered_json table = {{"title", std::string(hook.title) + ": ns per packet"},
                                        {"unit", "ns"},
                                        {"better", "lower"},
                                        {"baseline", hook.floor_name},
                                        {"paired", true}};
        table["series"][hook.floor_name] = floor_values;
        for (const Path &path : hook.paths) {
            if (path.copy != 0)
                continue;
            const std::vector<double> &values = series[path.name];
            const double median = stats(values).median;
            std::printf("| %s | %.0f | %.0f | %.2f |\n", path.name.c_str(), median, floor_median,
                        median / floor_median);
            table["series"][path.name] = values;
        }
        if (baseline) {
            // Per round: each copy's ratio to that round's floor, and the built-in copy's ns over the
            // baseline's; the medians over the rounds, with the 10th-90th percentile spread.
            std::printf("\n| path | baseline ns | baseline ratio to floor | ns | ratio to floor | ns / baseline ns |\n"
                        "|---|---|---|---|---|---|\n");
            for (const Path &path : hook.paths) {
                if (path.copy != 0 || !series.count(baseline_name(path.name)))
                    continue;
                const std::vector<double> &ours = series[path.name], &theirs = series[baseline_name(path.name)];
                std::vector<double> our_ratio, their_ratio, relative;
                for (size_t r = 0; r < ours.size(); r++) {
                    our_ratio.push_back(ours[r] / floor_values[r]);
                    their_ratio.push_back(theirs[r] / floor_values[r]);
                    relative.push_back(ours[r] / theirs[r]);
                }
                const Stats a = stats(their_ratio), b = stats(our_ratio), rel = stats(relative);
                std::printf("| %s | %.0f | %.2f (%.2f-%.2f) | %.0f | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) |\n",
                            path.name.c_str(), stats(theirs).median, a.median, a.p10, a.p90, stats(ours).median,
                            b.median, b.p10, b.p90, rel.median, rel.p10, rel.p90);
            }
        }
        table["notes"] =
            std::to_string(rounds) + " rounds; per round, each program " + std::to_string(runs) +
            " runs of one packet (BPF_PROG_TEST_RUN, repeat 1, kernel-measured), in rotating order; a "
            "block's value is the mean of its runs' middle half; with a baseline, a path's value in a round is the "
            "median over its copies.";
        tables.push_back(table);
    }
    if (!json_path.empty())
        std::ofstream(json_path) << nlohmann::ordered_json{{"benchmark", "path_cost"}, {"tables", tables}}.dump(1)
                                 << "\n";
    for (bpf_object *copy : objects)
        bpf_object__close(copy);
    reference_nat_bpf__destroy(reference);
    floor_bpf__destroy(floor);
    return 0;
}
