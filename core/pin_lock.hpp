// One writer per interface: the loader holds an exclusive flock(2) on its pin directory for as long as it
// runs, so a second loader (or a teardown) aimed at the same interface is refused instead of fighting over
// the maps and the hooks. The kernel drops the lock when the process dies, however it dies: a crash never
// leaves a stale lock behind.
#pragma once

#include "maps/unique_fd.hpp"

#include <stdexcept>
#include <string>

namespace bpfnet {

// The pin directory is held by another process; what() names it (pid and command line) where /proc shows it.
class PinDirBusy : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

class PinDirLock {
public:
    PinDirLock() = default;
    // Creates the directory if needed and locks it; throws PinDirBusy when another process holds it, a
    // SystemError when the directory cannot be created or opened.
    explicit PinDirLock(const std::string &pin_dir);

    bool held() const { return fd_.valid(); }

private:
    UniqueFd fd_;
};

// Who holds a flock on the inode of `path`, as "pid N: command line", from /proc/locks; empty when no holder
// is visible (released meanwhile, or a process in another PID namespace).
std::string flock_holder(const std::string &path);

} // namespace bpfnet
