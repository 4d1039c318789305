// What the kernel says about a loaded BPF program: shared by the loader (is the attached program the one it
// would load?) and bpfnetctl (is the attached program this datapath's?).
#pragma once

#include <linux/types.h>

#include <algorithm>
#include <string>
#include <vector>

namespace bpfnet {

struct ProgramInfo {
    __u32 id = 0;
    __u32 type = 0;
    std::string name;
    std::string tag; // BPF_TAG_SIZE bytes: a hash of the instructions
    std::vector<__u32> map_ids;

    bool uses_map(__u32 map_id) const { return std::find(map_ids.begin(), map_ids.end(), map_id) != map_ids.end(); }
};

ProgramInfo program_info(int prog_fd);

// The value of the program's read-only data map (its load-time constants); empty when it has none. The tag
// covers the instructions only, not these values.
std::vector<unsigned char> program_rodata(const ProgramInfo &program);

} // namespace bpfnet
