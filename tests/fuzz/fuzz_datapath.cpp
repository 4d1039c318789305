// bpfnet-fuzz: random and damaged frames through each of bpfnet's BPF programs (BPF_PROG_TEST_RUN), every
// result checked against the reference model (reference_model.hpp, written from docs/design.md): the
// verdict, every byte of a rewritten frame, its checksums, the trace record, the events, and per batch the
// counters and the learned state (neighbours, flows, DHCP server identifiers, conflicts). Every fourth batch
// is IPv6, judged by properties instead of the model (ipv6_frames.hpp). Needs root; no network is touched
// (test runs, no attach).
//
//   bpfnet-fuzz --frames 1000000            quick mode (scripts/test.sh): at least that many per program
//   bpfnet-fuzz --frames 10000000           long mode; reports frames per second
//   bpfnet-fuzz --object mutant.bpf.o       another build of the datapath (tests/fuzz/mutants.py)
//
// Exit status: 0 when every frame matched, 1 on any violation, 2 when the run itself failed.
#include "core/monotonic_clock.hpp"
#include "frame_generator.hpp"
#include "ipv6_frames.hpp"
#include "maps/datapath_maps.hpp"
#include "maps/layout.hpp"
#include "object_constants.hpp"
#include "reference_model.hpp"

#include <CLI/CLI.hpp>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>

