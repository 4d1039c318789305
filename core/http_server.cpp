#include "core/http_server.hpp"

#include "core/log.hpp"
#include "core/metrics.hpp"
#include "core/monotonic_clock.hpp"

#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include <charconv>
#include <chrono>
#include <cstdio>

namespace bpfnet {

namespace {

// Few workers: the clients are a Prometheus server and the kubelet's probes. More than one, so a scrape
// that keeps its connection open cannot make a probe wait.
constexpr size_t kWorkers = 4;
constexpr time_t kTimeoutSeconds = 5;
constexpr const char *kText = "text/plain; charset=utf-8";

// A loader whose epoll loop stopped writing heartbeats has made the datapath stop answering ARP: it is
// not serving, whatever its last reconcile said.
std::optional<std::string> heartbeat_problem(const DatapathMaps &maps) {
    auto hb = maps.heartbeat.lookup(0);
    auto iface = maps.iface.lookup(0);
    if (!hb || hb->monotonic_ns == 0 || !iface)
        return "the datapath has no heartbeat yet";
    uint64_t now = monotonic_ns();
    uint64_t age = now > hb->monotonic_ns ? now - hb->monotonic_ns : 0;
    if (age <= iface->heartbeat_timeout_ns)
        return std::nullopt;
    char text[128];
    std::snprintf(text, sizeof(text), "heartbeat stale: last written %.1f s ago, timeout %.1f s",
                  static_cast<double>(age) / 1e9, static_cast<double>(iface->heartbeat_timeout_ns) / 1e9);
    return text;
}

// The /readyz verdict: nullopt when ready, else one line saying why not.
std::optional<std::string> not_ready_reason(const LoaderStatus &status) {
    if (auto reason = status.not_ready_reason())
        return reason;
    if (auto reason = status.carrier_problem())
        return reason;
    auto maps = status.maps();
    if (!maps)
        return "starting: the datapath's maps are not open yet";
    try {
        return heartbeat_problem(*maps);
    } catch (const std::exception &e) {
        return std::string("cannot read the datapath's maps: ") + e.what();
    }
}

void handle_readyz(const LoaderStatus &status, httplib::Response &res) {
    if (auto reason = not_ready_reason(status)) {
        res.status = 503;
        res.set_content(*reason + "\n", kText);
        return;
    }
    res.set_content("ok\n", kText);
}

void handle_metrics(const LoaderStatus &status, const std::string &version, httplib::Response &res) {
    MetricsSnapshot snapshot{.version = version,
                             .ready = !not_ready_reason(status),
                             .nic_carrier = status.nic_carrier(),
                             .datapath = std::nullopt,
                             .mode_families = status.mode_metrics()};
    try {
        if (auto maps = status.maps())
            snapshot.datapath = read_datapath(*maps, monotonic_ns());
    } catch (const std::exception &e) {
        // A partial exposition would look like counters that went to zero: fail the scrape instead.
        log_warn("metrics: cannot read the datapath's maps", {{"error", e.what()}});
        res.status = 500;
        res.set_content(std::string("cannot read the datapath's maps: ") + e.what() + "\n", kText);
        return;
    }
    res.set_content(format_metrics(snapshot), kMetricsContentType);
}

// httplib's default also sets SO_REUSEPORT, which would let a second loader bind the same port and have
// the kernel split the probes between the two. SO_REUSEADDR alone lets a restarted loader bind at once.
void listener_socket_options(socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

// The signals the loader reads from its signalfd (SIGTERM, SIGHUP) must never be delivered to a server
// thread, where they would kill the process instead: threads started inside this scope block them all,
// and the workers inherit the mask from the listener thread.
class AllSignalsBlocked {
public:
    AllSignalsBlocked() {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &saved_);
    }
    ~AllSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
    AllSignalsBlocked(const AllSignalsBlocked &) = delete;
    AllSignalsBlocked &operator=(const AllSignalsBlocked &) = delete;

private:
    sigset_t saved_{};
};

std::string describe(const ListenAddress &address) {
    bool v6 = address.host.find(':') != std::string::npos;
    return (v6 ? "[" + address.host + "]" : address.host) + ":" + std::to_string(address.port);
}

} // namespace

ListenAddress parse_listen_address(std::string_view text) {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos)
        throw std::invalid_argument("'" + std::string(text) + "': expected HOST:PORT");
    std::string_view host = text.substr(0, colon);
    std::string_view port_text = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    else if (host.find(':') != std::string_view::npos)
        throw std::invalid_argument("'" + std::string(text) + "': an IPv6 address needs brackets: [ADDRESS]:PORT");
    if (host.empty())
        throw std::invalid_argument("'" + std::string(text) + "': the host is empty (0.0.0.0 listens on all)");
    int port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (port_text.empty() || ec != std::errc{} || end != port_text.data() + port_text.size() || port < 1 ||
        port > 65535)
        throw std::invalid_argument("'" + std::string(text) + "': the port must be a number from 1 to 65535");
    return ListenAddress{std::string(host), port};
}

HttpServer::HttpServer(const ListenAddress &address, const LoaderStatus &status, std::string version)
    : status_(status), version_(std::move(version)), server_(std::make_unique<httplib::Server>()) {
    server_->new_task_queue = [] {
        return new httplib::ThreadPool(kWorkers);
    };
    server_->set_socket_options(listener_socket_options);
    server_->set_read_timeout(kTimeoutSeconds, 0);
    server_->set_write_timeout(kTimeoutSeconds, 0);
    server_->set_keep_alive_timeout(kTimeoutSeconds);
    route();
    if (!server_->bind_to_port(address.host, address.port))
        throw std::runtime_error("cannot listen on " + describe(address) +
                                 " for metrics and probes (port in use, or not a local address)");
    {
        AllSignalsBlocked blocked;
        thread_ = std::thread([this] {
            server_->listen_after_bind();
            finished_.store(true);
        });
    }
    log_info("listening for metrics and probes", {{"address", describe(address)}});
}

HttpServer::~HttpServer() {
    stop();
}

void HttpServer::route() {
    server_->Get("/healthz", [](const httplib::Request &, httplib::Response &res) { res.set_content("ok\n", kText); });
    server_->Get("/readyz", [this](const httplib::Request &, httplib::Response &res) { handle_readyz(status_, res); });
    server_->Get("/metrics",
                 [this](const httplib::Request &, httplib::Response &res) { handle_metrics(status_, version_, res); });
}

void HttpServer::stop() {
    if (!thread_.joinable())
        return;
    // httplib's stop() does nothing until the listener thread has entered its accept loop: a stop right
    // after start would be lost and join() would wait forever. Wait for the loop (or its end) first.
    while (!finished_.load() && !server_->is_running())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    server_->stop();
    thread_.join();
}

} // namespace bpfnet
