// One writer per interface: the loader holds an exclusive flock(2) on its pin directory for as long as it
// runs, so a second loader (or a teardown) aimed at the same interface is refused instead of fighting over
// the maps and the hooks. The kernel drops the lock when the process dies, however it dies: a crash never
// leaves a stale lock behind.
#pragma once

#include "maps/unique_fd.hpp"

#include <stdexcept>
#include <string>
#include <vector>

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
    PinDirLock(PinDirLock &&other) noexcept = default;
    PinDirLock &operator=(PinDirLock &&other) noexcept;
    // Unlocks, and removes the directories the lock created if they are still empty: a loader that stops
    // before it pinned anything (a port in use, a refused attach) leaves no trace on bpffs.
    ~PinDirLock();

    bool held() const { return fd_.valid(); }

private:
    void remove_created_if_empty() noexcept;

    UniqueFd fd_;
    std::vector<std::string> created_; // innermost first
};

// Who holds a flock on the inode of `path`, as "pid N: command line", from /proc/locks; empty when no holder
// is visible (released meanwhile, or a process in another PID namespace).
std::string flock_holder(const std::string &path);

} // namespace bpfnet
