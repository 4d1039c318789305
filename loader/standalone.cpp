#include "standalone.hpp"

#include "backend_locator.hpp"
#include "event_loop.hpp"
#include "log.hpp"
#include "maps/system_error.hpp"
#include "netlink.hpp"

#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace bpfnet {

namespace {

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

bool datapath_identity_changed(const Config &a, const Config &b) {
    return a.interface != b.interface || a.pin_root != b.pin_root || a.xdp_mode != b.xdp_mode ||
           a.tc_attach != b.tc_attach || a.redirect_peer != b.redirect_peer;
}

} // namespace

StandaloneLoader::StandaloneLoader(std::string config_path, Config config, LoaderStatus &status)
    : config_path_(std::move(config_path)), config_(std::move(config)), status_(status), runtime_(config_, status) {}

StandaloneLoader::~StandaloneLoader() = default;

void StandaloneLoader::start() {
    // Everything that can be checked without changing the kernel is checked first.
    link_by_name(config_.interface);
    if (config_.backend)
        locate_backend(*config_.backend);
    runtime_.attach();
    apply(config_);
}

void StandaloneLoader::apply(const Config &config) {
    std::optional<BackendLocation> backend;
    if (config.backend)
        backend = locate_backend(*config.backend);
    auto applied = runtime_.apply(config, service_specs(config, backend));
    log_info("maps reconciled", {{"writes", std::to_string(applied.report.upserts)},
                                 {"removals", std::to_string(applied.report.removals)},
                                 {"service_ip", format_ipv4(config.service_ip_be)},
                                 {"backend", config.backend ? format_ipv4(config.backend->ip_be) : "none"}});
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
        log_error(
            "interface, pinRoot, xdpMode, tcAttach and redirectPeer cannot change while running; restart the loader",
            {{"config", config_path_}});
        reload_failed(
            "config not applied: interface, pinRoot, xdpMode, tcAttach and redirectPeer cannot change while running");
        return;
    }
    if (forced)
        runtime_.recheck_hooks();
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

int StandaloneLoader::run() {
    epoll_ = loop::make_epoll();
    signals_ = loop::signal_fd();
    inotify_ = watch_config_dir(config_path_);
    for (int fd : {signals_.get(), inotify_.get()})
        loop::add(epoll_, fd);
    runtime_.start();
    // start() attached and reconciled; with the heartbeat and the event consumer running, it serves.
    status_.set_ready();
    log_info("serving", {{"iface", config_.interface}, {"service_ip", format_ipv4(config_.service_ip_be)}});

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
