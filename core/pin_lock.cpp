#include "core/pin_lock.hpp"

#include "maps/system_error.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace bpfnet {

namespace {

// /proc/<pid>/cmdline with its NULs as spaces, cut to a length that fits one log line.
std::string command_line(const std::string &pid) {
    std::ifstream file("/proc/" + pid + "/cmdline", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    while (!text.empty() && text.back() == '\0')
        text.pop_back();
    for (char &c : text)
        if (c == '\0')
            c = ' ';
    constexpr size_t kMax = 160;
    if (text.size() > kMax)
        text = text.substr(0, kMax) + "...";
    return text;
}

} // namespace

std::string flock_holder(const std::string &path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return "";
    // /proc/locks names a lock's inode as MAJOR:MINOR:INODE, major and minor in two-digit hex.
    char inode[64];
    std::snprintf(inode, sizeof(inode), "%02x:%02x:%lu", major(st.st_dev), minor(st.st_dev),
                  static_cast<unsigned long>(st.st_ino));
    std::ifstream locks("/proc/locks");
    std::string line;
    while (std::getline(locks, line)) {
        // "1: FLOCK  ADVISORY  WRITE 1234 00:1f:5678 0 EOF"; waiters are marked "1: -> FLOCK ...".
        std::istringstream fields(line);
        std::string ordinal, type, advisory, access, pid, where;
        fields >> ordinal >> type >> advisory >> access >> pid >> where;
        if (type != "FLOCK" || where != inode || pid == "0" || pid == "-1")
            continue;
        std::string command = command_line(pid);
        return "pid " + pid + (command.empty() ? "" : ": " + command);
    }
    return "";
}

PinDirLock::PinDirLock(const std::string &pin_dir) {
    for (std::filesystem::path dir = pin_dir; !dir.empty() && dir != dir.root_path() && !std::filesystem::exists(dir);
         dir = dir.parent_path())
        created_.push_back(dir.string());
    std::error_code ec;
    std::filesystem::create_directories(pin_dir, ec);
    if (ec)
        throw SystemError("mkdir " + pin_dir, ec.value());
    UniqueFd fd(::open(pin_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid())
        throw SystemError("open " + pin_dir, errno);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK)
            throw SystemError("flock " + pin_dir, errno);
        created_.clear(); // someone else's directory now
        std::string holder = flock_holder(pin_dir);
        throw PinDirBusy(pin_dir + " is held by another bpfnet-loader (" +
                         (holder.empty() ? "its pid is not visible from here" : holder) +
                         "): one loader per interface; stop that one first, or change the backend through it "
                         "(bpfnetctl backend set)");
    }
    fd_ = std::move(fd);
}

PinDirLock &PinDirLock::operator=(PinDirLock &&other) noexcept {
    if (this != &other) {
        remove_created_if_empty();
        fd_ = std::move(other.fd_);
        created_ = std::move(other.created_);
    }
    return *this;
}

PinDirLock::~PinDirLock() {
    remove_created_if_empty();
}

void PinDirLock::remove_created_if_empty() noexcept {
    // While the lock is held, so no other loader is between its own mkdir and its flock on the same path.
    for (const std::string &dir : created_)
        if (::rmdir(dir.c_str()) != 0)
            break; // not empty (pins, or a sibling interface's directory), or gone already
    created_.clear();
    fd_.reset();
}

} // namespace bpfnet
