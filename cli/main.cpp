// bpfnetctl: reads the pinned maps of a running bpfnet datapath. This first version shows the state and
// the counters; the observability issue grows it into the operator's full tool.
#include "maps/bpfnet_maps.h"
#include "maps/datapath_maps.hpp"
#include "maps/layout.hpp"

#include <CLI/CLI.hpp>
#include <arpa/inet.h>
#include <time.h>

#include <cstdio>
#include <string>

namespace {

using namespace bpfnet;

// Exit codes: distinct, so scripts can tell why.
constexpr int kExitUsage = 2;
constexpr int kExitNoDatapath = 3;
constexpr int kExitPermission = 4;
constexpr int kExitFailure = 1;

std::string ipv4(__be32 be) {
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &be, text, sizeof(text));
    return text;
}

std::string mac(const __u8 *m) {
    char text[18];
    std::snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    return text;
}

double heartbeat_age_seconds(const DatapathMaps &maps) {
    auto hb = maps.heartbeat.lookup(0);
    if (!hb || hb->monotonic_ns == 0)
        return -1;
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
    return now - static_cast<double>(hb->monotonic_ns) / 1e9;
}

void print_stats(const DatapathMaps &maps, bool json) {
    auto values = maps.counters.all();
    if (json) {
        std::printf("{\"counters\":{");
        for (size_t i = 0; i < values.size(); i++)
            std::printf("%s\"%s\":%llu", i ? "," : "", std::string(counter_names[i]).c_str(),
                        static_cast<unsigned long long>(values[i]));
        std::printf("}}\n");
        return;
    }
    for (size_t i = 0; i < values.size(); i++)
        std::printf("%-24s %llu\n", std::string(counter_names[i]).c_str(), static_cast<unsigned long long>(values[i]));
}

void print_status(const DatapathMaps &maps, bool json) {
    auto iface = maps.iface.lookup(0).value_or(bpfnet_iface{});
    double age = heartbeat_age_seconds(maps);
    auto service_ips = maps.service_ips.entries();
    auto backends = maps.backends.entries();
    if (json) {
        std::printf("{\"nic_ifindex\":%u,\"nic_mac\":\"%s\",\"heartbeat_age_seconds\":%.3f,\"service_ips\":[",
                    iface.nic_ifindex, mac(iface.nic_mac).c_str(), age);
        for (size_t i = 0; i < service_ips.size(); i++)
            std::printf("%s{\"ip\":\"%s\",\"active\":%s}", i ? "," : "", ipv4(service_ips[i].first).c_str(),
                        (service_ips[i].second.flags & BPFNET_SERVICE_IP_ACTIVE) ? "true" : "false");
        std::printf("],\"backends\":[");
        for (size_t i = 0; i < backends.size(); i++)
            std::printf("%s{\"ip\":\"%s\",\"ifindex\":%u}", i ? "," : "", ipv4(backends[i].first).c_str(),
                        backends[i].second.ifindex);
        std::printf("]}\n");
        return;
    }
    std::printf("nic            ifindex %u, mac %s\n", iface.nic_ifindex, mac(iface.nic_mac).c_str());
    std::printf("heartbeat age  %.1f s (timeout %.1f s)\n", age, static_cast<double>(iface.heartbeat_timeout_ns) / 1e9);
    for (const auto &[ip, entry] : service_ips)
        std::printf("service IP     %s %s\n", ipv4(ip).c_str(),
                    (entry.flags & BPFNET_SERVICE_IP_ACTIVE) ? "active" : "inactive");
    for (const auto &[ip, backend] : backends)
        std::printf("backend        %s on ifindex %u (pod mac %s)\n", ipv4(ip).c_str(), backend.ifindex,
                    mac(backend.pod_mac).c_str());
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"bpfnetctl: inspect a running bpfnet datapath"};
    app.require_subcommand(1);
    std::string interface = "prov0";
    std::string pin_root = BPFNET_DEFAULT_PIN_ROOT;
    std::string output = "table";
    app.add_option("-i,--interface", interface, "provisioning interface")->capture_default_str();
    app.add_option("--pin-root", pin_root, "bpffs directory the loader pins under")->capture_default_str();
    app.add_option("-o,--output", output, "table or json")->check(CLI::IsMember({"table", "json"}));
    auto *status = app.add_subcommand("status", "service IPs, backends, loader heartbeat");
    auto *stats = app.add_subcommand("stats", "every datapath counter, summed over CPUs");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        int code = app.exit(e);
        return code == 0 ? 0 : kExitUsage;
    }
    try {
        DatapathMaps maps = DatapathMaps::open_pinned(pin_root + "/" + interface);
        bool json = output == "json";
        if (status->parsed())
            print_status(maps, json);
        else if (stats->parsed())
            print_stats(maps, json);
        return 0;
    } catch (const std::system_error &e) {
        std::fprintf(stderr, "bpfnetctl: %s\n", e.what());
        if (e.code().value() == ENOENT)
            return kExitNoDatapath;
        if (e.code().value() == EPERM || e.code().value() == EACCES)
            return kExitPermission;
        return kExitFailure;
    }
}
