#include "cli/app.hpp"

#include "cli/commands.hpp"
#include "cli/errors.hpp"

#include <bpf/libbpf.h>
#include <sys/stat.h>
#include <xdp/libxdp.h>

#include <cerrno>
#include <cstdarg>
#include <cstring>

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

void register_commands(CLI::App &app, CommandSet &commands) {
    add_status_command(app, commands);
    add_services_command(app, commands);
    add_backends_command(app, commands);
    add_flows_command(app, commands);
    add_neighbours_command(app, commands);
    add_stats_command(app, commands);
    add_backend_command(app, commands);
    add_version_command(app, commands);
    add_trace_command(app, commands);
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

bool CommandSet::run_chosen(Context &context) const {
    for (const auto &[subcommand, run] : commands_) {
        if (subcommand->parsed()) {
            run(context);
            return true;
        }
    }
    return false;
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
    register_commands(app, commands);

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
