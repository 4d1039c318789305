// What the loader's main loop tells the HTTP thread: whether it is ready, and the maps /metrics reads.
// The main loop writes, the HTTP workers read; each access holds the lock only to copy a flag, a short string
// or a pointer, so a scrape can never hold up the epoll loop.
#pragma once

#include "core/metrics.hpp"
#include "maps/datapath_maps.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace bpfnet {

class LoaderStatus {
public:
    // Ready: the programs are attached and the last reconcile succeeded.
    void set_ready() {
        std::lock_guard lock(mutex_);
        reason_.clear();
        ready_.store(true);
    }
    // reason: one line for /readyz and the logs; newlines would break the probe output, so they become spaces.
    void set_not_ready(std::string reason) {
        for (char &c : reason)
            if (c == '\n' || c == '\r')
                c = ' ';
        std::lock_guard lock(mutex_);
        reason_ = std::move(reason);
        ready_.store(false);
    }
    bool ready() const { return ready_.load(); }
    // Why the loader is not ready; nullopt when it is.
    std::optional<std::string> not_ready_reason() const {
        std::lock_guard lock(mutex_);
        if (ready_.load())
            return std::nullopt;
        return reason_;
    }

    // The maps the HTTP thread reads, with fds of their own (opened from the pins), so the main loop's
    // Datapath is never touched from another thread. Null until the datapath is attached.
    void publish_maps(std::shared_ptr<const DatapathMaps> maps) {
        std::lock_guard lock(mutex_);
        maps_ = std::move(maps);
    }
    std::shared_ptr<const DatapathMaps> maps() const {
        std::lock_guard lock(mutex_);
        return maps_;
    }

    // The mode's own metric families (Kubernetes mode's watches, Services and Leases); unset in standalone
    // mode. write is called on HTTP workers and must be thread-safe.
    void publish_mode_metrics(ModeMetrics write) {
        std::lock_guard lock(mutex_);
        mode_metrics_ = std::move(write);
    }
    ModeMetrics mode_metrics() const {
        std::lock_guard lock(mutex_);
        return mode_metrics_;
    }

private:
    mutable std::mutex mutex_;
    std::atomic<bool> ready_{false};
    std::string reason_ = "starting: the datapath is not attached yet";
    std::shared_ptr<const DatapathMaps> maps_;
    ModeMetrics mode_metrics_;
};

} // namespace bpfnet
