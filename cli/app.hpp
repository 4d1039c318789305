// bpfnetctl as a function: parses the command line, runs the chosen command and returns the exit code
// (cli/errors.hpp). main() only calls it; unit tests call it with their own streams.
#pragma once

#include <ostream>

namespace bpfnet::cli {

int run(int argc, const char *const *argv, std::ostream &out, std::ostream &err);

} // namespace bpfnet::cli
