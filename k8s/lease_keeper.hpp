// The Lease protocol of Kubernetes mode: one coordination.k8s.io/v1 Lease per service IP (k8s/lease.hpp has
// the objects), claimed, renewed, released and collected through the API server. The loader decides which
// service IPs this node should hold; the keeper writes the Leases and says what each write proves to the
// claim state machine (core/claim.hpp, through Claims: DatapathRuntime in the loader).
//
// Its rules (docs/kubernetes.md, "Who serves"):
//   - a Lease is claimed when nobody holds it, this node does, or this node has watched the same version of
//     it for longer than its duration: expiry is observed, never computed from the holder's time stamps;
//   - every write carries the resourceVersion it was based on: of two nodes racing, one gets 409, reads the
//     Lease again and retries once if it is still free;
//   - a held Lease is renewed every third of its duration, and whenever the Services on its IP change;
//   - a claim is confirmed for one duration from the moment its write was sent; a Lease taken from a holder
//     that did not release it is a takeover (announced before it is answered);
//   - an API server that cannot be reached keeps a held Lease held (the LAN arbitrates meanwhile);
//   - Leases for IPs this node no longer serves are released (holder cleared), and a Lease no accepted
//     Service uses is deleted once nobody holds it, conditionally on the version seen.
//
// Not thread-safe (the loader's main thread calls it), except takeovers().
#pragma once

#include "k8s/client.hpp"
#include "k8s/lease.hpp"
#include "maps/layout.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace bpfnet::k8s {

class LeaseKeeper {
public:
    using SteadyClock = std::chrono::steady_clock;
    using Now = std::function<SteadyClock::time_point()>;

    // What the keeper's writes mean for this node's claim to a service IP, in the claim machine's words
    // (core/claim.hpp); the loader carries them out on the datapath runtime.
    class Claims {
    public:
        virtual ~Claims() = default;
        // A Lease write succeeded: the claim is good until `until`.
        virtual void confirmed(const bpfnet_ip &service_ip, SteadyClock::time_point until) = 0;
        // A Lease its holder did not release was written: confirmed until `until`, announced now, answered from
        // `answer_at` on.
        virtual void taken_over(const bpfnet_ip &service_ip, SteadyClock::time_point until,
                                SteadyClock::time_point answer_at) = 0;
        // A held Lease was renewed (after confirmed()): a renewal repeats the claim on the LAN for an IP the
        // node answers.
        virtual void renewed(const bpfnet_ip &service_ip) = 0;
        // The Lease is no longer this node's (released, taken by another node, lost in a race).
        virtual void dropped(const bpfnet_ip &service_ip) = 0;
    };

    struct Options {
        std::string node_name;       // the holder identity this node writes
        std::string lease_namespace; // where the Leases of the service IPs live
        std::chrono::seconds lease_duration{15};
        // A takeover's IP is answered this long after its write was sent: one announcement interval.
        std::chrono::milliseconds announce_interval{200};
        // Each request gives up after this long: a slow API server must not hold up the pass that renews
        // Leases and follows moves; the next pass retries.
        std::chrono::milliseconds write_timeout{5000};
    };

    // api and claims must outlive the keeper. now: the steady clock that expiry is observed on.
    LeaseKeeper(ApiClient &api, Claims &claims, Options options, Now now = SteadyClock::now);

    // The collection of the Leases (what the loader watches, with its label selector).
    std::string leases_path() const;
    // How often a held Lease is renewed: a third of its duration.
    std::chrono::milliseconds renew_period() const;

