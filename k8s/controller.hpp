// The loader in Kubernetes mode: Services of our loadBalancerClass, their EndpointSlices and one Lease per
// service IP decide what this node's datapath serves.
//
// Every change seen by a watch (and a periodic tick that renews Leases and retries failed writes) runs one
// reconcile pass on the loader's main thread, from the full current state:
//   1. each Service is accepted or refused (k8s/service_model); refusals get a Warning Event;
//   2. an accepted Service is eligible here when a ready endpoint runs on this node and its pod's veth is
//      found through the kernel's route to the pod IP; Services sharing an IP are eligible only together;
//   3. a service IP is served here only while this node holds its Lease (claimed when free, expired or
//      already ours; renewed every third of its duration). Taking over a Lease its holder did not release
//      (it expired) is announced on the LAN before the IP is answered, so an old holder cut off from the
//      API server sees the claim and yields (core/claim.hpp) before the new one answers;
//   4. the datapath is brought to that state (ports of every accepted Service listed, backends only for the
//      Services served here; gratuitous ARP for IPs that became active);
//   5. Leases this node holds for IPs it no longer serves are released at once, after step 4, so the next
//      owner never overlaps with this one; Leases no Service uses any more are deleted;
//   6. the owner writes status.loadBalancer.ingress and Events record what changed.
// The loader watches and decides (steps 1, 2, 4 and 6, and which IPs to hold or release). The Lease protocol
// of steps 3 and 5 (the writes, renewals, expiry as observed, release and collection) is its LeaseKeeper's
// (k8s/lease_keeper.hpp), which tells the claim machine what each write proves through the runtime.
// The heartbeat runs on the DatapathRuntime's thread: a slow or absent API server never stops the datapath,
// which keeps serving the last state it was given, until another node's claim shows on the LAN after this
// node's own claim could no longer be renewed.
#pragma once

#include "core/addresses.hpp"
#include "core/control_socket.hpp"
#include "core/datapath_runtime.hpp"
#include "core/link_watch.hpp"
#include "core/loader_status.hpp"
#include "core/node.hpp"
#include "k8s/client.hpp"
#include "k8s/event.hpp"
#include "k8s/event_recorder.hpp"
#include "k8s/lease.hpp"
#include "k8s/lease_keeper.hpp"
#include "k8s/metrics.hpp"
#include "k8s/service_model.hpp"
#include "maps/unique_fd.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace bpfnet::k8s {

struct KubernetesOptions {
    std::string kubeconfig; // empty: in-cluster configuration
    std::string node_name;  // this node, as in EndpointSlice endpoints' nodeName; also the Lease holder
    std::string lease_namespace = "bpfnet-system"; // where the Leases of the service IPs live
    ServicePolicy policy;
    std::chrono::seconds lease_duration{15};
    // A standing Warning (a refused Service) is reported again this often while it lasts: the API server
    // deletes Events an hour after their last write.
    std::chrono::seconds event_refresh{1800};
    // A watch silent this long (no event, no bookmark) is restarted: see WatchOptions::idle_timeout.
    std::chrono::seconds watch_idle_timeout{150};
    // On SIGTERM the datapath keeps answering this long without a loader, for the next one to take over (a
    // rolling update whose image is being pulled): DatapathRuntime::leave_with_grace.
    std::chrono::seconds upgrade_grace{60};
};

class KubernetesLoader {
public:
    // node: the NIC and its settings. status must outlive the loader.
    KubernetesLoader(NodeSettings node, KubernetesOptions options, LoaderStatus &status);
    ~KubernetesLoader();
    KubernetesLoader(const KubernetesLoader &) = delete;
    KubernetesLoader &operator=(const KubernetesLoader &) = delete;

    // Becomes the interface's one writer (the pin directory's lock, the control socket); see StandaloneLoader.
    void claim();
    // Reads the cluster configuration and attaches the datapath (which keeps serving whatever its maps
    // hold until the first reconcile). Throws ConfigError / runtime errors with nothing half attached.
    void start();
    // Watches and reconciles until SIGTERM or SIGINT; returns the exit code.
    int run();

private:
    // One address of an accepted Service (a dual-stack Service has two) and what this node knows about the
    // backend behind it: the endpoint of the same family. Each address has its own Lease.
    struct Candidate {
        AcceptedService service; // its ports: those of the address's family (ports_for_family)
        bpfnet_ip service_ip{};
        nlohmann::json object;
        std::optional<ReadyEndpoint> endpoint;
        std::optional<BackendLocation> location; // set when eligible: the endpoint runs here and was found
        std::vector<PortRule> ports;             // listed: service.ports with named target ports resolved
        bool held = false; // a shared address: an interface of this node has it (the node's address always)
        // A shared VIP held here whose pod runs on another node: that node's published address, its ports handed
        // there (locate_shared_addresses).
        std::optional<bpfnet_ip> via_node{};
        std::string not_handed_on{}; // why a held VIP's ports are not handed to the pod's node (its Events say)
        bool ports_resolved = false; // every named target port was found on the endpoint (resolve_ports)

