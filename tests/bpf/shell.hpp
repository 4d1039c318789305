// Shell commands that set up what a test or benchmark needs of the kernel (a namespace's links, routes,
// sysctls), run where the caller is (its network namespace).
#pragma once

#include <string>

namespace bpfnet::test {

// The script's exit status under bash (-1 when it could not run). None of the caller's descriptors are passed
// on (only 0-2): a process the script leaves running holds no pipe a caller waits on (a gtest death test's).
int run_bash(const std::string &script);

} // namespace bpfnet::test
