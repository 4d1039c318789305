#include "standalone.hpp"

#include "backend_locator.hpp"
#include "log.hpp"
#include "maps/system_error.hpp"
#include "netlink.hpp"

#include <bpf/libbpf.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace bpfnet {

namespace {

// A resolution request for the same host is not repeated more often than this.
constexpr auto kResolutionRetry = std::chrono::milliseconds(200);
constexpr auto kConflictLogInterval = std::chrono::seconds(10);

UniqueFd make_timer() {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (fd < 0)
        throw SystemError("timerfd_create", errno);
    return UniqueFd(fd);
}

void arm_timer(const UniqueFd &timer, std::chrono::milliseconds first, std::chrono::milliseconds every) {
    auto to_timespec = [](std::chrono::milliseconds ms) {
        return timespec{static_cast<time_t>(ms.count() / 1000), static_cast<long>((ms.count() % 1000) * 1000000)};
    };
    itimerspec spec{to_timespec(every), to_timespec(first)};
    if (timerfd_settime(timer.get(), 0, &spec, nullptr) != 0)
        throw SystemError("timerfd_settime", errno);
}

void drain(const UniqueFd &fd) {
    uint64_t buf[64];
    while (::read(fd.get(), buf, sizeof(buf)) > 0) {
    }
}

void watch(const UniqueFd &epoll, int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
        throw SystemError("epoll_ctl", errno);
}

UniqueFd block_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0)
        throw SystemError("sigprocmask", errno);
    int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd < 0)
        throw SystemError("signalfd", errno);
    return UniqueFd(fd);
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

__u64 monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts); // the clock bpf_ktime_get_ns() reads
    return static_cast<__u64>(ts.tv_sec) * 1000000000ull + static_cast<__u64>(ts.tv_nsec);
}

bool datapath_identity_changed(const Config &a, const Config &b) {
    return a.interface != b.interface || a.pin_root != b.pin_root || a.xdp_mode != b.xdp_mode;
}

} // namespace

StandaloneLoader::StandaloneLoader(std::string config_path, Config config, LoaderStatus &status)
    : config_path_(std::move(config_path)), config_(std::move(config)), status_(status),
      events_(nullptr, ring_buffer__free) {}

StandaloneLoader::~StandaloneLoader() = default;

void StandaloneLoader::start() {
    heartbeat_timer_ = make_timer();
    announce_timer_ = make_timer();
    // Everything that can be checked without changing the kernel is checked first.
    LinkInfo nic = link_by_name(config_.interface);
    nic_mac_ = nic.mac;
    std::optional<BackendLocation> backend;
    if (config_.backend)
        backend = locate_backend(*config_.backend);

    datapath_ = std::make_unique<Datapath>(
        DatapathOptions{.interface = config_.interface, .pin_dir = config_.pin_dir(), .xdp_mode = config_.xdp_mode});
    log_info("xdp program on the NIC", {{"iface", config_.interface},
                                        {"action", to_string(datapath_->xdp().action)},
                                        {"attach", describe(datapath_->xdp())}});
    log_info("tc program on the NIC ingress",
             {{"iface", config_.interface}, {"action", to_string(datapath_->tc_nic_action())}});
    arp_.emplace(nic.ifindex);
    // The HTTP thread gets fds of its own, so it never shares an object with this thread.
    status_.publish_maps(std::make_shared<const DatapathMaps>(DatapathMaps::open_pinned(config_.pin_dir())));
    // A datapath whose heartbeat went stale stopped answering ARP: resuming is becoming active again, and
    // the LAN is told so even though the maps already mark the service IP active.
    bool was_answering = heartbeat_fresh();
    write_heartbeat();
    apply(config_, was_answering ? Announce::NewlyActive : Announce::AllActive);
}

bool StandaloneLoader::heartbeat_fresh() {
    auto last = datapath_->maps().heartbeat.lookup(0);
    auto timeout = static_cast<__u64>(std::chrono::nanoseconds(config_.heartbeat_timeout).count());
    return last && last->monotonic_ns != 0 && monotonic_ns() - last->monotonic_ns <= timeout;
}

void StandaloneLoader::apply(const Config &config, Announce which) {
    std::optional<BackendLocation> backend;
    if (config.backend)
        backend = locate_backend(*config.backend);

    DatapathMaps &maps = datapath_->maps();
    bpfnet_iface iface = iface_entry(config, datapath_->nic_ifindex(), nic_mac_);
    auto current = maps.iface.lookup(0);
    if (!current || !bytewise_equal(*current, iface))
        maps.iface.update(0, iface);

    // The reverse path must be in place before the service IP is announced.
    if (backend) {
        HookAction action = datapath_->attach_pod_hook(backend->ifindex);
        if (action != HookAction::Adopted)
            log_info("tc program on the backend veth",
                     {{"ifindex", std::to_string(backend->ifindex)}, {"action", to_string(action)}});
    }
    ReconcileReport report = reconcile(maps, desired_state(config, backend));
    for (const bpfnet_backend &gone : report.departed) {
        if (backend && static_cast<int>(gone.ifindex) == backend->ifindex)
            continue;
        Datapath::detach_pod_hook(static_cast<int>(gone.ifindex));
    }
    log_info("maps reconciled", {{"writes", std::to_string(report.upserts)},
                                 {"removals", std::to_string(report.removals)},
                                 {"service_ip", format_ipv4(config.service_ip_be)},
                                 {"backend", config.backend ? format_ipv4(config.backend->ip_be) : "none"}});
    std::vector<__be32> to_announce = report.activated;
    if (which == Announce::AllActive) {
        to_announce.clear();
        for (const auto &[ip, entry] : maps.service_ips.entries())
            if (entry.flags & BPFNET_SERVICE_IP_ACTIVE)
                to_announce.push_back(ip);
    }
    announce(to_announce, config);
}