        // "metal3/ironic 172.22.0.2": what is served (and reported) one by one.
        std::string id() const;
        // A shared VIP this node holds while the Service's ready endpoint runs on a node it cannot hand the ports
        // to: served nowhere.
        bool held_without_pod() const;
    };
    // A Service address this node served after the last pass.
    struct Served {
        std::string key; // namespace/name
        bpfnet_ip service_ip{};
    };

    void wake();
    bool synced() const;
    // The link notifications: the NIC's carrier reported; a served pod's veth that went remembered, for the
    // pass that follows to stop steering to it as expected, not as a Service that cannot be served.
    void follow_links();
    void reconcile();
    const Snapshot &our_services();
    std::vector<Candidate> accepted_services(const Snapshot &services);
    std::set<std::string> refuse_over_capacity(const std::vector<AcceptedService> &all,
                                               const std::vector<const nlohmann::json *> &objects,
                                               const std::set<std::string> &already_refused, const Snapshot &services);
    void find_endpoints(std::vector<Candidate> &candidates, const Snapshot &slices);
    bool resolve_ports(Candidate &candidate);
    void keep_shared_ips_together(std::vector<Candidate> &candidates);
    void keep_target_ports_apart(std::vector<Candidate> &candidates);
    void keep_pods_to_one_address(std::vector<Candidate> &candidates);
    void keep_pod_ports_apart(std::vector<Candidate> &candidates);
    // The shared addresses: a Service on the node's address gets this node's, and each candidate learns whether
    // its address is held here. A held one whose pod runs on another node is handed there, or reported.
    void locate_shared_addresses(std::vector<Candidate> &candidates);
    std::optional<bpfnet_ip> pod_node_address(const Candidate &c, std::string &why_not) const;
    // The pod's node may hand nothing to a published address inside what bpfnet or the LAN's hosts own.
    std::optional<std::string> not_a_node_address(const bpfnet_ip &address) const;
    // This node's own address on the NIC in its node Lease (k8s/node_lease.hpp), when it changed.
    void publish_node_address(const Snapshot &leases);
    std::optional<std::string> take_own_address(AcceptedService &service) const;
    void withdraw_unserved_shared(const std::vector<Candidate> &candidates);
    std::string release_reason(const std::string &id, const std::vector<Candidate> &candidates) const;
    // The Services eligible here on one service IP (namespace/name, sorted), for the Lease's annotation.
    using IpServices = std::map<bpfnet_ip, std::vector<std::string>>;
    // The Lease watch's lists and watches: a change means it was down (LeaseKeeper::forget_unseen_leases).
    std::uint64_t lease_watch_epoch() const;
    static std::string status_path(const std::string &namespace_, const std::string &name);
    void publish_ingress(const Candidate &candidate, const std::set<bpfnet_ip> &answered, const Snapshot &leases);
    void withdraw_ingress(const std::string &key, const nlohmann::json &service,
                          const std::vector<bpfnet_ip> &service_ips);
    void report_transitions(const std::vector<Candidate> &candidates, const std::map<std::string, Served> &serving,
                            const Snapshot &services);
    void report_conflicts(const std::vector<Candidate> &candidates);
    // Posts an Event unless the same reason with the same note was posted for this Service (and scope: one of
    // its addresses, for what is said per address) less than options_.event_refresh ago.
    void report_once(const nlohmann::json &service, const std::string &key, ServiceEvent event,
                     const std::string &scope = {});
    void forget_posted(const std::string &key, const std::string &reason, const std::string &scope = {});
    void post_event(const nlohmann::json &service, const ServiceEvent &event);

