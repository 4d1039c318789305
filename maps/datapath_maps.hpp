// Every map of one interface's datapath, typed, generated from BPFNET_TABLE_MAPS (maps/bpfnet_maps.h). The
// loader and the tests build it from a loaded skeleton; bpfnetctl opens it from the pin directory.
#pragma once

#include "bpfnet_maps.h"
#include "layout.hpp"
#include "pinned_map.hpp"

#include <string>

namespace bpfnet {

struct DatapathMaps {
#define BPFNET_MAP_MEMBER(name, key, value) PinnedMap<key, value> name;
    BPFNET_TABLE_MAPS(BPFNET_MAP_MEMBER)
#undef BPFNET_MAP_MEMBER
    CounterMap counters;

    static DatapathMaps open_pinned(const std::string &pin_dir) {
#define BPFNET_OPEN_PINNED(name, key, value) .name = PinnedMap<key, value>::open(pin_dir, BPFNET_MAP_NAME(name)),
        return DatapathMaps{BPFNET_TABLE_MAPS(BPFNET_OPEN_PINNED).counters = CounterMap::open(pin_dir)};
#undef BPFNET_OPEN_PINNED
    }

    // From a loaded skeleton (the loader's own, or a test's): its typed maps (skel.maps.<name>), so every map
    // of BPFNET_TABLE_MAPS must exist in the BPF object or this does not compile. The fds are duplicated,
    // so the maps stay usable after the skeleton is destroyed.
    template <typename Skeleton>
    static DatapathMaps from_skeleton(const Skeleton &skel) {
#define BPFNET_FROM_SKELETON(name, key, value)                                                                         \
    .name = {map_fd(skel.maps.name, BPFNET_MAP_NAME(name)), BPFNET_MAP_NAME(name)},
        return DatapathMaps{BPFNET_TABLE_MAPS(BPFNET_FROM_SKELETON).counters = {
                                map_fd(skel.maps.BPFNET_COUNTERS_MAP, BPFNET_MAP_NAME(BPFNET_COUNTERS_MAP)),
                                BPFNET_MAP_NAME(BPFNET_COUNTERS_MAP)}};
#undef BPFNET_FROM_SKELETON
    }

    // From a loaded bpf_object found by name, for a test that loads an object file without its skeleton
    // (the fuzzer runs both compilers' objects).
    static DatapathMaps from_object(const bpf_object *obj) {
        auto fd_of = [obj](const char *name) {
            return map_fd(bpf_object__find_map_by_name(obj, name), name);
        };
#define BPFNET_FROM_OBJECT(name, key, value) .name = {fd_of(BPFNET_MAP_NAME(name)), BPFNET_MAP_NAME(name)},
        return DatapathMaps{BPFNET_TABLE_MAPS(BPFNET_FROM_OBJECT).counters = {
                                fd_of(BPFNET_MAP_NAME(BPFNET_COUNTERS_MAP)), BPFNET_MAP_NAME(BPFNET_COUNTERS_MAP)}};
#undef BPFNET_FROM_OBJECT
    }

private:
    static UniqueFd map_fd(const bpf_map *map, const char *name) {
        if (!map || bpf_map__fd(map) < 0)
            throw SystemError(std::string("map not loaded: ") + name, ENOENT);
        return dup_fd(bpf_map__fd(map), name);
    }
};

} // namespace bpfnet
