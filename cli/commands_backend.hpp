// `bpfnetctl backend set IP [--veth NAME]` and `backend clear`: standalone mode's manual switch of the pod
// that backs the service IPs. bpfnetctl does not write the maps itself: it asks the running loader, the
// one writer of the interface's maps, through its control socket (core/control_socket.hpp); the loader
// checks the request with its config's rules, locates the pod and applies it like a reload. Lasts until the
// loader applies its config again (see docs/cli.md).
#pragma once

#include "cli/errors.hpp"
#include "core/control_socket.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace bpfnet::cli {

// The request sent for `backend set` (veth may be empty: found by the loader through the route to ip).
// delivery: "auto" or "route", empty to leave it to the loader (the running backend's).
nlohmann::json backend_set_request(const std::string &ip, const std::string &veth, const std::string &ipv6 = "",
                                   const std::string &delivery = "");
nlohmann::json backend_clear_request();

// The exit code for a request the loader refused, by the kind it gave.
ExitCode exit_code_for(ControlFailure::Kind kind);

// The one-line report of a set or clear from the loader's result object (docs/cli.md).
std::string describe_backend_change(const nlohmann::json &result);

} // namespace bpfnet::cli
