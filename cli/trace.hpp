// `bpfnetctl trace`: a live stream of the datapath's steering decisions. Tracing is switched on in the
// datapath only while the command runs (trace_control), so it costs nothing otherwise.
#pragma once

#include "cli/commands.hpp"
#include "maps/bpfnet_maps.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace bpfnet::cli {

struct TraceFilter {
    std::optional<std::string> protocol;       // dhcp, tftp, tcp, udp, arp
    std::optional<std::array<uint8_t, 6>> mac; // DHCP client hardware address or frame source MAC
};

struct TraceOptions {
    TraceFilter filter;
    uint64_t count = 0;    // stop after this many records (0: until interrupted)
    double duration_s = 0; // stop after this long (0: until interrupted)
};

// True when the record passes the filter.
bool trace_matches(const bpfnet_trace &record, const TraceFilter &filter);
// One human line, and one JSON object (as a string), for a record.
std::string trace_line(const bpfnet_trace &record);
std::string trace_json(const bpfnet_trace &record);

// Parses a MAC address (aa:bb:cc:dd:ee:ff); throws CliError(InvalidArgument) naming `what`.
std::array<uint8_t, 6> parse_mac(const std::string &text, const std::string &what);

// Streams records until interrupted, the count is reached or the duration passes (run_trace, cli/commands.hpp,
// checks the command's arguments into TraceOptions).
void stream_trace(Context &context, const TraceOptions &options);

} // namespace bpfnet::cli
