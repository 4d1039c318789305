// bpfnetctl's exit codes and the one exception type commands throw to pick one. Scripts (and the e2e test)
// branch on the code, so each failure class has its own, documented in docs/cli.md.
#pragma once

#include <stdexcept>
#include <string>

namespace bpfnet::cli {

enum class ExitCode : int {
    Ok = 0,
    Failure = 1,            // anything else: the kernel refused a call, a map has another layout, ...
    Usage = 2,              // the command line has the wrong shape: unknown command or option, missing argument
    NoDatapath = 3,         // no pinned maps for the interface: bpfnet is not attached there (or --pin-root is wrong)
    Permission = 4,         // the maps or the kernel refused us: run as root (CAP_BPF, CAP_NET_ADMIN)
    InvalidArgument = 5,    // a value is wrong: not an IPv4 address, a port outside 1-65535, a bad interval
    BackendUnavailable = 6, // backend set: the loader cannot find the pod's veth or MAC
    NoLoader = 7,           // backend set/clear: no bpfnet-loader serves the control socket (the datapath exists)
};

int to_int(ExitCode code);

class CliError : public std::runtime_error {
public:
    CliError(ExitCode code, const std::string &message) : std::runtime_error(message), code_(code) {}
    ExitCode code() const { return code_; }

private:
    ExitCode code_;
};

// The exit code for a failed kernel call: permission problems are told apart, the rest is a failure.
ExitCode exit_code_for_errno(int err);

// Called inside a catch block: rethrows the exception in flight as a CliError (system errors by errno,
// CliErrors unchanged, anything else as a failure), so main has one type to turn into an exit code.
[[noreturn]] void rethrow_as_cli_error();

} // namespace bpfnet::cli
