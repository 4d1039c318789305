#include "standalone/standalone.hpp"

#include "core/backend_locator.hpp"
#include "core/event_loop.hpp"
#include "core/log.hpp"
#include "core/netlink.hpp"
#include "core/shared_addresses.hpp"
#include "maps/system_error.hpp"

#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace bpfnet {

namespace {

// What this mode does while the provisioning NIC has no carrier, for the log: nothing can take over from a
// config file, so the datapath stays as configured and serves again as soon as the carrier returns.
constexpr std::string_view kWithoutCarrier = "the service IPs stay configured here; /readyz fails until it returns";

// "198.18.0.2", "fd00:1::2" or both, for the log.
std::string service_ips_text(const Config &config) {
    std::string text;
    for (const ServiceSpec &spec : service_specs(config, std::nullopt))
        text += (text.empty() ? "" : ", ") + format_ip(spec.service_ip);
    return text;
}

// The service IPs the config serves (those with a backend): in this mode the config is the claim, confirmed
// by nothing, never yielded.
std::vector<bpfnet_ip> served_ips(const std::vector<ServiceSpec> &specs) {
    std::vector<bpfnet_ip> ips;
    for (const ServiceSpec &spec : specs)
        if (spec.location && !spec.shared) // a shared address is the node's: never claimed
            ips.push_back(spec.service_ip);
    return ips;
}

// Whether the NIC has an address whose subnet holds ip (not ip itself): the pod's node (backend.node) must be on
// the NIC's link, or the packets handed to it go nowhere (the kernel resolves no neighbour there).
bool on_nic_link(const bpfnet_ip &ip, int nic_ifindex, const std::vector<InterfaceAddress> &addresses) {
    return std::any_of(addresses.begin(), addresses.end(), [&](const InterfaceAddress &a) {
        if (a.ifindex != nic_ifindex || is_v4(a.ip) != is_v4(ip) || a.ip == ip)
            return false;
        return is_v4(ip) ? in_prefix(v4_of(ip), v4_of(a.ip) & prefix_mask_be(a.prefix_len), a.prefix_len)
                         : in_prefix6(ip, a.ip, a.prefix_len);
    });
}

// "198.18.0.5 (ironic-api tcp/6385, ...)" for the log.
std::string shared_ports_text(const SharedAddress &shared, const bpfnet_ip &held) {
    std::string text = format_ip(held) + " (";
    for (size_t i = 0; i < shared.ports.size(); i++)
        text += (i ? ", " : "") + shared.ports[i].name + " " + to_string(shared.ports[i].protocol) + "/" +
                std::to_string(shared.ports[i].port);
    return text + ")";
}

// Editors and ConfigMap updates replace the file rather than write it: watch the directory.
UniqueFd watch_config_dir(const std::string &config_path) {
    int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd < 0)
        throw SystemError("inotify_init1", errno);
    UniqueFd owned(fd);
    std::string dir = std::filesystem::path(config_path).parent_path().string();
    if (dir.empty())
        dir = ".";
    if (inotify_add_watch(fd, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) < 0)
        throw SystemError("inotify_add_watch " + dir, errno);
    return owned;
}

bool config_file_touched(const UniqueFd &inotify, const std::string &config_path) {
    alignas(inotify_event) char buf[4096];
    std::string name = std::filesystem::path(config_path).filename().string();
    bool touched = false;
    ssize_t len;
    while ((len = ::read(inotify.get(), buf, sizeof(buf))) > 0) {
        for (char *p = buf; p < buf + len;) {
            auto *ev = reinterpret_cast<inotify_event *>(p);
            // Kubernetes ConfigMap volumes swap a "..data" symlink rather than the file itself.
            if (ev->len > 0 && (name == ev->name || std::string_view(ev->name) == "..data"))
                touched = true;
            p += sizeof(inotify_event) + ev->len;
        }
    }
    return touched;
}

} // namespace

StandaloneLoader::StandaloneLoader(std::string config_path, Config config, LoaderStatus &status)
    : config_path_(std::move(config_path)), config_(std::move(config)), status_(status), runtime_(config_, status) {}

StandaloneLoader::~StandaloneLoader() = default;

void StandaloneLoader::claim() {
    if (control_)
        return;
    // What can be checked without changing anything is checked first: no pin directory is made for an
    // interface that is not there, or for a config whose backend cannot be found.
    nic_ifindex_ = link_by_name(config_.interface).ifindex;
    if (config_.backend && !config_.backend->elsewhere())
        locate_backend(*config_.backend, nic_ifindex_);
    runtime_.claim();
    control_.emplace(config_.control_socket_path());
}