namespace bpfnet::fuzz {
namespace {

// The kernel refuses test runs on runts: XDP needs the Ethernet header, TC the network header its
// ethertype names as well (IPv4 20 bytes; IPv6 40).
size_t minimum_frame(Program program, const Bytes &frame) {
    if (program == Program::XdpNic)
        return 14;
    return frame.size() >= 14 && frame[12] == 0x86 && frame[13] == 0xdd ? 54 : 34;
}

std::string hex(const Bytes &b) {
    static const char *digits = "0123456789abcdef";
    std::string s;
    for (uint8_t x : b) {
        s += digits[x >> 4];
        s += digits[x & 15];
    }
    return s;
}

std::string dotted(Ip ip) {
    const auto *b = reinterpret_cast<const uint8_t *>(&ip);
    return std::to_string(b[0]) + "." + std::to_string(b[1]) + "." + std::to_string(b[2]) + "." + std::to_string(b[3]);
}

uint16_t be16(const Bytes &b, size_t off) {
    return static_cast<uint16_t>(b[off] << 8 | b[off + 1]);
}

// The ones' complement sum a checksum makes over its bytes (0xffff when it is right), folded so that 0 and
// 0xffff (the two zeros) compare equal.
uint16_t residual(const Bytes &f, size_t off, size_t len, uint32_t initial = 0) {
    uint16_t check = internet_checksum(&f[off], len, initial);
    uint16_t sum = static_cast<uint16_t>(~check);
    return sum == 0 ? 0xffff : sum;
}

uint32_t pseudo_sum(const Bytes &f, const ChecksumRule &r) {
    uint32_t acc = 0;
    for (size_t i = 0; i < 8; i += 2)
        acc += be16(f, r.ip_offset + 12 + i);
    return acc + r.proto + static_cast<uint32_t>(r.length);
}

// What a datapath object exposes to the fuzzer.
struct Datapath {
    std::unique_ptr<bpf_object, void (*)(bpf_object *)> obj{nullptr, bpf_object__close};
    std::array<int, 3> prog_fd{};
    std::optional<DatapathMaps> maps;
    std::unique_ptr<ring_buffer, void (*)(ring_buffer *)> events{nullptr, ring_buffer__free};
    std::unique_ptr<ring_buffer, void (*)(ring_buffer *)> trace{nullptr, ring_buffer__free};
    std::vector<bpfnet_event> received_events;
    std::vector<bpfnet_trace> received_traces;
    const char *l4_checksums = "";
};

int quiet_libbpf(enum libbpf_print_level level, const char *format, va_list args) {
    return level == LIBBPF_WARN ? std::vfprintf(stderr, format, args) : 0;
}

void open_datapath(Datapath &d, const std::string &path) {
    libbpf_set_print(quiet_libbpf);
    d.obj.reset(bpf_object__open_file(path.c_str(), nullptr));
    if (!d.obj)
        throw std::runtime_error("bpf_object__open_file " + path + ": " + std::strerror(errno));
    // As the loader loads it on this kernel, or with the kernel's checksum helpers when asked (the way the
    // programs run before 6.2).
    const bool computes = test::computes_l4_checksums();
    test::set_byte_constant(d.obj.get(), "kernel_reads_skb_csum", computes ? 1 : 0);
    d.l4_checksums = computes ? "computed by the programs" : "kernel helpers";
    if (bpf_object__load(d.obj.get()) != 0)
        throw std::runtime_error("bpf_object__load " + path + ": " + std::strerror(errno));
    const char *names[] = {BPFNET_PROG_XDP_NIC, BPFNET_PROG_TC_NIC, BPFNET_PROG_TC_POD};
    for (size_t i = 0; i < 3; i++) {
        bpf_program *prog = bpf_object__find_program_by_name(d.obj.get(), names[i]);
        if (!prog)
            throw std::runtime_error(std::string("no program ") + names[i] + " in " + path);
        d.prog_fd[i] = bpf_program__fd(prog);
    }
    d.maps.emplace(DatapathMaps::from_object(d.obj.get()));
    auto ring = [&](const char *map_name, ring_buffer_sample_fn fn) {
        bpf_map *map = bpf_object__find_map_by_name(d.obj.get(), map_name);
        ring_buffer *rb = map ? ring_buffer__new(bpf_map__fd(map), fn, &d, nullptr) : nullptr;
        if (!rb)
            throw std::runtime_error(std::string("ring buffer ") + map_name);
        return rb;
    };
    d.events.reset(ring(BPFNET_MAP_NAME(events), [](void *ctx, void *data, size_t size) {
        if (size >= sizeof(bpfnet_event))
            static_cast<Datapath *>(ctx)->received_events.push_back(*static_cast<bpfnet_event *>(data));
        return 0;
    }));
    d.trace.reset(ring(BPFNET_MAP_NAME(trace), [](void *ctx, void *data, size_t size) {
        if (size >= sizeof(bpfnet_trace))
            static_cast<Datapath *>(ctx)->received_traces.push_back(*static_cast<bpfnet_trace *>(data));
        return 0;
    }));
}

void copy_mac(__u8 *to, const Mac &from) {
    std::copy(from.begin(), from.end(), to);
}

void write_known_host6(DatapathMaps &m);

bpfnet_ip key6(const Ip6 &ip) {
    bpfnet_ip k{};
    std::memcpy(&k, ip.data(), 16);
    return k;
}
Ip6 ip6_of(const bpfnet_ip &k) {
    Ip6 ip{};
    std::memcpy(ip.data(), &k, 16);
    return ip;
}

// The IPv6 half of the world (ipv6_frames.hpp), beside the model's IPv4 one: the provisioning prefix, the
// service address with its listed ports and the pod behind it, the DHCPv6 relay, one known host.
void write_world6(DatapathMaps &m, const ModelConfig &c) {
    bpfnet_iface iface = m.iface.lookup(0).value();
    iface.subnet6 = prefix_of(key6(ipv6(world6::subnet)), world6::prefix_len);
    iface.dhcp6_service_ip = key6(ipv6(world6::service_ip));
    iface.nic_link_local = key6(ipv6(world6::nic_link_local));
    mark_service_ip(iface, key6(ipv6(world6::service_ip)));
    m.iface.update(0, iface);
    const bpfnet_ip service = key6(ipv6(world6::service_ip)), pod = key6(ipv6(world6::pod_ip));
    const Backend &b = c.backends.begin()->second; // the IPv4 pod's veth: the same pod, dual stack
    bpfnet_backend v{};
    v.ifindex = world::veth_ifindex;
    std::copy(b.pod_mac.begin(), b.pod_mac.end(), v.pod_mac);
    std::copy(b.veth_mac.begin(), b.veth_mac.end(), v.veth_mac);
    v.service_ip = service;
    v.flags = BPFNET_BACKEND_REDIRECT_PEER;
    v.mtu = b.mtu;
    m.backends.update(pod, v);
    for (const world6::Listed &l : world6::listed) {
        m.services.update({service, htons(l.port), l.proto, 0},
                          {pod, htons(l.pod_port), l.kind, 0, pod_link_of(v), {}});
        m.backend_ports.update({pod, htons(l.pod_port), l.proto, 0}, {service, htons(l.port), l.kind, 0});
    }
    m.dhcp_relays.update(key6(ipv6(world6::known_host_ip)), bpfnet_dhcp_relay{});
    write_known_host6(m);
}

void write_known_host6(DatapathMaps &m) {
    bpfnet_neighbour n{};
    const Mac known = world_state().neighbours.at(ipv4(world::known_host_ip)); // one host, both families
    std::copy(known.begin(), known.end(), n.mac);
    m.neighbours.update(key6(ipv6(world6::known_host_ip)), n);
}

// Writes the model's configuration and state into the maps, as the loader (and earlier traffic) would.
void write_world(DatapathMaps &m, const ModelConfig &c, const ModelState &s) {
    bpfnet_iface iface{};
    iface.nic_ifindex = world::nic_ifindex;
    copy_mac(iface.nic_mac, c.nic_mac);
    // The model's subnet and mask as they are, whatever their bits: the datapath's test is (ip & mask) == net.
    iface.subnet.net = ip_from_v4(c.subnet);
    iface.subnet.mask = bpfnet_ip{{0xffffffffu, 0xffffffffu, 0xffffffffu, c.mask}};
    iface.subnet.len = 96 + static_cast<__u32>(std::popcount(c.mask));
    iface.heartbeat_timeout_ns = 3600'000'000'000ull; // alive stays alive however slow the machine
    iface.dhcp_service_ip = c.dhcp_service_ip ? ip_from_v4(c.dhcp_service_ip) : bpfnet_ip{};
    iface.dhcp_max_hops = c.dhcp_max_hops;
    for (const auto &[ip, active] : c.service_ips)
        mark_service_ip(iface, ip_from_v4(ip));
    m.iface.update(0, iface);
    for (const auto &[ip, b] : c.backends) {
        bpfnet_backend v{};
        v.ifindex = world::veth_ifindex;
        copy_mac(v.pod_mac, b.pod_mac);
        copy_mac(v.veth_mac, b.veth_mac);
        v.service_ip = ip_from_v4(b.service_ip);
        v.flags = BPFNET_BACKEND_REDIRECT_PEER;
        v.mtu = b.mtu;
        m.backends.update(ip_from_v4(ip), v);
    }
    // Each listed port with its backend's pod link, as the loader writes it (none: no backend here).
    for (const auto &[key, port] : c.services) {
        auto [ip, p, proto] = key;
        const bpfnet_ip backend_ip = port.backend_ip != 0 ? ip_from_v4(port.backend_ip) : bpfnet_ip{};
        auto backend = m.backends.lookup(backend_ip);
        m.services.update(
            {ip_from_v4(ip), p, proto, 0},
            {backend_ip, port.backend_port, port.kind, 0, backend ? pod_link_of(*backend) : bpfnet_pod_link{}, {}});
    }
    for (const auto &[key, port] : c.backend_ports) {
        auto [ip, p, proto] = key;
        m.backend_ports.update({ip_from_v4(ip), p, proto, 0},
                               {ip_from_v4(port.service_ip), port.service_port, port.kind, 0});
    }
    for (Ip relay : c.relays)
        m.dhcp_relays.update(ip_from_v4(relay), bpfnet_dhcp_relay{});
    auto write_neighbours = [](auto &map, const std::map<Ip, Mac> &hosts) {
        for (const auto &[ip, mac] : hosts) {
            bpfnet_neighbour n{};
            copy_mac(n.mac, mac);
            map.update(ip_from_v4(ip), n);
        }
    };
    write_neighbours(m.neighbours, s.neighbours);
    write_neighbours(m.neighbours_unconfirmed, s.neighbours_unconfirmed);
}

// The switches that change between batches: the loader alive or not, the service IP owned or not.
void write_switches(DatapathMaps &m, const ModelConfig &c) {
    // A dead loader: no heartbeat at all (a time long past could lie before this machine booted).
    m.heartbeat.update(0, bpfnet_heartbeat{c.loader_alive ? monotonic_ns() : 0});
    for (const auto &[ip, active] : c.service_ips)
        m.service_ips.update(ip_from_v4(ip), bpfnet_service_ip{active ? BPFNET_SERVICE_IP_ACTIVE : 0u});
    // The IPv6 service address is owned with the IPv4 one (one node, one dual-stack service).
    const bool owned = c.service_ips.at(ipv4(world::service_ip));
    m.service_ips.update(key6(ipv6(world6::service_ip)), bpfnet_service_ip{owned ? BPFNET_SERVICE_IP_ACTIVE : 0u});
}

// The IPv4 state, as the model keeps it (the IPv6 entries are the IPv6 batches' to judge).
ModelState read_state(const DatapathMaps &m) {
    ModelState s;
    auto neighbours = [](const auto &map, std::map<Ip, Mac> &into) {
        for (const auto &[ip, n] : map.entries())
            if (is_v4(ip))
                std::copy(std::begin(n.mac), std::end(n.mac), into[v4_of(ip)].begin());
    };
    neighbours(m.neighbours, s.neighbours);
    neighbours(m.neighbours_unconfirmed, s.neighbours_unconfirmed);
    auto flows = [](const auto &map, auto &into) {
        for (const auto &[k, v] : map.entries())
            if (is_v4(k.remote_ip))
                into[{v4_of(k.remote_ip), v4_of(k.service_ip), k.remote_port_be, k.service_port_be, k.proto}] = {
                    v4_of(v.backend_ip), v.backend_port_be};
    };
    flows(m.flows, s.flows);
    flows(m.flows_unconfirmed, s.flows_unconfirmed);
    for (const auto &[ip, v] : m.flow_shares.entries())
        if (is_v4(ip))
            s.flow_shares[v4_of(ip)] = v.confirmed;
    for (const auto &[ip, v] : m.dhcp_servers.entries())
        s.dhcp_servers[ip] = v.server_id_be;
    for (const auto &[ip, v] : m.conflicts.entries())
        if (is_v4(ip))
            std::copy(std::begin(v.mac), std::end(v.mac), s.conflicts[v4_of(ip)].begin());
    return s;
}

// What IPv6 frames taught the datapath: the IPv6 entries of the learned tables.
struct State6 {
    std::map<Ip6, Mac> neighbours;
    size_t flows = 0, conflicts = 0;
    std::set<Ip6> conflict_ips;
};
State6 read_state6(const DatapathMaps &m) {
    State6 s;
    for (const auto *map : {&m.neighbours, &m.neighbours_unconfirmed})
        for (const auto &[ip, n] : map->entries())
            if (!is_v4(ip))
                std::copy(std::begin(n.mac), std::end(n.mac), s.neighbours[ip6_of(ip)].begin());
    for (const auto &[ip, v] : m.conflicts.entries())
        if (!is_v4(ip))
            s.conflict_ips.insert(ip6_of(ip));
    return s;
}

struct Options {
    uint64_t frames = 1'000'000; // at least this many per program
    uint64_t seed = 0;
    std::string object = BPFNET_OBJECT_PATH;
    uint64_t batch = 4096;
    size_t examples = 3;
    uint64_t enough = 1000; // violations after which the run stops: the verdict is known
};

class Fuzzer {
public:
    explicit Fuzzer(const Options &o)
        : opt_(o), gen_(o.seed), gen6_(o.seed ^ 0x6666), model_(world_config(), world_state()) {
        open_datapath(d_, o.object);
        write_world(*d_.maps, model_.config(), model_.state());
        write_world6(*d_.maps, model_.config());
    }

