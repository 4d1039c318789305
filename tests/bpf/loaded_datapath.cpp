#include "loaded_datapath.hpp"

#include "bpfnet.skel.h"
#include "object_constants.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace bpfnet::test {

namespace {

using Bytes = std::vector<unsigned char>;

bool is_array(bpf_map_type type) {
    return type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY;
}

bool is_per_cpu(bpf_map_type type) {
    return type == BPF_MAP_TYPE_PERCPU_ARRAY || type == BPF_MAP_TYPE_PERCPU_HASH ||
           type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

// What the kernel copies for one element: per-CPU maps hold one 8-byte aligned slot per possible CPU.
size_t element_bytes(const bpf_map *map) {
    size_t size = bpf_map__value_size(map);
    if (!is_per_cpu(bpf_map__type(map)))
        return size;
    return ((size + 7) / 8 * 8) * static_cast<size_t>(libbpf_num_possible_cpus());
}

// A frozen map (.rodata, the load-time settings) cannot be written and needs no reset.
bool is_frozen(const bpf_map *map) {
    return bpf_map__is_internal(map) && std::strstr(bpf_map__name(map), ".rodata") != nullptr;
}

void fail(const bpf_map *map, const char *what) {
    throw std::runtime_error(std::string(what) + " in map " + bpf_map__name(map) + ": " + std::strerror(errno));
}

// Array contents right after the load, per map, in index order.
using ArraySnapshot = std::map<std::string, std::vector<Bytes>>;

ArraySnapshot snapshot_arrays(const bpf_object *obj) {
    ArraySnapshot snapshot;
    const bpf_map *map;
    bpf_object__for_each_map(map, obj) {
        if (!is_array(bpf_map__type(map)) || is_frozen(map))
            continue;
        auto &values = snapshot[bpf_map__name(map)];
        for (__u32 index = 0; index < bpf_map__max_entries(map); index++) {
            Bytes value(element_bytes(map));
            if (bpf_map_lookup_elem(bpf_map__fd(map), &index, value.data()) != 0)
                fail(map, "reading the initial array");
            values.push_back(std::move(value));
        }
    }
    return snapshot;
}

void empty_hash(const bpf_map *map) {
    Bytes key(bpf_map__key_size(map));
    // The first key again after each delete: iterating while deleting would skip entries.
    while (bpf_map_get_next_key(bpf_map__fd(map), nullptr, key.data()) == 0)
        if (bpf_map_delete_elem(bpf_map__fd(map), key.data()) != 0)
            fail(map, "deleting a key");
}

void restore_array(const bpf_map *map, const std::vector<Bytes> &values) {
    for (__u32 index = 0; index < values.size(); index++)
        if (bpf_map_update_elem(bpf_map__fd(map), &index, values[index].data(), BPF_ANY) != 0)
            fail(map, "restoring an array element");
}

struct Loaded {
    std::unique_ptr<bpfnet_bpf, void (*)(bpfnet_bpf *)> skel{nullptr, bpfnet_bpf__destroy};
    ArraySnapshot arrays;
};

Loaded &loaded() {
    static Loaded instance;
    return instance;
}

} // namespace

bpfnet_bpf *loaded_datapath() {
    Loaded &l = loaded();
    if (!l.skel) {
        l.skel.reset(bpfnet_bpf__open());
        if (!l.skel)
            return nullptr;
        l.skel->rodata->kernel_reads_skb_csum = computes_l4_checksums();
        if (bpfnet_bpf__load(l.skel.get()) != 0) {
            l.skel.reset();
            return nullptr;
        }
        l.arrays = snapshot_arrays(l.skel->obj);
    }
    return l.skel.get();
}

void reset_maps(bpfnet_bpf &skel) {
    const ArraySnapshot &arrays = loaded().arrays;
    const bpf_map *map;
    bpf_object__for_each_map(map, skel.obj) {
        bpf_map_type type = bpf_map__type(map);
        if (type == BPF_MAP_TYPE_RINGBUF || is_frozen(map))
            continue;
        if (is_array(type))
            restore_array(map, arrays.at(bpf_map__name(map)));
        else
            empty_hash(map);
    }
}

} // namespace bpfnet::test
