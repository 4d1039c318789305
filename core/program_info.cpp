#include "core/program_info.hpp"

#include "maps/system_error.hpp"
#include "maps/unique_fd.hpp"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace bpfnet {

ProgramInfo program_info(int prog_fd) {
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0)
        throw SystemError("bpf_obj_get_info_by_fd (program)", errno);
    ProgramInfo out;
    out.id = info.id;
    out.type = info.type;
    out.name.assign(info.name, strnlen(info.name, sizeof(info.name)));
    out.tag.assign(reinterpret_cast<const char *>(info.tag), sizeof(info.tag));
    // The map ids take a second call with room for them.
    out.map_ids.resize(info.nr_map_ids);
    if (!out.map_ids.empty()) {
        bpf_prog_info with_maps{};
        with_maps.nr_map_ids = static_cast<__u32>(out.map_ids.size());
        with_maps.map_ids = reinterpret_cast<__u64>(out.map_ids.data());
        len = sizeof(with_maps);
        if (bpf_obj_get_info_by_fd(prog_fd, &with_maps, &len) != 0)
            throw SystemError("bpf_obj_get_info_by_fd (program maps)", errno);
        out.map_ids.resize(std::min<size_t>(with_maps.nr_map_ids, out.map_ids.size()));
    }
    return out;
}

std::vector<unsigned char> program_rodata(const ProgramInfo &program) {
    for (__u32 id : program.map_ids) {
        int fd = bpf_map_get_fd_by_id(id);
        if (fd < 0)
            continue;
        UniqueFd map(fd);
        bpf_map_info info{};
        __u32 len = sizeof(info);
        if (bpf_obj_get_info_by_fd(map.get(), &info, &len) != 0 || !std::string_view(info.name).ends_with(".rodata"))
            continue;
        std::vector<unsigned char> value(info.value_size);
        const __u32 key = 0;
        if (bpf_map_lookup_elem(map.get(), &key, value.data()) != 0)
            throw SystemError("bpf_map_lookup_elem (.rodata)", errno);
        return value;
    }
    return {};
}

} // namespace bpfnet