    int run() {
        auto start = std::chrono::steady_clock::now();
        uint64_t batch = 0;
        while (std::ranges::any_of(frames_, [&](uint64_t n) { return n < opt_.frames; })) {
            run_batch(batch++);
            if (violations_total_ >= opt_.enough)
                break; // enough to tell
        }
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        report(seconds, batch);
        return violations_total_ == 0 ? 0 : 1;
    }

private:
    Options opt_;
    FrameGenerator gen_;
    FrameGenerator6 gen6_;
    uint64_t frames6_ = 0;
    ReferenceModel model_;
    Datapath d_;
    std::array<uint64_t, 3> frames_{}, refused_{};
    std::array<double, 3> run_seconds_{};
    std::map<std::string, uint64_t> violations_;
    std::map<std::string, std::vector<std::string>> examples_;
    uint64_t violations_total_ = 0, damaged_ = 0, rewritten_ = 0;
    std::map<std::string, uint64_t> walks_;
    bool tracing_ = false;
    std::string last_frames_;
    std::vector<uint64_t> model_counts_ = std::vector<uint64_t>(BPFNET_CTR_MAX);
    std::vector<uint64_t> run_counts_ = std::vector<uint64_t>(BPFNET_CTR_MAX); // over the run, for coverage

    void violation(const std::string &what, const std::string &detail) {
        violations_total_++;
        if (violations_[what]++ < opt_.examples)
            examples_[what].push_back(detail);
    }

