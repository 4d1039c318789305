#include "k8s/event_recorder.hpp"

#include "k8s/json_fields.hpp"
#include "k8s/lease.hpp"

#include "core/log.hpp"

#include <chrono>

namespace bpfnet::k8s {

using nlohmann::json;

namespace {

// An Event write waits at most this long; the queue behind it waits too, the reconcile pass never does.
constexpr auto kEventTimeout = std::chrono::milliseconds(10000);
// While the API server cannot be reached, the next Event is tried again after these pauses (doubling).
constexpr auto kFirstRetry = std::chrono::seconds(1);
constexpr auto kLastRetry = std::chrono::seconds(30);

} // namespace

EventRecorder::EventRecorder(ApiClient &api, std::string reporting_instance)
    : api_(api), reporting_instance_(std::move(reporting_instance)), thread_([this] { run(); }) {}

EventRecorder::~EventRecorder() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void EventRecorder::record(const json &service, const ServiceEvent &event) {
    json body = service_event(service, event, reporting_instance_, std::chrono::system_clock::now());
    std::string ns = metadata_string(body, "namespace");
    if (ns.empty())
        return;
    {
        std::lock_guard lock(mutex_);
        if (queue_.size() >= kQueueLimit) {
            queue_.pop_front(); // the oldest report goes first: the newest says what is true now
            dropped_++;
        }
        queue_.push_back({std::move(ns), std::move(body)});
    }
    wake_.notify_one();
}

std::uint64_t EventRecorder::dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_;
}

// Events wait in the queue while the API server cannot be reached: what happened while a node was cut off
// from it (a Yielded service IP above all) is what an operator looks for afterwards.
void EventRecorder::run() {
    auto retry = std::chrono::duration_cast<std::chrono::milliseconds>(kFirstRetry);
    for (;;) {
        Pending next;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (stopping_)
                return;
            next = std::move(queue_.front());
            queue_.pop_front();
        }
        if (post(next)) {
            retry = std::chrono::duration_cast<std::chrono::milliseconds>(kFirstRetry);
            continue;
        }
        std::unique_lock lock(mutex_);
        if (queue_.size() < kQueueLimit)
            queue_.push_front(std::move(next));
        else
            dropped_++;
        if (wake_.wait_for(lock, retry, [&] { return stopping_; }))
            return;
        retry = std::min<std::chrono::milliseconds>(retry * 2, kLastRetry);
    }
}

bool EventRecorder::post(const Pending &pending) {
    const std::string reason = string_member(pending.body, "reason");
    try {
        api_.post(events_path(pending.namespace_), pending.body, kEventTimeout);
    } catch (const ConflictError &) {
        // A shared Event another node (or this one, earlier) created: seen again.
        bump_series(pending);
    } catch (const TransportError &e) {
        log_warn("event not posted yet: API server unreachable", {{"reason", reason}, {"error", e.what()}});
        return false;
    } catch (const std::exception &e) {
        log_warn("event not posted", {{"reason", reason}, {"error", e.what()}});
    }
    return true;
}

void EventRecorder::bump_series(const Pending &pending) {
    const std::string name = metadata_string(pending.body, "name");
    const std::string path = events_path(pending.namespace_) + "/" + name;
    try {
        json current = api_.get(path, kEventTimeout);
        long count = 1;
        if (const json *series = member(current, "series"))
            if (const json *c = member(*series, "count"); c && c->is_number_integer())
                count = c->get<long>();
        json patch = {
            {"metadata", {{"resourceVersion", metadata_string(current, "resourceVersion")}}},
            {"series",
             {{"count", count + 1}, {"lastObservedTime", format_micro_time(std::chrono::system_clock::now())}}}};
        api_.patch(path, patch, kEventTimeout);
        log_debug("event seen again", {{"event", name}, {"count", std::to_string(count + 1)}});
    } catch (const ConflictError &) {
        log_debug("event updated by another node meanwhile", {{"event", name}});
    } catch (const std::exception &e) {
        log_warn("event not updated", {{"event", name}, {"error", e.what()}});
    }
}

} // namespace bpfnet::k8s
