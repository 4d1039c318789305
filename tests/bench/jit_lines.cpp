// Where each JITed instruction of a loaded BPF program came from: for tests/bench/profile.sh, which turns the
// addresses perf samples into source lines (bpftool prints the same with `prog dump jited linum`, but only
// when built with a disassembler, which Debian's is not). Prints the program's functions ("F address length")
// and each line-info entry ("L address file:line source").
//
//   bench_jit_lines PROG_ID
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct JitInfo {
    std::vector<__u64> functions;
    std::vector<__u32> function_lengths;
    std::vector<bpf_line_info> lines;
    std::vector<__u64> line_addresses;
    __u32 btf_id = 0;
};

// The program's info with its arrays, asked twice: once for their sizes, once to fill them.
bool read_jit_info(int fd, JitInfo &out) {
    bpf_prog_info info = {};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len))
        return false;
    out.functions.resize(info.nr_jited_ksyms);
    out.function_lengths.resize(info.nr_jited_func_lens);
    out.lines.resize(info.nr_line_info);
    out.line_addresses.resize(info.nr_jited_line_info);
    out.btf_id = info.btf_id;
    bpf_prog_info again = {};
    again.nr_jited_ksyms = info.nr_jited_ksyms;
    again.jited_ksyms = reinterpret_cast<__u64>(out.functions.data());
    again.nr_jited_func_lens = info.nr_jited_func_lens;
    again.jited_func_lens = reinterpret_cast<__u64>(out.function_lengths.data());
    again.nr_line_info = info.nr_line_info;
    again.line_info_rec_size = sizeof(bpf_line_info);
    again.line_info = reinterpret_cast<__u64>(out.lines.data());
    again.nr_jited_line_info = info.nr_jited_line_info;
    again.jited_line_info_rec_size = sizeof(__u64);
    again.jited_line_info = reinterpret_cast<__u64>(out.line_addresses.data());
    len = sizeof(again);
    return bpf_obj_get_info_by_fd(fd, &again, &len) == 0;
}

const char *base_name(const char *path) {
    const char *slash = path ? std::strrchr(path, '/') : nullptr;
    return slash ? slash + 1 : (path ? path : "?");
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s PROG_ID\n", argv[0]);
        return 2;
    }
    const int fd = bpf_prog_get_fd_by_id(static_cast<__u32>(std::strtoul(argv[1], nullptr, 10)));
    JitInfo jit;
    if (fd < 0 || !read_jit_info(fd, jit)) {
        std::fprintf(stderr, "program %s: %s\n", argv[1], std::strerror(errno));
        return 1;
    }
    btf *types = btf__load_from_kernel_by_id(jit.btf_id);
    for (size_t f = 0; f < jit.functions.size() && f < jit.function_lengths.size(); f++)
        std::printf("F %llx %u\n", static_cast<unsigned long long>(jit.functions[f]), jit.function_lengths[f]);
    for (size_t i = 0; i < jit.line_addresses.size() && i < jit.lines.size(); i++) {
        const bpf_line_info &line = jit.lines[i];
        const char *source = types ? btf__name_by_offset(types, line.line_off) : nullptr;
        const char *file = types ? btf__name_by_offset(types, line.file_name_off) : nullptr;
        std::printf("L %llx %s:%u %s\n", static_cast<unsigned long long>(jit.line_addresses[i]), base_name(file),
                    BPF_LINE_INFO_LINE_NUM(line.line_col), source ? source : "");
    }
    btf__free(types);
    close(fd);
    return 0;
}