    // The learned state back to the world's, in the maps and the model: keeps the tables far below their
    // LRU sizes (an eviction the model cannot predict) and the per-batch comparison cheap.
    void forget_learned_state() {
        auto clear = [](auto &map) {
            for (const auto &entry : map.entries())
                map.erase(entry.first);
        };
        clear(d_.maps->flows);
        clear(d_.maps->flows_unconfirmed);
        clear(d_.maps->flow_shares);
        clear(d_.maps->neighbours);
        clear(d_.maps->neighbours_unconfirmed);
        clear(d_.maps->dhcp_servers);
        clear(d_.maps->conflicts);
        model_ = ReferenceModel(model_.config(), world_state());
        write_world(*d_.maps, model_.config(), model_.state());
        write_known_host6(*d_.maps);
    }

    void run_batch(uint64_t batch) {
        if (batch % 16 == 15)
            forget_learned_state();
        // Mostly the normal state; sometimes a dead loader, or a node that owns no IP (a standby).
        std::mt19937_64 switches(opt_.seed ^ (batch * 0x9e3779b97f4a7c15ull));
        model_.config().loader_alive = switches() % 5 != 0;
        model_.config().service_ips[ipv4(world::service_ip)] = switches() % 7 != 0;
        tracing_ = batch % 2 == 1;
        write_switches(*d_.maps, model_.config());
        if (batch % 4 == 3) { // every fourth batch IPv6, judged by its properties (ipv6_frames.hpp)
            run_batch6(batch);
            return;
        }
        d_.maps->trace_control.update(0, bpfnet_trace_control{tracing_ ? 1u : 0u, 0});
        std::vector<__u64> counters_before = d_.maps->counters.all();
        std::fill(model_counts_.begin(), model_counts_.end(), 0);
        ModelState kernel_before = read_state(*d_.maps);
        model_.take_arp_moves();

        for (uint64_t i = 0; i < opt_.batch; i++) {
            GeneratedFrame g = gen_.next();
            damaged_ += g.damaged;
            if (g.from_pod) {
                check_frame(Program::TcPod, g);
            } else {
                check_frame(Program::XdpNic, g);
                check_frame(Program::TcNic, g);
            }
        }
        check_batch(batch, counters_before, kernel_before);
        last_frames_.clear();
    }

