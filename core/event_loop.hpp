// The few epoll, timerfd, eventfd and signalfd calls the loader's loops are built from (the mode's main loop
// and the DatapathRuntime's thread). Each throws bpfnet::SystemError naming the call that failed.
#pragma once

#include "maps/unique_fd.hpp"

#include <chrono>
#include <csignal>
#include <initializer_list>
#include <vector>

namespace bpfnet::loop {

UniqueFd make_epoll();
// Adds fd for EPOLLIN; epoll_event.data.fd is fd.
void add(const UniqueFd &epoll, int fd);
// Blocks until at least one added fd is readable (EINTR retried); returns those fds.
std::vector<int> wait(const UniqueFd &epoll);

UniqueFd make_timer(); // CLOCK_MONOTONIC, non-blocking
// First expiry after `first`, then every `every`; both zero disarms.
void arm_timer(const UniqueFd &timer, std::chrono::milliseconds first, std::chrono::milliseconds every);
UniqueFd make_eventfd(); // non-blocking
// Reads a timerfd or eventfd until it would block.
void drain(const UniqueFd &fd);

// The signals the loader handles through a signalfd: blocked by main() before any thread starts (threads
// inherit the mask), so none of them is ever delivered to a thread that would die of it.
inline constexpr std::initializer_list<int> kHandledSignals = {SIGTERM, SIGINT, SIGHUP};
void block_handled_signals();
// A signalfd for kHandledSignals (blocking them too, for callers that did not call block_handled_signals).
UniqueFd signal_fd();

} // namespace bpfnet::loop
