#include "datapath_fixture.hpp"

#include "bpfnet.skel.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

namespace bpfnet::test {

namespace {

__u64 now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<__u64>(ts.tv_sec) * 1000000000ull + static_cast<__u64>(ts.tv_nsec);
}

void copy_mac(__u8 *dst, const Mac &src) { std::copy(src.begin(), src.end(), dst); }

int silent_libbpf(enum libbpf_print_level level, const char *format, va_list args) {
    return level == LIBBPF_WARN ? std::vfprintf(stderr, format, args) : 0;
}

void add_service(DatapathMaps &maps, uint8_t proto, uint16_t port, uint16_t target_port, uint8_t kind) {
    bpfnet_service_key key{};
    key.service_ip_be = ip(world::service_ip);
    key.port_be = htons(port);
    key.proto = proto;
    bpfnet_service value{};
    value.backend_ip_be = ip(world::pod_ip);
    value.backend_port_be = htons(target_port);
    value.kind = kind;
    maps.services.update(key, value);

    bpfnet_backend_port_key rkey{};
    rkey.backend_ip_be = ip(world::pod_ip);
    rkey.port_be = htons(target_port);
    rkey.proto = proto;
    bpfnet_backend_port rvalue{};
    rvalue.service_ip_be = ip(world::service_ip);
    rvalue.service_port_be = htons(port);
    rvalue.kind = kind;
    maps.backend_ports.update(rkey, rvalue);
}

void fill_world(DatapathMaps &maps) {
    bpfnet_iface iface{};
    iface.nic_ifindex = world::nic_ifindex;
    copy_mac(iface.nic_mac, world::nic_mac);
    iface.subnet_be = ip("198.18.0.0");
    iface.subnet_mask_be = ip("255.255.255.0");
    iface.heartbeat_timeout_ns = 5'000'000'000ull;
    maps.iface.update(0, iface);
    maps.heartbeat.update(0, bpfnet_heartbeat{now_ns()});
    maps.service_ips.update(ip(world::service_ip), bpfnet_service_ip{BPFNET_SERVICE_IP_ACTIVE});

    add_service(maps, kTcp, 6385, 6385, BPFNET_KIND_PLAIN); // Ironic API
    add_service(maps, kTcp, 80, 8080, BPFNET_KIND_PLAIN);   // port translation
    add_service(maps, kUdp, 69, 69, BPFNET_KIND_TFTP);

    bpfnet_backend backend{};
    backend.ifindex = world::veth_ifindex;
    copy_mac(backend.pod_mac, world::pod_mac);
    copy_mac(backend.host_mac, world::veth_mac);
    backend.service_ip_be = ip(world::service_ip);
    backend.flags = BPFNET_BACKEND_REDIRECT_PEER;
    maps.backends.update(ip(world::pod_ip), backend);

    bpfnet_neighbour neighbour{};
    copy_mac(neighbour.mac, world::host_mac);
    maps.neighbours.update(ip(world::host_ip), neighbour);

    bpfnet_flow_key fkey{};
    fkey.remote_ip_be = ip(world::host_ip);
    fkey.service_ip_be = ip(world::service_ip);
    fkey.remote_port_be = htons(world::flow_host_port);
    fkey.service_port_be = htons(world::flow_pod_port);
    fkey.proto = kUdp;
    maps.flows.update(fkey, bpfnet_flow{ip(world::pod_ip), htons(world::flow_pod_port), {0, 0}});
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
    skel_ = {bpfnet_bpf__open_and_load(), bpfnet_bpf__destroy};
    ASSERT_NE(skel_, nullptr) << "bpfnet_bpf__open_and_load: " << strerror(errno);
    maps_.emplace(DatapathMaps::from_object(skel_->obj));
    fill_world(*maps_);
    events_ = {ring_buffer__new(
                   bpf_map__fd(skel_->maps.events),
                   [](void *ctx, void *data, size_t size) {
                       if (size >= sizeof(bpfnet_event))
                           static_cast<DatapathTest *>(ctx)->received_.push_back(
                               *static_cast<bpfnet_event *>(data));
                       return 0;
                   },
                   this, nullptr),
               ring_buffer__free};
    ASSERT_NE(events_, nullptr);
}

void DatapathTest::TearDown() {
    events_.reset();
    maps_.reset();
    skel_.reset();
}

RunResult DatapathTest::run(Program program, const Bytes &frame) {
    bpf_program *prog = program == Program::XdpNic  ? skel_->progs.xdp_nic
                        : program == Program::TcNic ? skel_->progs.tc_nic_ingress
                                                    : skel_->progs.tc_pod_ingress;
    RunResult result;
    result.out.resize(frame.size() + 256);
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_out = result.out.data(),
                .data_size_in = static_cast<__u32>(frame.size()), .data_size_out = static_cast<__u32>(result.out.size()),
                .repeat = 1);
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

std::vector<__u64> DatapathTest::counters() { return maps_->counters.all(); }

std::vector<bpfnet_event> DatapathTest::drain_events() {
    received_.clear();
    ring_buffer__consume(events_.get());
    return received_;
}

void DatapathTest::set_service_ip_active(bool active) {
    maps_->service_ips.update(ip(world::service_ip), bpfnet_service_ip{active ? BPFNET_SERVICE_IP_ACTIVE : 0u});
}

void DatapathTest::set_heartbeat_age_seconds(int seconds) {
    maps_->heartbeat.update(0, bpfnet_heartbeat{now_ns() - static_cast<__u64>(seconds) * 1'000'000'000ull});
}

void DatapathTest::remove_backend() { maps_->backends.erase(ip(world::pod_ip)); }

} // namespace bpfnet::test