    // One test run: the verdict and the frame as the program left it; nullopt for a runt the kernel refuses.
    std::optional<std::pair<int, Bytes>> test_run(Program program, const Bytes &frame) {
        size_t p = static_cast<size_t>(program);
        Bytes out(frame.size() + 256);
        LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_out = out.data(),
                    .data_size_in = static_cast<__u32>(frame.size()), .data_size_out = static_cast<__u32>(out.size()),
                    .repeat = 1);
        auto t0 = std::chrono::steady_clock::now();
        int err = bpf_prog_test_run_opts(d_.prog_fd[p], &opts);
        run_seconds_[p] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (err != 0 && errno == EINVAL && frame.size() < minimum_frame(program, frame)) {
            refused_[p]++;
            return std::nullopt;
        }
        if (err != 0)
            throw std::runtime_error(std::string("BPF_PROG_TEST_RUN ") + name(program) + ": " + std::strerror(errno) +
                                     " on frame " + hex(frame));
        out.resize(opts.data_size_out);
        frames_[p]++;
        return std::make_pair(static_cast<int>(opts.retval), out);
    }

    // A batch of IPv6 frames: each result has the properties of check_ipv6_result; the batch changes no IPv4
    // state; a known host's entry changes only through neighbour discovery about it; the datapath never
    // takes its own service address or the pod's for a neighbour.
    void run_batch6(uint64_t batch) {
        std::vector<__u64> counters_before = d_.maps->counters.all();
        ModelState v4_before = read_state(*d_.maps);
        State6 before = read_state6(*d_.maps);
        std::set<Ip6> ndp_about;
        World6View view;
        view.service_active = model_.config().service_ips.at(ipv4(world::service_ip));
        view.neighbour_mac = [this](const Ip6 &ip) -> std::optional<Mac> {
            auto n = d_.maps->neighbours.lookup(key6(ip));
            if (!n)
                n = d_.maps->neighbours_unconfirmed.lookup(key6(ip));
            if (!n)
                return std::nullopt;
            Mac m{};
            std::copy(std::begin(n->mac), std::end(n->mac), m.begin());
            return m;
        };
        for (uint64_t i = 0; i < opt_.batch; i++) {
            GeneratedFrame6 g = gen6_.next();
            damaged_ += g.damaged;
            frames6_++;
            if (g.ndp_about)
                ndp_about.insert(*g.ndp_about);
            view.pod_ports = gen6_.pod_ports();
            for (const world6::Listed &l : world6::listed)
                view.pod_ports.insert(l.pod_port);
            for (Program program :
                 g.from_pod ? std::vector{Program::TcPod} : std::vector{Program::XdpNic, Program::TcNic}) {
                auto result = test_run(program, g.bytes);
                d_.received_events.clear();
                d_.received_traces.clear();
                ring_buffer__consume(d_.events.get());
                ring_buffer__consume(d_.trace.get());
                if (!result)
                    continue;
                if (auto v = check_ipv6_result(program, g.bytes, result->first, result->second, view))
                    violation("ipv6: " + v->what,
                              std::string(name(program)) + " (" + g.kind + (g.damaged ? ", damaged" : "") + ") " +
                                  v->detail + "\n      frame " + hex(g.bytes) + "\n      out   " + hex(result->second));
            }
        }
        std::vector<__u64> after = d_.maps->counters.all();
        for (size_t c = 0; c < BPFNET_CTR_MAX; c++)
            run_counts_[c] += after[c] - counters_before[c];
        if (!(read_state(*d_.maps) == v4_before))
            violation("ipv6: an IPv6 batch changed IPv4 state", "batch " + std::to_string(batch));
        State6 now = read_state6(*d_.maps);
        const Ip6 known = ipv6(world6::known_host_ip);
        if (before.neighbours.contains(known) && now.neighbours.contains(known) &&
            before.neighbours.at(known) != now.neighbours.at(known) && !ndp_about.contains(known))
            violation("ipv6: a known host's entry moved without neighbour discovery about it",
                      "batch " + std::to_string(batch));
        for (const char *own : {world6::service_ip, world6::pod_ip})
            if (now.neighbours.contains(ipv6(own)))
                violation("ipv6: learned a neighbour entry for its own address", own);
        for (const Ip6 &ip : now.conflict_ips)
            if (ip != ipv6(world6::service_ip))
                violation("ipv6: a conflict recorded for an address that is no service address",
                          "batch " + std::to_string(batch));
        forget_learned_state6();
    }

