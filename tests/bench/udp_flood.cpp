// The small-packet generator: BPF_PROG_TEST_RUN in live-frames mode (BPF_F_TEST_XDP_LIVE_FRAMES, Linux
// 5.18) sends one 64-byte UDP frame COUNT times out of IFNAME, from inside the kernel, as fast as the
// path behind the interface takes them. Run it in the network namespace of IFNAME. Prints the frames
// handed to the kernel and the time taken, as JSON, for tests/bench/packet_rate.sh.
//
//   bench_udp_flood --ifname IF --src-mac M --dst-mac M --src IP --dst IP --dport PORT --count N
#include "live_frames.skel.h"
#include "tests/bpf/packet.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <net/if.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

namespace {

using namespace bpfnet::test;

// 14 Ethernet + 20 IPv4 + 8 UDP + 18 payload = 60 bytes, a 64-byte frame on the wire with its FCS.
constexpr size_t kPayloadBytes = 18;
constexpr size_t kFrameBytes = 60;
constexpr unsigned kBatch = 64;

struct Options {
    std::string ifname, src_mac, dst_mac, src, dst;
    uint16_t dport = 0;
    unsigned count = 0;
};

bool parse(int argc, char **argv, Options &o) {
    std::map<std::string, std::string> args;
    for (int i = 1; i + 1 < argc; i += 2)
        args[argv[i]] = argv[i + 1];
    if (argc % 2 == 0 || args.size() != 7)
        return false;
    try {
        o.ifname = args.at("--ifname");
        o.src_mac = args.at("--src-mac");
        o.dst_mac = args.at("--dst-mac");
        o.src = args.at("--src");
        o.dst = args.at("--dst");
        o.dport = static_cast<uint16_t>(std::stoul(args.at("--dport")));
        o.count = static_cast<unsigned>(std::stoul(args.at("--count")));
    } catch (const std::exception &) {
        return false;
    }
    return o.count > 0;
}

Bytes small_udp_frame(const Options &o) {
    return Packet::udp({o.src, 40000}, {o.dst, o.dport})
        .payload(std::string(kPayloadBytes, 'x'))
        .macs(mac(o.dst_mac), mac(o.src_mac))
        .bytes();
}

// The program with FRAME as the template it writes into every frame it sends.
live_frames_bpf *load_generator(const Bytes &frame) {
    live_frames_bpf *skel = live_frames_bpf__open();
    if (skel == nullptr)
        return nullptr;
    static_assert(sizeof(skel->rodata->frame_words) + sizeof(skel->rodata->frame_tail) == kFrameBytes);
    std::memcpy(const_cast<__u64 *>(skel->rodata->frame_words), frame.data(), sizeof(skel->rodata->frame_words));
    std::memcpy(const_cast<__u32 *>(&skel->rodata->frame_tail), frame.data() + sizeof(skel->rodata->frame_words),
                sizeof(skel->rodata->frame_tail));
    if (live_frames_bpf__load(skel) != 0) {
        live_frames_bpf__destroy(skel);
        return nullptr;
    }
    return skel;
}

} // namespace

int main(int argc, char **argv) {
    Options o;
    if (!parse(argc, argv, o)) {
        std::cerr << "usage: bench_udp_flood --ifname IF --src-mac M --dst-mac M --src IP --dst IP --dport PORT "
                     "--count N\n";
        return 2;
    }
    const unsigned ifindex = if_nametoindex(o.ifname.c_str());
    if (ifindex == 0) {
        std::perror(o.ifname.c_str());
        return 1;
    }
    Bytes frame = small_udp_frame(o);
    if (frame.size() != kFrameBytes) { // the program's template has exactly this size
        std::cerr << "bench_udp_flood: built a " << frame.size() << "-byte frame, not " << kFrameBytes << "\n";
        return 1;
    }
    live_frames_bpf *skel = load_generator(frame);
    if (skel == nullptr) {
        std::perror("loading live_frames.bpf.o");
        return 1;
    }
    xdp_md ctx{};
    ctx.data_end = static_cast<__u32>(frame.size()); // the kernel wants the frame's extent in the context too
    ctx.ingress_ifindex = ifindex;
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_size_in = static_cast<__u32>(frame.size()),
                .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = static_cast<int>(o.count),
                .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .batch_size = kBatch);
    const auto start = std::chrono::steady_clock::now();
    const int err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.xdp_transmit), &opts);
    const auto took = std::chrono::steady_clock::now() - start;
    live_frames_bpf__destroy(skel);
    if (err != 0) {
        std::perror("BPF_PROG_TEST_RUN (live frames)");
        return 1;
    }
    nlohmann::ordered_json out{{"frames", o.count},
                               {"frame_bytes", frame.size() + 4},
                               {"seconds", std::chrono::duration<double>(took).count()}};
    std::cout << out.dump() << "\n";
    return 0;
}
