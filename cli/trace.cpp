#include "trace.hpp"

#include "cli/errors.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "core/addresses.hpp"
#include "maps/datapath_maps.hpp"
#include "maps/layout.hpp"

#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace bpfnet::cli {

namespace {

volatile sig_atomic_t g_stop = 0;

// The program that made the decision: the one name of a hook everywhere (bpf/, logs, status, docs).
std::string_view program_name(__u8 hook) {
    switch (hook) {
    case BPFNET_HOOK_XDP_NIC:
        return BPFNET_PROG_XDP_NIC;
    case BPFNET_HOOK_TC_NIC_INGRESS:
        return BPFNET_PROG_TC_NIC;
    case BPFNET_HOOK_TC_POD_INGRESS:
        return BPFNET_PROG_TC_POD;
    default:
        return "?";
    }
}

// The direction, the JSON key "hook" of earlier versions (docs/cli.md keeps it for scripts).
std::string_view hook_alias(__u8 hook) {
    switch (hook) {
    case BPFNET_HOOK_XDP_NIC:
        return "xdp-nic";
    case BPFNET_HOOK_TC_NIC_INGRESS:
        return "lan->pod";
    case BPFNET_HOOK_TC_POD_INGRESS:
        return "pod->lan";
    default:
        return "?";
    }
}

// RFC 2132 section 9.6.
std::string_view dhcp_type_name(__u8 type) {
    static constexpr std::array<std::string_view, 9> names = {"",    "DISCOVER", "OFFER",   "REQUEST", "DECLINE",
                                                              "ACK", "NAK",      "RELEASE", "INFORM"};
    return type < names.size() ? names[type] : "?";
}

// RFC 8415 section 7.3.
std::string_view dhcp6_type_name(__u8 type) {
    static constexpr std::array<std::string_view, 14> names = {
        "",           "SOLICIT",   "ADVERTISE", "REQUEST", "CONFIRM",     "RENEW",
        "REBIND",     "REPLY",     "RELEASE",   "DECLINE", "RECONFIGURE", "INFORMATION-REQUEST",
        "RELAY-FORW", "RELAY-REPL"};
    return type < names.size() ? names[type] : "?";
}

// A record's DHCP details are DHCPv6's when its packet was IPv6.
std::string_view dhcp_protocol(const bpfnet_trace &r) {
    return is_v4(r.saddr) ? "dhcp" : "dhcpv6";
}
std::string_view dhcp_type_name(const bpfnet_trace &r) {
    return is_v4(r.saddr) ? dhcp_type_name(r.dhcp_type) : dhcp6_type_name(r.dhcp_type);
}

// RFC 1350 and RFC 2347.
std::string_view tftp_op_name(__u8 op) {
    static constexpr std::array<std::string_view, 7> names = {"", "RRQ", "WRQ", "DATA", "ACK", "ERROR", "OACK"};
    return op < names.size() ? names[op] : "?";
}

std::string_view decision_name(__u32 decision) {
    return decision < counter_names.size() ? counter_names[decision] : "?";
}

bool is_dhcp(const bpfnet_trace &r) {
    return r.dhcp_type != 0 || r.dhcp_xid_be != 0;
}
bool is_tftp(const bpfnet_trace &r) {
    return r.tftp_op != 0;
}

std::string endpoint(const bpfnet_ip &addr, __be16 port, __u8 proto) {
    if (proto == IPPROTO_TCP || proto == IPPROTO_UDP)
        return format_endpoint(addr, port);
    return format_ip(addr);
}

std::string_view proto_name(__u8 proto) {
    switch (proto) {
    case 0:
        return "arp";
    case IPPROTO_TCP:
        return "tcp";
    case IPPROTO_UDP:
        return "udp";
    case IPPROTO_ICMP:
        return "icmp";
    case IPPROTO_ICMPV6:
        return "icmpv6";
    default:
        return "ip";
    }
}

// The datapath stamps records with CLOCK_MONOTONIC; shown as wall-clock time.
std::string wall_time(__u64 monotonic_ns) {
    timespec mono{}, real{};
    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_gettime(CLOCK_REALTIME, &real);
    double now_mono = static_cast<double>(mono.tv_sec) + static_cast<double>(mono.tv_nsec) / 1e9;
    double now_real = static_cast<double>(real.tv_sec) + static_cast<double>(real.tv_nsec) / 1e9;
    double at = now_real - (now_mono - static_cast<double>(monotonic_ns) / 1e9);
    time_t seconds = static_cast<time_t>(at);
    tm tm{};
    localtime_r(&seconds, &tm);
    char text[32];
    std::snprintf(text, sizeof(text), "%02d:%02d:%02d.%06d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>((at - static_cast<double>(seconds)) * 1e6));
    return text;
}

struct TraceState {
    Context &context;
    const TraceOptions &options;
    uint64_t shown = 0;
};

int on_record(void *ctx, void *data, size_t size) {
    auto &state = *static_cast<TraceState *>(ctx);
    if (size < sizeof(bpfnet_trace))
        return 0;
    const auto &record = *static_cast<const bpfnet_trace *>(data);
    if ((state.options.count && state.shown >= state.options.count) || !trace_matches(record, state.options.filter))
        return 0;
    state.context.out << (state.context.json() ? trace_json(record) : trace_line(record)) << std::endl;
    if (state.options.count && ++state.shown >= state.options.count)
        g_stop = 1;
    return 0;
}

// Switches tracing on for the lifetime of this object, and off again however the command ends.
class TracingSwitch {
public:
    explicit TracingSwitch(PinnedMap<__u32, bpfnet_trace_control> &control) : control_(control) {
        control_.update(0, bpfnet_trace_control{1, 0});
    }
    ~TracingSwitch() {
        try {
            control_.update(0, bpfnet_trace_control{0, 0});
        } catch (...) {
        }
    }
    TracingSwitch(const TracingSwitch &) = delete;
    TracingSwitch &operator=(const TracingSwitch &) = delete;

private:
    PinnedMap<__u32, bpfnet_trace_control> &control_;
};

} // namespace

bool trace_matches(const bpfnet_trace &r, const TraceFilter &filter) {
    if (filter.mac && std::memcmp(filter.mac->data(), r.mac, 6) != 0)
        return false;
    if (!filter.protocol)
        return true;
    const std::string &p = *filter.protocol;
    if (p == "dhcp")
        return is_dhcp(r);
    if (p == "tftp")
        return is_tftp(r);
    if (p == "ndp") // the responder's decisions (what XDP learns from NDP is not traced, as for ARP)
        return r.decision == BPFNET_CTR_NDP_REPLY || r.decision == BPFNET_CTR_NDP_NOT_ACTIVE ||
               r.decision == BPFNET_CTR_NDP_STALE_HEARTBEAT;
    return proto_name(r.proto) == p;
}

std::string trace_line(const bpfnet_trace &r) {
    std::string line = wall_time(r.time_ns) + " " + std::string(program_name(r.hook)) + " " +
                       std::string(decision_name(r.decision)) + " " + std::string(proto_name(r.proto)) + " " +
                       endpoint(r.saddr, r.sport_be, r.proto) + " -> " + endpoint(r.daddr, r.dport_be, r.proto);
    if (r.to_addr != bpfnet_ip{})
        line += " => " + endpoint(r.to_addr, r.to_port_be, r.proto);
    if (is_dhcp(r)) {
        char xid[16];
        std::snprintf(xid, sizeof(xid), "0x%08x", ntohl(r.dhcp_xid_be));
        line += " " + std::string(dhcp_protocol(r)) + " " + std::string(dhcp_type_name(r)) + " xid " + xid +
                " client " + format_mac(r.mac);
    } else if (is_tftp(r)) {
        line += " tftp " + std::string(tftp_op_name(r.tftp_op));
        if (r.tftp_file[0])
            line += " " + std::string(r.tftp_file, strnlen(r.tftp_file, sizeof(r.tftp_file)));
    } else {
        line += " mac " + format_mac(r.mac);
    }
    return line;
}

std::string trace_json(const bpfnet_trace &r) {
    nlohmann::json j = {
        {"time", wall_time(r.time_ns)},
        {"monotonic_ns", r.time_ns},
        {"program", program_name(r.hook)},
        {"hook", hook_alias(r.hook)},
        {"decision", decision_name(r.decision)},
        {"protocol", proto_name(r.proto)},
        {"source", {{"ip", format_ip(r.saddr)}, {"port", ntohs(r.sport_be)}}},
        {"destination", {{"ip", format_ip(r.daddr)}, {"port", ntohs(r.dport_be)}}},
        {"mac", format_mac(r.mac)},
    };
    if (r.to_addr != bpfnet_ip{})
        j["steered_to"] = {{"ip", format_ip(r.to_addr)}, {"port", ntohs(r.to_port_be)}};
    if (is_dhcp(r)) {
        char xid[16];
        std::snprintf(xid, sizeof(xid), "0x%08x", ntohl(r.dhcp_xid_be));
        j[std::string(dhcp_protocol(r))] = {
            {"type", dhcp_type_name(r)}, {"xid", xid}, {"client_mac", format_mac(r.mac)}};
    }
    if (is_tftp(r))
        j["tftp"] = {{"op", tftp_op_name(r.tftp_op)},
                     {"file", std::string(r.tftp_file, strnlen(r.tftp_file, sizeof(r.tftp_file)))}};
    return j.dump();
}

std::array<uint8_t, 6> parse_mac(const std::string &text, const std::string &what) {
    const std::optional<std::array<uint8_t, 6>> mac = bpfnet::parse_mac(text);
    if (!mac)
        throw CliError(ExitCode::InvalidArgument, what + ": '" + text + "' is not a MAC address (aa:bb:cc:dd:ee:ff)");
    return *mac;
}

void stream_trace(Context &context, const TraceOptions &options) {
    DatapathMaps maps = context.open_datapath();
    const std::string ring = context.options.pin_dir() + "/" BPFNET_MAP_NAME(trace);
    int fd = bpf_obj_get(ring.c_str());
    if (fd < 0)
        throw CliError(exit_code_for_errno(errno), ring + ": " + std::strerror(errno));
    UniqueFd trace_fd(fd);
    TraceState state{context, options};
    std::unique_ptr<ring_buffer, void (*)(ring_buffer *)> rb(
        ring_buffer__new(trace_fd.get(), on_record, &state, nullptr), ring_buffer__free);
    if (!rb)
        throw CliError(exit_code_for_errno(errno), "ring_buffer__new " + ring + ": " + std::strerror(errno));

    struct sigaction stop {};
    stop.sa_handler = [](int) {
        g_stop = 1;
    };
    sigaction(SIGINT, &stop, nullptr);
    sigaction(SIGTERM, &stop, nullptr);

    TracingSwitch on(maps.trace_control);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.duration_s);
    while (!g_stop) {
        int err = ring_buffer__poll(rb.get(), 100);
        if (err < 0 && err != -EINTR)
            throw CliError(ExitCode::Failure, std::string("ring_buffer__poll: ") + std::strerror(-err));
        if (options.duration_s > 0 && std::chrono::steady_clock::now() >= deadline)
            break;
    }
    ring_buffer__consume(rb.get()); // what arrived before tracing went off
}

void run_trace(Context &context, const TraceArgs &args) {
    TraceOptions options{.filter = {}, .count = args.count, .duration_s = args.duration_s};
    if (!args.protocol.empty())
        options.filter.protocol = args.protocol;
    if (!args.mac.empty())
        options.filter.mac = parse_mac(args.mac, "--mac");
    if (options.duration_s < 0)
        throw CliError(ExitCode::InvalidArgument, "--duration: must not be negative");
    stream_trace(context, options);
}

} // namespace bpfnet::cli