void StandaloneLoader::start() {
    // The pin directory's lock and the control socket come before the datapath, so a second loader is
    // refused with nothing touched.
    claim();
    runtime_.attach();
    lost_backend_timer_ = loop::make_timer();
    // Subscribed before the first apply reads the node's addresses: a shared address coming or going in between
    // is in the notifications.
    links_.emplace(nic_ifindex_, true);
    apply(config_);
    report_carrier(status_, config_.interface, links_->carrier(), kWithoutCarrier, true);
}

StandaloneLoader::Change StandaloneLoader::apply(const Config &config) {
    Change change;
    if (config.backend && !config.backend->elsewhere()) // a pod on another node is that node's to find
        change.where = locate_backend(*config.backend, nic_ifindex_);
    change.applied = apply_located(config, change.where);
    located_ = change.where;
    backend_ifindex_ = change.where ? std::optional<int>(change.where->ifindex) : std::nullopt;
    if (backend_lost_) {
        backend_lost_ = false;
        loop::arm_timer(lost_backend_timer_, {}, {});
    }
    return change;
}

HeldAddresses StandaloneLoader::held_now(const Config &config) const {
    if (config.shared_addresses.empty())
        return {};
    return held_shared_addresses(config, nic_ifindex_, node_addresses());
}

DatapathRuntime::Applied StandaloneLoader::apply_located(const Config &config,
                                                         const std::optional<BackendLocation> &where) {
    const HeldAddresses held = held_now(config);
    const std::vector<ServiceSpec> specs = service_specs(config, where, held);
    DatapathRuntime::Applied applied = runtime_.apply(config, specs);
    runtime_.hold_claims(served_ips(specs));
    for (size_t i = 0; i < held.size(); i++) {
        const std::optional<bpfnet_ip> before =
            i < held_.size() && config.shared_addresses == config_.shared_addresses ? held_[i] : std::nullopt;
        if (held[i] && held[i] != before)
            log_info("shared address held here: its listed ports are steered to the backend",
                     {{"shared_address", shared_ports_text(config.shared_addresses[i], *held[i])},
                      {"configured_as", describe(config.shared_addresses[i].ip)}});
        else if (!held[i] && before && where && config.shared_addresses[i].ip)
            log_info(
                "shared address no longer held here: its listed ports still go to the pod here (a node "
                "holding it may hand them on), its other ports are no longer the node's",
                {{"shared_address", format_ip(*before)}, {"configured_as", describe(config.shared_addresses[i].ip)}});
        else if (!held[i] && before)
            log_info(
                "shared address no longer held here: all its ports are the node's again",
                {{"shared_address", format_ip(*before)}, {"configured_as", describe(config.shared_addresses[i].ip)}});
    }
    held_ = held;
    warn_pod_node_off_link(config);
    log_info("maps reconciled", {{"writes", std::to_string(applied.report.upserts)},
                                 {"removals", std::to_string(applied.report.removals)},
                                 {"service_ip", service_ips_text(config)},
                                 {"backend", config.backend && where ? describe(*config.backend) : "none"}});
    return applied;
}

void StandaloneLoader::warn_pod_node_off_link(const Config &config) {
    std::string off_link;
    if (config.backend && config.backend->elsewhere()) {
        const std::vector<InterfaceAddress> addresses = node_addresses();
        for (const auto &node : {config.backend->node, config.backend->node6})
            if (node && !on_nic_link(*node, nic_ifindex_, addresses))
                off_link += (off_link.empty() ? "" : ", ") + format_ip(*node);
    }
    if (!off_link.empty() && off_link != off_link_warned_)
        log_warn("the pod's node (backend.node) is on no subnet of the interface's addresses: the shared "
                 "addresses' packets handed to it reach it only if it is on the interface's link",
                 {{"node", off_link}, {"interface", config.interface}});
    off_link_warned_ = off_link;
}

