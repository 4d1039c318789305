// The options every command shares, and the parsers for values given on the command line. Values are
// parsed here rather than by CLI11 validators so that every bad value, whatever the option, exits with
// ExitCode::InvalidArgument and a message naming the option.
#pragma once

#include "maps/bpfnet_maps.h"
#include "maps/pin_layout.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace bpfnet::cli {

enum class OutputFormat { Table, JsonLines };

inline constexpr const char *kDefaultInterface = "prov0";

struct GlobalOptions {
    std::string interface = kDefaultInterface; // without --interface: chosen_interface() at start
    std::string pin_root = BPFNET_DEFAULT_PIN_ROOT;
    std::string control_socket;   // empty: the loader's default for the interface (/run/bpfnet/<interface>.sock)
    std::string output = "table"; // as given; see output_format()

    std::string pin_dir() const { return interface_pin_dir(pin_root, interface); }
    std::string control_socket_path() const; // control_socket, or the loader's default for the interface
    OutputFormat output_format() const;
};

// Each parser throws CliError(InvalidArgument) naming `what` (the option or argument) and the bad value.
OutputFormat parse_output_format(const std::string &text, const std::string &what);
bpfnet_ip parse_ip(const std::string &text, const std::string &what);
bpfnet_ip parse_ipv6(const std::string &text, const std::string &what);                     // either family
uint32_t parse_ipv4(const std::string &text, const std::string &what);                      // network byte order
uint16_t parse_port(const std::string &text, const std::string &what);                      // 1-65535, decimal
std::chrono::milliseconds parse_interval(const std::string &text, const std::string &what); // seconds, > 0
unsigned parse_count(const std::string &text, const std::string &what);                     // >= 1
std::string parse_interface_name(const std::string &text, const std::string &what);

// The interfaces with a datapath pinned under pin_root: its directories, each ':' read back as '.'
// (maps/pin_layout.hpp). None when pin_root cannot be read.
std::vector<std::string> pinned_interfaces(const std::string &pin_root);
// The interface when --interface is not given: the only one pinned under pin_root, so that bpfnetctl needs
// no name on a node whose NIC the loader chose by MAC; kDefaultInterface when none is pinned (the command
// then says there is no datapath). Several: CliError(Usage) naming them.
std::string chosen_interface(const std::string &pin_root);

} // namespace bpfnet::cli
