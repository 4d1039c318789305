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

    // The provisioning NIC's carrier (core/link_watch.hpp), once the loader follows it: /readyz says the
    // loader is not ready while it is lost, and /metrics shows it (bpfnet_nic_carrier).
    void set_nic_carrier(const std::string &interface, bool carrier) {
        std::lock_guard lock(mutex_);
        nic_ = interface;
        carrier_.store(carrier ? 1 : 0);
    }
    std::optional<bool> nic_carrier() const {
        int carrier = carrier_.load();
        return carrier < 0 ? std::nullopt : std::optional<bool>(carrier == 1);
    }
    // Why the loader cannot serve for lack of carrier; nullopt while the NIC has it (or is not followed yet).
    std::optional<std::string> carrier_problem() const {
        if (carrier_.load() != 0)
            return std::nullopt;
        std::lock_guard lock(mutex_);
        return "the provisioning NIC " + nic_ + " has no carrier: no host on the LAN can be reached through it";
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
    std::string nic_;
    std::atomic<int> carrier_{-1}; // -1: not followed (yet), 0: lost, 1: present
};

} // namespace bpfnet
