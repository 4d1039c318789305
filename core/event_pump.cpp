#include "core/event_pump.hpp"

#include "core/addresses.hpp"
#include "core/log.hpp"
#include "maps/system_error.hpp"

#include <bpf/libbpf.h>

#include <cerrno>

namespace bpfnet {

namespace {

// A resolution request for the same host is not repeated more often than this.
constexpr auto kResolutionRetry = std::chrono::milliseconds(200);

} // namespace

EventPump::EventPump(int events_fd, Handlers handlers)
    : handlers_(std::move(handlers)),
      ring_(ring_buffer__new(events_fd, on_ring_event, this, nullptr), ring_buffer__free) {
    if (!ring_)
        throw SystemError("ring_buffer__new", errno);
}

int EventPump::fd() const {
    return ring_buffer__epoll_fd(ring_.get());
}

void EventPump::consume() {
    ring_buffer__consume(ring_.get());
}

int EventPump::on_ring_event(void *ctx, void *data, size_t size) {
    if (size >= sizeof(bpfnet_event))
        static_cast<EventPump *>(ctx)->handle(*static_cast<const bpfnet_event *>(data));
    return 0;
}

void EventPump::handle(const bpfnet_event &event) {
    switch (event.type) {
    case BPFNET_EVENT_NEIGHBOUR_MISS:
    case BPFNET_EVENT_NEIGHBOUR_VERIFY: // its ARP answer confirms or corrects what a packet claimed
        resolve_neighbour(event.ip, event.service_ip);
        break;
    case BPFNET_EVENT_CONFLICT:
        handlers_.conflict(event.service_ip, event.mac);
        break;
    default:
        break;
    }
}

void EventPump::resolve_neighbour(const bpfnet_ip &host, const bpfnet_ip &service_ip) {
    auto now = std::chrono::steady_clock::now();
    auto &last = last_resolution_[host];
    if (now - last < kResolutionRetry)
        return;
    last = now;
    if (is_v4(host) != is_v4(service_ip))
        return; /* never from the datapath: a host and the service IP it talks to share a family */
    handlers_.resolve(host, service_ip);
    log_debug("neighbour miss: resolution sent", {{"host", format_ip(host)}});
    if (last_resolution_.size() > BPFNET_MAX_NEIGHBOURS)
        last_resolution_.clear();
}

} // namespace bpfnet
