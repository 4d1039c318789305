// `promtool check metrics` (Debian package prometheus) for the tests of /metrics' text, in core and in
// Kubernetes mode.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace bpfnet {

// Runs `promtool check metrics` on text; returns its exit status and leaves its output in `output`.
inline int promtool_check(const std::string &text, std::string &output) {
    char path[] = "/tmp/bpfnet-metrics-test.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    close(fd);
    std::ofstream(path) << text;
    std::string command = std::string("promtool check metrics < ") + path + " 2>&1";
    FILE *pipe = popen(command.c_str(), "r");
    if (!pipe) {
        unlink(path);
        return -1;
    }
    char buf[512];
    while (size_t n = fread(buf, 1, sizeof(buf), pipe))
        output.append(buf, n);
    int status = pclose(pipe);
    unlink(path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline bool promtool_installed() {
    return std::system("command -v promtool >/dev/null 2>&1") == 0;
}

} // namespace bpfnet
