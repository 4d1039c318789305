// The part of the loader that keeps an attached datapath alive, whatever decides its desired state (the config
// file in standalone mode, the Kubernetes API in Kubernetes mode): the heartbeat that keeps the ARP liveness
// gate open, the maps brought to the desired state, and the datapath's events (neighbour misses resolved by
// ARP, conflicts reported). What it says on the LAN is the Announcer's (core/announcer.hpp: gratuitous ARP
// when a service IP becomes active here, router advertisements); who may answer for a service IP is the claim
// machine's (core/claim.hpp). It runs on a thread of its own, so a slow API server or a blocking call in the
// mode's loop can never let the heartbeat go stale while the process is alive.
#pragma once

#include "core/address_prober.hpp"
#include "core/addresses.hpp"
#include "core/announcer.hpp"
#include "core/claim.hpp"
#include "core/datapath.hpp"
#include "core/desired_state.hpp"
#include "core/event_pump.hpp"
#include "core/kernel_probe.hpp"
#include "core/loader_status.hpp"
#include "core/ndp_sender.hpp"
#include "core/node.hpp"
#include "core/pin_lock.hpp"
#include "core/tc_hook.hpp"
#include "maps/unique_fd.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace bpfnet {

class DatapathRuntime {
public:
    // What another MAC speaking for one of this node's service IPs made of it. Conflict: it claims an IP this
    // node answers for (reported at most every ClaimMachine::kConflictReportInterval per IP); Yielded: this node
    // stopped answering for the IP because of it (see confirm_claim); Deferred: it answered the probe of a claim
    // that starts, which is not answered while it does (probe_before_answering). ProbeUnanswered: no conflict, a
    // claim probed clear is answered from now on (mac empty): the mode's next pass serves it.
    enum class ClaimReport { Conflict, Yielded, Deferred, ProbeUnanswered };
    // Called on the runtime's thread; mac is "aa:bb:cc:dd:ee:ff".
    using ConflictHandler =
        std::function<void(const bpfnet_ip &service_ip, const std::string &mac, ClaimReport report)>;

    // node: the NIC, pin root, control socket, XDP mode, heartbeat and announcement timings. status must
    // outlive the runtime.
    DatapathRuntime(NodeSettings node, LoaderStatus &status);
    ~DatapathRuntime(); // stops the thread; the datapath stays attached
    DatapathRuntime(const DatapathRuntime &) = delete;
    DatapathRuntime &operator=(const DatapathRuntime &) = delete;

    // Probes the kernel and plans the attach (a tcAttach the kernel cannot do is refused here, whoever holds
    // the pins), then takes the pin directory's lock (PinDirLock): from here on this process is the
    // interface's one writer. Throws PinDirBusy naming the holder. attach() claims when the mode did not.
    void claim();
    // Attaches (or adopts) the datapath and publishes its maps. Throws with nothing half attached. The
    // heartbeat goes on at once when it was fresh (a restart), else it starts with the first apply().
    void attach();
    // Kubernetes mode, before attach(): a claim that starts is answered only once the LAN was probed for its IP
    // and no other MAC answered (core/address_prober.hpp, ClaimMachine::probe_before_answering).
    void probe_before_answering() { probes_ = true; }
    // Starts the heartbeat, announcement and event thread.
    void start(ConflictHandler on_conflict = {});
    // Stops that thread (the destructor does too): the mode calls it before its own members (which the
    // conflict handler uses) go. The datapath stays attached.
    void stop();

    struct Applied {
        ReconcileReport report;
        std::vector<bpfnet_ip> announced;
        // The pod hook of every backend veth in `specs`: what this call did, or Adopted when it was in place.
        std::map<int, HookAction> pod_hooks;
        std::vector<int> detached; // veths whose pod hook left with their backend
    };
    // Brings the maps to `specs` (pod hooks first, then the maps, then the hooks of departed backends) and
    // announces the service IPs that became active. Thread-safe. The first call after attach() announces
    // every active IP when the datapath had gone stale (its ARP answers had stopped). `node` replaces the
    // node settings (subnet, DHCP hops, heartbeat and announcement timings; not the interface, pin root or
    // XDP mode, which only a restart changes).
    Applied apply(const NodeSettings &node, const std::vector<ServiceSpec> &specs);
    // The next apply() checks every backend's pod hook in the kernel again (after SIGHUP: someone may have
    // removed a filter by hand).
    void recheck_hooks();

