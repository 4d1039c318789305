#include "datapath_fixture.hpp"

#include "shell.hpp"

#include "core/desired_state.hpp"

#include "bpfnet.skel.h"
#include "loaded_datapath.hpp"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace bpfnet::test {

namespace {

int silent_libbpf(enum libbpf_print_level level, const char *format, va_list args) {
    return level == LIBBPF_WARN ? std::vfprintf(stderr, format, args) : 0;
}

} // namespace

const char *name(Program program) {
    switch (program) {
    case Program::XdpNic:
        return "xdp_nic";
    case Program::TcNic:
        return "tc_nic_ingress";
    case Program::TcPod:
        return "tc_pod_ingress";
    }
    return "?";
}

void DatapathTest::SetUp() {
    if (geteuid() != 0)
        GTEST_SKIP() << "BPF_PROG_TEST_RUN needs root (label bpf)";
    libbpf_set_print(silent_libbpf);
    skel_ = loaded_datapath();
    ASSERT_NE(skel_, nullptr) << "bpfnet_bpf__open_and_load: " << strerror(errno);
    ASSERT_NO_THROW(reset_maps(*skel_));
    maps_.emplace(DatapathMaps::from_skeleton(*skel_));
    fill_world(*maps_);
    events_ = {ring_buffer__new(
                   bpf_map__fd(skel_->maps.events),
                   [](void *ctx, void *data, size_t size) {
                       if (size >= sizeof(bpfnet_event))
                           static_cast<DatapathTest *>(ctx)->received_.push_back(*static_cast<bpfnet_event *>(data));
                       return 0;
                   },
                   this, nullptr),
               ring_buffer__free};
    ASSERT_NE(events_, nullptr);
    drain_events(); // what earlier cases left in the ring is theirs
}

void DatapathTest::TearDown() {
    events_.reset();
    maps_.reset();
    skel_ = nullptr;
}

void DatapathTest::in_own_namespace(const std::string &node, const std::function<std::string()> &check) {
    GTEST_FLAG_SET(death_test_style, "fast");
    EXPECT_EXIT(
        {
            if (unshare(CLONE_NEWNET) != 0 || run_bash("set -e; " + node) != 0) {
                std::fprintf(stderr, "cannot make the node's namespace\n");
                std::_Exit(2);
            }
            const std::string problem = check();
            if (!problem.empty())
                std::fprintf(stderr, "%s\n", problem.c_str());
            std::_Exit(problem.empty() ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
}

RunResult DatapathTest::run(Program program, const Bytes &frame) {
    bpf_program *prog = program == Program::XdpNic  ? skel_->progs.xdp_nic
                        : program == Program::TcNic ? skel_->progs.tc_nic_ingress
                                                    : skel_->progs.tc_pod_ingress;
    RunResult result;
    result.out.resize(frame.size() + 256);
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_out = result.out.data(),
                .data_size_in = static_cast<__u32>(frame.size()),
                .data_size_out = static_cast<__u32>(result.out.size()), .repeat = 1);
    int err = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);
    if (err != 0 && errno == EINVAL && frame.size() < kMinimumTestRunFrame) {
        result.refused = true;
        return result;
    }
    EXPECT_EQ(err, 0) << name(program) << ": BPF_PROG_TEST_RUN: " << strerror(errno);
    result.retval = static_cast<int>(opts.retval);
    result.out.resize(opts.data_size_out);
    return result;
}

std::vector<__u64> DatapathTest::counters() {
    return maps_->counters.all();
}

std::vector<bpfnet_event> DatapathTest::drain_events() {
    received_.clear();
    ring_buffer__consume(events_.get());
    return received_;
}

// The ACTIVE flag only: a source-ranges flag set_source_ranges() wrote stays.
void DatapathTest::set_active_flag(const std::string &service_ip, bool active) {
    bpfnet_service_ip entry = maps_->service_ips.lookup(key_ip(service_ip)).value_or(bpfnet_service_ip{});
    entry.flags = (entry.flags & ~BPFNET_SERVICE_IP_ACTIVE) | (active ? BPFNET_SERVICE_IP_ACTIVE : 0u);
    maps_->service_ips.update(key_ip(service_ip), entry);
}

void DatapathTest::set_service_ip_active(bool active) {
    set_active_flag(world::service_ip, active);
}

void DatapathTest::set_service_ip6_active(bool active) {
    set_active_flag(world::service_ip6, active);
}

void DatapathTest::set_heartbeat_age_seconds(int seconds) {
    // A machine up for less than that (a VM of the kernel matrix just booted) has no such time: no heartbeat
    // (0) is as stale as any. A wrapped value would read as a time in the future, a stopped loader's grace.
    const __u64 now = monotonic_ns(), age = static_cast<__u64>(seconds) * 1'000'000'000ull;
    maps_->heartbeat.update(0, bpfnet_heartbeat{now > age ? now - age : 0});
}

void DatapathTest::set_heartbeat_grace_seconds(int seconds) {
    maps_->heartbeat.update(0, bpfnet_heartbeat{monotonic_ns() + static_cast<__u64>(seconds) * 1'000'000'000ull});
}

void DatapathTest::set_source_ranges(const std::vector<std::string> &ranges, const std::string &service_ip) {
    ServiceSpec spec;
    spec.service_ip = key_ip(service_ip);
    for (const std::string &text : ranges) {
        auto slash = text.find('/');
        spec.source_ranges.push_back(
            {key_ip(text.substr(0, slash)), static_cast<uint8_t>(std::stoi(text.substr(slash + 1)))});
    }
    for (const auto &[key, value] : desired_state({spec}).source_ranges)
        maps_->source_ranges.update(key, value);
    // As the loader writes it: the service IP says it has ranges (kept by set_service_ip_active).
    bpfnet_service_ip entry = maps_->service_ips.lookup(spec.service_ip).value_or(bpfnet_service_ip{});
    entry.flags =
        (entry.flags & ~BPFNET_SERVICE_IP_SOURCE_RANGES) | (ranges.empty() ? 0u : BPFNET_SERVICE_IP_SOURCE_RANGES);
    maps_->service_ips.update(spec.service_ip, entry);
    derive_loader_fields(*maps_);
}

void DatapathTest::set_backend_mtu(uint16_t mtu) {
    bpfnet_backend backend = maps_->backends.lookup(key_ip(world::pod_ip)).value();
    backend.mtu = mtu;
    maps_->backends.update(key_ip(world::pod_ip), backend);
    derive_loader_fields(*maps_);
}

void DatapathTest::remove_backend() {
    maps_->backends.erase(key_ip(world::pod_ip));
    maps_->backends.erase(key_ip(world::pod_ip6));
    derive_loader_fields(*maps_);
}

} // namespace bpfnet::test
