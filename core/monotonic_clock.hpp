// The clock of the datapath's times: CLOCK_MONOTONIC, which bpf_ktime_get_ns() reads, in nanoseconds. The
// loader's heartbeat, the flows' last-seen times and the trace's time stamps are all on it, so user space
// compares them with this and never with the wall clock.
#pragma once

#include <linux/types.h>

#include <ctime>

namespace bpfnet {

inline __u64 monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<__u64>(ts.tv_sec) * 1'000'000'000ull + static_cast<__u64>(ts.tv_nsec);
}

} // namespace bpfnet
