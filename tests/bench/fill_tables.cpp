// Fills a running datapath's flows and neighbours tables (pinned under PIN_DIR) with COUNT synthetic
// entries each, after emptying them; prints the entries each table then holds. For the scale benchmark.
//
//   bench_fill_tables PIN_DIR COUNT
#include "tests/bench/tables.hpp"

#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: bench_fill_tables PIN_DIR COUNT\n");
        return 2;
    }
    try {
        auto maps = bpfnet::DatapathMaps::open_pinned(argv[1]);
        bpfnet::bench::clear_tables(maps);
        bpfnet::bench::fill_tables(maps, std::stoul(argv[2]));
        std::printf("%zu %zu\n", maps.flows.entries().size(), maps.neighbours.entries().size());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_fill_tables: %s\n", e.what());
        return 1;
    }
    return 0;
}
