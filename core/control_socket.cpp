#include "core/control_socket.hpp"

#include "maps/system_error.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

namespace bpfnet {

namespace {

constexpr size_t kMaxMessage = 64 * 1024;
// How long the loader waits for a connected client's request: local clients send it at once.
constexpr auto kRequestTimeout = std::chrono::seconds(1);

constexpr std::array<std::pair<ControlFailure::Kind, std::string_view>, 6> kKindNames{{
    {ControlFailure::Kind::BadRequest, "bad_request"},
    {ControlFailure::Kind::InvalidArgument, "invalid_argument"},
    {ControlFailure::Kind::BackendUnavailable, "backend_unavailable"},
    {ControlFailure::Kind::Refused, "refused"},
    {ControlFailure::Kind::PermissionDenied, "permission_denied"},
    {ControlFailure::Kind::Failure, "failure"},
}};

sockaddr_un socket_address(const std::string &path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof(address.sun_path))
        throw SystemError("control socket " + path + ": path longer than " +
                              std::to_string(sizeof(address.sun_path) - 1) + " bytes",
                          ENAMETOOLONG);
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    return address;
}

int connect_to(int fd, const sockaddr_un &address) {
    return ::connect(fd, reinterpret_cast<const sockaddr *>(&address), sizeof(address));
}

void set_timeout(int fd, std::chrono::milliseconds timeout) {
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

ucred peer_credentials(int fd) {
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        throw SystemError("getsockopt SO_PEERCRED", errno);
    return cred;
}

// Reads one line (without its newline), or up to EOF; false on a timeout, an error or an oversized message.
bool read_line(int fd, std::string &line) {
    char buf[4096];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0) {
            errno = 0;
            return !line.empty();
        }
        line.append(buf, static_cast<size_t>(n));
        if (size_t newline = line.find('\n'); newline != std::string::npos) {
            line.resize(newline);
            return true;
        }
        if (line.size() > kMaxMessage)
            return false;
    }
}

bool write_all(int fd, const std::string &text) {
    for (size_t done = 0; done < text.size();) {
        ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

nlohmann::json failure_reply(ControlFailure::Kind kind, const std::string &message) {
    return {{"ok", false}, {"error", to_string(kind)}, {"message", message}};
}

// A socket file at path that a live process listens on: that process's pid, else nullopt (stale file).
std::optional<pid_t> live_listener(const std::string &path) {
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!probe.valid())
        throw SystemError("socket", errno);
    const sockaddr_un address = socket_address(path);
    if (connect_to(probe.get(), address) != 0)
        return std::nullopt;
    return peer_credentials(probe.get()).pid;
}

// The socket's directory: created private when it does not exist yet (an existing one keeps its mode).
void ensure_control_dir(const std::string &path) {
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (dir.empty() || std::filesystem::exists(dir))
        return;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw SystemError("mkdir " + dir.string(), ec.value());
    if (::chmod(dir.c_str(), 0700) != 0)
        throw SystemError("chmod " + dir.string(), errno);
}

} // namespace

std::string to_string(ControlFailure::Kind kind) {
    for (const auto &[k, name] : kKindNames)
        if (k == kind)
            return std::string(name);
    return "failure";
}

ControlFailure::Kind parse_failure_kind(std::string_view text) {
    for (const auto &[kind, name] : kKindNames)
        if (name == text)
            return kind;
    return ControlFailure::Kind::Failure;
}

ControlServer::ControlServer(std::string path) : path_(std::move(path)) {
    const sockaddr_un address = socket_address(path_);
    ensure_control_dir(path_);
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            throw SystemError("control socket " + path_ + ": a file that is not a socket is in the way", EEXIST);
        if (auto pid = live_listener(path_))
            throw SystemError("control socket " + path_ + " is served by another process (pid " + std::to_string(*pid) +
                                  "): another bpfnet-loader for this interface?",
                              EADDRINUSE);
        ::unlink(path_.c_str()); // left by a loader that died
    }
    listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!listener_.valid())
        throw SystemError("socket", errno);
    if (::bind(listener_.get(), reinterpret_cast<const sockaddr *>(&address), sizeof(address)) != 0)
        throw SystemError("bind " + path_, errno);
    // Nobody can connect before listen(): the mode is right before the first client can use the socket.
    if (::chmod(path_.c_str(), 0600) != 0 || ::lstat(path_.c_str(), &st) != 0) {
        int err = errno;
        ::unlink(path_.c_str());
        throw SystemError("chmod " + path_, err);
    }
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    if (::listen(listener_.get(), 16) != 0) {
        int err = errno;
        ::unlink(path_.c_str());
        throw SystemError("listen " + path_, err);
    }
}

