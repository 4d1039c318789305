// The maps declared once in maps/bpfnet_maps.h (BPFNET_TABLE_MAPS, the counters, the ring buffers, the
// private scratch maps) against the BPF object itself, opened from the skeleton without loading it (no root
// needed): every map of the object is declared, and each table's key and value sizes are those of the
// declared C types. The other direction (a declared map missing from the object) does not compile
// (DatapathMaps::from_skeleton names each one). docs/design.md's map table is checked against the list too.
#include "bpfnet.skel.h"
#include "maps/bpfnet_maps.h"
#include "maps/datapath_maps.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

namespace bpfnet {
namespace {

struct Declared {
    size_t key_size = 0; // 0: not a key/value table (counters, rings, scratch)
    size_t value_size = 0;
};

std::map<std::string, Declared> declared_maps() {
    std::map<std::string, Declared> maps;
#define BPFNET_DECLARE_TABLE(name, key, value) maps[BPFNET_MAP_NAME(name)] = {sizeof(key), sizeof(value)};
#define BPFNET_DECLARE_OTHER(name) maps[BPFNET_MAP_NAME(name)] = {};
    BPFNET_TABLE_MAPS(BPFNET_DECLARE_TABLE)
    BPFNET_RING_MAPS(BPFNET_DECLARE_OTHER)
    BPFNET_PRIVATE_MAPS(BPFNET_DECLARE_OTHER)
    BPFNET_DECLARE_OTHER(BPFNET_COUNTERS_MAP)
#undef BPFNET_DECLARE_TABLE
#undef BPFNET_DECLARE_OTHER
    return maps;
}

TEST(MapTable, EveryMapOfTheObjectIsDeclaredWithItsKeyAndValueSizes) {
    std::unique_ptr<bpfnet_bpf, void (*)(bpfnet_bpf *)> skel(bpfnet_bpf__open(), bpfnet_bpf__destroy);
    ASSERT_TRUE(skel) << "bpfnet_bpf__open: " << errno;
    const auto declared = declared_maps();
    std::set<std::string> seen;
    const bpf_map *map;
    bpf_object__for_each_map(map, skel->obj) {
        if (bpf_map__is_internal(map)) // .rodata, .bss: the programs' globals
            continue;
        const std::string name = bpf_map__name(map);
        seen.insert(name);
        auto it = declared.find(name);
        ASSERT_NE(it, declared.end()) << "map " << name << " of the BPF object is not declared in maps/bpfnet_maps.h";
        if (it->second.key_size == 0)
            continue;
        EXPECT_EQ(bpf_map__key_size(map), it->second.key_size) << name;
        EXPECT_EQ(bpf_map__value_size(map), it->second.value_size) << name;
    }
    for (const auto &[name, sizes] : declared)
        EXPECT_TRUE(seen.contains(name)) << name << " is declared but not in the object";
}

// docs/design.md's "Maps" table lists exactly the pinned maps (the private scratch maps are not pinned).
TEST(MapTable, TheDesignDocListsEveryPinnedMap) {
    std::ifstream file(BPFNET_SOURCE_DIR "/docs/design.md");
    ASSERT_TRUE(file) << "cannot read docs/design.md";
    std::set<std::string> documented;
    bool in_maps = false;
    for (std::string line; std::getline(file, line);) {
        if (line.starts_with("## "))
            in_maps = line == "## Maps";
        // Rows look like "| `flows` | LRU hash, 65536 | ...".
        if (in_maps && line.starts_with("| `")) {
            const size_t end = line.find('`', 3);
            documented.insert(line.substr(3, end - 3));
        }
    }
    std::set<std::string> pinned;
#define BPFNET_PINNED_TABLE(name, key, value) pinned.insert(BPFNET_MAP_NAME(name));
#define BPFNET_PINNED_RING(name) pinned.insert(BPFNET_MAP_NAME(name));
    BPFNET_TABLE_MAPS(BPFNET_PINNED_TABLE)
    BPFNET_RING_MAPS(BPFNET_PINNED_RING)
#undef BPFNET_PINNED_TABLE
#undef BPFNET_PINNED_RING
    pinned.insert(BPFNET_MAP_NAME(BPFNET_COUNTERS_MAP));
    EXPECT_EQ(documented, pinned);
}

} // namespace
} // namespace bpfnet