    // The IPv6 entries back to the world's, so that IPv4 batches see only their own.
    void forget_learned_state6() {
        auto clear6 = [](auto &map, auto key_ip) {
            for (const auto &entry : map.entries())
                if (!is_v4(key_ip(entry.first)))
                    map.erase(entry.first);
        };
        clear6(d_.maps->neighbours, [](const bpfnet_ip &k) { return k; });
        clear6(d_.maps->neighbours_unconfirmed, [](const bpfnet_ip &k) { return k; });
        clear6(d_.maps->conflicts, [](const bpfnet_ip &k) { return k; });
        clear6(d_.maps->flows, [](const bpfnet_flow_key &k) { return k.remote_ip; });
        clear6(d_.maps->flows_unconfirmed, [](const bpfnet_flow_key &k) { return k.remote_ip; });
        clear6(d_.maps->flow_shares, [](const bpfnet_ip &k) { return k; });
        write_known_host6(*d_.maps);
    }

    void check_frame(Program program, const GeneratedFrame &g) {
        const Bytes &frame = g.bytes;
        auto result = test_run(program, frame);
        if (!result)
            return; // a runt no driver hands to a program either
        const Bytes &out = result->second;

        Expectation e = model_.run(program, frame);
        for (uint32_t c : e.counted) {
            model_counts_[c]++;
            run_counts_[c]++;
        }
        walks_[std::string(name(program)) + ": " + (e.walk.empty() ? "-" : e.walk)]++;
        rewritten_ += e.rewritten;
        d_.received_events.clear();
        d_.received_traces.clear();
        ring_buffer__consume(d_.events.get());
        ring_buffer__consume(d_.trace.get());

        auto context = [&] {
            std::ostringstream s;
            s << name(program) << " (" << g.kind << (g.damaged ? ", damaged" : "") << "; model: " << e.walk
              << ")\n      frame " << hex(frame);
            return s.str();
        };
        if (opt_.batch == 1)
            last_frames_ += "\n    " + context(); // --batch 1 names the frame behind a counter or state difference
        int verdict = result->first;
        if (verdict != e.verdict) {
            violation("verdict", context() + "\n      verdict " + std::to_string(verdict) + ", model " +
                                     std::to_string(e.verdict));
            return; // the rest follows from it
        }
        check_bytes(e, frame, out, context);
        check_events(e, context);
        if (tracing_)
            check_trace(e, context);
    }

    void check_bytes(const Expectation &e, const Bytes &in, const Bytes &out, const auto &context) {
        if (!e.bytes_matter)
            return;
        if (out.size() != in.size()) {
            violation("length", context() + "\n      out " + hex(out));
            return;
        }
        std::vector<bool> skip(out.size());
        for (const ChecksumRule &r : e.checksums)
            skip[r.field] = skip[r.field + 1] = true;
        for (size_t i = 0; i < out.size(); i++)
            if (!skip[i] && out[i] != e.out[i]) {
                violation(e.rewritten ? "rewritten bytes" : "bytes changed on a frame handed on",
                          context() + "\n      byte " + std::to_string(i) + " is " + std::to_string(out[i]) +
                              ", model " + std::to_string(e.out[i]) + "\n      out   " + hex(out));
                return;
            }
        for (const ChecksumRule &r : e.checksums)
            if (!checksum_kept(r, in, out))
                violation("checksum", context() + "\n      checksum field at " + std::to_string(r.field) +
                                          "\n      out   " + hex(out));
    }