    // Once per pass, with the watched Leases, before the other calls: starts or continues observing each
    // Lease. watch_epoch: observation_epoch() of the Lease watch; when it changed, the watch was down and
    // nothing could be observed, so every observation starts over.
    void forget_unseen_leases(const Snapshot &leases, std::uint64_t watch_epoch);
    // What ends every observation, from the Lease watch's counters: a list (a start, a 410: the history is
    // gone), a failed list or watch (the API server away: its holders could not renew either), a stalled
    // watch (connected, silent: the same). Not a watch that ended and was resumed from its resourceVersion
    // (the server's timeoutSeconds, a proxy cutting an idle stream): nothing was missed across it, a renewal
    // made meanwhile arrives as a change, so observing on would put a takeover off at every reconnect.
    static std::uint64_t observation_epoch(const WatchStats &lease_watch);
    // Claims or renews the Lease of an IP eligible here (services: namespace/name of the Services on it, for
    // the Lease's annotation). True while this node holds it. Throws on an API error the rules do not cover
    // (the next pass tries again). now: the wall clock written into renewTime, as data for other nodes only:
    // renewals are timed on the steady clock (a step of the wall clock neither stops nor hastens them).
    bool hold_lease(const bpfnet_ip &service_ip, const std::vector<std::string> &services, const Snapshot &leases,
                    Clock::time_point now);
    // Releases every Lease this node holds (or held before a restart, as the watch shows) for an IP not in
    // kept. Call after the datapath stopped answering for those IPs: the next owner never overlaps.
    void release_leases(const std::set<bpfnet_ip> &kept, const Snapshot &leases);
    // Deletes the Leases whose IP no accepted Service uses (used_ips) once nobody holds them.
    void collect_orphaned_leases(const Snapshot &leases, const std::set<bpfnet_ip> &used_ips);

    // A node other than this one holds the Lease of the IP (and so serves it).
    bool held_elsewhere(const bpfnet_ip &service_ip, const Snapshot &leases) const;
    // The previous holder of a Lease this node took over, until forget_previous_holders() drops it.
    std::optional<std::string> taken_from(const bpfnet_ip &service_ip) const;
    // Who held a Lease before is needed only until its IP is answered (the Serving Event names it).
    void forget_previous_holders(const std::set<bpfnet_ip> &answered);
    std::size_t held_count() const { return held_.size(); }
    // How long this node has seen the Lease at its current resourceVersion (any Lease of the watch: the node
    // Leases too), restarted whenever the watch was down (forget_unseen_leases).
    SteadyClock::duration unchanged_for(const LeaseState &lease);
    // Leases taken over from a holder that did not release them. Thread-safe (read by /metrics).
    std::uint64_t takeovers() const { return takeovers_; }

private:
    bool write_claim(const bpfnet_ip &service_ip, const std::vector<std::string> &services, LeaseState base,
                     Clock::time_point now);
    void lose_lease(const bpfnet_ip &service_ip);
    std::optional<LeaseState> fetch_lease(const std::string &name);
    bool release_lease(const bpfnet_ip &service_ip, LeaseState lease);
    std::string lease_key(const std::string &name) const; // "namespace/name", as in a Snapshot

    ApiClient &api_;
    Claims &claims_;
    Options options_;
    Now now_;

    // How long this node has seen each Lease ("namespace/name") at one resourceVersion: expiry as observed.
    struct Observation {
        std::string resource_version;
        SteadyClock::time_point since;
    };
    std::map<std::string, Observation> observed_;
    std::uint64_t lease_watch_epoch_ = 0; // watch_epoch when observed_ was last valid

    std::map<bpfnet_ip, LeaseState> held_;                    // service IP -> its Lease as this node last wrote it
    std::map<bpfnet_ip, SteadyClock::time_point> written_at_; // -> when that write was sent: the next renewal
    std::map<bpfnet_ip, std::string> taken_from_;             // -> the previous holder, for the Serving Event
    // Orphaned Leases whose delete was sent: lease key -> (its resourceVersion then, when to ask again).
    std::map<std::string, std::pair<std::string, SteadyClock::time_point>> lease_delete_retry_;
    std::atomic<std::uint64_t> takeovers_{0};
};

} // namespace bpfnet::k8s
