// The loader's HTTP endpoints for Prometheus and Kubernetes probes (docs/observability.md):
//   /metrics  the datapath's counters and tables in the Prometheus text format
//   /healthz  200 while the process is alive
//   /readyz   200 when the datapath is attached, reconciled and the heartbeat fresh; else 503 and the reason
// Served from threads of its own that only read maps and the LoaderStatus, so a slow client cannot hold up
// the loader's epoll loop.
#pragma once

#include "core/loader_status.hpp"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace httplib {
class Server;
}

namespace bpfnet {

struct ListenAddress {
    std::string host; // as given, without the brackets of an IPv6 literal
    int port = 0;
};

// "HOST:PORT" or "[IPV6]:PORT"; throws std::invalid_argument saying what is wrong.
ListenAddress parse_listen_address(std::string_view text);

class HttpServer {
public:
    // Binds (throws std::runtime_error when the address cannot be bound) and starts serving.
    HttpServer(const ListenAddress &address, const LoaderStatus &status, std::string version);
    ~HttpServer();
    HttpServer(const HttpServer &) = delete;
    HttpServer &operator=(const HttpServer &) = delete;

    // Closes the listener and waits for requests in progress; idempotent.
    void stop();

private:
    void route();

    const LoaderStatus &status_;
    std::string version_;
    std::unique_ptr<httplib::Server> server_;
    std::atomic<bool> finished_{false};
    std::thread thread_;
};

} // namespace bpfnet
