// The command table of bpfnetctl. Each command lives in its own file and registers itself with one
// add_*_command function: it declares its CLI11 subcommand and options and hands CommandSet the code to run
// when that subcommand is chosen. A new command: a new file with its add_*_command, declared here, listed in
// cli/CMakeLists.txt and registered in app.cpp (register_commands).
#pragma once

#include "cli/options.hpp"
#include "maps/datapath_maps.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <ostream>
#include <utility>
#include <vector>

namespace bpfnet::cli {

// What a running command gets: the global options (validated) and where to write.
struct Context {
    const GlobalOptions &options;
    OutputFormat format;
    std::ostream &out;
    std::ostream &err;

    bool json() const { return format == OutputFormat::JsonLines; }
    // The pinned maps of options.interface. Throws CliError: NoDatapath when they are not there, Permission
    // when the kernel refuses them.
    DatapathMaps open_datapath() const;
};

using CommandRun = std::function<void(Context &)>;

class CommandSet {
public:
    // `run` is called when `subcommand` (a leaf: `status`, `backend set`) was given on the command line.
    void add(CLI::App *subcommand, CommandRun run) { commands_.emplace_back(subcommand, std::move(run)); }
    // Runs the chosen command; false when none was chosen (CLI11 requires one, so only on a wiring bug).
    bool run_chosen(Context &context) const;

private:
    std::vector<std::pair<CLI::App *, CommandRun>> commands_;
};

void add_status_command(CLI::App &app, CommandSet &commands);
void add_services_command(CLI::App &app, CommandSet &commands);
void add_backends_command(CLI::App &app, CommandSet &commands);
void add_flows_command(CLI::App &app, CommandSet &commands);
void add_neighbours_command(CLI::App &app, CommandSet &commands);
void add_stats_command(CLI::App &app, CommandSet &commands);
void add_backend_command(CLI::App &app, CommandSet &commands); // backend set / backend clear
void add_version_command(CLI::App &app, CommandSet &commands);
void add_trace_command(CLI::App &app, CommandSet &commands); // cli/trace.cpp

} // namespace bpfnet::cli
