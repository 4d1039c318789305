// libFuzzer target: the standalone loader's config file (standalone/config.cpp, over yaml-cpp). Every input
// is either a Config or a ConfigError that names where and what; anything else that escapes (another
// exception, a crash, a sanitizer report) is a finding.
#include "standalone/config.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    try {
        const bpfnet::Config config = bpfnet::parse_config(text, "fuzz.yaml");
        // What the loader derives from an accepted config must hold up too.
        (void)bpfnet::service_specs(config, std::nullopt);
    } catch (const bpfnet::ConfigError &) {
    }
    return 0;
}
