// Per-path cost of the datapath programs, in ns per packet, through BPF_PROG_TEST_RUN: each path is run
// alternately with the trivial floor program of its hook (XDP_PASS / TC_ACT_OK), one packet per run so that
// rewriting paths always see a fresh input, and reported as medians with spread and as the difference and
// ratio to the floor. Not a test: nothing here passes or fails on time.
//
//   bench_path_cost [--runs N] [--json FILE]
#include "bpfnet.skel.h"
#include "floor.skel.h"
#include "tests/bpf/packet.hpp"
#include "tests/bpf/world.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace bpfnet;
using namespace bpfnet::test;
using namespace bpfnet::test::world;

struct Path {
    const char *name;
    int prog_fd;
    int floor_fd;
    Bytes frame;
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

double run_once(int prog_fd, const Bytes &frame) {
    Bytes out(frame.size() + 256);
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_out = out.data(),
                .data_size_in = static_cast<__u32>(frame.size()), .data_size_out = static_cast<__u32>(out.size()),
                .repeat = 1);
    if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) {
        std::perror("BPF_PROG_TEST_RUN");
        std::exit(1);
    }
    return static_cast<double>(opts.duration);
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

} // namespace

int main(int argc, char **argv) {
    int runs = 20000;
    std::string json_path;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
            json_path = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--runs N] [--json FILE]\n", argv[0]);
            return 2;
        }
    }
    bpfnet_bpf *skel = bpfnet_bpf__open_and_load();
    floor_bpf *floor = floor_bpf__open_and_load();
    if (!skel || !floor) {
        std::fprintf(stderr, "cannot load the BPF objects (root needed): %s\n", std::strerror(errno));
        return 1;
    }
    DatapathMaps maps = DatapathMaps::from_object(skel->obj);
    fill_world(maps);

    int xdp = bpf_program__fd(skel->progs.xdp_nic);
    int tc_nic = bpf_program__fd(skel->progs.tc_nic_ingress);
    int tc_pod = bpf_program__fd(skel->progs.tc_pod_ingress);
    int xdp_floor = bpf_program__fd(floor->progs.xdp_floor);
    int tc_floor = bpf_program__fd(floor->progs.tc_floor);

    std::vector<Path> paths = {
        {"xdp pass-through (not a service IP)", xdp, xdp_floor,
         from_host(Packet::tcp({host_ip, 40000}, {other_lan_ip, 6385}))},
        {"xdp ARP reply", xdp, xdp_floor, arp(1, broadcast, host_mac, host_ip, zero_mac, service_ip)},
        {"xdp listed port, on to tc", xdp, xdp_floor, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385}))},
        {"xdp drop (unlisted port)", xdp, xdp_floor, from_host(Packet::tcp({host_ip, 40000}, {service_ip, 22}))},
        {"tc nic pass-through (not a service IP)", tc_nic, tc_floor,
         from_host(Packet::tcp({host_ip, 40000}, {other_lan_ip, 6385}))},
        {"tc nic DNAT listed port + redirect_peer", tc_nic, tc_floor,
         from_host(Packet::tcp({host_ip, 40000}, {service_ip, 6385}))},
        {"tc nic DNAT recorded flow + redirect_peer", tc_nic, tc_floor,
         from_host(Packet::udp({host_ip, flow_host_port}, {service_ip, flow_pod_port}))},
        {"tc pod reverse SNAT (reply) + redirect", tc_pod, tc_floor,
         from_pod(Packet::tcp({pod_ip, 6385}, {host_ip, 40000}))},
        {"tc pod SNAT pod-initiated flow + redirect", tc_pod, tc_floor,
         from_pod(Packet::tcp({pod_ip, 45000}, {host_ip, 9999}))},
        {"tc nic DHCP relay request (broadcast DISCOVER)", tc_nic, tc_floor, discover_frame()},
        {"tc pod DHCP relay reply (OFFER, server id rewritten)", tc_pod, tc_floor, offer_frame()},
    };

    std::printf("| path | ns/packet median (p10-p90) | floor median | path - floor | ratio to floor |\n");
    std::printf("|---|---|---|---|---|\n");
    std::string json = "[";
    for (const Path &path : paths) {
        std::vector<double> candidate, baseline;
        run_once(path.prog_fd, path.frame); // warm: records the pod-initiated flow once
        for (int i = 0; i < runs; i++) {
            baseline.push_back(run_once(path.floor_fd, path.frame));
            candidate.push_back(run_once(path.prog_fd, path.frame));
        }
        Stats c = stats(candidate), b = stats(baseline);
        std::printf("| %s | %.0f (%.0f-%.0f) | %.0f | %.0f | %.2f |\n", path.name, c.median, c.p10, c.p90, b.median,
                    c.median - b.median, c.median / b.median);
        char entry[512];
        std::snprintf(entry, sizeof(entry),
                      "%s{\"path\":\"%s\",\"median_ns\":%.1f,\"p10_ns\":%.1f,\"p90_ns\":%.1f,\"floor_median_ns\":%.1f}",
                      json.size() > 1 ? "," : "", path.name, c.median, c.p10, c.p90, b.median);
        json += entry;
    }
    json += "]\n";
    if (!json_path.empty())
        std::ofstream(json_path) << json;
    std::printf("\n%d alternating runs per path, one packet per BPF_PROG_TEST_RUN (kernel-measured duration).\n", runs);
    floor_bpf__destroy(floor);
    bpfnet_bpf__destroy(skel);
    return 0;
}