    static bool checksum_kept(const ChecksumRule &r, const Bytes &in, const Bytes &out) {
        switch (r.kind) {
        case ChecksumRule::IpHeader:
        case ChecksumRule::Plain:
            return residual(in, r.offset, r.length) == residual(out, r.offset, r.length);
        case ChecksumRule::Transport:
            if (r.proto == 17 && be16(in, r.field) == 0) // UDP without a checksum stays without
                return be16(out, r.field) == 0;
            if (r.proto == 17 && be16(out, r.field) == 0)
                return false; // 0 would mean "no checksum"
            return residual(in, r.offset, r.length, pseudo_sum(in, r)) ==
                   residual(out, r.offset, r.length, pseudo_sum(out, r));
        case ChecksumRule::QuotedUdp: {
            return be16(out, r.field) == r.expected; // 0: the quoted datagram had none
        }
        }
        return false;
    }

    void check_events(const Expectation &e, const auto &context) {
        std::vector<bpfnet_event> got = d_.received_events;
        for (const ExpectedEvent &want : e.events) {
            auto it = std::find_if(got.begin(), got.end(), [&](const bpfnet_event &ev) {
                return ev.type == want.type && ev.ip == ip_from_v4(want.ip) &&
                       ev.service_ip == ip_from_v4(want.service_ip) &&
                       std::equal(want.mac.begin(), want.mac.end(), ev.mac);
            });
            if (it != got.end())
                got.erase(it);
            else if (!want.optional)
                violation("event missing",
                          context() + "\n      event type " + std::to_string(want.type) + " for " + dotted(want.ip));
        }
        for (const bpfnet_event &ev : got)
            violation("event unexpected",
                      context() + "\n      event type " + std::to_string(ev.type) + " for " + dotted(v4_of(ev.ip)));
    }

    void check_trace(const Expectation &e, const auto &context) {
        const auto &got = d_.received_traces;
        if (!e.traced) {
            if (!got.empty())
                violation("trace record unexpected",
                          context() + "\n      decision " + std::to_string(got.front().decision));
            return;
        }
        if (got.size() != 1) {
            violation("trace record count", context() + "\n      " + std::to_string(got.size()) + " records");
            return;
        }
        const bpfnet_trace &t = got.front();
        if (t.decision != *e.traced || t.hook != e.hook || t.saddr != ip_from_v4(e.trace_saddr) ||
            t.daddr != ip_from_v4(e.trace_daddr))
            violation("trace record", context() + "\n      decision " + std::to_string(t.decision) + " (model " +
                                          std::to_string(*e.traced) + "), hook " + std::to_string(t.hook));
    }

    void check_batch(uint64_t batch, const std::vector<__u64> &before, const ModelState &kernel_before) {
        std::vector<__u64> after = d_.maps->counters.all();
        for (size_t c = 0; c < BPFNET_CTR_MAX; c++)
            if (after[c] - before[c] != model_counts_[c])
                violation("counter", "batch " + std::to_string(batch) + ": counter " + std::to_string(c) + " +" +
                                         std::to_string(after[c] - before[c]) + ", model +" +
                                         std::to_string(model_counts_[c]) + last_frames_);
        ModelState kernel = read_state(*d_.maps);
        // Trust model: a known host's entry changes only through ARP.
        std::set<Ip> arp_moves = model_.take_arp_moves();
        for (const auto &[ip, mac] : kernel.neighbours) {
            auto old = kernel_before.neighbours.find(ip);
            if (old != kernel_before.neighbours.end() && old->second != mac && !arp_moves.contains(ip))
                violation("neighbour moved without ARP", "batch " + std::to_string(batch) + ": " + dotted(ip));
        }
        const ModelState &want = model_.state();
        auto compare = [&](const char *what, bool same) {
            if (!same)
                violation(std::string("state: ") + what, "batch " + std::to_string(batch) + last_frames_);
        };
        compare("neighbours", kernel.neighbours == want.neighbours);
        compare("neighbours_unconfirmed", kernel.neighbours_unconfirmed == want.neighbours_unconfirmed);
        compare("flows", kernel.flows == want.flows);
        compare("flows_unconfirmed", kernel.flows_unconfirmed == want.flows_unconfirmed);
        compare("flow_shares", kernel.flow_shares == want.flow_shares);
        compare("dhcp_servers", kernel.dhcp_servers == want.dhcp_servers);
        compare("conflicts", kernel.conflicts == want.conflicts);
        if (!(kernel == want))
            resync(kernel); // the next batch starts from the kernel's state: one difference, reported once
    }