void StandaloneLoader::write_heartbeat() {
    datapath_->maps().heartbeat.update(0, bpfnet_heartbeat{monotonic_ns()});
}

void StandaloneLoader::announce(const std::vector<__be32> &service_ips, const Config &config) {
    if (service_ips.empty() || config.garp_count == 0)
        return;
    // A round already under way restarts with the new IPs added: each IP gets the full count.
    for (__be32 ip : service_ips)
        if (std::find(announcing_.begin(), announcing_.end(), ip) == announcing_.end())
            announcing_.push_back(ip);
    announcements_left_ = config.garp_count;
    send_next_announcement();
    if (announcements_left_ > 0)
        arm_timer(announce_timer_, config.garp_interval, config.garp_interval);
}

void StandaloneLoader::send_next_announcement() {
    for (__be32 ip : announcing_)
        arp_->send_gratuitous(ip, nic_mac_);
    log_debug("gratuitous ARP sent", {{"left", std::to_string(announcements_left_ - 1)}});
    if (--announcements_left_ == 0) {
        announcing_.clear();
        arm_timer(announce_timer_, std::chrono::milliseconds(0), std::chrono::milliseconds(0));
    }
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
    if (datapath_identity_changed(next, config_)) {
        log_error("interface, pinRoot and xdpMode cannot change while running; restart the loader",
                  {{"config", config_path_}});
        reload_failed("config not applied: interface, pinRoot and xdpMode cannot change while running");
        return;
    }
    try {
        apply(next); // locates the backend before it changes any map
        config_ = std::move(next);
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
    status_.set_not_ready(reason + "; still serving the previous state");
}

int StandaloneLoader::on_ring_event(void *ctx, void *data, size_t size) {
    if (size >= sizeof(bpfnet_event))
        static_cast<StandaloneLoader *>(ctx)->handle_event(*static_cast<const bpfnet_event *>(data));
    return 0;
}

void StandaloneLoader::handle_event(const bpfnet_event &event) {
    switch (event.type) {
    case BPFNET_EVENT_NEIGHBOUR_MISS:
        resolve_neighbour(event.ip_be, event.service_ip_be);
        break;
    case BPFNET_EVENT_CONFLICT:
        report_conflict(event.service_ip_be, event.mac);
        break;
    default:
        break;
    }
}

void StandaloneLoader::resolve_neighbour(__be32 host, __be32 service_ip) {
    auto now = std::chrono::steady_clock::now();
    auto &last = last_resolution_[host];
    if (now - last < kResolutionRetry)
        return;
    last = now;
    arp_->send_request(service_ip, nic_mac_, host);
    log_debug("neighbour miss: ARP request sent", {{"host", format_ipv4(host)}});
    if (last_resolution_.size() > BPFNET_MAX_NEIGHBOURS)
        last_resolution_.clear();
}

// Another MAC claiming the service IP means two owners on one LAN (a pivot gone wrong, a second cluster):
// hosts may reach either. Logged at most once per interval per IP, so a flood cannot drown the log.
void StandaloneLoader::report_conflict(__be32 service_ip, const __u8 *mac) {
    auto now = std::chrono::steady_clock::now();
    auto &last = last_conflict_log_[service_ip];
    if (last != std::chrono::steady_clock::time_point{} && now - last < kConflictLogInterval)
        return;
    last = now;
    char text[18];
    std::snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
    log_warn("conflict: another MAC claims the service IP", {{"service_ip", format_ipv4(service_ip)}, {"mac", text}});
}

int StandaloneLoader::run() {
    epoll_ = UniqueFd(epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_.valid())
        throw SystemError("epoll_create1", errno);
    signals_ = block_signals();
    inotify_ = watch_config_dir(config_path_);
    events_.reset(ring_buffer__new(datapath_->events_fd(), on_ring_event, this, nullptr));
    if (!events_)
        throw SystemError("ring_buffer__new", errno);

    arm_timer(heartbeat_timer_, config_.heartbeat_interval, config_.heartbeat_interval);
    if (announcements_left_ > 0)
        arm_timer(announce_timer_, config_.garp_interval, config_.garp_interval);
    for (int fd : {signals_.get(), heartbeat_timer_.get(), announce_timer_.get(), inotify_.get(),
                   ring_buffer__epoll_fd(events_.get())})
        watch(epoll_, fd);
    // start() attached and reconciled; with the heartbeat timer and the event consumer in place, it serves.
    status_.set_ready();
    log_info("serving", {{"iface", config_.interface}, {"service_ip", format_ipv4(config_.service_ip_be)}});

    for (;;) {
        epoll_event ready[8];
        int n = epoll_wait(epoll_.get(), ready, 8, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw SystemError("epoll_wait", errno);
        for (int i = 0; i < n; i++) {
            int fd = ready[i].data.fd;
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
            } else if (fd == heartbeat_timer_.get()) {
                drain(heartbeat_timer_);
                write_heartbeat();
            } else if (fd == announce_timer_.get()) {
                drain(announce_timer_);
                if (announcements_left_ > 0)
                    send_next_announcement();
            } else if (fd == inotify_.get()) {
                if (config_file_touched(inotify_, config_path_))
                    reload_config(false);
            } else {
                ring_buffer__consume(events_.get());
            }
        }
    }
}

void StandaloneLoader::teardown() {
    Datapath::remove(
        DatapathOptions{.interface = config_.interface, .pin_dir = config_.pin_dir(), .xdp_mode = config_.xdp_mode});
    log_info("datapath removed", {{"iface", config_.interface}, {"pins", config_.pin_dir()}});
}

} // namespace bpfnet
