// `bpfnetctl version`: what this binary is and what it runs on; the first thing a bug report needs.
#include "cli/commands.hpp"
#include "cli/output.hpp"

#include <bpf/libbpf.h>
#include <sys/utsname.h>

namespace bpfnet::cli {

namespace {

std::string libbpf_version() {
    // The library actually loaded, which can be newer than the headers bpfnetctl was built with.
    std::string version = libbpf_version_string();
    return version.starts_with('v') ? version.substr(1) : version;
}

std::string kernel_release() {
    utsname names{};
    return uname(&names) == 0 ? names.release : "unknown";
}

} // namespace

void run_version(Context &context) {
    Json json = {{"bpfnet", BPFNET_VERSION},
                 {"libbpf", libbpf_version()},
                 {"libxdp", BPFNET_LIBXDP_VERSION},
                 {"kernel", kernel_release()}};
    if (context.json()) {
        print_json(context.out, json);
        return;
    }
    KeyValueList list;
    list.add("bpfnet", BPFNET_VERSION);
    list.add("libbpf", libbpf_version() + " (loaded)");
    list.add("libxdp", std::string(BPFNET_LIBXDP_VERSION) + " (built with)");
    list.add("kernel", kernel_release());
    list.print(context.out);
}

} // namespace bpfnet::cli
