// libFuzzer target: a kubeconfig (k8s/client.cpp, over yaml-cpp). Every input is either a ClusterConfig or a
// ConfigError saying what is missing or wrong; anything else that escapes is a finding.
#include "k8s/client.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    try {
        (void)bpfnet::k8s::kubeconfig_from_text(text, "/fuzz/kubeconfig");
    } catch (const bpfnet::k8s::ConfigError &) {
    }
    return 0;
}
