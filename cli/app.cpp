#include "cli/app.hpp"

#include "cli/commands.hpp"
#include "cli/errors.hpp"

#include <bpf/libbpf.h>
#include <sys/stat.h>
#include <xdp/libxdp.h>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

namespace bpfnet::cli {

namespace {

// libbpf and libxdp print their own warnings (a tc query that finds no filter, a missing dispatcher);
// bpfnetctl reports failures itself, one line each, so theirs are dropped.
int quiet_libbpf(enum libbpf_print_level, const char *, va_list) {
    return 0;
}
int quiet_libxdp(enum libxdp_print_level, const char *, va_list) {
    return 0;
}

// Returns the --interface option, whose absence chooses the interface (chosen_interface).
CLI::Option *add_global_options(CLI::App &app, GlobalOptions &options) {
    auto *interface = app.add_option("-i,--interface", options.interface,
                                     "provisioning interface the datapath is attached to (default: the only one "
                                     "pinned under --pin-root, else prov0)");
    app.add_option("--pin-root", options.pin_root, "bpffs directory the loader pins under (its config's pinRoot)")
        ->capture_default_str();
    app.add_option("--control-socket", options.control_socket,
                   "the loader's control socket, for backend set/clear and status's loader line (its config's "
                   "controlSocket; default "
                   "/run/bpfnet/<interface>.sock)");
    app.add_option("-o,--output", options.output, "table or json")->capture_default_str();
    return interface;
}

// The arguments the subcommands' options fill, alive while the command line is parsed and run.
struct CommandArgs {
    FlowArgs flows;
    StatsArgs stats;
    BackendSetArgs backend_set;
    TraceArgs trace;
};

// Each leaf subcommand (`status`, `backend set`) and the run_* function called when it was given.
class CommandSet {
public:
    void add(CLI::App *subcommand, std::function<void(Context &)> run) {
        commands_.emplace_back(subcommand, std::move(run));
    }
    // Runs the chosen command; false when none was chosen (CLI11 requires one, so only on a wiring bug).
    bool run_chosen(Context &context) const {
        for (const auto &[subcommand, run] : commands_) {
            if (subcommand->parsed()) {
                run(context);
                return true;
            }
        }
        return false;
    }

private:
    std::vector<std::pair<CLI::App *, std::function<void(Context &)>>> commands_;
};

void add_table_commands(CLI::App &app, CommandSet &commands, CommandArgs &args) {
    commands.add(app.add_subcommand("status", "attach state, service IPs, backend, loader heartbeat, conflicts"),
                 run_status);
    commands.add(app.add_subcommand("services", "listed ports of the service IPs and the backend each is steered to"),
                 run_services);
    commands.add(app.add_subcommand("backends", "backend pods on this node: veth, MACs, redirect mode"), run_backends);

    auto *flows = app.add_subcommand("flows", "flows recorded on the way back (TFTP transfers, the pod's own calls)");
    flows->add_option("--host", args.flows.host, "only flows of this host IP");
    flows->add_option("--port", args.flows.port, "only flows with this port, on the host's or the service's side");
    commands.add(flows, [&args](Context &context) { run_flows(context, args.flows); });

    auto *neighbours = app.add_subcommand("neighbours", "hosts on the provisioning LAN the datapath learned MACs of");
    neighbours->alias("neighbors");
    commands.add(neighbours, run_neighbours);
}

void add_stats_command(CLI::App &app, CommandSet &commands, StatsArgs &args) {
    auto *stats =
        app.add_subcommand("stats", "every datapath counter, summed over CPUs: paths, drops by reason, and events");
    auto *watch_flag = stats->add_flag("-w,--watch", args.watch, "refresh every --interval, with rates per second");
    stats->add_option("--interval", args.interval, "seconds between refreshes (with --watch)")
        ->capture_default_str()
        ->needs(watch_flag);
    stats->add_option("--count", args.count, "stop after this many refreshes (with --watch)")->needs(watch_flag);
    commands.add(stats, [&args](Context &context) { run_stats(context, args); });
}

void add_backend_command(CLI::App &app, CommandSet &commands, BackendSetArgs &args) {
    auto *backend = app.add_subcommand("backend", "point the service IPs at a pod, or at none (standalone use)");
    backend->require_subcommand(1);
    auto *set = backend->add_subcommand("set", "steer every listed port to the pod IP (through its veth), by the "
                                               "running loader");
    set->add_option("IP", args.ip, "the pod's IP address (IPv6 for an IPv6-only service)")->required();
    set->add_option("--ipv6", args.ipv6, "the pod's IPv6 address, for a dual-stack service's IPv6 address");
    set->add_option("--veth", args.veth, "host side of the pod's veth (default: found through the route to IP)");
    set->add_option("--delivery", args.delivery,
                    "auto (into the pod's veth) or route (through the node's routing); default: the running backend's")
        ->check(CLI::IsMember({"auto", "route"}));
    commands.add(set, [&args](Context &context) { run_backend_set(context, args); });
    commands.add(backend->add_subcommand("clear", "no backend: service IPs inactive, their ports dropped"),
                 run_backend_clear);
}

void add_trace_command(CLI::App &app, CommandSet &commands, TraceArgs &args) {
    auto *trace = app.add_subcommand("trace", "live stream of steering decisions (tracing is on only while this runs)");
    trace->add_option("--protocol", args.protocol, "only dhcp, tftp, tcp, udp, arp or ndp decisions")
        ->check(CLI::IsMember({"dhcp", "tftp", "tcp", "udp", "arp", "ndp"}));
    trace->add_option("--mac", args.mac, "only packets of this client (DHCP chaddr, else the frame's source MAC)");
    trace->add_option("--count", args.count, "stop after this many records");
    trace->add_option("--duration", args.duration_s, "stop after this many seconds");
    commands.add(trace, [&args](Context &context) { run_trace(context, args); });
}

// Every command, in the order `bpfnetctl --help` lists them.
void add_commands(CLI::App &app, CommandSet &commands, CommandArgs &args) {
    add_table_commands(app, commands, args);
    add_stats_command(app, commands, args.stats);
    add_backend_command(app, commands, args.backend_set);
    commands.add(app.add_subcommand("version", "bpfnet, libbpf, libxdp and kernel versions"), run_version);
    add_trace_command(app, commands, args.trace);
}

int report(std::ostream &err, const CliError &e) {
    err << "bpfnetctl: " << e.what() << '\n';
    return to_int(e.code());
}

} // namespace

DatapathMaps Context::open_datapath() const {
    const std::string dir = options.pin_dir();
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            throw CliError(ExitCode::NoDatapath, "no bpfnet datapath on " + options.interface + ": " + dir +
                                                     " does not exist (is bpfnet-loader running there? --pin-root?)");
        throw CliError(exit_code_for_errno(errno), dir + ": " + std::strerror(errno));
    }
    try {
        return DatapathMaps::open_pinned(dir);
    } catch (const std::system_error &e) {
        int code = e.code().value();
        if (code == ENOENT)
            throw CliError(ExitCode::NoDatapath, std::string("incomplete bpfnet datapath: ") + e.what());
        if (code == EPERM || code == EACCES)
            throw CliError(ExitCode::Permission, std::string(e.what()) + " (bpfnetctl needs root)");
        if (code == EPROTO)
            throw CliError(ExitCode::Failure, std::string(e.what()) + ": pinned by another bpfnet version?");
        throw;
    }
}