namespace {

nlohmann::json interface_json(int ifindex) {
    std::string name = interface_name(ifindex);
    return name.empty() ? nlohmann::json() : nlohmann::json(name);
}

// bpfnetctl's documented spelling: a hook already in place (adopted) is "already_attached".
std::string pod_hook_name(HookAction action) {
    return action == HookAction::Adopted ? "already_attached" : to_string(action);
}

// The reply to backend_set / backend_clear, as docs/cli.md documents bpfnetctl's JSON.
nlohmann::json change_json(const Config &config, const std::optional<BackendLocation> &where,
                           const DatapathRuntime::Applied &applied) {
    nlohmann::json json;
    json["backend"] = nullptr;
    json["pod_hook"] = nullptr;
    if (config.backend && where) {
        json["backend"] = {
            {"ip", describe(*config.backend)}, {"veth", interface_json(where->ifindex)}, {"ifindex", where->ifindex}};
        if (auto hook = applied.pod_hooks.find(where->ifindex); hook != applied.pod_hooks.end())
            json["pod_hook"] = pod_hook_name(hook->second);
    }
    json["service_ips"] = nlohmann::json::array();
    for (const ServiceSpec &spec : service_specs(config, std::nullopt))
        json["service_ips"].push_back(format_ip(spec.service_ip));
    json["writes"] = applied.report.upserts;
    json["removals"] = applied.report.removals;
    json["announced"] = nlohmann::json::array();
    for (const bpfnet_ip &ip : applied.announced)
        json["announced"].push_back(format_ip(ip));
    json["gratuitous_arps"] = config.garp_count;
    json["detached_pod_hooks"] = nlohmann::json::array();
    for (int ifindex : applied.detached)
        json["detached_pod_hooks"].push_back({{"ifindex", ifindex}, {"veth", interface_json(ifindex)}});
    return json;
}

} // namespace

Backend requested_backend(const nlohmann::json &request, const Config &config) {
    using Kind = ControlFailure::Kind;
    if (!request.contains("ip") || !request["ip"].is_string())
        throw ControlFailure(Kind::BadRequest, "backend_set needs \"ip\", a string");
    // "ip" is the pod's address of the service's first family (IPv4, or IPv6 for an IPv6-only service);
    // "ipv6" its IPv6 address beside an IPv4 one. The pod has an address of each family the service has.
    const std::string text = request["ip"];
    const auto ip = parse_ip(text);
    if (!ip)
        throw ControlFailure(Kind::InvalidArgument, "backend IP '" + text + "' is not an IP address");
    std::optional<bpfnet_ip> ip6 = is_v4(*ip) ? std::nullopt : ip;
    if (request.contains("ipv6")) {
        const std::string text6 = request["ipv6"].is_string() ? request["ipv6"].get<std::string>() : "";
        const auto given = parse_ip(text6);
        if (!given || is_v4(*given) || ip6)
            throw ControlFailure(Kind::InvalidArgument,
                                 "backend IPv6 '" + text6 + "' must be an IPv6 address beside an IPv4 backend IP");
        ip6 = given;
    }
    if (request.contains("veth") && !request["veth"].is_string())
        throw ControlFailure(Kind::BadRequest, "backend_set's \"veth\" must be a string: the pod's veth");
    Backend backend;
    backend.ip_be = v4_of(*ip);
    backend.ip6 = ip6;
    backend.veth = request.value("veth", "");
    // A pod on another node stays there (the config's backend.node): only its address changes.
    if (config.backend) {
        backend.node = config.backend->node;
        backend.node6 = config.backend->node6;
    }
    // The delivery asked for, else the running backend's (the config's, or the last one asked for).
    backend.delivery = config.backend ? config.backend->delivery : PodDelivery::Auto;
    if (request.contains("delivery")) {
        const auto delivery =
            request["delivery"].is_string() ? parse_pod_delivery(request["delivery"].get<std::string>()) : std::nullopt;
        if (!delivery)
            throw ControlFailure(Kind::InvalidArgument, "backend_set's \"delivery\" must be \"auto\" or \"route\"");
        backend.delivery = *delivery;
    }
    const bool v4 = serves_family(config, true), v6 = serves_family(config, false);
    if (v4 != (backend.ip_be != 0))
        throw ControlFailure(Kind::InvalidArgument, v4 ? "backend IP: the service has an IPv4 address: give the "
                                                         "pod's IPv4 address"
                                                       : "backend IP: the service is IPv6 only: give the pod's "
                                                         "IPv6 address");
    if (v6 != backend.ip6.has_value())
        throw ControlFailure(Kind::InvalidArgument, v6 ? "backend IP: the service has an IPv6 "
                                                         "address: give the pod's IPv6 address too"
                                                       : "backend IPv6: the service has no IPv6 "
                                                         "address");
    if (backend.ip_be != 0) {
        if (auto problem =
                backend_ip_problem(backend.ip_be, {config.service_ip_be}, config.subnet_be, config.prefix_len))
            throw ControlFailure(Kind::InvalidArgument, "backend IP: " + *problem);
        if (auto problem = shared_address_problem(ip_from_v4(backend.ip_be), config))
            throw ControlFailure(Kind::InvalidArgument, "backend IP: " + *problem);
    }
    if (backend.ip6) {
        if (auto problem = backend_ip6_problem(*backend.ip6, config.service_ip6.value_or(bpfnet_ip{}), config.subnet6,
                                               config.prefix6_len))
            throw ControlFailure(Kind::InvalidArgument, "backend IPv6: " + *problem);
        if (auto problem = shared_address_problem(*backend.ip6, config))
            throw ControlFailure(Kind::InvalidArgument, "backend IPv6: " + *problem);
    }
    if (backend.veth == config.interface)
        throw ControlFailure(Kind::InvalidArgument,
                             "veth: must be the pod's veth, not the provisioning interface " + config.interface);
    return backend;
}