    void resync(const ModelState &kernel) { model_ = ReferenceModel(model_.config(), kernel); }

    void report(double seconds, uint64_t batches) {
        std::printf("bpfnet-fuzz: seed %llu, %llu batches of %llu frames, object %s, TCP/UDP checksums %s\n",
                    static_cast<unsigned long long>(opt_.seed), static_cast<unsigned long long>(batches),
                    static_cast<unsigned long long>(opt_.batch), opt_.object.c_str(), d_.l4_checksums);
        uint64_t all = 0;
        for (size_t p = 0; p < 3; p++) {
            all += frames_[p];
            std::printf("  %-15s %10llu frames (%llu runts refused), %9.0f frames/s in the test runs\n",
                        name(static_cast<Program>(p)), static_cast<unsigned long long>(frames_[p]),
                        static_cast<unsigned long long>(refused_[p]),
                        run_seconds_[p] > 0 ? static_cast<double>(frames_[p]) / run_seconds_[p] : 0.0);
        }
        std::printf("  all             %10llu frames in %.1f s: %.0f frames/s with generation, model and checks; "
                    "%llu damaged, %llu rewritten\n",
                    static_cast<unsigned long long>(all), seconds, static_cast<double>(all) / seconds,
                    static_cast<unsigned long long>(damaged_), static_cast<unsigned long long>(rewritten_));
        std::printf("  of them IPv6    %10llu frames (every fourth batch), judged by their properties\n",
                    static_cast<unsigned long long>(frames6_));
        // Coverage: how often each decision and event counter was taken (the kernel's counters agreed).
        std::string line = "  counters:";
        for (size_t c = 0; c < BPFNET_CTR_MAX; c++) {
            std::string item = " " + std::string(counter_names[c]) + "=" + std::to_string(run_counts_[c]);
            if (line.size() + item.size() > 118) {
                std::printf("%s\n", line.c_str());
                line = "           ";
            }
            line += item;
        }
        std::printf("%s\n", line.c_str());
        if (std::getenv("BPFNET_FUZZ_WALKS"))
            for (const auto &[walk, n] : walks_)
                std::printf("    %9llu  %s\n", static_cast<unsigned long long>(n), walk.c_str());
        std::printf("  violations: %llu\n", static_cast<unsigned long long>(violations_total_));
        for (const auto &[what, n] : violations_) {
            std::printf("  - %s: %llu\n", what.c_str(), static_cast<unsigned long long>(n));
            for (const std::string &ex : examples_[what])
                std::printf("    %s\n", ex.c_str());
        }
        if (violations_total_)
            std::printf("  replay: bpfnet-fuzz --seed %llu --frames %llu --object %s\n",
                        static_cast<unsigned long long>(opt_.seed), static_cast<unsigned long long>(opt_.frames),
                        opt_.object.c_str());
    }
};

} // namespace
} // namespace bpfnet::fuzz

int main(int argc, char **argv) {
    using namespace bpfnet::fuzz;
    Options o;
    o.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    CLI::App app{"bpfnet-fuzz: random and damaged frames through bpfnet's BPF programs, checked against the "
                 "reference model of docs/design.md",
                 "bpfnet-fuzz"};
    app.add_option("--frames", o.frames, "at least this many frames through each program")->check(CLI::PositiveNumber);
    app.add_option("--seed", o.seed, "the generator's seed (printed; replays a run)");
    app.add_option("--object", o.object, "the BPF object to load")->check(CLI::ExistingFile);
    app.add_option("--batch", o.batch, "frames between checks of the counters and maps")->check(CLI::PositiveNumber);
    app.add_option("--examples", o.examples, "examples printed per kind of violation");
    app.add_option("--stop-after", o.enough, "stop after this many violations (a mutant's run needs one)")
        ->check(CLI::PositiveNumber);
    CLI11_PARSE(app, argc, argv);
    if (geteuid() != 0) {
        std::fprintf(stderr, "bpfnet-fuzz: needs root (BPF_PROG_TEST_RUN)\n");
        return 2;
    }
    try {
        Fuzzer fuzzer(o);
        return fuzzer.run();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bpfnet-fuzz: %s\n", e.what());
        return 2;
    }
}
