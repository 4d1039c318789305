#include "core/datapath_runtime.hpp"

#include "core/event_loop.hpp"
#include "core/flow_sweep.hpp"
#include "core/log.hpp"
#include "core/monotonic_clock.hpp"
#include "core/netlink.hpp"

#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>

namespace bpfnet {

namespace {

// How a backend's packets reach its pod, as the log and bpfnetctl say it.
std::string delivery_of(const BackendLocation &where) {
    return where.route ? "route" : where.redirect_peer ? "redirect_peer" : "veth";
}

using loop::arm_timer;
using loop::drain;

} // namespace

DatapathRuntime::DatapathRuntime(NodeSettings node, LoaderStatus &status) : node_(std::move(node)), status_(status) {}

DatapathRuntime::~DatapathRuntime() {
    stop();
}

void DatapathRuntime::stop() {
    if (thread_.joinable()) {
        uint64_t one = 1;
        if (::write(stop_.get(), &one, sizeof(one)) != sizeof(one))
            log_error("cannot stop the datapath thread", {{"error", std::strerror(errno)}});
        thread_.join();
    }
}

// How the service IPs' ARP is answered, for the log; bpfnetctl status says the same.
constexpr const char *kArpResponder =
    "tc ingress, answers sent out of the NIC's egress (reaches the LAN on every NIC kind; XDP_TX would be lost on "
    "a veth whose peer runs no XDP program)";

void DatapathRuntime::claim() {
    if (lock_.held())
        return;
    if (!kernel_) {
        KernelFeatures kernel = probe_kernel();
        plan_ = plan_attach(node_.tc_attach, node_.redirect_peer, kernel);
        kernel_ = std::move(kernel);
    }
    lock_ = PinDirLock(node_.pin_dir());
}

void DatapathRuntime::attach() {
    claim();
    heartbeat_timer_ = loop::make_timer();
    flow_sweep_timer_ = loop::make_timer();
    LinkInfo nic = link_by_name(node_.interface);
    nic_mac_ = nic.mac;
    const KernelFeatures &kernel = *kernel_;
    log_info("kernel probed", {{"release", kernel.release},
                               {"tcx", kernel.tcx ? "yes" : "no"},
                               {"tcx_probe", kernel.tcx_detail},
                               {"redirect_peer", kernel.redirect_peer ? "yes" : "no"},
                               {"l4_checksums", kernel.skb_csum_state ? "computed by the programs" : "kernel helper"},
                               {"tc_attach", to_string(plan_.tc) + " (tcAttach " + to_string(node_.tc_attach) + ")"},
                               {"pod_delivery", plan_.redirect_peer ? "redirect_peer" : "veth"}});
    datapath_ = std::make_unique<Datapath>(DatapathOptions{.interface = node_.interface,
                                                           .pin_dir = node_.pin_dir(),
                                                           .xdp_mode = node_.xdp_mode,
                                                           .tc = plan_.tc,
                                                           .redirect_peer = plan_.redirect_peer,
                                                           .skb_csum_state = kernel.skb_csum_state});
    // The kernel probe and the load each had libbpf read the kernel's BTF (for the programs' CO-RE
    // relocations: about 11 MiB parsed), freed by now; without a trim the allocator keeps it for good.
    malloc_trim(0);
    // xdpMode auto's fallback, which a VLAN sub-interface (config.md: the device to give) always takes: the
    // operator has nothing to do, so one info line, and status says generic.
    if (!datapath_->xdp().native_refused.empty())
        log_info("native XDP refused by the driver: running generic XDP (slower)",
                 {{"iface", node_.interface}, {"error", datapath_->xdp().native_refused}});
    log_info("xdp program on the NIC", {{"iface", node_.interface},
                                        {"action", to_string(datapath_->xdp().action)},
                                        {"attach", describe(datapath_->xdp())}});
    log_info("tc program on the NIC ingress", {{"iface", node_.interface},
                                               {"action", to_string(datapath_->tc_nic_action())},
                                               {"attach", to_string(datapath_->tc_kind())},
                                               {"arp_responder", kArpResponder}});
    announcer_.emplace(
        node_, nic.ifindex, nic_mac_, [this] { return heartbeat_running_; }, [this] { return owns_ipv6_address(); });
    if (probes_) {
        claims_.probe_before_answering(true);
        prober_.emplace(nic.ifindex, nic_mac_,
                        AddressProber::Handlers{.unanswered = [this](const bpfnet_ip &ip) { probe_unanswered(ip); },
                                                .answered =
                                                    [this](const bpfnet_ip &ip, const std::array<uint8_t, 6> &mac) {
                                                        probe_answered(ip, mac);
                                                    }});
    }
    // The HTTP thread gets fds of its own, so it never shares an object with this thread.
    status_.publish_maps(std::make_shared<const DatapathMaps>(DatapathMaps::open_pinned(node_.pin_dir())));
    // A datapath whose heartbeat went stale stopped answering ARP: resuming is becoming active again, and
    // the LAN is told so even though the maps already mark the service IP active.
    // A fresh heartbeat means a loader confirmed this state moments ago (a restart, an upgrade): keeping it
    // fresh keeps the service IPs answered even if this process cannot reconcile yet (an API server that is
    // away). A stale one is not revived before this process has decided the state itself (first apply()).
    bool fresh = heartbeat_fresh();
    announce_all_on_first_apply_ = !fresh;
    if (fresh) {
        heartbeat_running_ = true;
        write_heartbeat();
    }
}

bool DatapathRuntime::heartbeat_fresh() {
    auto last = datapath_->maps().heartbeat.lookup(0);
    auto timeout = static_cast<__u64>(std::chrono::nanoseconds(node_.heartbeat_timeout).count());
    if (!last || last->monotonic_ns == 0)
        return false;
    const __u64 now = monotonic_ns();
    return last->monotonic_ns > now || now - last->monotonic_ns <= timeout; // in the future: a predecessor's grace
}

void DatapathRuntime::leave_with_grace(std::chrono::milliseconds grace) {
    std::lock_guard lock(mutex_);
    claims_.leave_with_grace(); // from here on nothing starts the heartbeat again (a yield while shutting down)
    if (!datapath_ || !heartbeat_running_ || grace.count() <= 0)
        return;
    heartbeat_running_ = false; // the thread writes no more heartbeats over the grace
    datapath_->maps().heartbeat.update(
        0, bpfnet_heartbeat{monotonic_ns() + static_cast<__u64>(std::chrono::nanoseconds(grace).count())});
}

nlohmann::json DatapathRuntime::backend_veths() const {
    std::lock_guard lock(mutex_);
    nlohmann::json list = nlohmann::json::array();
    std::map<int, BackendLocation> veths; // one per veth: the specs of one backend share it
    for (const ServiceSpec &spec : specs_)
        if (spec.location)
            veths.emplace(spec.location->ifindex, *spec.location);
    for (const auto &[ifindex, where] : veths)
        list.push_back(
            {{"ifindex", ifindex},
             {"found_by", where.found_by},
             {"behind", where.route_device.empty() ? nlohmann::json(nullptr) : nlohmann::json(where.route_device)},
             {"delivery", delivery_of(where)}});
    return list;
}

void DatapathRuntime::sweep_idle_flows() {
    const FlowSweepRule rule{.idle = flow_clock_units(kFlowIdleTimeout),
                             .unstamped_idle = std::chrono::steady_clock::now() - started_ > kFlowIdleTimeout};
    const FlowSweepReport swept = sweep_flows(datapath_->maps(), flow_clock_now(), rule);
    if (swept.removed != 0)
        log_debug("idle flows removed", {{"removed", std::to_string(swept.removed)},
                                         {"flows", std::to_string(swept.kept)},
                                         {"unstamped", std::to_string(swept.unstamped)},
                                         {"hosts", std::to_string(swept.hosts)}});
}

void DatapathRuntime::write_heartbeat() {
    datapath_->maps().heartbeat.update(0, bpfnet_heartbeat{monotonic_ns()});
}

namespace {

// The relay agents whose giaddr the datapath accepts: exactly the configured ones, written only on change.
void sync_dhcp_relays(DatapathMaps &maps, const std::vector<bpfnet_ip> &wanted) {
    for (const auto &[ip, entry] : maps.dhcp_relays.entries())
        if (std::find(wanted.begin(), wanted.end(), ip) == wanted.end())
            maps.dhcp_relays.erase(ip);
    for (const bpfnet_ip &ip : wanted)
        if (!maps.dhcp_relays.lookup(ip))
            maps.dhcp_relays.update(ip, bpfnet_dhcp_relay{});
}

// A backend delivered through the node's routing reaches its pod only where the node forwards from the NIC
// (every Kubernetes node does: kubeadm checks net.ipv4.ip_forward, CNIs turn it on); off, its packets are
// dropped and counted (drop_no_route). Said for each family the LAN has.
void warn_unless_forwarding(const NodeSettings &node) {
    const auto off = [&](const std::string &family) {
        std::ifstream file("/proc/sys/net/" + family + "/conf/" + node.interface + "/forwarding");
        int on = 1;
        return file >> on && on == 0;
    };
    if (node.subnet_be != 0 && off("ipv4"))
        log_warn("forwarding is off on the NIC: backends delivered through the node's routing get no IPv4 packets "
                 "(drop_no_route); set net.ipv4.ip_forward=1, as Kubernetes nodes have it",
                 {{"iface", node.interface}});
    if (node.prefix6_len != 0 && off("ipv6"))
        log_warn("forwarding is off on the NIC: backends delivered through the node's routing get no IPv6 packets "
                 "(drop_no_route); set net.ipv6.conf.all.forwarding=1",
                 {{"iface", node.interface}});
}

// The pod hook's line: which veth, how it was found (behind what, when the route to the pod names a bridge or
// another device of the CNI's), how packets reach the pod, how the hook was attached and how long that took.
void log_pod_hook(const BackendLocation &where, HookAction action, TcHookKind kind, std::chrono::microseconds took) {
    const std::string ifindex = std::to_string(where.ifindex);
    const std::string veth = interface_name(where.ifindex);
    const std::string ms = std::to_string(static_cast<double>(took.count()) / 1000.0);
    if (where.route_device.empty())
        log_info("tc program on the backend veth", {{"ifindex", ifindex},
                                                    {"veth", veth},
                                                    {"found_by", where.found_by},
                                                    {"delivery", delivery_of(where)},
                                                    {"action", to_string(action)},
                                                    {"attach", to_string(kind)},
                                                    {"took_ms", ms}});
    else
        log_info("tc program on the backend veth", {{"ifindex", ifindex},
                                                    {"veth", veth},
                                                    {"found_by", where.found_by},
                                                    {"behind", where.route_device},
                                                    {"delivery", delivery_of(where)},
                                                    {"action", to_string(action)},
                                                    {"attach", to_string(kind)},
                                                    {"took_ms", ms}});
}

} // namespace

DatapathRuntime::Applied DatapathRuntime::apply(const NodeSettings &node, const std::vector<ServiceSpec> &specs) {
    std::lock_guard lock(mutex_);
    // The attachment stays as attach() made it (the modes refuse a change to it before they get here).
    const NodeSettings next = reloaded(node_, node);
    const bool new_interval = next.heartbeat_interval != node_.heartbeat_interval;
    const bool new_ra =
        next.router_advertisements != node_.router_advertisements || next.ra_interval != node_.ra_interval;
    node_ = next;
    if (new_interval && thread_.joinable())
        arm_timer(heartbeat_timer_, node_.heartbeat_interval, node_.heartbeat_interval);
    if (new_ra && thread_.joinable())
        announcer_->router_advertisements_changed();
    specs_ = specs;
    applied_once_ = true;
    return apply_locked(specs);
}

DatapathRuntime::Applied DatapathRuntime::apply_locked(const std::vector<ServiceSpec> &given) {
    // A yielded service IP keeps its ports listed, without a backend: inactive, as on a standby node; so does
    // one whose claim is being probed, or deferred.
    // A shared address is never claimed: it has no claim to withhold (ServiceSpec::shared).
    std::vector<ServiceSpec> specs = given;
    for (const ServiceSpec &spec : given)
        if (!spec.location && !spec.shared)
            claims_.standby(spec.service_ip);
    for (ServiceSpec &spec : specs)
        if (!spec.shared && claims_.withheld(spec.service_ip)) {
            spec.backend_ip = bpfnet_ip{};
            spec.location.reset();
        }
    DatapathMaps &maps = datapath_->maps();
    RelayAddresses relay = relay_addresses(specs);
    relay.nic_link_local = announcer_->refresh_link_local();
    bpfnet_iface iface = iface_entry(node_, datapath_->nic_ifindex(), nic_mac_, relay);
    iface.hooks = static_cast<__u8>((plan_.tc == TcHookKind::Tcx ? BPFNET_HOOKS_TCX : 0) |
                                    (plan_.redirect_peer ? BPFNET_HOOKS_REDIRECT_PEER : 0));
    // The backend table says how each backend is reached; without the helper it is never "peer".
    std::vector<ServiceSpec> effective = specs;
    for (ServiceSpec &spec : effective)
        if (spec.location)
            spec.location->redirect_peer = spec.location->redirect_peer && plan_.redirect_peer;
    const DesiredState desired = desired_state(effective);
    if (auto problem = capacity_problem(desired))
        throw std::runtime_error("the desired state does not fit the datapath's tables: " + *problem +
                                 "; nothing was changed");
    // While the maps change, the marks cover the service IPs they hold and the ones they will hold; after
    // it, only the latter (see bpfnet_iface.service_ip_marks).
    mark_service_ips(iface, desired);
    bpfnet_iface during = iface;
    for (const auto &[ip, entry] : maps.service_ips.entries())
        mark_service_ip(during, ip);
    auto current = maps.iface.lookup(0);
    // The count only gates the lookups (any shared address: look them up); a shared address on its way out
    // loses its mark at once, so its packets are the node's a moment before its ports go.
    if (current)
        during.shared_addresses = std::max(during.shared_addresses, current->shared_addresses);
    if (!current || !bytewise_equal(*current, during))
        maps.iface.update(0, during);
    sync_dhcp_relays(maps, node_.dhcp_relays);

    // The reverse path must be in place before a service IP is announced. A veth this process has already
    // hooked is not asked again: in Kubernetes mode apply() runs on every tick.
    std::set<int> wanted;
    Applied applied;
    for (const ServiceSpec &spec : specs) {
        if (!spec.location || !wanted.insert(spec.location->ifindex).second)
            continue;
        if (hooked_.contains(spec.location->ifindex)) {
            applied.pod_hooks[spec.location->ifindex] = HookAction::Adopted;
            continue;
        }
        // Timed: it is on the failover path (the service IP goes active only after it), and a tcx attach
        // waits for an RCU grace period.
        const auto started = std::chrono::steady_clock::now();
        HookAction action = datapath_->attach_pod_hook(spec.location->ifindex);
        const auto took =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
        hooked_.insert(spec.location->ifindex);
        applied.pod_hooks[spec.location->ifindex] = action;
        if (action != HookAction::Adopted)
            log_pod_hook(*spec.location, action, datapath_->tc_kind(), took);
    }
    // Said when backends delivered through the node's routing appear (a new pod, or a changed delivery).
    const bool routes =
        std::ranges::any_of(specs, [](const ServiceSpec &s) { return s.location && s.location->route; });
    if (routes && !routed_backends_)
        warn_unless_forwarding(node_);
    routed_backends_ = routes;
    applied.report = reconcile(maps, desired);
    if (!bytewise_equal(during, iface))
        maps.iface.update(0, iface);
    join_multicast_groups(specs);
    // An announcement round still under way for an IP that stopped being answered here (released, yielded)
    // would pull the hosts back to this node: it ends now.
    for (const bpfnet_ip &ip : applied.report.deactivated)
        announcer_->end(ip);
    for (const bpfnet_backend &gone : applied.report.departed) {
        int ifindex = static_cast<int>(gone.ifindex);
        if (wanted.contains(ifindex))
            continue;
        datapath_->detach_pod_hook(ifindex);
        hooked_.erase(ifindex);
        applied.detached.push_back(ifindex);
    }

    if (!heartbeat_running_ && !claims_.leaving()) {
        heartbeat_running_ = true;
        write_heartbeat();
    }
    applied.announced = applied.report.activated;
    if (announce_all_on_first_apply_) {
        announce_all_on_first_apply_ = false;
        applied.announced.clear();
        for (const auto &[ip, entry] : maps.service_ips.entries())
            if (entry.flags & BPFNET_SERVICE_IP_ACTIVE)
                applied.announced.push_back(ip);
    }
    announcer_->announce(applied.announced);
    return applied;
}

void DatapathRuntime::recheck_hooks() {
    std::lock_guard lock(mutex_);
    hooked_.clear();
}

// Router advertisements come from the node that owns an IPv6 service address, so the LAN hears one sender,
// which moves with the address.
bool DatapathRuntime::owns_ipv6_address() {
    bool owning = false;
    for (const auto &[ip, entry] : datapath_->maps().service_ips.entries())
        owning = owning || (!is_v4(ip) && (entry.flags & BPFNET_SERVICE_IP_ACTIVE) && !claims_.yielded(ip));
    return owning;
}

// Hosts solicit a service address at its solicited-node group, and DHCPv6 clients send to ff02::1:2; a switch
// that snoops MLD forwards a group only to ports that joined it, and the NIC's filter drops groups nobody
// joined. Logged, not fatal: the NIC may have IPv6 disabled (then nothing IPv6 reaches it anyway).
void DatapathRuntime::join_multicast_groups(const std::vector<ServiceSpec> &specs) {
    std::vector<bpfnet_ip> addresses;
    for (const ServiceSpec &spec : specs)
        if (!spec.shared) // the node holds a shared address: its groups are the node's
            addresses.push_back(spec.service_ip);
    const std::vector<bpfnet_ip> groups = nic_groups(addresses, dhcp6_service_ip(specs) != bpfnet_ip{},
                                                     node_.router_advertisements && node_.prefix6_len != 0);
    // The socket only once there is a group: a kernel booted with ipv6.disable=1 has no AF_INET6, and an
    // IPv4-only node must run there.
    if (!groups_ && groups.empty())
        return;
    if (!groups_) {
        try {
            groups_.emplace(datapath_->nic_ifindex());
        } catch (const std::exception &e) {
            log_warn("cannot join IPv6 multicast groups: no IPv6 in this kernel?",
                     {{"iface", node_.interface}, {"error", e.what()}});
            return;
        }
    }
    for (const auto &[group, error] : groups_->set(groups))
        log_warn("cannot join an IPv6 multicast group on the NIC (a service address's solicited-node group, or "
                 "DHCPv6's ff02::1:2): hosts behind an MLD-snooping switch may not reach it",
                 {{"iface", node_.interface}, {"group", format_ip(group)}, {"error", error}});
}

// Another MAC claiming the service IP means two owners on one LAN: a pivot gone wrong, a second cluster, or,
// once this node's claim is no longer confirmed, the node that rightfully took the IP over while this one
// was cut off from the API server. The first two are reported (at most once per interval per IP, so a flood
// cannot drown the log); the last makes this node yield at once. The claim machine says which.
void DatapathRuntime::report_conflict(const bpfnet_ip &service_ip, const __u8 *mac) {
    const ClaimStep step = claims_.conflict_seen(service_ip);
    const std::string text = format_mac(mac);
    if (step.has(ClaimAction::Deactivate))
        yield(service_ip);
    if (step.has(ClaimAction::ReportYield)) {
        log_warn("yielded: another MAC claims the service IP and this node's claim is unconfirmed",
                 {{"service_ip", format_ip(service_ip)},
                  {"mac", text},
                  {"unconfirmed_for_ms", std::to_string(step.unconfirmed_for.count())}});
        if (on_conflict_)
            on_conflict_(service_ip, text, ClaimReport::Yielded);
    }
    if (step.has(ClaimAction::ReportConflict)) {
        log_warn("conflict: another MAC claims the service IP", {{"service_ip", format_ip(service_ip)}, {"mac", text}});
        if (on_conflict_)
            on_conflict_(service_ip, text, ClaimReport::Conflict);
    }
}

// The claim machine asked for the LAN to be probed for the IP (from `first` on), or for the probing to end.
void DatapathRuntime::carry_out_probe(const ClaimStep &step, const bpfnet_ip &service_ip,
                                      std::chrono::steady_clock::time_point first) {
    if (!prober_)
        return;
    if (step.has(ClaimAction::Probe))
        prober_->probe(service_ip, first);
    if (step.has(ClaimAction::EndProbe))
        prober_->stop(service_ip);
}

// Another MAC answers for an IP whose claim starts: a second cluster's node serving it (a pivot under way), or
// a host with the wrong address. Not answered while it does; the prober goes on asking.
void DatapathRuntime::probe_answered(const bpfnet_ip &service_ip, const std::array<uint8_t, 6> &mac) {
    const ClaimStep step = claims_.probe_answered(service_ip);
    if (!step.has(ClaimAction::ReportDeferred))
        return;
    const std::string text = format_mac(mac.data());
    log_warn("deferred: another MAC answers for the service IP on the LAN",
             {{"service_ip", format_ip(service_ip)}, {"mac", text}});
    if (on_conflict_)
        on_conflict_(service_ip, text, ClaimReport::Deferred);
}

// Nobody else answers for the IP: it is answered from now on (the mode's last desired state).
void DatapathRuntime::probe_unanswered(const bpfnet_ip &service_ip) {
    const ClaimStep step = claims_.probe_unanswered(service_ip);
    if (!step.has(ClaimAction::Reactivate))
        return;
    if (step.deferred_for.count() > 0)
        log_info("probe unanswered: answering for the deferred service IP",
                 {{"service_ip", format_ip(service_ip)}, {"deferred_ms", std::to_string(step.deferred_for.count())}});
    try {
        if (applied_once_)
            apply_locked(specs_); // activates the IP, and announces it
    } catch (const std::exception &e) {
        // The claim is answerable: the mode's next apply() (a tick at the latest) brings the maps to it.
        log_error("probe unanswered: not applied yet", {{"service_ip", format_ip(service_ip)}, {"error", e.what()}});
    }
    if (on_conflict_)
        on_conflict_(service_ip, "", ClaimReport::ProbeUnanswered);
}

void DatapathRuntime::yield(const bpfnet_ip &service_ip) {
    announcer_->end(service_ip);
    try {
        if (applied_once_) {
            apply_locked(specs_);
        } else if (auto entry = datapath_->maps().service_ips.lookup(service_ip)) {
            // Adopted from a predecessor, nothing applied yet by this process: the IP is active only by the
            // predecessor's word, and it stops being answered now (apply() keeps it yielded later).
            entry->flags &= ~BPFNET_SERVICE_IP_ACTIVE;
            datapath_->maps().service_ips.update(service_ip, *entry);
        }
    } catch (const std::exception &e) {
        // Still yielded: the mode's next apply() takes the IP out; the yield is reported all the same.
        log_error("yield not applied yet", {{"service_ip", format_ip(service_ip)}, {"error", e.what()}});
    }
}

// The machine lifted a yield: the mode's last desired state, with the IP's backend, goes back into the maps.
// Before the mode's first apply() there is nothing to bring back: that apply() does it.
void DatapathRuntime::reactivate(const bpfnet_ip &service_ip) {
    if (!applied_once_)
        return;
    log_info("claim confirmed again: answering for the service IP", {{"service_ip", format_ip(service_ip)}});
    apply_locked(specs_);
}

void DatapathRuntime::hold_claims(const std::vector<bpfnet_ip> &service_ips) {
    std::lock_guard lock(mutex_);
    const std::set<bpfnet_ip> held(service_ips.begin(), service_ips.end());
    for (const bpfnet_ip &ip : config_claims_)
        if (!held.contains(ip) && claims_.dropped(ip).has(ClaimAction::EndAnnouncement) && announcer_)
            announcer_->end(ip);
    for (const bpfnet_ip &ip : held)
        claims_.held_by_config(ip);
    config_claims_ = held;
}

void DatapathRuntime::confirm_claim(const bpfnet_ip &service_ip, std::chrono::steady_clock::time_point until) {
    std::lock_guard lock(mutex_);
    const ClaimStep step = claims_.confirmed(service_ip, until);
    carry_out_probe(step, service_ip);
    if (step.has(ClaimAction::Reactivate))
        reactivate(service_ip);
}

void DatapathRuntime::take_over_claim(const bpfnet_ip &service_ip, std::chrono::steady_clock::time_point until,
                                      std::chrono::steady_clock::time_point answer_at) {
    std::lock_guard lock(mutex_);
    const ClaimStep step = claims_.taken_over(service_ip, until, answer_at);
    // Probed once the announcement interval is over: the holder it takes over from has yielded by then, so
    // only another cluster's node still answers.
    carry_out_probe(step, service_ip, answer_at);
    if (step.has(ClaimAction::Reactivate))
        reactivate(service_ip);
    if (step.has(ClaimAction::Announce) && announcer_)
        announcer_->announce({service_ip});
}

bool DatapathRuntime::probe_pending(const bpfnet_ip &service_ip) {
    std::lock_guard lock(mutex_);
    return claims_.probe_pending(service_ip);
}

bool DatapathRuntime::announcing(const bpfnet_ip &service_ip) {
    std::lock_guard lock(mutex_);
    return claims_.announcing(service_ip);
}

void DatapathRuntime::drop_claim(const bpfnet_ip &service_ip) {
    std::lock_guard lock(mutex_);
    // A yielded IP stays yielded: the mode stops serving it with its next apply(), and re-applying the last
    // specs here would answer for it (and announce it) in between. An announcement still under way (a
    // takeover's, before the IP was answered) ends.
    const ClaimStep step = claims_.dropped(service_ip);
    carry_out_probe(step, service_ip);
    if (step.has(ClaimAction::EndAnnouncement) && announcer_)
        announcer_->end(service_ip);
}

void DatapathRuntime::unconfirm_active_claims() {
    std::lock_guard lock(mutex_);
    if (!datapath_)
        return;
    for (const auto &[ip, entry] : datapath_->maps().service_ips.entries())
        if (entry.flags & BPFNET_SERVICE_IP_ACTIVE)
            claims_.adopted_active(ip);
}

void DatapathRuntime::announce_claim(const std::vector<bpfnet_ip> &service_ips) {
    std::lock_guard lock(mutex_);
    if (!announcer_)
        return;
    for (const bpfnet_ip &ip : service_ips)
        if (claims_.announce_requested(ip).has(ClaimAction::Announce))
            announcer_->announce_once(ip);
}

void DatapathRuntime::start(ConflictHandler on_conflict) {
    on_conflict_ = std::move(on_conflict);
    epoll_ = loop::make_epoll();
    stop_ = loop::make_eventfd();
    // The handlers run on the runtime's thread, under mutex_ (serve() consumes under it).
    EventPump::Handlers handlers;
    handlers.resolve = [this](const bpfnet_ip &host, const bpfnet_ip &service_ip) {
        announcer_->resolve(host, service_ip);
    };
    handlers.conflict = [this](const bpfnet_ip &service_ip, const __u8 *mac) {
        report_conflict(service_ip, mac);
    };
    events_.emplace(datapath_->events_fd(), std::move(handlers));
    {
        std::lock_guard lock(mutex_);
        arm_timer(heartbeat_timer_, node_.heartbeat_interval, node_.heartbeat_interval);
        arm_timer(flow_sweep_timer_, kFlowSweepInterval, kFlowSweepInterval);
        started_ = std::chrono::steady_clock::now();
        announcer_->start(epoll_);
        if (prober_)
            prober_->start(epoll_);
    }
    for (int fd : {stop_.get(), heartbeat_timer_.get(), flow_sweep_timer_.get(), events_->fd()})
        loop::add(epoll_, fd);
    thread_ = std::thread([this] { serve(); });
}

void DatapathRuntime::serve() {
    for (;;) {
        std::vector<int> ready;
        try {
            ready = loop::wait(epoll_);
        } catch (const std::exception &e) {
            // Without this thread the heartbeat goes stale and the datapath stops answering ARP: the
            // safe failure. Readiness says why.
            log_error("datapath thread stopped", {{"error", e.what()}});
            status_.set_not_ready(std::string("datapath thread stopped: ") + e.what());
            return;
        }
        for (int fd : ready) {
            if (fd == stop_.get())
                return;
            std::lock_guard lock(mutex_);
            try {
                if (fd == heartbeat_timer_.get()) {
                    drain(heartbeat_timer_);
                    if (heartbeat_running_)
                        write_heartbeat();
                } else if (fd == flow_sweep_timer_.get()) {
                    drain(flow_sweep_timer_);
                    sweep_idle_flows();
                } else if (!announcer_->handle(fd) && !(prober_ && prober_->handle(fd))) {
                    events_->consume();
                }
            } catch (const std::exception &e) {
                log_error("datapath thread", {{"error", e.what()}});
            }
        }
    }
}

} // namespace bpfnet