nlohmann::json StandaloneLoader::control(const ControlRequest &request) {
    using Kind = ControlFailure::Kind;
    const std::string command = request.body["command"];
    if (command == kDescribeCommand)
        return describe_loader("standalone", config_.interface, config_.interface_macs, runtime_.backend_veths());
    Config next = config_;
    if (command == "backend_set")
        next.backend = requested_backend(request.body, config_);
    else if (command == "backend_clear")
        next.backend.reset();
    else
        throw ControlFailure(Kind::BadRequest, "unknown command '" + command +
                                                   "': this loader takes backend_set, backend_clear and describe");
    Change change;
    try {
        change = apply(next);
    } catch (const BackendNotFound &e) {
        throw ControlFailure(Kind::BackendUnavailable,
                             "cannot locate backend " + describe(*next.backend) + ": " + e.detail() +
                                 (e.naming_veth_helps() ? "; name the pod's veth with --veth" : ""));
    }
    config_ = std::move(next);
    if (!reload_failed_)
        status_.set_ready(); // a backend that was lost is replaced or cleared
    log_info("backend changed through the control socket",
             {{"backend", config_.backend ? describe(*config_.backend) : "none"},
              {"peer_pid", std::to_string(request.peer_pid)},
              {"lasts_until", "the config is applied again (SIGHUP, file change, restart)"}});
    return change_json(config_, change.where, change.applied);
}

void StandaloneLoader::reload_config(bool forced) {
    Config next;
    try {
        next = load_config_file(config_path_);
    } catch (const ConfigError &e) {
        log_error("config rejected; keeping the running configuration", {{"error", e.what()}});
        reload_failed(std::string("config rejected: ") + e.what());
        return;
    }
    // A file event with unchanged content changes nothing. SIGHUP re-applies even an unchanged file: the
    // backend can move (a recreated pod gets a new veth) or vanish while the file stays the same. After a
    // failure even an unchanged file is applied again: reverting the file must make the loader ready again,
    // and repair what a reconcile that failed half-way left in the maps.
    if (next == config_ && !forced && status_.ready())
        return;
    if (!same_attachment(next, config_)) {
        const std::string refused = std::string(kAttachmentSettings) + " cannot change while running";
        log_error(refused + "; restart the loader", {{"config", config_path_}});
        reload_failed("config not applied: " + refused);
        return;
    }
    if (forced)
        runtime_.recheck_hooks();
    try {
        apply(next); // locates the backend before it changes any map
        config_ = std::move(next);
        reload_failed_ = false;
        status_.set_ready();
        log_info("config reloaded", {{"config", config_path_}});
    } catch (const std::exception &e) {
        log_error("config not applied; keeping the running configuration", {{"error", e.what()}});
        reload_failed(std::string("config not applied: ") + e.what());
    }
}

// Not ready until a reload succeeds: the datapath keeps serving, but with a state the file no longer
// describes, which is what the operator (and a DaemonSet rollout) must see.
void StandaloneLoader::reload_failed(const std::string &reason) {
    reload_failed_ = true;
    status_.set_not_ready(reason + "; still serving the previous state");
}

void StandaloneLoader::follow_links() {
    const LinkWatch::Changes changes = links_->update();
    if (changes.carrier_changed)
        report_carrier(status_, config_.interface, links_->carrier(), kWithoutCarrier);
    if (changes.addresses_changed)
        follow_shared_addresses();
    if (backend_lost_)
        look_for_lost_backend(); // a new veth may be the pod's
    else if (backend_ifindex_ && changes.lost.contains(*backend_ifindex_))
        backend_lost();
}

