#include "cli/commands_backend.hpp"

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "cli/hooks.hpp"
#include "loader/arp_sender.hpp"
#include "loader/backend_locator.hpp"

#include <arpa/inet.h>
#include <net/if.h>

#include <algorithm>
#include <memory>
#include <thread>

namespace bpfnet::cli {

namespace {

struct BackendSetArgs {
    std::string ip;
    std::string veth;
};

// What a set or clear did, for the one-line report and its JSON.
struct BackendChange {
    std::optional<Backend> backend;
    std::optional<BackendLocation> where;
    std::optional<PodHookAction> pod_hook;
    ReconcileReport report;
    std::vector<__u32> detached; // ifindexes whose pod hook went with their backend
};

std::vector<__be32> ordered_service_ips(const DatapathContents &contents) {
    std::vector<__be32> ips;
    for (const auto &[ip, entry] : contents.service_ips)
        ips.push_back(ip);
    const __be32 dhcp = contents.iface.dhcp_service_ip_be;
    std::sort(ips.begin(), ips.end(), [dhcp](__be32 a, __be32 b) {
        return std::make_pair(a != dhcp, ntohl(a)) < std::make_pair(b != dhcp, ntohl(b));
    });
    return ips;
}

PortRule port_rule(const bpfnet_service_key &key, const bpfnet_service &service) {
    PortRule rule;
    rule.protocol = static_cast<Protocol>(key.proto);
    rule.port = ntohs(key.port_be);
    // The loader keeps the target port in the service entry even while there is no backend.
    rule.target_port = service.backend_port_be ? ntohs(service.backend_port_be) : rule.port;
    rule.kind = static_cast<PortKind>(service.kind);
    return rule;
}

DatapathContents read_contents(const DatapathMaps &maps) {
    auto iface = maps.iface.lookup(0);
    if (!iface || iface->nic_ifindex == 0)
        throw CliError(ExitCode::NoDatapath, "the datapath's iface entry is empty: the loader has not finished "
                                             "attaching");
    return DatapathContents{*iface, maps.service_ips.entries(), maps.services.entries()};
}

// The interface's name; empty when the ifindex no longer exists.
std::string if_name(__u32 ifindex) {
    char name[IF_NAMESIZE] = {};
    return if_indextoname(ifindex, name) ? name : "";
}

std::string if_label(__u32 ifindex) {
    std::string name = if_name(ifindex);
    return name.empty() ? "ifindex " + std::to_string(ifindex) : name;
}

Json if_name_json(__u32 ifindex) {
    std::string name = if_name(ifindex);
    return name.empty() ? Json() : Json(name);
}

void replace_all(std::string &text, const std::string &from, const std::string &to) {
    for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
        text.replace(at, from.size(), to);
}

// locate_backend speaks in config fields (backend.veth); here the field is the --veth option.
BackendLocation locate(const Backend &backend) {
    try {
        return locate_backend(backend);
    } catch (const BackendNotFound &e) {
        std::string message = e.what();
        replace_all(message, "backend.veth: auto: ", "");
        replace_all(message, "backend.veth: ", "");
        replace_all(message, "name the veth in backend.veth", "name the veth with --veth");
        throw CliError(ExitCode::BackendUnavailable,
                       "cannot locate backend " + format_ipv4(backend.ip_be) + ": " + message);
    }
}

// The pod-side program this datapath runs on a backend's veth. bpfnetctl has no BPF object of its own: it
// takes the running loader's instance (or one already attached to some veth). Without one, setting the
// backend would steer traffic into a pod whose replies never get back, so the command refuses.
class PodHook {
public:
    PodHook(int ifindex, __u32 map_id, const bpfnet_iface &iface, std::string pin_dir)
        : ifindex_(ifindex), map_id_(map_id),
          kind_((iface.hooks & BPFNET_HOOKS_TCX) ? TcHookKind::Tcx : TcHookKind::Clsact), pin_dir_(std::move(pin_dir)) {
        HookState current = query_tc_ingress(ifindex, pin_dir_, map_id);
        if (current.attached && current.program == BPFNET_PROG_TC_POD)
            return;
        program_ = find_pod_program(map_id);
        if (!program_.valid())
            throw CliError(ExitCode::BackendUnavailable,
                           "no " BPFNET_PROG_TC_POD " program of this datapath is loaded (bpfnet-loader is not "
                           "running and no veth carries it): start bpfnet-loader, then set the backend");
    }

