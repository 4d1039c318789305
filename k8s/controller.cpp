#include "k8s/controller.hpp"

#include "k8s/json_fields.hpp"
#include "k8s/node_lease.hpp"
#include "k8s/service_status.hpp"

#include "core/backend_locator.hpp"
#include "core/event_loop.hpp"
#include "core/log.hpp"
#include "core/netlink.hpp"
#include "core/service_rules.hpp"
#include "maps/system_error.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <tuple>

namespace bpfnet::k8s {

using nlohmann::json;

namespace {

// What this mode does while the provisioning NIC has no carrier, for the log.
constexpr std::string_view kWithoutCarrier =
    "no service IP is claimed here until it returns: the Leases held are released for another node to take over";

constexpr const char *kServices = "/api/v1/services";
constexpr const char *kEndpointSlices = "/apis/discovery.k8s.io/v1/endpointslices";
// Only our own Leases, by label, in the Lease namespace.
constexpr const char *kOurLeases = "?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dbpfnet-loader";
constexpr const char *kServiceNameLabel = "kubernetes.io/service-name";
// Failed writes (a Lease claim, a status update) are retried at least this often.
constexpr auto kMaxTick = std::chrono::milliseconds(1000);
// Requests on the reconcile pass (Lease reads and writes, status) give up after this long: a slow API
// server must not hold up the pass that renews Leases and follows moves; the next pass retries.
constexpr auto kWriteTimeout = std::chrono::milliseconds(5000);

std::string resource_version(const json &object) {
    return metadata_string(object, "resourceVersion");
}

// "namespace/name" of the Service an EndpointSlice belongs to, or "" when it is not a Service's slice.
std::string slice_owner(const json &slice) {
    const json *meta = member(slice, "metadata");
    if (!meta)
        return {};
    const json *labels = member(*meta, "labels");
    std::string service = labels ? string_member(*labels, kServiceNameLabel) : std::string();
    std::string ns = string_member(*meta, "namespace");
    if (service.empty() || ns.empty())
        return {};
    return ns + "/" + service;
}

} // namespace

KubernetesLoader::KubernetesLoader(NodeSettings node, KubernetesOptions options, LoaderStatus &status)
    : node_(std::move(node)), options_(std::move(options)), status_(status), runtime_(node_, status) {}

KubernetesLoader::~KubernetesLoader() {
    // Threads first: the runtime's conflict handler and the watchers call wake() and fill conflicts_, which go
    // with this object.
    runtime_.stop();
    for (auto *watcher : {services_.get(), slices_.get(), leases_.get()})
        if (watcher)
            watcher->stop();
    events_.reset(); // before api_, which it uses
}

void KubernetesLoader::claim() {
    if (control_)
        return;
    nic_ifindex_ = link_by_name(node_.interface).ifindex; // a missing NIC is reported before the kernel is changed
    runtime_.claim();
    control_.emplace(node_.control_socket_path());
}

void KubernetesLoader::start() {
    api_ = std::make_unique<ApiClient>(load_cluster_config(options_.kubeconfig));
    events_ = std::make_unique<EventRecorder>(*api_, options_.node_name);
    lease_keeper_ = std::make_unique<LeaseKeeper>(*api_, claims_,
                                                  LeaseKeeper::Options{.node_name = options_.node_name,
                                                                       .lease_namespace = options_.lease_namespace,
                                                                       .lease_duration = options_.lease_duration,
                                                                       .announce_interval = node_.garp_interval,
                                                                       .write_timeout = kWriteTimeout});
    link_by_name(node_.interface); // a missing NIC is reported before the kernel is changed
    wake_ = loop::make_eventfd();
    claim();                           // a second loader on this interface is refused before anything changes
    runtime_.probe_before_answering(); // a claim that starts is answered only once no other MAC answers it
    runtime_.attach();
    runtime_.unconfirm_active_claims();
    // With shared addresses, their comings and goings too (a VIP that kube-vip moves).
    links_.emplace(nic_ifindex_, !options_.policy.shared_addresses.empty());
    report_carrier(status_, node_.interface, links_->carrier(), kWithoutCarrier, true);
    auto on_change = [this](const Snapshot &) {
        wake();
    };
    WatchOptions watch;
    watch.idle_timeout = options_.watch_idle_timeout;
    services_ = std::make_unique<Watcher>(*api_, kServices, on_change, watch);
    slices_ = std::make_unique<Watcher>(*api_, kEndpointSlices, on_change, watch);
    leases_ = std::make_unique<Watcher>(*api_, lease_keeper_->leases_path() + kOurLeases, on_change, watch);
    status_.publish_mode_metrics([this](MetricsWriter &out) { write_kubernetes_metrics(out, metrics()); });
    log_info("kubernetes mode", {{"server", api_->config().server},
                                 {"node", options_.node_name},
                                 {"class", options_.policy.load_balancer_class},
                                 {"lease_namespace", options_.lease_namespace},
                                 {"lease_duration_s", std::to_string(options_.lease_duration.count())}});
}

std::string KubernetesLoader::Candidate::id() const {
    return service.key() + " " + format_ip(service_ip);
}

// On "node", each node's own address: a node without the pod holds nothing anyone asked it to serve. A pod on a
// node that published its address is served through that node (via_node).
bool KubernetesLoader::Candidate::held_without_pod() const {
    return service.shared && !service.node_address && held && endpoint && !endpoint->on_this_node && !via_node;
}

void KubernetesLoader::wake() {
    uint64_t one = 1;
    if (::write(wake_.get(), &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
        log_error("cannot wake the main loop", {{"error", std::strerror(errno)}});
}

// Until every watch has listed once, an empty state means "not known yet", not "no Services": a loader that
// restarts while the API server is away keeps serving what the maps hold.
bool KubernetesLoader::synced() const {
    return services_->synced() && slices_->synced() && leases_->synced();
}

std::uint64_t KubernetesLoader::lease_watch_epoch() const {
    return LeaseKeeper::observation_epoch(leases_->stats());
}

void KubernetesLoader::RuntimeClaims::confirmed(const bpfnet_ip &service_ip,
                                                std::chrono::steady_clock::time_point until) {
    loader_.runtime_.confirm_claim(service_ip, until);
}

void KubernetesLoader::RuntimeClaims::taken_over(const bpfnet_ip &service_ip,
                                                 std::chrono::steady_clock::time_point until,
                                                 std::chrono::steady_clock::time_point answer_at) {
    loader_.runtime_.take_over_claim(service_ip, until, answer_at);
    // A wake-up when the announcement interval is over: the next pass answers the IP.
    loop::arm_timer(loader_.takeover_timer_, loader_.node_.garp_interval, std::chrono::milliseconds(0));
}

void KubernetesLoader::RuntimeClaims::renewed(const bpfnet_ip &service_ip) {
    if (loader_.answered_ips_.contains(service_ip))
        loader_.runtime_.announce_claim({service_ip});
}

void KubernetesLoader::RuntimeClaims::dropped(const bpfnet_ip &service_ip) {
    loader_.runtime_.drop_claim(service_ip);
}

namespace {

// The control socket in this mode: describe is answered; bpfnetctl backend set/clear is refused, since the
// Service's EndpointSlice names the backend, and a manual change would be undone by the next reconcile pass
// (and would fight the Lease holder's).
nlohmann::json answer_control(const NodeSettings &node, const DatapathRuntime &runtime, const ControlRequest &request) {
    if (request.body["command"] == kDescribeCommand)
        return describe_loader("kubernetes", node.interface, node.interface_macs, runtime.backend_veths());
    throw ControlFailure(ControlFailure::Kind::Refused,
                         "this bpfnet-loader runs in Kubernetes mode: '" + request.body["command"].get<std::string>() +
                             "' is for standalone mode; here the backend is the ready endpoint of the Service's "
                             "EndpointSlice (move the pod, or scale the Deployment)");
}

} // namespace

int KubernetesLoader::run() {
    epoll_ = loop::make_epoll();
    signals_ = loop::signal_fd();
    tick_ = loop::make_timer();
    takeover_timer_ = loop::make_timer();
    const auto tick = std::min<std::chrono::milliseconds>(lease_keeper_->renew_period(), kMaxTick);
    loop::arm_timer(tick_, tick, tick);
    for (int fd : {signals_.get(), wake_.get(), tick_.get(), takeover_timer_.get(), control_->fd(), links_->fd()})
        loop::add(epoll_, fd);
    runtime_.start([this](const bpfnet_ip &service_ip, const std::string &mac, DatapathRuntime::ClaimReport report) {
        {
            std::lock_guard lock(conflicts_mutex_);
            conflicts_.push_back({service_ip, mac, report});
        }
        wake();
    });
    status_.set_not_ready("waiting for the first list of Services, EndpointSlices and Leases");
    for (auto *watcher : {services_.get(), slices_.get(), leases_.get()})
        watcher->start();
    log_info("watching", {{"iface", node_.interface}});

    for (;;) {
        for (int fd : loop::wait(epoll_)) {
            if (fd == signals_.get()) {
                signalfd_siginfo info{};
                if (::read(signals_.get(), &info, sizeof(info)) != sizeof(info))
                    continue;
                if (info.ssi_signo == SIGHUP) {
                    log_info("SIGHUP ignored: in Kubernetes mode the API server is the configuration");
                    continue;
                }
                // The datapath stays attached and the Leases held: a restarted loader (a rolling update)
                // renews them before they expire, and the grace keeps ARP answered until it runs.
                runtime_.leave_with_grace(
                    std::chrono::duration_cast<std::chrono::milliseconds>(options_.upgrade_grace));
                log_info("stopping; datapath left running",
                         {{"signal", strsignal(static_cast<int>(info.ssi_signo))},
                          {"grace_s", std::to_string(options_.upgrade_grace.count())}});
                return 0;
            } else if (fd == control_->fd()) {
                control_->serve_pending(
                    [this](const ControlRequest &request) { return answer_control(node_, runtime_, request); });
                continue;
            } else if (fd == tick_.get()) {
                loop::drain(tick_);
                recheck_maps_ = true;
            } else if (fd == links_->fd()) {
                follow_links();
            } else {
                loop::drain(fd == wake_.get() ? wake_ : takeover_timer_);
            }
        }
        // One pass per wake-up, however many changes arrived: a burst of watch events costs one reconcile.
        loop::drain(wake_);
        if (!synced())
            continue;
        try {
            reconcile();
        } catch (const std::exception &e) {
            log_error("reconcile failed; retrying", {{"error", e.what()}});
        }
    }
}

void KubernetesLoader::follow_links() {
    const LinkWatch::Changes changes = links_->update();
    if (changes.carrier_changed)
        report_carrier(status_, node_.interface, links_->carrier(), kWithoutCarrier);
    // The pass reads the addresses at its start: one changed during a pass (this read from find_endpoints)
    // gets a pass of its own.
    if (changes.addresses_changed)
        wake();
    for (const ServiceSpec &spec : applied_specs_)
        if (spec.location && changes.lost.contains(spec.location->ifindex) && gone_pods_.insert(spec.backend_ip).second)
            log_info("backend veth stopped: down or deleted, its pod is steered to no more (ahead of the API server)",
                     {{"service_ip", format_ip(spec.service_ip)},
                      {"backend", format_ip(spec.backend_ip)},
                      {"ifindex", std::to_string(spec.location->ifindex)}});
}

void KubernetesLoader::reconcile() {
    const auto now = Clock::now();
    // Only what concerns our Services is copied out of the watches: a cluster has many Services and
    // EndpointSlices, and a burst of changes to them must not cost a copy of everything per pass.
    const Snapshot &services = our_services();
    Snapshot slices;
    slices_->read([&](const Snapshot &all) {
        for (const auto &[key, object] : all)
            if (services.contains(slice_owner(object)))
                slices.emplace(key, object);
    });
    const Snapshot leases = leases_->snapshot();

    lease_keeper_->forget_unseen_leases(leases, lease_watch_epoch());
    if (!options_.policy.shared_addresses.empty()) {
        addresses_ = node_addresses();
        read_published_nodes(leases);
        publish_node_address(leases);
    }
    std::vector<Candidate> candidates = accepted_services(services);
    find_endpoints(candidates, slices);

    // One Lease per service IP: Services sharing an IP are eligible here only together (find_endpoints). A NIC
    // without carrier reaches no host: none is eligible, so the Leases go (step 5) and another node takes them.
    IpServices eligible;
    std::set<bpfnet_ip> used_ips;
    for (const Candidate &candidate : candidates) {
        if (candidate.service.shared)
            continue; // the node's address: no Lease, served wherever it is held (locate_shared_addresses)
        used_ips.insert(candidate.service_ip);
        if (candidate.location && links_->carrier())
            eligible[candidate.service_ip].push_back(candidate.service.key());
    }
    std::set<bpfnet_ip> held_here, answered_here;
    for (const auto &[ip, keys] : eligible) {
        try {
            if (!lease_keeper_->hold_lease(ip, keys, leases, now))
                continue;
            held_here.insert(ip);
            if (!runtime_.announcing(ip)) // a takeover's announcement is over
                answered_here.insert(ip);
        } catch (const std::exception &e) {
            log_warn("lease not claimed", {{"service_ip", format_ip(ip)}, {"error", e.what()}});
        }
    }

    std::vector<ServiceSpec> specs;
    std::map<std::string, Served> serving;
    for (const Candidate &candidate : candidates) {
        // A shared address is in the maps only while its pod is here (held or not: the holder may hand its ports
        // here) or it is held here and handed to the pod's node. Otherwise nothing of it is: its ports are the
        // node's (refused by its kernel, not dropped by the datapath).
        const bool shared = candidate.service.shared;
        if (shared && !((candidate.location || candidate.via_node) && links_->carrier()))
            continue;
        const bool here = candidate.location && (shared || answered_here.contains(candidate.service_ip));
        ServiceSpec spec;
        spec.service_ip = candidate.service_ip;
        spec.shared = shared;
        spec.ports = candidate.ports;
        spec.source_ranges = candidate.service.source_ranges; // the datapath takes those of the IP's family
        if (here) {
            spec.backend_ip = candidate.endpoint->ip;
            spec.location = candidate.location;
        } else if (shared && candidate.via_node) {
            spec.backend_ip = candidate.endpoint->ip;
            spec.via_node = candidate.via_node;
        }
        // A shared address is served by its holder (the pod's side of one held elsewhere is not a Service served).
        if (shared ? candidate.held : here)
            serving[candidate.id()] = {candidate.service.key(), candidate.service_ip};
        specs.push_back(std::move(spec));
    }
    // A claim being probed, or deferred to another MAC, keeps its backend in the desired state (the runtime
    // answers it the moment a probe round goes unanswered, and wakes this loop) but is not served yet: no
    // Serving Event, no ingress, no renewal announcement. One served in the last pass (a yield lifted, probed
    // again) stays served meanwhile, rather than being reported released.
    for (auto it = serving.begin(); it != serving.end();)
        it = runtime_.probe_pending(it->second.service_ip) && !serving_.contains(it->first) ? serving.erase(it)
                                                                                            : std::next(it);
    std::erase_if(answered_here,
                  [this](const bpfnet_ip &ip) { return runtime_.probe_pending(ip) && !answered_ips_.contains(ip); });

    // Deactivate first, release after: the next owner never overlaps with this node. The maps are compared
    // with the desired state on every tick (repairing any drift) and whenever that state changed; a burst of
    // watch events that changes nothing here costs no map reads.
    if (recheck_maps_ || specs != applied_specs_) {
        auto applied = runtime_.apply(node_, specs);
        applied_specs_ = specs;
        recheck_maps_ = false;
        if (applied.report.upserts + applied.report.removals > 0)
            log_info("maps reconciled", {{"writes", std::to_string(applied.report.upserts)},
                                         {"removals", std::to_string(applied.report.removals)},
                                         {"serving", std::to_string(serving.size())},
                                         {"services", std::to_string(candidates.size())}});
    }
    lease_keeper_->release_leases(held_here, leases);
    lease_keeper_->collect_orphaned_leases(leases, used_ips);

    std::set<std::string> served_services, accepted_services;
    for (const Candidate &candidate : candidates) {
        accepted_services.insert(candidate.service.key());
        // Once per Service (the status lists all its addresses), from its first address served here.
        if (serving.contains(candidate.id()) && served_services.insert(candidate.service.key()).second)
            publish_ingress(candidate, answered_here, leases);
    }
    report_transitions(candidates, serving, services);
    withdraw_unserved_shared(candidates);
    lease_keeper_->forget_previous_holders(answered_here);
    served_count_ = served_services.size();
    standby_count_ = accepted_services.size() - served_services.size();
    held_count_ = lease_keeper_->held_count();
    ++reconciles_;
    serving_ = std::move(serving);
    answered_ips_ = std::move(answered_here);
    report_conflicts(candidates);
    if (!ready_reported_) { // (without carrier /readyz says so: LoaderStatus::carrier_problem)
        ready_reported_ = true;
        status_.set_ready();
        log_info("serving", {{"iface", node_.interface}, {"services", std::to_string(candidates.size())}});
    }
}

// The Services of our class (accepted or refused), recomputed only when the Service watch changed, and then
// deciding again only the Services whose resourceVersion changed.
const Snapshot &KubernetesLoader::our_services() {
    const std::uint64_t generation = services_->generation();
    if (generation == services_generation_)
        return our_services_;
    services_generation_ = generation;
    our_services_.clear();
    std::map<std::string, std::pair<std::string, bool>> seen;
    services_->read([&](const Snapshot &all) {
        for (const auto &[key, object] : all) {
            std::string rv = resource_version(object);
            auto cached = class_cache_.find(key);
            bool ours = cached != class_cache_.end() && cached->second.first == rv && !rv.empty()
                            ? cached->second.second
                            : decide_service(object, options_.policy).outcome != ServiceDecision::Outcome::Ignored;
            seen.emplace(key, std::make_pair(std::move(rv), ours));
            if (ours)
                our_services_.emplace(key, object);
        }
    });
    class_cache_ = std::move(seen);
    return our_services_;
}

std::vector<KubernetesLoader::Candidate> KubernetesLoader::accepted_services(const Snapshot &services) {
    std::vector<AcceptedService> all;
    std::vector<const json *> objects; // of all[i]
    std::set<std::string> present;
    std::uint64_t refused = 0;
    for (const auto &[key, object] : services) {
        ServiceDecision decision = decide_service(object, options_.policy);
        if (decision.outcome == ServiceDecision::Outcome::Ignored)
            continue;
        present.insert(key);
        if (decision.outcome == ServiceDecision::Outcome::Refused) {
            refused++;
            report_once(object, key,
                        warning_event("Refused", "Refuse", "bpfnet refused this Service: " + decision.reason));
            continue;
        }
        AcceptedService service = accepted(decision);
        if (service.node_address) {
            // Each node serves the Service on its own address.
            if (auto why = take_own_address(service)) {
                report_once(object, key, warning_event("SharedAddressAbsent", "Locate", *why), options_.node_name);
                refused++;
                continue;
            }
        }
        forget_posted(key, "SharedAddressAbsent", options_.node_name);
        all.push_back(std::move(service));
        objects.push_back(&object);
    }
    std::set<std::string> shared_ip_refused;
    for (const Conflict &conflict : check_shared_ips(all)) {
        if (!shared_ip_refused.insert(conflict.refused).second)
            continue;
        auto it = services.find(conflict.refused);
        if (it != services.end())
            report_once(it->second, conflict.refused,
                        warning_event("Refused", "Refuse", "bpfnet refused this Service: " + conflict.reason));
    }
    const std::set<std::string> capacity_refused = refuse_over_capacity(all, objects, shared_ip_refused, services);
    // One candidate per address: each family is steered to the pod's address of that family, under its own
    // Lease.
    std::vector<Candidate> candidates;
    for (size_t i = 0; i < all.size(); ++i) {
        if (shared_ip_refused.contains(all[i].key()) || capacity_refused.contains(all[i].key()))
            continue;
        forget_posted(all[i].key(), "Refused"); // accepted now: a later refusal is reported at once
        for (const bpfnet_ip &ip : all[i].service_ips) {
            AcceptedService service = ports_for_family(all[i], family_of(ip));
            // Until an endpoint resolves them, named target ports are not listed (nothing could be steered to
            // them).
            std::vector<PortRule> listed = resolve_target_ports(service, std::nullopt).ports;
            candidates.push_back({std::move(service), ip, *objects[i], std::nullopt, std::nullopt, std::move(listed)});
        }
    }
    refused_count_ = refused + shared_ip_refused.size() + capacity_refused.size();

    // Forget what was posted for Services that are gone, so a recreated one is told again.
    std::erase_if(posted_,
                  [&](const auto &entry) { return !present.contains(entry.first.substr(0, entry.first.find('|'))); });
    return candidates;
}

// A Service on "node": this node's own address on the NIC (core/shared_addresses.hpp) into its service_ips; why
// not, when the NIC has none, or its address is one a Service of the class could claim as its service IP.
std::optional<std::string> KubernetesLoader::take_own_address(AcceptedService &service) const {
    const std::optional<bpfnet_ip> own =
        node_address(node_, nic_ifindex_, addresses_, options_.policy.shared_addresses);
    if (!own)
        return "node " + options_.node_name + " has no IPv4 address of its own on " + node_.interface +
               " to serve this Service's shared address \"node\" on";
    for (const SourceRange &cidr : options_.policy.allowed_cidrs)
        if (cidr.contains(*own))
            return "node " + options_.node_name + "'s own address " + format_ip(*own) + " is inside --allowed-cidrs " +
                   format_prefix(cidr) + ", where a Service could claim it as its service IP: it is not shared";
    service.service_ips = {*own};
    return std::nullopt;
}

// Past what the datapath's tables hold, the newest Services are refused (with an Event) and the oldest served:
// a cluster with more Services of the class than the tables hold keeps serving those it had.
std::set<std::string> KubernetesLoader::refuse_over_capacity(const std::vector<AcceptedService> &all,
                                                             const std::vector<const json *> &objects,
                                                             const std::set<std::string> &already_refused,
                                                             const Snapshot &services) {
    auto created = [&](size_t i) {
        return metadata_string(*objects[i], "creationTimestamp");
    };
    std::vector<size_t> order;
    for (size_t i = 0; i < all.size(); ++i)
        if (!already_refused.contains(all[i].key()))
            order.push_back(i);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return std::tuple(created(a), all[a].key()) < std::tuple(created(b), all[b].key());
    });
    std::vector<AcceptedService> oldest_first;
    for (size_t i : order)
        oldest_first.push_back(all[i]);
    std::set<std::string> refused;
    for (const OverCapacity &over : over_capacity(oldest_first)) {
        refused.insert(over.key);
        if (auto it = services.find(over.key); it != services.end())
            report_once(it->second, over.key,
                        warning_event("Refused", "Refuse", "bpfnet refused this Service: " + over.reason));
    }
    return refused;
}

// The Service's ports with named target ports resolved from the chosen endpoint's EndpointSlice. False when
// there is no endpoint, or when a port cannot be resolved or the resolved ports collide (with a Warning
// Event): the Service is then not served from this endpoint. Unresolved ports are not listed.
bool KubernetesLoader::resolve_ports(Candidate &candidate) {
    ResolvedPorts resolved = resolve_target_ports(candidate.service, candidate.endpoint);
    candidate.ports = std::move(resolved.ports);
    if (!candidate.endpoint)
        return false;
    const std::string &key = candidate.service.key();
    if (!resolved.missing.empty()) {
        std::string list;
        for (const std::string &m : resolved.missing)
            list += (list.empty() ? "" : ", ") + m;
        report_once(candidate.object, key,
                    warning_event("TargetPortNotFound", "Resolve",
                                  "the EndpointSlice of endpoint " + format_ip(candidate.endpoint->ip) +
                                      " has no port for " + list +
                                      ": does the pod declare a container port of that name and protocol?"),
                    format_ip(candidate.service_ip));
        return false;
    }
    auto entry = [](size_t i) {
        return "spec.ports[" + std::to_string(i) + "]";
    };
    if (auto problem = port_rules_problem(candidate.ports, entry)) {
        report_once(candidate.object, key,
                    warning_event("TargetPortConflict", "Resolve",
                                  "the target ports resolved for endpoint " + format_ip(candidate.endpoint->ip) +
                                      " collide: " + problem->detail),
                    format_ip(candidate.service_ip));
        return false;
    }
    forget_posted(key, "TargetPortNotFound", format_ip(candidate.service_ip));
    forget_posted(key, "TargetPortConflict", format_ip(candidate.service_ip));
    return true;
}

void KubernetesLoader::find_endpoints(std::vector<Candidate> &candidates, const Snapshot &slices) {
    std::map<std::string, json> by_service;
    for (const auto &[key, slice] : slices) {
        std::string owner = slice_owner(slice);
        if (owner.empty())
            continue;
        auto &list = by_service[owner];
        if (!list.is_array())
            list = json::array();
        list.push_back(slice);
    }
    for (Candidate &candidate : candidates) {
        auto it = by_service.find(candidate.service.key());
        if (it == by_service.end())
            continue;
        const std::string scope = format_ip(candidate.service_ip);
        candidate.endpoint = ready_endpoint(it->second, options_.node_name, family_of(candidate.service_ip));
        candidate.ports_resolved = resolve_ports(candidate);
        if (!candidate.ports_resolved || !candidate.endpoint->on_this_node)
            continue;
        const bpfnet_ip pod = candidate.endpoint->ip;
        try {
            Backend backend;
            if (is_v4(pod))
                backend.ip_be = v4_of(pod);
            else
                backend.ip6 = pod;
            backend.delivery = candidate.service.delivery;
            candidate.location = locate_backend(backend, nic_ifindex_);
        } catch (const BackendNotFound &e) {
            // A deleted veth's routes go after the kernel queued the notification of its going down
            // (dev_close_many), so a route found gone here may be that veth, told in a notification this
            // wake-up has not read yet (it came for another fd, a tick say): read it first. Seen once in CI's
            // ASan stage: the pod's deletion reported as a BackendNotFound Warning.
            follow_links();
            if (gone_pods_.contains(pod))
                continue; // its pod is being deleted: the EndpointSlice will say so, no Warning meanwhile
            // detail(): the config file's field names mean nothing to a Service's reader.
            std::string note = "the ready endpoint " + format_ip(pod) + " runs on node " + options_.node_name +
                               " but its pod cannot be reached from the datapath: " + e.detail();
            report_once(candidate.object, candidate.service.key(), warning_event("BackendNotFound", "Locate", note),
                        scope);
            log_warn("backend not found", {{"service", candidate.id()}, {"error", e.detail()}});
            continue;
        } catch (const std::exception &e) {
            log_warn("backend not located", {{"service", candidate.id()}, {"error", e.what()}});
            continue;
        }
        forget_posted(candidate.service.key(), "BackendNotFound", scope);
    }
    std::erase_if(gone_pods_, [&](const bpfnet_ip &pod) {
        return std::none_of(candidates.begin(), candidates.end(), [&](const Candidate &c) {
            return c.endpoint && c.endpoint->on_this_node && c.endpoint->ip == pod;
        });
    });
    locate_shared_addresses(candidates);
    keep_shared_ips_together(candidates);
    keep_target_ports_apart(candidates);
    keep_pods_to_one_address(candidates);
    keep_pod_ports_apart(candidates);
}

// A shared address is served by the node that holds it: the address's owner (kube-vip, keepalived) decides which
// node answers, and bpfnet has no Lease of it. The pod's node steers the listed ports into the pod whether it
// holds the address or not (the holder hands them there: the pod's side must be ready before the address
// moves). A holder whose pod runs elsewhere hands the ports to the pod's node at the address that node's
// loader published (k8s/node_lease.hpp); without one it says why, and the Service is not served there.
void KubernetesLoader::locate_shared_addresses(std::vector<Candidate> &candidates) {
    for (Candidate &c : candidates) {
        if (!c.service.shared)
            continue;
        const std::string scope = format_ip(c.service_ip);
        c.held = c.service.node_address || held_here(c.service_ip, addresses_);
        if (!c.held && c.service.node_address)
            c.location.reset(); // each node's own address: never another node's to hand on
        std::string why_not;
        if (c.held && !c.service.node_address && c.endpoint && !c.endpoint->on_this_node && c.ports_resolved)
            c.via_node = pod_node_address(c, why_not);
        c.not_handed_on = why_not;
        if (c.held_without_pod() && c.ports_resolved) {
            report_once(c.object, c.service.key(),
                        warning_event("SharedAddressPodElsewhere", "Locate",
                                      "node " + options_.node_name + " holds the shared address " + scope +
                                          ", and the ready endpoint " + format_ip(c.endpoint->ip) + " runs on node " +
                                          (c.endpoint->node_name.empty() ? "?" : c.endpoint->node_name) + ", " +
                                          why_not + ", so this Service is not served until they meet"),
                        scope);
            continue;
        }
        forget_posted(c.service.key(), "SharedAddressPodElsewhere", scope);
    }
}

// The address the holder of a shared VIP hands its ports to: the pod's node's own, as its loader published it,
// on a subnet of this NIC's (the datapath hands packets on at the link layer). nullopt and why not otherwise.
std::optional<bpfnet_ip> KubernetesLoader::pod_node_address(const Candidate &c, std::string &why_not) const {
    const std::string &node = c.endpoint->node_name;
    if (!is_v4(c.service_ip)) {
        why_not = "and a shared IPv6 address is handed to no other node (only IPv4 ones are)";
        return std::nullopt;
    }
    auto published = published_nodes_.find(node);
    if (node.empty() || published == published_nodes_.end()) {
        why_not = "which publishes no address of its own (its node Lease " + options_.lease_namespace + "/" +
                  node_lease_name(node.empty() ? "?" : node) +
                  " is missing, names no address, or was not renewed: no bpfnet loader with shared addresses runs "
                  "there, its NIC has no address of its own or no carrier)";
        return std::nullopt;
    }
    const bpfnet_ip &address = published->second;
    if (const auto reason = not_a_node_address(address)) {
        why_not = "whose published address " + format_ip(address) + " " + *reason;
        return std::nullopt;
    }
    return address;
}

std::optional<std::string> KubernetesLoader::not_a_node_address(const bpfnet_ip &address) const {
    if (held_here(address, addresses_))
        return std::string("is this node's own");
    const std::vector<SharedChoice> &named = options_.policy.shared_addresses;
    if (std::find(named.begin(), named.end(), SharedChoice{address}) != named.end())
        return std::string("is a shared address");
    if (node_.prefix_len != 0 && in_prefix(v4_of(address), node_.subnet_be, node_.prefix_len))
        return "is inside the provisioning subnet " +
               format_prefix(Prefix{ip_from_v4(node_.subnet_be), node_.prefix_len});
    for (const SourceRange &cidr : options_.policy.allowed_cidrs)
        if (cidr.contains(address))
            return "is inside --allowed-cidrs " + format_prefix(cidr) + ", where Services take their service IPs";
    // A host of one of the NIC's subnets (lan_host_problem: inside it, neither its network nor its broadcast
    // address): the ports are handed on at the link layer only.
    for (const InterfaceAddress &a : addresses_)
        if (a.ifindex == nic_ifindex_ && is_v4(a.ip) &&
            !lan_host_problem(v4_of(address), v4_of(a.ip) & prefix_mask_be(a.prefix_len), a.prefix_len))
            return std::nullopt;
    return "is no host's address on a subnet of " + node_.interface +
           "'s addresses (the ports are handed on at "
           "the link layer only)";
}

std::chrono::steady_clock::duration KubernetesLoader::node_lease_expiry() const {
    return options_.upgrade_grace + 2 * options_.lease_duration;
}

void KubernetesLoader::read_published_nodes(const Snapshot &leases) {
    published_nodes_.clear();
    for (const auto &[key, object] : leases) {
        const LeaseState lease = read_lease(object);
        if (lease.holder == options_.node_name)
            continue; // this node's own: never handed to
        if (const auto address = published_node_address(lease);
            address && lease_keeper_->unchanged_for(lease) <= node_lease_expiry())
            published_nodes_.emplace(lease.holder, *address);
    }
}

// Written when the node Lease says otherwise (a new node, its address changed, the Lease deleted by hand) and
// renewed once a Lease duration (the holders of shared VIPs stop trusting it after node_lease_expiry()). A NIC
// without carrier reaches no node: nothing is published then. A failed write is retried a renewal period later
// and warned about once.
void KubernetesLoader::publish_node_address(const Snapshot &leases) {
    const std::optional<bpfnet_ip> address =
        links_->carrier() ? node_address(node_, nic_ifindex_, addresses_, options_.policy.shared_addresses)
                          : std::nullopt;
    auto seen = leases.find(options_.lease_namespace + "/" + node_lease_name(options_.node_name));
    const LeaseState current = seen == leases.end() ? LeaseState{} : read_lease(seen->second);
    const auto now = std::chrono::steady_clock::now();
    if (node_lease_written_ && node_lease_written_->address == address) {
        const bool shown =
            current.exists && current.holder == options_.node_name && published_node_address(current) == address;
        // Renewed a Lease duration after the last write the watch shows; written again sooner when it does not
        // show it (deleted by hand, or the write failed).
        const auto due = shown && !node_lease_written_->failed
                             ? std::chrono::steady_clock::duration(options_.lease_duration)
                             : std::chrono::steady_clock::duration(lease_keeper_->renew_period());
        if (now - node_lease_written_->at < due)
            return;
    }
    write_node_lease(current, address);
}

// One write, again once on 409 from the Lease read back (changed meanwhile, or out of the watch: its label
// removed by hand).
void KubernetesLoader::write_node_lease(LeaseState current, const std::optional<bpfnet_ip> &address) {
    const std::string name = node_lease_name(options_.node_name);
    const std::string key = options_.lease_namespace + "/" + name;
    const bool warned = node_lease_written_ && node_lease_written_->failed;
    const bool changed = !node_lease_written_ || node_lease_written_->address != address;
    node_lease_written_ = NodeLeaseWrite{.address = address, .at = std::chrono::steady_clock::now(), .failed = false};
    const std::string text = address ? format_ip(*address) : "none";
    std::string error;
    for (int attempt = 0; attempt < 2; attempt++) {
        try {
            const json body = node_lease(current, options_.lease_namespace, options_.node_name, address, Clock::now());
            if (current.exists)
                api_->put(lease_keeper_->leases_path() + "/" + name, body, kWriteTimeout);
            else
                api_->post(lease_keeper_->leases_path(), body, kWriteTimeout);
            if (changed)
                log_info("node address published", {{"node_lease", key}, {"address", text}});
            return;
        } catch (const ConflictError &) {
            error = "409 Conflict, twice";
            if (attempt == 0) {
                try {
                    current = read_lease(api_->get(lease_keeper_->leases_path() + "/" + name, kWriteTimeout));
                    continue;
                } catch (const std::exception &e) {
                    error = e.what();
                }
            }
        } catch (const std::exception &e) {
            error = e.what();
        }
        break;
    }
    node_lease_written_->failed = true;
    if (!warned)
        log_warn("node address not published: a node holding a shared address cannot hand its ports to pods "
                 "here; retried",
                 {{"node_lease", key}, {"address", text}, {"error", error}});
}

// A pod's replies and its own connections leave with one service address per family (the backends map holds
// one per pod address), and its ports map back to one: Services on different addresses of one family cannot
// share a pod. The one served here already keeps it (a new Service never takes a pod from a served one),
// else the first by namespace/name; the others are not served here and say why (Services that need one pod
// share one address, with disjoint ports).
void KubernetesLoader::keep_pods_to_one_address(std::vector<Candidate> &candidates) {
    std::vector<Candidate *> order;
    for (Candidate &candidate : candidates)
        if (candidate.location && !candidate.service.shared) // a shared address never becomes the pod's own
            order.push_back(&candidate);
    std::stable_sort(order.begin(), order.end(), [this](const Candidate *a, const Candidate *b) {
        return std::make_pair(!serving_.contains(a->id()), a->service.key()) <
               std::make_pair(!serving_.contains(b->id()), b->service.key());
    });
    std::map<bpfnet_ip, const Candidate *> owner; // pod address -> the first candidate steered to it
    for (Candidate *c : order) {
        const std::string scope = format_ip(c->service_ip);
        auto [it, first] = owner.emplace(c->endpoint->ip, c);
        if (first || it->second->service_ip == c->service_ip) {
            forget_posted(c->service.key(), "BackendShared", scope);
            continue;
        }
        c->location.reset();
        report_once(c->object, c->service.key(),
                    warning_event("BackendShared", "Refuse",
                                  "pod " + format_ip(c->endpoint->ip) + " already backs service IP " +
                                      format_ip(it->second->service_ip) + " (Service " + it->second->service.key() +
                                      "); a pod answers for one service address per family, so Services steered "
                                      "to one pod must share that address (with disjoint ports)"),
                    scope);
    }
}

// A pod may also serve shared addresses beside its service address (one Ironic pod: PXE on the service IP,
// virtual media on the control plane's VIP), each on pod ports of its own: the pod's replies are told apart by
// the port they come from. A shared address's Service whose target ports another address of the pod already
// uses is not served here (the service IP's, and those served already, keep theirs).
void KubernetesLoader::keep_pod_ports_apart(std::vector<Candidate> &candidates) {
    // A VIP's ports handed to a pod on another node: that node's loader makes this check; the holder makes it
    // too, with the service IPs' Services on that pod as references (they are served there, never here), so
    // that it never hands on what the pod's node refuses.
    std::set<bpfnet_ip> handed_to;
    for (const Candidate &candidate : candidates)
        if (candidate.via_node)
            handed_to.insert(candidate.endpoint->ip);
    auto reference = [&handed_to](const Candidate &c) {
        return !c.location && !c.via_node && !c.service.shared && c.endpoint && c.ports_resolved &&
               handed_to.contains(c.endpoint->ip);
    };
    std::vector<Candidate *> order;
    for (Candidate &candidate : candidates)
        if (candidate.location || candidate.via_node || reference(candidate))
            order.push_back(&candidate);
    std::stable_sort(order.begin(), order.end(), [this](const Candidate *a, const Candidate *b) {
        return std::make_tuple(a->service.shared, !serving_.contains(a->id()), a->service.key()) <
               std::make_tuple(b->service.shared, !serving_.contains(b->id()), b->service.key());
    });
    using PodPort = std::tuple<bpfnet_ip, Protocol, uint16_t>; // (pod, protocol, target port)
    std::map<PodPort, const Candidate *> taken;
    for (Candidate *c : order) {
        const std::string scope = format_ip(c->service_ip);
        const Candidate *other = nullptr;
        const PortRule *clash = nullptr;
        for (const PortRule &p : c->ports) {
            auto it = taken.find({c->endpoint->ip, p.protocol, p.target_port});
            if (it != taken.end() && it->second->service_ip != c->service_ip) {
                other = it->second;
                clash = &p;
                break;
            }
        }
        if (!other) {
            for (const PortRule &p : c->ports)
                taken.emplace(PodPort{c->endpoint->ip, p.protocol, p.target_port}, c);
            if (!reference(*c))
                forget_posted(c->service.key(), "PodPortShared", scope);
            continue;
        }
        if (reference(*c))
            continue; // another node's to report
        c->location.reset();
        c->via_node.reset();
        report_once(c->object, c->service.key(),
                    warning_event("PodPortShared", "Refuse",
                                  "pod " + format_ip(c->endpoint->ip) + " already answers on " +
                                      to_string(clash->protocol) + " " + std::to_string(clash->target_port) + " for " +
                                      format_ip(other->service_ip) + " (Service " + other->service.key() +
                                      "); the pod's replies are told apart by their port, so each address of a pod "
                                      "needs target ports of its own"),
                    scope);
    }
}

// Services sharing an IP need disjoint target ports (replies are mapped back to their service port by the
// pod's port). Numbers were checked when the Services were accepted; named ones are known only now: the
// later Service (by namespace/name) of a colliding pair is not served, and its ports are not listed.
void KubernetesLoader::keep_target_ports_apart(std::vector<Candidate> &candidates) {
    std::vector<Candidate *> order;
    for (Candidate &candidate : candidates)
        order.push_back(&candidate);
    // Services with numeric target ports first (their ports were checked at acceptance), then the others by
    // namespace/name: a later named port never takes a target port away from an accepted number.
    std::sort(order.begin(), order.end(), [](const Candidate *a, const Candidate *b) {
        return std::make_pair(!a->service.target_port_names.empty(), a->service.key()) <
               std::make_pair(!b->service.target_port_names.empty(), b->service.key());
    });
    using Target = std::pair<bpfnet_ip, std::pair<Protocol, uint16_t>>; // (service IP, (protocol, target port))
    std::map<Target, std::string> taken;                                // -> the Service that uses it
    for (Candidate *c : order) {
        std::string other;
        for (const PortRule &p : c->ports) {
            auto it = taken.find({c->service_ip, {p.protocol, p.target_port}});
            if (it != taken.end() && it->second != c->service.key()) {
                other = it->second + " (" + to_string(p.protocol) + " " + std::to_string(p.target_port) + ")";
                break;
            }
        }
        if (other.empty()) {
            for (const PortRule &p : c->ports)
                taken.emplace(Target{c->service_ip, {p.protocol, p.target_port}}, c->service.key());
            continue;
        }
        c->location.reset();
        c->via_node.reset();
        c->ports.clear();
        report_once(c->object, c->service.key(),
                    warning_event("TargetPortConflict", "Resolve",
                                  "a named targetPort resolves to a target port that " + other +
                                      " uses on the same service IP " + format_ip(c->service_ip) +
                                      "; Services sharing an IP need disjoint target ports"),
                    format_ip(c->service_ip));
    }
}

// One node answers for a service IP, and it can only steer to pods on itself: Services that share an IP are
// served here only when every one of them that has a ready endpoint has it on this node.
void KubernetesLoader::keep_shared_ips_together(std::vector<Candidate> &candidates) {
    std::map<bpfnet_ip, std::vector<Candidate *>> by_ip;
    // A shared address has no one node answering for it: its holder serves each Service whose pod is there
    // (locate_shared_addresses reports the others), and on "node" every node has an address of its own.
    for (Candidate &candidate : candidates)
        if (!candidate.service.shared)
            by_ip[candidate.service_ip].push_back(&candidate);
    for (auto &[ip, group] : by_ip) {
        if (group.size() < 2)
            continue;
        std::vector<std::string> here, elsewhere;
        for (const Candidate *c : group) {
            if (c->location)
                here.push_back(c->service.key());
            else if (c->endpoint && !c->endpoint->on_this_node)
                elsewhere.push_back(c->service.key() + " (on node " + c->endpoint->node_name + ")");
        }
        if (here.empty() || elsewhere.empty()) {
            for (const Candidate *c : group)
                forget_posted(c->service.key(), "SharedIPSplit", format_ip(ip));
            continue;
        }
        auto join = [](const std::vector<std::string> &keys) {
            std::string out;
            for (const std::string &k : keys)
                out += (out.empty() ? "" : ", ") + k;
            return out;
        };
        std::string note = "Services sharing " + format_ip(ip) +
                           " have ready endpoints on different nodes: " + join(here) + " on " + options_.node_name +
                           ", " + join(elsewhere) +
                           "; one node answers for the IP and steers only to its own pods, so none is served "
                           "until they run on one node";
        for (Candidate *c : group) {
            c->location.reset();
            report_once(c->object, c->service.key(), warning_event("SharedIPSplit", "Refuse", note), format_ip(ip));
        }
    }
}

// Why this node stopped serving a Service, for the Released Event.
std::string KubernetesLoader::release_reason(const std::string &id, const std::vector<Candidate> &candidates) const {
    auto it = std::find_if(candidates.begin(), candidates.end(), [&](const Candidate &c) { return c.id() == id; });
    if (it == candidates.end())
        return "the Service was deleted or is no longer accepted";
    if (it->service.shared && !it->held)
        return "the shared address is no longer held on this node (its owner moved or removed it)";
    if (!it->endpoint)
        return "it has no ready endpoint";
    if (!it->endpoint->on_this_node)
        return "its ready endpoint is on node " + (it->endpoint->node_name.empty() ? "?" : it->endpoint->node_name) +
               (it->not_handed_on.empty() ? "" : ", " + it->not_handed_on);
    if (!it->location && gone_pods_.contains(it->endpoint->ip))
        return "its pod's veth went down or was deleted: the pod is going";
    if (!it->location)
        return "its pod cannot be served from this node (see the Warning Events)";
    if (!links_->carrier())
        return "the provisioning NIC " + node_.interface + " has no carrier";
    return "another node holds the Lease of its IP";
}

std::string KubernetesLoader::status_path(const std::string &namespace_, const std::string &name) {
    return "/api/v1/namespaces/" + namespace_ + "/services/" + name + "/status";
}

// A node serving a Service announces its addresses in status.loadBalancer.ingress: those served here and those
// whose Lease another node holds (a dual-stack Service's families may be served by two nodes; both write the
// same list). Only that field is patched; the check is by meaning, so the server's defaulted ipMode does not
// cause a write per Service change.
void KubernetesLoader::publish_ingress(const Candidate &candidate, const std::set<bpfnet_ip> &answered,
                                       const Snapshot &leases) {
    const std::string &key = candidate.service.key();
    // On each node's own address, every node serves its own: no one address to announce (one written before,
    // when the Service named a VIP, is taken out).
    std::vector<bpfnet_ip> served;
    if (!candidate.service.node_address)
        for (const bpfnet_ip &ip : candidate.service.service_ips)
            if (candidate.service.shared || answered.contains(ip) || lease_keeper_->held_elsewhere(ip, leases))
                served.push_back(ip);
    if (ingress_announces(candidate.object, served))
        return;
    const std::string base = resource_version(candidate.object);
    if (ingress_rv_[key] == base)
        return; // written from this version already; the watch has not shown the result yet
    try {
        api_->patch(status_path(candidate.service.namespace_, candidate.service.name), ingress_patch(served),
                    kWriteTimeout);
        ingress_rv_[key] = base;
        log_info("status.loadBalancer.ingress written", {{"service", key}});
    } catch (const std::exception &e) {
        log_warn("status not written; retrying", {{"service", key}, {"error", e.what()}});
    }
}

// The node that stops serving a Service's address takes it out of the status when no node can serve it (no
// endpoint of its family, or the Service is refused now): a status that names an address nobody answers
// would mislead. When the endpoint moved to another node, that node's status write follows instead.
void KubernetesLoader::withdraw_ingress(const std::string &key, const json &service,
                                        const std::vector<bpfnet_ip> &service_ips) {
    std::vector<bpfnet_ip> kept = ingress_addresses(service);
    const size_t before = kept.size();
    std::erase_if(kept, [&](const bpfnet_ip &ip) {
        return std::find(service_ips.begin(), service_ips.end(), ip) != service_ips.end();
    });
    if (kept.size() == before)
        return;
    const std::string ns = metadata_string(service, "namespace");
    const std::string name = metadata_string(service, "name");
    try {
        api_->patch(status_path(ns, name), ingress_patch(kept), kWriteTimeout);
        ingress_rv_.erase(key);
        log_info(kept.empty() ? "status.loadBalancer.ingress cleared: no node serves the Service"
                              : "status.loadBalancer.ingress: an address no node serves taken out",
                 {{"service", key}});
    } catch (const std::exception &e) {
        log_warn("status not cleared", {{"service", key}, {"error", e.what()}});
    }
}

void KubernetesLoader::report_transitions(const std::vector<Candidate> &candidates,
                                          const std::map<std::string, Served> &serving, const Snapshot &services) {
    for (const Candidate &candidate : candidates) {
        const std::string id = candidate.id();
        if (serving.contains(id) && !serving_.contains(id)) {
            const bpfnet_ip &ip = candidate.service_ip;
            const std::string pod =
                format_ip(candidate.endpoint->ip) +
                (candidate.endpoint->terminating ? ", which is terminating and serves until a new pod is ready)" : ")");
            const std::string steers =
                candidate.via_node ? "hands the Service's ports to node " + candidate.endpoint->node_name + " (" +
                                         format_ip(*candidate.via_node) + "), whose loader steers them to pod "
                                   : "steers the Service's ports to pod ";
            std::string note = candidate.service.shared
                                   ? "node " + options_.node_name + " serves the shared address " + format_ip(ip) +
                                         " (held here, its " + (is_v4(ip) ? "ARP" : "NDP") +
                                         " and other ports the node's; " + steers + pod
                                   : "node " + options_.node_name + " serves " + format_ip(ip) + " (answers " +
                                         (is_v4(ip) ? "ARP" : "NDP") + ", steers its ports to pod " + pod;
            if (auto from = lease_keeper_->taken_from(ip))
                note += "; taken over from node " + *from +
                        ", whose Lease expired unrenewed (the node down, or cut off from the API server)";
            log_info("serving service", {{"service", candidate.service.key()},
                                         {"service_ip", format_ip(ip)},
                                         {"backend", format_ip(candidate.endpoint->ip)},
                                         {"terminating", candidate.endpoint->terminating ? "yes" : "no"}});
            post_event(candidate.object, normal_event("Serving", "Activate", note));
        }
    }
    // The addresses of each Service that no node can serve now, taken out of its status together.
    std::map<std::string, std::vector<bpfnet_ip>> withdrawn;
    for (const auto &[id, served] : serving_) {
        if (serving.contains(id))
            continue;
        std::string why = release_reason(id, candidates);
        log_info("stopped serving service",
                 {{"service", served.key}, {"service_ip", format_ip(served.service_ip)}, {"reason", why}});
        auto it = services.find(served.key);
        if (it == services.end())
            continue;
        post_event(it->second, normal_event("Released", "Deactivate",
                                            "node " + options_.node_name + " stopped serving this Service on " +
                                                format_ip(served.service_ip) + " (" + why + ")"));
        auto candidate = std::find_if(candidates.begin(), candidates.end(),
                                      [&, wanted = id](const Candidate &c) { return c.id() == wanted; });
        // Refused now (its addresses or ports changed), or no endpoint of the family: nobody serves it.
        if (candidate == candidates.end() || !candidate->endpoint)
            withdrawn[served.key].push_back(served.service_ip);
    }
    for (const auto &[key, ips] : withdrawn)
        withdraw_ingress(key, services.at(key), ips);
}

// The holder of a shared VIP whose pod runs elsewhere serves it nowhere (locate_shared_addresses): the VIP comes
// out of the Service's status, and the node that serves it again writes it back.
void KubernetesLoader::withdraw_unserved_shared(const std::vector<Candidate> &candidates) {
    for (const Candidate &c : candidates)
        if (c.held_without_pod())
            withdraw_ingress(c.service.key(), c.object, {c.service_ip});
}

ServiceEvent KubernetesLoader::conflict_event(const SeenConflict &conflict, const std::string &ip) const {
    switch (conflict.report) {
    case DatapathRuntime::ClaimReport::Yielded:
        return warning_event("Yielded", "Yield",
                             "node " + options_.node_name + " stopped answering for " + ip + ": another host (MAC " +
                                 conflict.mac + ") claims it, and this node had not renewed the Lease " +
                                 options_.lease_namespace + "/" + lease_name(conflict.service_ip) +
                                 " within its duration (cut off from the API server?); it answers again only once "
                                 "it holds the Lease again");
    case DatapathRuntime::ClaimReport::Deferred:
        return warning_event("Deferred", "Probe",
                             "node " + options_.node_name + " holds the Lease " + options_.lease_namespace + "/" +
                                 lease_name(conflict.service_ip) + " but does not answer for " + ip +
                                 ": another host (MAC " + conflict.mac +
                                 ") answers for it on the provisioning LAN (another cluster's Ironic during a "
                                 "pivot?); it is probed every second and answered here once nobody else does");
    case DatapathRuntime::ClaimReport::Conflict:
    case DatapathRuntime::ClaimReport::ProbeUnanswered:
        break;
    }
    return warning_event("Conflict", "Detect",
                         "another host (MAC " + conflict.mac + ") also claims " + ip +
                             " on the provisioning LAN of node " + options_.node_name +
                             ", which answers for it (another cluster's node probing for it during a pivot, or a "
                             "second owner)");
}

void KubernetesLoader::report_conflicts(const std::vector<Candidate> &candidates) {
    std::vector<SeenConflict> seen;
    {
        std::lock_guard lock(conflicts_mutex_);
        seen.swap(conflicts_);
    }
    for (const SeenConflict &conflict : seen) {
        if (conflict.report == DatapathRuntime::ClaimReport::ProbeUnanswered)
            continue; // not a conflict: this pass serves the IP (its Serving Event)
        const std::string ip = format_ip(conflict.service_ip);
        ServiceEvent event = conflict_event(conflict, ip);
        if (conflict.report == DatapathRuntime::ClaimReport::Yielded)
            ++yields_;
        if (conflict.report == DatapathRuntime::ClaimReport::Deferred)
            ++deferrals_;
        for (const Candidate &candidate : candidates)
            if (candidate.service_ip == conflict.service_ip)
                post_event(candidate.object, event);
    }
}

// Every node sees the same refusal: the Event gets a name derived from what it says, so the cluster gets one
// Event however many nodes report it.
void KubernetesLoader::report_once(const json &service, const std::string &key, ServiceEvent event,
                                   const std::string &scope) {
    const auto now = std::chrono::steady_clock::now();
    auto &last = posted_[key + "|" + event.reason + "|" + scope];
    if (last.note == event.note && last.at != std::chrono::steady_clock::time_point{} &&
        now - last.at < options_.event_refresh)
        return;
    if (last.note != event.note)
        log_warn("service event", {{"service", key}, {"reason", event.reason}, {"note", event.note}});
    last = {event.note, now};
    event.name = shared_event_name(service, event.reason, event.note);
    post_event(service, event);
}

// The condition is over: the next time it is reported, it is reported at once.
void KubernetesLoader::forget_posted(const std::string &key, const std::string &reason, const std::string &scope) {
    posted_.erase(key + "|" + reason + "|" + scope);
}

void KubernetesLoader::post_event(const json &service, const ServiceEvent &event) {
    events_->record(service, event);
}

KubernetesState KubernetesLoader::metrics() const {
    KubernetesState state;
    const std::pair<const char *, const Watcher *> watchers[] = {
        {"services", services_.get()}, {"endpointslices", slices_.get()}, {"leases", leases_.get()}};
    for (const auto &[resource, watcher] : watchers) {
        if (!watcher)
            continue;
        const WatchStats &s = watcher->stats();
        state.watches.push_back({resource, s.lists, s.watches, s.events, s.expired, s.bad_input, s.failures, s.stalls});
    }
    state.reconciles = reconciles_;
    state.services_served = served_count_;
    state.services_standby = standby_count_;
    state.services_refused = refused_count_;
    state.leases_held = held_count_;
    state.lease_takeovers = lease_keeper_ ? lease_keeper_->takeovers() : 0;
    state.lease_yields = yields_;
    state.lease_deferrals = deferrals_;
    state.events_dropped = events_ ? events_->dropped() : 0;
    return state;
}

} // namespace bpfnet::k8s