int run(int argc, const char *const *argv, std::ostream &out, std::ostream &err) {
    libbpf_set_print(quiet_libbpf);
    libxdp_set_print(quiet_libxdp);

    CLI::App app{"bpfnetctl: inspect and steer a running bpfnet datapath (docs/cli.md)", "bpfnetctl"};
    // Global options are accepted after the subcommand too: `bpfnetctl stats -o json`.
    app.fallthrough();
    // At most one; none is reported after parsing, so that an unknown command is named as such.
    app.require_subcommand(0, 1);
    GlobalOptions options;
    CLI::Option *interface_option = add_global_options(app, options);
    CommandSet commands;
    CommandArgs args;
    add_commands(app, commands, args);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        if (e.get_exit_code() == 0) // --help
            return app.exit(e, out, err);
        err << "bpfnetctl: " << e.what() << " (see bpfnetctl --help)\n";
        return to_int(ExitCode::Usage);
    }
    try {
        if (interface_option->count() == 0 && !app.got_subcommand("version"))
            options.interface = chosen_interface(options.pin_root);
        parse_interface_name(options.interface, "--interface");
        if (options.pin_root.empty() || options.pin_root.front() != '/')
            throw CliError(ExitCode::InvalidArgument,
                           "--pin-root: must be an absolute path, got '" + options.pin_root + "'");
        Context context{options, options.output_format(), out, err};
        if (!commands.run_chosen(context))
            throw CliError(ExitCode::Usage, "no command given (see bpfnetctl --help)");
        out.flush();
        return to_int(ExitCode::Ok);
    } catch (const CliError &e) {
        return report(err, e);
    } catch (...) {
        try {
            rethrow_as_cli_error();
        } catch (const CliError &e) {
            return report(err, e);
        }
    }
}

} // namespace bpfnet::cli
