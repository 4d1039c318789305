// Posts the loader's Events off the reconcile pass: a slow or absent API server must not hold up the pass that
// renews Leases and follows pod moves. Events are a report, not state: the queue is bounded (the oldest go
// first), an Event the API server refuses is logged and dropped, and one it could not be reached for waits
// at the head of the queue, tried again with backoff (1 s doubling to 30 s).
//
// A standing condition (a refused Service) is reported again every refresh interval while it lasts: the API
// server deletes Events an hour after their last write (--event-ttl), and the reason must not vanish from
// `kubectl describe` while the Service is still refused. A shared Event (one name for every node, see
// shared_event_name) that still exists gets its series count and lastObservedTime bumped, which also renews
// its time to live.
#pragma once

#include "k8s/client.hpp"
#include "k8s/event.hpp"

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace bpfnet::k8s {

class EventRecorder {
public:
    // reporting_instance: this node's name (capped as the API requires, see reporting_instance()).
    EventRecorder(ApiClient &api, std::string reporting_instance);
    ~EventRecorder(); // posts nothing more; waits for the request in flight
    EventRecorder(const EventRecorder &) = delete;
    EventRecorder &operator=(const EventRecorder &) = delete;

    // Queues an Event about `service`; never blocks on the API server.
    void record(const nlohmann::json &service, const ServiceEvent &event);

    std::uint64_t dropped() const; // Events dropped because the queue was full

    static constexpr std::size_t kQueueLimit = 256;

private:
    struct Pending {
        std::string namespace_;
        nlohmann::json body;
    };
    void run();
    bool post(const Pending &pending); // false: the API server could not be reached, try again later
    void bump_series(const Pending &pending);

    ApiClient &api_;
    std::string reporting_instance_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Pending> queue_;
    bool stopping_ = false;
    std::uint64_t dropped_ = 0;
    std::thread thread_;
};

} // namespace bpfnet::k8s