    PodHookAction attach() {
        if (!program_.valid())
            return PodHookAction::AlreadyAttached;
        return attach_pod_program(ifindex_, program_.get(), map_id_, kind_, pin_dir_);
    }

private:
    int ifindex_;
    __u32 map_id_;
    TcHookKind kind_; // as the loader attached on this kernel
    std::string pin_dir_;
    UniqueFd program_;
};

// The datapath answers ARP for a newly active service IP at once, but hosts that cached another owner's
// MAC only learn of the change from an announcement: sent as the loader does, with its default count.
void announce(ArpSender &arp, const std::vector<__be32> &ips, const Mac &nic_mac) {
    for (uint32_t round = 0; round < kDefaultGarpCount && !ips.empty(); round++) {
        if (round > 0)
            std::this_thread::sleep_for(kDefaultGarpInterval);
        for (__be32 ip : ips)
            arp.send_gratuitous(ip, nic_mac);
    }
}

// As the loader does after a reconcile: a backend that left takes our hook off its veth with it.
std::vector<__u32> detach_departed(const ReconcileReport &report, std::optional<int> kept_ifindex,
                                   const std::string &pin_dir) {
    std::vector<__u32> detached;
    for (const bpfnet_backend &gone : report.departed) {
        if (kept_ifindex && static_cast<int>(gone.ifindex) == *kept_ifindex)
            continue;
        detach_pod_program(static_cast<int>(gone.ifindex), pin_dir);
        detached.push_back(gone.ifindex);
    }
    return detached;
}

const char *action_name(PodHookAction action) {
    switch (action) {
    case PodHookAction::Attached:
        return "attached";
    case PodHookAction::Replaced:
        return "replaced";
    case PodHookAction::AlreadyAttached:
        break;
    }
    return "already_attached";
}

Json change_json(const BackendChange &change) {
    Json json;
    if (change.backend && change.where)
        json["backend"] = {{"ip", format_ipv4(change.backend->ip_be)},
                           {"veth", if_name_json(static_cast<__u32>(change.where->ifindex))},
                           {"ifindex", change.where->ifindex}};
    else
        json["backend"] = nullptr;
    json["pod_hook"] = change.pod_hook ? Json(action_name(*change.pod_hook)) : Json();
    json["writes"] = change.report.upserts;
    json["removals"] = change.report.removals;
    json["announced"] = Json::array();
    for (__be32 ip : change.report.activated)
        json["announced"].push_back(format_ipv4(ip));
    json["detached_pod_hooks"] = Json::array();
    for (__u32 ifindex : change.detached)
        json["detached_pod_hooks"].push_back({{"ifindex", ifindex}, {"veth", if_name_json(ifindex)}});
    return json;
}

void print_change(Context &context, const BackendChange &change, const DatapathContents &contents) {
    if (context.json()) {
        print_json(context.out, change_json(change));
        return;
    }
    std::string ips;
    for (const auto &[ip, entry] : contents.service_ips)
        ips += (ips.empty() ? "" : ", ") + format_ipv4(ip);
    if (change.backend)
        context.out << "backend " << format_ipv4(change.backend->ip_be) << " on "
                    << if_label(static_cast<__u32>(change.where->ifindex)) << " now serves " << ips << "; pod hook "
                    << action_name(*change.pod_hook);
    else
        context.out << "backend cleared: " << ips << " inactive, listed ports dropped (drop_no_backend)";
    context.out << "; " << change.report.upserts << " map writes, " << change.report.removals << " removals";
    for (__u32 ifindex : change.detached)
        context.out << "; pod hook removed from " << if_label(ifindex);
    if (!change.report.activated.empty())
        context.out << "; announced with " << kDefaultGarpCount << " gratuitous ARPs";
    context.out << "\nnote: bpfnet-loader re-applies its config's backend on SIGHUP, a config change or a restart\n";
}

void run_backend_set(Context &context, const BackendSetArgs &args) {
    Backend backend{parse_ipv4(args.ip, "IP"), args.veth.empty() ? "" : parse_interface_name(args.veth, "--veth")};
    DatapathMaps maps = context.open_datapath();
    DatapathContents contents = read_contents(maps);
    if (std::string problem = backend_ip_problem(contents, backend.ip_be); !problem.empty())
        throw CliError(ExitCode::InvalidArgument, "IP: " + problem);
    if (contents.service_ips.empty())
        throw CliError(ExitCode::Failure, "the datapath lists no service IP: nothing to put a backend behind");

    // Everything that can fail without changing anything is done first.
    if (!backend.veth.empty() && if_nametoindex(backend.veth.c_str()) == contents.iface.nic_ifindex)
        throw CliError(ExitCode::InvalidArgument, "--veth: the backend's veth cannot be the provisioning interface");
    BackendLocation where = locate(backend);
    // As the loader does: a kernel without bpf_redirect_peer reaches every backend through its veth.
    where.redirect_peer = where.redirect_peer && (contents.iface.hooks & BPFNET_HOOKS_REDIRECT_PEER);
    if (static_cast<__u32>(where.ifindex) == contents.iface.nic_ifindex)
        throw CliError(ExitCode::InvalidArgument, "IP: the route to the backend leaves through the provisioning "
                                                  "interface; name the pod's veth with --veth");
    const __u32 map_id = map_id_of(maps.iface.fd());
    const std::string pin_dir = context.options.pin_dir();
    PodHook hook(where.ifindex, map_id, contents.iface, pin_dir);
    ArpSender arp(static_cast<int>(contents.iface.nic_ifindex));

    // The reverse path goes in before the maps point traffic at the pod, as in the loader.
    BackendChange change{backend, where, hook.attach(), {}, {}};
    try {
        change.report = reconcile(maps, desired_from_maps(contents, backend, where));
    } catch (...) {
        if (*change.pod_hook == PodHookAction::Attached)
            detach_pod_program(where.ifindex, pin_dir);
        throw;
    }
    change.detached = detach_departed(change.report, where.ifindex, pin_dir);
    announce(arp, change.report.activated, to_mac(contents.iface.nic_mac));
    print_change(context, change, contents);
}

void run_backend_clear(Context &context) {
    DatapathMaps maps = context.open_datapath();
    DatapathContents contents = read_contents(maps);
    BackendChange change;
    change.report = reconcile(maps, desired_from_maps(contents, std::nullopt, std::nullopt));
    change.detached = detach_departed(change.report, std::nullopt, context.options.pin_dir());
    print_change(context, change, contents);
}

} // namespace

std::vector<Config> configs_from_maps(const DatapathContents &contents, const std::optional<Backend> &backend) {
    std::vector<Config> configs;
    for (__be32 ip : ordered_service_ips(contents)) {
        Config config;
        config.service_ip_be = ip;
        config.subnet_be = contents.iface.subnet_be;
        config.prefix_len = static_cast<uint8_t>(__builtin_popcount(ntohl(contents.iface.subnet_mask_be)));
        config.dhcp_max_hops = contents.iface.dhcp_max_hops;
        for (const auto &[key, service] : contents.services)
            if (key.service_ip_be == ip)
                config.ports.push_back(port_rule(key, service));
        std::sort(config.ports.begin(), config.ports.end(), [](const PortRule &a, const PortRule &b) {
            return std::make_pair(a.protocol, a.port) < std::make_pair(b.protocol, b.port);
        });
        config.backend = backend;
        configs.push_back(std::move(config));
    }
    return configs;
}

DesiredState desired_from_maps(const DatapathContents &contents, const std::optional<Backend> &backend,
                               const std::optional<BackendLocation> &where) {
    DesiredState merged;
    // Table::insert keeps the first entry of a key: the backend entry (and its egress service IP) comes from
    // the first config.
    for (const Config &config : configs_from_maps(contents, backend)) {
        DesiredState one = desired_state(config, where);
        merged.service_ips.insert(one.service_ips.begin(), one.service_ips.end());
        merged.services.insert(one.services.begin(), one.services.end());
        merged.backend_ports.insert(one.backend_ports.begin(), one.backend_ports.end());
        merged.backends.insert(one.backends.begin(), one.backends.end());
    }
    return merged;
}

std::string backend_ip_problem(const DatapathContents &contents, __be32 ip_be) {
    if (std::string reason = non_unicast_reason(ip_be); !reason.empty())
        return format_ipv4(ip_be) + " is " + reason + ", not a pod's address";
    for (const auto &[ip, entry] : contents.service_ips)
        if (ip == ip_be)
            return format_ipv4(ip_be) + " is a service IP: the backend is the pod's own address";
    const bpfnet_iface &iface = contents.iface;
    if (iface.subnet_mask_be && (ip_be & iface.subnet_mask_be) == iface.subnet_be)
        return format_ipv4(ip_be) + " is inside the provisioning subnet " +
               format_prefix(iface.subnet_be, iface.subnet_mask_be) + ": the pod lives on the pod network";
    return "";
}

void add_backend_command(CLI::App &app, CommandSet &commands) {
    auto *backend = app.add_subcommand("backend", "point the service IPs at a pod, or at none (standalone use)");
    backend->require_subcommand(1);

    auto args = std::make_shared<BackendSetArgs>();
    auto *set = backend->add_subcommand("set", "steer every listed port to the pod IP (through its veth)");
    set->add_option("IP", args->ip, "the pod's IP address")->required();
    set->add_option("--veth", args->veth, "host side of the pod's veth (default: found through the route to IP)");
    commands.add(set, [args](Context &context) { run_backend_set(context, *args); });

    auto *clear = backend->add_subcommand("clear", "no backend: service IPs inactive, their ports dropped");
    commands.add(clear, run_backend_clear);
}

} // namespace bpfnet::cli