    // Claims (core/claim.hpp decides; this runtime carries out its steps). Each is thread-safe.
    //
    // Standalone mode: the config serves these service IPs, with nothing to confirm them: they never yield.
    // IPs held by the config before and missing from `service_ips` now are released.
    void hold_claims(const std::vector<bpfnet_ip> &service_ips);
    // Ownership arbitrated elsewhere (Kubernetes Leases) tells the datapath how long this node's claim to a
    // service IP is known to be good: until `until`, another MAC claiming the IP is a conflict to report
    // (a second cluster); after it, the claim is no longer proven (the Lease could not be renewed: an API
    // server this node cannot reach) and another claimant may be its rightful new owner, so the datapath
    // yields: the runtime's thread deactivates the IP at once, whatever the mode's loop is blocked on, and
    // stays so through later apply() calls until a new confirm_claim() (a Lease written again).
    void confirm_claim(const bpfnet_ip &service_ip, std::chrono::steady_clock::time_point until);
    // A claim taken over from a holder that did not release it: confirmed as above, and announced now (a
    // round of garp_count gratuitous ARPs), so that the old holder, which sees the claim, yields first. The
    // mode answers the IP only once announcing() says the announcement had until `answer_at` to reach it.
    void take_over_claim(const bpfnet_ip &service_ip, std::chrono::steady_clock::time_point until,
                         std::chrono::steady_clock::time_point answer_at);
    bool announcing(const bpfnet_ip &service_ip);
    // The claim's probe has not come back clear (probing, or deferred to another MAC): not answered yet.
    bool probe_pending(const bpfnet_ip &service_ip);
    // The claim is gone (released, or taken by another node): nothing more to confirm or yield (an IP already
    // yielded stays so until a new claim is confirmed).
    void drop_claim(const bpfnet_ip &service_ip);
    // Every service IP active in the maps (adopted from a predecessor) counts as unconfirmed until a claim
    // is confirmed: a loader that restarts while cut off from the API server yields to another node's claim
    // instead of answering beside it until it can reconcile.
    void unconfirm_active_claims();
    // The loader is stopping and another is expected to take over (a rolling update): the heartbeat stops and
    // is written `grace` into the future, so the service IPs stay answered without a loader until then (and
    // the heartbeat timeout after) instead of going quiet at the timeout while the next loader's image is
    // pulled. The datapath ends the grace at once if another MAC claims one of the IPs meanwhile. 0: none
    // (the IPs go quiet at the heartbeat timeout, as after a crash). Call once, last.
    void leave_with_grace(std::chrono::milliseconds grace);
    // One gratuitous ARP (unsolicited neighbour advertisement) for each of these service IPs this node has
    // not yielded, whether or not it is active here: a Lease renewal repeats the claim, so a holder cut off
    // from the API server that missed the takeover's announcement sees this one and yields.
    void announce_claim(const std::vector<bpfnet_ip> &service_ips);

    // How each backend's veth was found, as the last apply was given it (specs_), for describe
    // (core/control_socket.hpp): one {"ifindex", "found_by", "behind", "delivery"} per veth.
    nlohmann::json backend_veths() const;

private:
    bool heartbeat_fresh();
    void write_heartbeat();
    // Removes the flows the pod no longer sends on and counts each host's share again (core/flow_sweep.hpp).
    void sweep_idle_flows();
    // An IPv6 service address is active here and not yielded: router advertisements are this node's to send.
    bool owns_ipv6_address();
    void report_conflict(const bpfnet_ip &service_ip, const __u8 *mac);
    void carry_out_probe(const ClaimStep &step, const bpfnet_ip &service_ip,
                         std::chrono::steady_clock::time_point first = std::chrono::steady_clock::now());
    void probe_answered(const bpfnet_ip &service_ip, const std::array<uint8_t, 6> &mac);
    void probe_unanswered(const bpfnet_ip &service_ip);
    void yield(const bpfnet_ip &service_ip);
    void reactivate(const bpfnet_ip &service_ip);
    Applied apply_locked(const std::vector<ServiceSpec> &specs);
    void join_multicast_groups(const std::vector<ServiceSpec> &specs);
    void serve(); // the thread

    NodeSettings node_;
    LoaderStatus &status_;
    PinDirLock lock_;
    std::unique_ptr<Datapath> datapath_;
    std::optional<KernelFeatures> kernel_; // probed by claim()
    AttachPlan plan_;
    std::optional<Announcer> announcer_; // from attach()
    bool probes_ = false;
    std::optional<AddressProber> prober_; // from attach(), with probes_
    std::optional<NicMulticastGroups> groups_;
    MacAddress nic_mac_{};
    bool announce_all_on_first_apply_ = false;
    bool heartbeat_running_ = false; // written every interval: from attach() when it was fresh, else from apply()
    std::set<int> hooked_;           // backend veths whose pod hook this process attached or adopted
    ConflictHandler on_conflict_;

    mutable std::mutex mutex_; // everything below, and the maps, between apply() and the thread
    UniqueFd epoll_, stop_, heartbeat_timer_, flow_sweep_timer_;
    std::chrono::steady_clock::time_point started_{}; // start(): flows unstamped since are idle (flow_sweep.hpp)
    std::optional<EventPump> events_;                 // from start()
    ClaimMachine claims_;
    std::set<bpfnet_ip> config_claims_; // hold_claims' last service IPs
    std::vector<ServiceSpec> specs_;    // as last given to apply(), before yielded IPs are taken out
    bool routed_backends_ = false;      // the last apply had backends delivered through the node's routing
    bool applied_once_ = false;         // specs_ holds what the mode decided (a yield re-applies it)
    std::thread thread_;
};

} // namespace bpfnet
