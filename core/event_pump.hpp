// The datapath's reports to the loader (the `events` ring buffer, bpf/lib/events.h), read on the runtime's
// thread and handed on: a neighbour miss or check becomes a resolution request (at most one per host per
// 200 ms, however many packets missed), a conflict goes to the claim machine's owner. Not thread-safe: the
// runtime consumes under its lock, so the handlers run under it too.
#pragma once

#include "maps/layout.hpp"

#include <linux/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>

struct ring_buffer;

namespace bpfnet {

class EventPump {
public:
    struct Handlers {
        // Ask `host` for its MAC on behalf of `service_ip` (the same family).
        std::function<void(const bpfnet_ip &host, const bpfnet_ip &service_ip)> resolve;
        // Another MAC (6 bytes) claims `service_ip`.
        std::function<void(const bpfnet_ip &service_ip, const __u8 *mac)> conflict;
    };

    // events_fd: the ring buffer map's fd. Throws SystemError.
    EventPump(int events_fd, Handlers handlers);
    // Readable when reports are waiting: for the runtime's epoll.
    int fd() const;
    // Hands on every report waiting.
    void consume();

private:
    static int on_ring_event(void *ctx, void *data, size_t size);
    void handle(const struct bpfnet_event &event);
    void resolve_neighbour(const bpfnet_ip &host, const bpfnet_ip &service_ip);

    Handlers handlers_;
    std::unique_ptr<ring_buffer, void (*)(ring_buffer *)> ring_;
    std::map<bpfnet_ip, std::chrono::steady_clock::time_point> last_resolution_;
};

} // namespace bpfnet
