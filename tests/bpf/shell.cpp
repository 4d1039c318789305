#include "shell.hpp"

#include <sys/wait.h>
#include <unistd.h>

namespace bpfnet::test {

int run_bash(const std::string &script) {
    const pid_t pid = fork();
    if (pid == 0) {
        close_range(3, ~0u, 0);
        execl("/bin/bash", "bash", "-c", script.c_str(), static_cast<char *>(nullptr));
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace bpfnet::test
