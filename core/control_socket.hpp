// The loader's control socket: the one way another process changes what the loader's datapath serves.
// `bpfnetctl backend set/clear` sends its request here and the loader, the only writer of the maps, carries
// it out with its own desired state and reconcile, between its other passes (never concurrently with them).
//
// A Unix stream socket, by default /run/bpfnet/<interface>.sock, mode 0600 and owned by the loader's user,
// in a directory of mode 0700: like the pinned maps, only root (or the loader's own user) may use it. The
// server also checks the peer's credentials (SO_PEERCRED), so a socket whose mode was widened by hand still
// refuses others. One request per connection: a JSON object on one line, answered by one JSON line
//   {"ok": true, "result": {...}}  or  {"ok": false, "error": "<kind>", "message": "..."}
// with the kinds of ControlFailure::Kind (docs/cli.md).
#pragma once

#include "maps/unique_fd.hpp"

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace bpfnet {

// A request the loader refused or could not carry out; kind() says which, for bpfnetctl's exit code.
class ControlFailure : public std::runtime_error {
public:
    enum class Kind {
        BadRequest,         // not a request this loader understands
        InvalidArgument,    // the request's values are wrong (e.g. a backend IP inside the provisioning subnet)
        BackendUnavailable, // the backend pod cannot be located (no route, no veth, no MAC)
        Refused,            // not in this mode (Kubernetes mode decides backends from EndpointSlices)
        PermissionDenied,   // the peer is neither root nor the loader's user
        Failure,            // the kernel refused a write
    };
    ControlFailure(Kind kind, const std::string &message) : std::runtime_error(message), kind_(kind) {}
    Kind kind() const { return kind_; }

private:
    Kind kind_;
};

std::string to_string(ControlFailure::Kind kind);
ControlFailure::Kind parse_failure_kind(std::string_view text); // unknown spellings: Failure

// A request line as the server reads it: a JSON object whose "command" is a string, else ControlFailure
// (BadRequest).
nlohmann::json parse_control_request(std::string_view line);

struct ControlRequest {
    nlohmann::json body; // the request object; body["command"] is a string
    pid_t peer_pid = 0;
    uid_t peer_uid = 0;
};

// What the mode does with a request: returns the result object, or throws ControlFailure.
using ControlHandler = std::function<nlohmann::json(const ControlRequest &)>;

class ControlServer {
public:
    // Binds and listens at path (creating its directory, mode 0700). A live socket there (another loader
    // answers) is an error naming its pid; a stale one (nobody listens: a loader that died) is replaced.
    explicit ControlServer(std::string path);
    ~ControlServer(); // removes the socket file if it is still ours
    ControlServer(const ControlServer &) = delete;
    ControlServer &operator=(const ControlServer &) = delete;

    int fd() const { return listener_.get(); }
    // Accepts the pending connections (the listener is non-blocking) and answers each with handler. A client
    // that sends nothing within a second is dropped: the loader's loop is never held up by one.
    void serve_pending(const ControlHandler &handler);

private:
    void answer(int connection, const ControlHandler &handler);

    std::string path_;
    UniqueFd listener_;
    dev_t dev_ = 0;
    ino_t ino_ = 0;
};

// Nobody serves the socket (no file, or nobody listens): no loader is running for that interface.
class ControlUnavailable : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

// "describe": who answers on the socket, for bpfnetctl status: the loader's mode, its NIC and how the NIC was
// chosen (its name given, or the one link with a MAC of a list). Every mode answers it; it changes nothing.
inline constexpr std::string_view kDescribeCommand = "describe";
// The answer: {"mode": MODE, "interface": NAME, "interface_chosen_by": "name" | "mac", "interface_macs": LIST
// or null, "backend_veths": [{"ifindex": N, "found_by": "named" | "route" | "namespace", "behind": DEVICE or
// null, "delivery": "redirect_peer" | "veth" | "route"}, ...]}. interface_macs: the MAC list the NIC was chosen by,
// empty when it was named; backend_veths: how the loader found each backend's veth in its last apply
// (DatapathRuntime::backend_veths).
nlohmann::json describe_loader(std::string_view mode, const std::string &interface, const std::string &interface_macs,
                               nlohmann::json backend_veths = nlohmann::json::array());

// Sends one request and returns the result object. Throws ControlUnavailable when no loader listens,
// ControlFailure with the loader's kind when it refused, SystemError for anything else (EACCES: the socket's
// permissions refused us). timeout bounds the wait for the answer.
nlohmann::json call_loader(const std::string &path, const nlohmann::json &request,
                           std::chrono::milliseconds timeout = std::chrono::seconds(30));

} // namespace bpfnet
