// bpfnetctl's commands. Each command's work lives in its own file (commands_*.cpp, trace.cpp) behind a run_*
// function declared here, with the arguments its options fill; app.cpp declares the command line with CLI11
// (every subcommand, option and help text) and calls the chosen command's run_* function. Only app.cpp
// includes CLI11: its header-only library costs each file that includes it several seconds of compile time.
// A new command: its run_* function here, its file in cli/CMakeLists.txt, its subcommand in app.cpp
// (add_commands).
#pragma once

#include "cli/options.hpp"
#include "maps/datapath_maps.hpp"

#include <cstdint>
#include <ostream>
#include <string>

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

void run_status(Context &context);   // cli/commands_status.cpp
void run_services(Context &context); // cli/commands_tables.cpp
void run_backends(Context &context);
void run_neighbours(Context &context);

struct FlowArgs {
    std::string host; // only flows of this host IP
    std::string port; // only flows with this port, on either side
};
void run_flows(Context &context, const FlowArgs &args);

struct StatsArgs {
    bool watch = false;
    std::string interval = "1"; // seconds between refreshes (--watch)
    std::string count;          // refreshes before stopping (--watch); empty: until interrupted
};
void run_stats(Context &context, const StatsArgs &args); // cli/commands_stats.cpp

struct BackendSetArgs {
    std::string ip;
    std::string ipv6;
    std::string veth;     // empty: found by the loader through the route to ip
    std::string delivery; // auto or route; empty: the running backend's
};
void run_backend_set(Context &context, const BackendSetArgs &args); // cli/commands_backend.cpp
void run_backend_clear(Context &context);

void run_version(Context &context); // cli/commands_version.cpp

struct TraceArgs {
    std::string protocol; // empty: every protocol
    std::string mac;      // empty: every client
    uint64_t count = 0;
    double duration_s = 0;
};
void run_trace(Context &context, const TraceArgs &args); // cli/trace.cpp

} // namespace bpfnet::cli