// kube-vip or keepalived moved the VIP (or the node's address changed): the maps are written again only when
// what the node holds changed; the backend stays where it was located.
void StandaloneLoader::follow_shared_addresses() {
    if (config_.shared_addresses.empty())
        return;
    try {
        if (held_now(config_) == held_)
            return;
        apply_located(config_, backend_lost_ ? std::nullopt : located_);
    } catch (const std::exception &e) {
        // Tried again at the next address notification, SIGHUP or file change.
        log_error("a shared address came or went but the datapath could not follow it", {{"error", e.what()}});
        reload_failed(std::string("shared addresses not followed: ") + e.what());
    }
}

// Steering into a veth that is down or gone delivers nothing: the backend is taken out of the datapath at
// once (its service IPs are not answered, its ports' traffic is dropped as drop_no_backend), as in Kubernetes
// mode ahead of the API server, and looked for each second until the pod is back.
void StandaloneLoader::backend_lost() {
    const std::string veth = interface_name(*backend_ifindex_);
    log_warn("the backend's veth is down or gone: its pod is steered to no more, and looked for each second",
             {{"backend", describe(*config_.backend)},
              {"ifindex", std::to_string(*backend_ifindex_)},
              {"veth", veth.empty() ? "gone" : veth}});
    try {
        apply_located(config_, std::nullopt);
    } catch (const std::exception &e) {
        log_error("the backend's veth is gone but the datapath could not be changed", {{"error", e.what()}});
    }
    backend_lost_ = true;
    loop::arm_timer(lost_backend_timer_, std::chrono::seconds(1), std::chrono::seconds(1));
    status_.set_not_ready("backend " + describe(*config_.backend) +
                          ": its veth is down or gone; not steered to until it is back");
}

void StandaloneLoader::look_for_lost_backend() {
    try {
        locate_backend(*config_.backend, nic_ifindex_);
    } catch (const BackendNotFound &) {
        return; // not back yet: said once, when it went
    }
    try {
        apply(config_);
    } catch (const std::exception &e) {
        log_error("the backend is back but could not be applied; trying again", {{"error", e.what()}});
        return;
    }
    log_info("the backend is back: steered to again", {{"backend", describe(*config_.backend)},
                                                       {"ifindex", std::to_string(*backend_ifindex_)},
                                                       {"veth", interface_name(*backend_ifindex_)}});
    if (reload_failed_)
        reload_config(true); // a reload failed meanwhile (a SIGHUP without the backend): the file, as SIGHUP would
    else
        status_.set_ready();
}

int StandaloneLoader::run() {
    epoll_ = loop::make_epoll();
    signals_ = loop::signal_fd();
    inotify_ = watch_config_dir(config_path_);
    for (int fd : {signals_.get(), inotify_.get(), control_->fd(), links_->fd(), lost_backend_timer_.get()})
        loop::add(epoll_, fd);
    runtime_.start();
    // start() attached and reconciled; with the heartbeat and the event consumer running, it serves.
    status_.set_ready();
    log_info("serving", {{"iface", config_.interface}, {"service_ip", service_ips_text(config_)}});

    for (;;) {
        for (int fd : loop::wait(epoll_)) {
            if (fd == signals_.get()) {
                signalfd_siginfo info{};
                while (::read(signals_.get(), &info, sizeof(info)) == sizeof(info)) {
                    if (info.ssi_signo == SIGHUP) {
                        reload_config(true);
                        continue;
                    }
                    // The datapath stays attached: a restarted loader adopts it without dropping a flow.
                    log_info("stopping; datapath left running",
                             {{"signal", strsignal(static_cast<int>(info.ssi_signo))}});
                    return 0;
                }
            } else if (fd == inotify_.get()) {
                if (config_file_touched(inotify_, config_path_))
                    reload_config(false);
            } else if (fd == control_->fd()) {
                control_->serve_pending([this](const ControlRequest &request) { return control(request); });
            } else if (fd == links_->fd()) {
                follow_links();
            } else if (fd == lost_backend_timer_.get()) {
                loop::drain(lost_backend_timer_);
                if (backend_lost_)
                    look_for_lost_backend();
            }
        }
    }
}

void StandaloneLoader::teardown() {
    // Not under a running loader: it would re-create what is removed, or serve from maps that are gone.
    PinDirLock lock(config_.pin_dir());
    Datapath::remove(
        DatapathOptions{.interface = config_.interface, .pin_dir = config_.pin_dir(), .xdp_mode = config_.xdp_mode});
    log_info("datapath removed", {{"iface", config_.interface}, {"pins", config_.pin_dir()}});
}

} // namespace bpfnet