ControlServer::~ControlServer() {
    struct stat st {};
    // A successor may already have replaced the file: only our own socket is removed.
    if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
        ::unlink(path_.c_str());
}

void ControlServer::serve_pending(const ControlHandler &handler) {
    for (;;) {
        UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!connection.valid()) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return; // EAGAIN: none pending (other errors: the next readiness retries)
        }
        answer(connection.get(), handler);
    }
}

void ControlServer::answer(int connection, const ControlHandler &handler) {
    set_timeout(connection, kRequestTimeout);
    nlohmann::json reply;
    std::string line;
    // The request is read before anything is answered, a refusal included: closing a socket with unread
    // data resets the connection, and the client would see ECONNRESET instead of the refusal.
    if (!read_line(connection, line))
        return; // nothing (or too much) sent in time: no answer
    try {
        const ucred peer = peer_credentials(connection);
        if (peer.uid != 0 && peer.uid != ::geteuid())
            throw ControlFailure(ControlFailure::Kind::PermissionDenied,
                                 "the loader's control socket takes requests from root (or the loader's user) only, "
                                 "not uid " +
                                     std::to_string(peer.uid));
        ControlRequest request{parse_control_request(line), peer.pid, peer.uid};
        reply = {{"ok", true}, {"result", handler(request)}};
    } catch (const ControlFailure &e) {
        reply = failure_reply(e.kind(), e.what());
    } catch (const std::exception &e) {
        reply = failure_reply(ControlFailure::Kind::Failure, e.what());
    }
    write_all(connection, reply.dump() + "\n");
}

nlohmann::json parse_control_request(std::string_view line) {
    nlohmann::json body = nlohmann::json::parse(line, nullptr, false);
    if (!body.is_object() || !body.contains("command") || !body["command"].is_string())
        throw ControlFailure(ControlFailure::Kind::BadRequest, "a request is a JSON object with a \"command\"");
    return body;
}

nlohmann::json call_loader(const std::string &path, const nlohmann::json &request, std::chrono::milliseconds timeout) {
    const sockaddr_un address = socket_address(path);
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid())
        throw SystemError("socket", errno);
    if (connect_to(fd.get(), address) != 0) {
        int err = errno;
        if (err == ENOENT || err == ECONNREFUSED || err == ENOTDIR)
            throw ControlUnavailable("no bpfnet-loader serves " + path + " (" + std::strerror(err) +
                                     "): start the loader for this interface (or give its --control-socket)");
        throw SystemError("connect " + path, err);
    }
    set_timeout(fd.get(), timeout);
    if (!write_all(fd.get(), request.dump() + "\n"))
        throw SystemError("send to " + path, errno);
    std::string line;
    if (!read_line(fd.get(), line)) {
        int err = (errno == EAGAIN || errno == EWOULDBLOCK) ? ETIMEDOUT : ECONNRESET;
        throw SystemError("no answer from the loader at " + path, err);
    }
    nlohmann::json reply = nlohmann::json::parse(line, nullptr, false);
    if (!reply.is_object() || !reply.contains("ok"))
        throw SystemError("the loader at " + path + " answered something that is not a reply", EPROTO);
    if (reply["ok"] == true)
        return reply.value("result", nlohmann::json::object());
    throw ControlFailure(parse_failure_kind(reply.value("error", "failure")), reply.value("message", "refused"));
}

nlohmann::json describe_loader(std::string_view mode, const std::string &interface, const std::string &interface_macs,
                               nlohmann::json backend_veths) {
    return {{"mode", mode},
            {"interface", interface},
            {"interface_chosen_by", interface_macs.empty() ? "name" : "mac"},
            {"interface_macs", interface_macs.empty() ? nlohmann::json(nullptr) : nlohmann::json(interface_macs)},
            {"backend_veths", std::move(backend_veths)}};
}

} // namespace bpfnet
