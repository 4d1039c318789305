#include "object_constants.hpp"

#include "core/kernel_probe.hpp"

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <cstdlib>
#include <string_view>
#include <vector>

namespace bpfnet::test {

bool set_byte_constant(bpf_object *obj, const char *name, unsigned char value) {
    const btf *types = bpf_object__btf(obj);
    if (!types)
        return false;
    const int section = btf__find_by_name_kind(types, ".rodata", BTF_KIND_DATASEC);
    if (section < 0)
        return false;
    const btf_type *datasec = btf__type_by_id(types, section);
    const btf_var_secinfo *vars = btf_var_secinfos(datasec);
    bpf_map *map;
    bpf_object__for_each_map(map, obj) {
        if (!bpf_map__is_internal(map) || !std::string_view(bpf_map__name(map)).ends_with(".rodata"))
            continue;
        size_t size = 0;
        const auto *initial = static_cast<const unsigned char *>(bpf_map__initial_value(map, &size));
        for (int i = 0; initial && i < btf_vlen(datasec); i++) {
            const btf_type *var = btf__type_by_id(types, vars[i].type);
            if (std::string_view(btf__name_by_offset(types, var->name_off)) != name)
                continue;
            if (vars[i].size != 1 || vars[i].offset >= size)
                return false;
            // This libbpf hands out the initial value read-only: a changed copy replaces it.
            std::vector<unsigned char> bytes(initial, initial + size);
            bytes[vars[i].offset] = value;
            return bpf_map__set_initial_value(map, bytes.data(), bytes.size()) == 0;
        }
    }
    return false;
}

bool computes_l4_checksums() {
    static const bool computes = [] {
        const char *wanted = std::getenv("BPFNET_TEST_L4_CHECKSUMS");
        return !(wanted && std::string_view(wanted) == "helper") && probe_skb_csum_state();
    }();
    return computes;
}

} // namespace bpfnet::test