    NodeSettings node_;
    KubernetesOptions options_;
    LoaderStatus &status_;
    DatapathRuntime runtime_;
    int nic_ifindex_ = 0; // the provisioning NIC, found at claim()
    // Its carrier and the links that go, followed from start(): without carrier no Lease is held here, so
    // another node serves; a served pod's veth that goes ends its steering at once (gone_pods_).
    std::optional<LinkWatch> links_;
    // Served pods whose veth went down or was deleted, until their EndpointSlice no longer has them ready here:
    // while it still does, the pod that cannot be found is one being deleted, not one to warn about.
    std::set<bpfnet_ip> gone_pods_;
    // This node's addresses (both families), read in each pass while Services may name shared addresses: the
    // link watch's address notifications wake the pass that reads them again.
    std::vector<InterfaceAddress> addresses_;
    // The other nodes' own addresses, by node name, from their node Leases renewed within node_lease_expiry()
    // as this node watched them (read in each pass, as addresses_).
    std::map<std::string, bpfnet_ip> published_nodes_;
    // A node Lease unchanged this long (as watched) is its loader's no more: gone, or its node's address may
    // have changed unseen. Past an upgrade's grace (the datapath there still steers that long).
    std::chrono::steady_clock::duration node_lease_expiry() const;
    void read_published_nodes(const Snapshot &leases);
    // What this node last wrote (or tried to) in its node Lease, and when: a failed write is retried once a
    // renewal period has passed, and warned about once.
    struct NodeLeaseWrite {
        std::optional<bpfnet_ip> address;
        std::chrono::steady_clock::time_point at;
        bool failed = false;
    };
    void write_node_lease(LeaseState current, const std::optional<bpfnet_ip> &address);
    std::optional<NodeLeaseWrite> node_lease_written_;
    std::optional<ControlServer> control_; // answers bpfnetctl: backends come from EndpointSlices here
    std::unique_ptr<ApiClient> api_;
    std::unique_ptr<EventRecorder> events_;
    std::unique_ptr<Watcher> services_, slices_, leases_;
    UniqueFd epoll_, signals_, wake_, tick_, takeover_timer_;

    struct SeenConflict {
        bpfnet_ip service_ip;
        std::string mac;
        DatapathRuntime::ClaimReport report;
    };
    ServiceEvent conflict_event(const SeenConflict &conflict, const std::string &ip) const;
    std::mutex conflicts_mutex_; // the runtime thread adds, reconcile() takes
    std::vector<SeenConflict> conflicts_;

    // The keeper's word on each claim, carried out by the runtime; a takeover also arms the wake-up that
    // answers the IP once its announcement interval is over.
    class RuntimeClaims final : public LeaseKeeper::Claims {
    public:
        explicit RuntimeClaims(KubernetesLoader &loader) : loader_(loader) {}
        void confirmed(const bpfnet_ip &service_ip, std::chrono::steady_clock::time_point until) override;
        void taken_over(const bpfnet_ip &service_ip, std::chrono::steady_clock::time_point until,
                        std::chrono::steady_clock::time_point answer_at) override;
        void renewed(const bpfnet_ip &service_ip) override;
        void dropped(const bpfnet_ip &service_ip) override;

    private:
        KubernetesLoader &loader_;
    };
    RuntimeClaims claims_{*this};
    std::unique_ptr<LeaseKeeper> lease_keeper_; // from start(): it writes through api_

    struct Posted {
        std::string note;
        std::chrono::steady_clock::time_point at;
    };
    std::map<std::string, Posted> posted_;          // "service key|reason|scope" -> the last such Event
    std::map<std::string, std::string> ingress_rv_; // service key -> resourceVersion its status was written from
    std::map<std::string, Served> serving_;         // Candidate::id() -> what it is, served here after the last pass
    std::set<bpfnet_ip> answered_ips_;              // service IPs this node answers for after the last pass
    std::vector<ServiceSpec> applied_specs_;        // what the maps were last brought to
    bool recheck_maps_ = true;                      // compare the maps with applied_specs_ on the next pass
    Snapshot our_services_;                         // Services of our class, as of services_generation_
    std::uint64_t services_generation_ = ~std::uint64_t{0};
    std::map<std::string, std::pair<std::string, bool>> class_cache_; // key -> (resourceVersion, of our class)
    bool ready_reported_ = false;

    // For /metrics (read on an HTTP worker thread).
    KubernetesState metrics() const;
    std::atomic<std::uint64_t> reconciles_{0}, served_count_{0}, standby_count_{0}, refused_count_{0}, held_count_{0},
        yields_{0}, deferrals_{0};
};

} // namespace bpfnet::k8s
