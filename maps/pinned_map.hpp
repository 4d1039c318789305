// Typed access to bpfnet's maps from C++, by pin path or by an fd the loader already holds. Key and value
// types come from bpfnet_maps.h, so a map can only be read with the layout the BPF side wrote.
#pragma once

#include "bpfnet_maps.h"
#include "system_error.hpp"
#include "unique_fd.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace bpfnet {

// Opens a pinned BPF object (map) read-write; throws naming the path.
inline UniqueFd open_pinned(const std::string &path) {
    int fd = bpf_obj_get(path.c_str());
    if (fd < 0)
        throw SystemError("bpf_obj_get " + path, errno);
    return UniqueFd(fd);
}

inline UniqueFd dup_fd(int fd, const std::string &what) {
    int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0)
        throw SystemError("dup " + what, errno);
    return UniqueFd(copy);
}

// Checks that the map behind fd was made with the layout this binary expects: a map pinned by another
// bpfnet version must not be read with the wrong struct.
inline void check_layout(int fd, const std::string &name, size_t key_size, size_t value_size) {
    bpf_map_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0)
        throw SystemError("bpf_obj_get_info_by_fd " + name, errno);
    if (info.key_size != key_size || info.value_size != value_size)
        throw SystemError("map " + name + " has key/value size " + std::to_string(info.key_size) + "/" +
                              std::to_string(info.value_size) + ", expected " + std::to_string(key_size) + "/" +
                              std::to_string(value_size),
                          EPROTO);
}

template <typename Key, typename Value>
class PinnedMap {
    static_assert(std::is_trivially_copyable_v<Key> && std::is_trivially_copyable_v<Value>);

public:
    PinnedMap(UniqueFd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {
        check_layout(fd_.get(), name_, sizeof(Key), sizeof(Value));
    }
    static PinnedMap open(const std::string &pin_dir, const std::string &name) {
        return PinnedMap(open_pinned(pin_dir + "/" + name), name);
    }

    std::optional<Value> lookup(const Key &key) const {
        Value value{};
        if (bpf_map_lookup_elem(fd_.get(), &key, &value) == 0)
            return value;
        if (errno == ENOENT)
            return std::nullopt;
        throw SystemError("bpf_map_lookup_elem " + name_, errno);
    }

    void update(const Key &key, const Value &value) {
        if (bpf_map_update_elem(fd_.get(), &key, &value, BPF_ANY) != 0)
            throw SystemError("bpf_map_update_elem " + name_, errno);
    }

    // Returns false when the key was not there.
    bool erase(const Key &key) {
        if (bpf_map_delete_elem(fd_.get(), &key) == 0)
            return true;
        if (errno == ENOENT)
            return false;
        throw SystemError("bpf_map_delete_elem " + name_, errno);
    }

    // A snapshot of every entry. Entries that vanish during the walk (LRU eviction) are skipped.
    std::vector<std::pair<Key, Value>> entries() const {
        std::vector<std::pair<Key, Value>> out;
        Key key{};
        Key next{};
        const Key *prev = nullptr;
        while (bpf_map_get_next_key(fd_.get(), prev, &next) == 0) {
            if (auto value = lookup(next))
                out.emplace_back(next, *value);
            key = next;
            prev = &key;
        }
        if (errno != ENOENT)
            throw SystemError("bpf_map_get_next_key " + name_, errno);
        return out;
    }

    int fd() const { return fd_.get(); }
    const std::string &name() const { return name_; }

private:
    UniqueFd fd_;
    std::string name_;
};

// A per-CPU array of counters: every slot read as the sum over all possible CPUs.
class CounterMap {
public:
    CounterMap(UniqueFd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {
        check_layout(fd_.get(), name_, sizeof(__u32), sizeof(__u64));
        int cpus = libbpf_num_possible_cpus();
        if (cpus < 0)
            throw SystemError("libbpf_num_possible_cpus", -cpus);
        cpus_ = static_cast<size_t>(cpus);
    }
    static CounterMap open(const std::string &pin_dir) {
        return CounterMap(open_pinned(pin_dir + "/" BPFNET_MAP_NAME(BPFNET_COUNTERS_MAP)),
                          BPFNET_MAP_NAME(BPFNET_COUNTERS_MAP));
    }

    __u64 sum(__u32 slot) const {
        std::vector<__u64> per_cpu(cpus_);
        if (bpf_map_lookup_elem(fd_.get(), &slot, per_cpu.data()) != 0)
            throw SystemError("bpf_map_lookup_elem " + name_, errno);
        __u64 total = 0;
        for (__u64 v : per_cpu)
            total += v;
        return total;
    }

    std::vector<__u64> all() const {
        std::vector<__u64> out(BPFNET_CTR_MAX);
        for (__u32 slot = 0; slot < BPFNET_CTR_MAX; slot++)
            out[slot] = sum(slot);
        return out;
    }

private:
    UniqueFd fd_;
    std::string name_;
    size_t cpus_ = 0;
};

} // namespace bpfnet
