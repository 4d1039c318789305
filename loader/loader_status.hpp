// What the loader's main loop tells the HTTP thread: whether it is ready, and the maps /metrics reads.
// The main loop writes, the HTTP workers read; each access holds the lock only to copy a flag, a short string
// or a pointer, so a scrape can never hold up the epoll loop.
#pragma once

#include "maps/datapath_maps.hpp"
#include "metrics.hpp"

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

    // Kubernetes mode: how /metrics reads the controller's state (called on an HTTP worker; must be
    // thread-safe). Unset in standalone mode.
    void publish_kubernetes(std::function<KubernetesState()> read) {
        std::lock_guard lock(mutex_);
        kubernetes_ = std::move(read);
    }
    std::optional<KubernetesState> kubernetes() const {
        std::function<KubernetesState()> read;
        {
            std::lock_guard lock(mutex_);
            read = kubernetes_;
        }
        if (!read)
            return std::nullopt;
        return read();
    }

private:
    mutable std::mutex mutex_;
    std::atomic<bool> ready_{false};
    std::string reason_ = "starting: the datapath is not attached yet";
    std::shared_ptr<const DatapathMaps> maps_;
    std::function<KubernetesState()> kubernetes_;
};

} // namespace bpfnet
