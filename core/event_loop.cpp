#include "core/event_loop.hpp"

#include "maps/system_error.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace bpfnet::loop {

UniqueFd make_epoll() {
    UniqueFd epoll(epoll_create1(EPOLL_CLOEXEC));
    if (!epoll.valid())
        throw SystemError("epoll_create1", errno);
    return epoll;
}

void add(const UniqueFd &epoll, int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
        throw SystemError("epoll_ctl", errno);
}

std::vector<int> wait(const UniqueFd &epoll) {
    epoll_event ready[8];
    for (;;) {
        int n = epoll_wait(epoll.get(), ready, 8, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw SystemError("epoll_wait", errno);
        std::vector<int> fds;
        for (int i = 0; i < n; i++)
            fds.push_back(ready[i].data.fd);
        return fds;
    }
}

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

UniqueFd make_eventfd() {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0)
        throw SystemError("eventfd", errno);
    return UniqueFd(fd);
}

void drain(const UniqueFd &fd) {
    uint64_t buf[64];
    while (::read(fd.get(), buf, sizeof(buf)) > 0) {
    }
}

namespace {
sigset_t handled_set() {
    sigset_t set;
    sigemptyset(&set);
    for (int signal : kHandledSignals)
        sigaddset(&set, signal);
    return set;
}
} // namespace

void block_handled_signals() {
    sigset_t set = handled_set();
    if (pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0)
        throw SystemError("pthread_sigmask", errno);
}

UniqueFd signal_fd() {
    block_handled_signals();
    sigset_t set = handled_set();
    int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd < 0)
        throw SystemError("signalfd", errno);
    return UniqueFd(fd);
}

} // namespace bpfnet::loop
