// The API server stand-in (tests/k8s/apiserver_standin.py) as a test's child process on 127.0.0.1: started on a
// free port by the constructor, killed by the destructor. A test binary that uses it defines BPFNET_PYTHON and
// BPFNET_STANDIN (tests/k8s/CMakeLists.txt).
#pragma once

#include "k8s/client.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace bpfnet::k8s {

class StandIn {
public:
    // extra: the stand-in's options ("--token", "T", "--request-log", FILE, ...).
    explicit StandIn(std::vector<std::string> extra = {}) {
        int out[2];
        if (::pipe(out) != 0)
            throw std::runtime_error("pipe");
        pid_ = ::fork();
        if (pid_ == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlive a crashed test binary
            ::dup2(out[1], 1);
            ::close(out[0]);
            ::close(out[1]);
            std::vector<std::string> args = {BPFNET_PYTHON, BPFNET_STANDIN, "0"};
            args.insert(args.end(), extra.begin(), extra.end());
            std::vector<char *> argv;
            for (auto &a : args)
                argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        ::close(out[1]);
        std::string line;
        char c;
        while (line.size() < 100 && ::read(out[0], &c, 1) == 1 && c != '\n')
            line += c;
        ::close(out[0]);
        const auto pos = line.rfind(' ');
        if (line.rfind("listening on ", 0) != 0 || pos == std::string::npos)
            throw std::runtime_error("stand-in did not start: '" + line + "'");
        port_ = std::stoi(line.substr(pos + 1));
    }
    ~StandIn() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    StandIn(const StandIn &) = delete;
    StandIn &operator=(const StandIn &) = delete;

    ClusterConfig config(std::string token = {}, const char *scheme = "http") const {
        ClusterConfig c;
        c.server = std::string(scheme) + "://127.0.0.1:" + std::to_string(port_);
        c.token = std::move(token);
        return c;
    }

private:
    pid_t pid_ = -1;
    int port_ = 0;
};

} // namespace bpfnet::k8s
