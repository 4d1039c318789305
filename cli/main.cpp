// bpfnetctl: the operator's view of a running bpfnet datapath. Everything is in cli/app.cpp and the
// commands_*.cpp files; docs/cli.md describes the commands, their JSON and the exit codes.
#include "cli/app.hpp"

#include <iostream>

int main(int argc, char **argv) {
    return bpfnet::cli::run(argc, argv, std::cout, std::cerr);
}
