// How bpfnetctl shows things: aligned text tables for people, JSON for scripts. Every command builds its
// table or JSON document from plain data with these helpers, so the formatting is unit-tested without a
// kernel and looks the same in every command.
#pragma once

#include "core/addresses.hpp"
#include "core/node.hpp"

#include <linux/types.h>
#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace bpfnet::cli {

using Mac = std::array<__u8, 6>;

// ordered_json keeps keys in the order the code adds them: the documented order (docs/cli.md).
using Json = nlohmann::ordered_json;

// Columns padded to their widest cell, two spaces apart, the last column unpadded (no trailing blanks).
class TextTable {
public:
    explicit TextTable(std::vector<std::string> headers);
    void add_row(std::vector<std::string> cells); // must have one cell per header
    size_t rows() const { return rows_.size(); }
    std::vector<size_t> column_widths() const;
    // min_widths: to line up with another table printed next to it (see stats).
    void print(std::ostream &out, const std::vector<size_t> &min_widths = {}) const;

private:
    std::vector<std::string> headers_;
    std::vector<std::vector<std::string>> rows_;
};

// "key   value" lines, keys padded to the widest: the shape of `status`.
class KeyValueList {
public:
    void add(std::string key, std::string value);
    void print(std::ostream &out) const;

private:
    std::vector<std::pair<std::string, std::string>> lines_;
};

// One JSON document per line: scripts can read a `--watch` stream line by line.
void print_json(std::ostream &out, const Json &document);

using bpfnet::format_ipv4; // core/addresses.hpp: one spelling of addresses in every layer
using bpfnet::format_mac;
inline std::string format_mac(const Mac &mac) {
    return format_mac(mac.data());
}
Mac to_mac(const __u8 mac[6]);
std::string format_endpoint(const bpfnet_ip &ip, __be16 port_be); // 198.18.0.2:80, [fd00::2]:80
std::string format_prefix(__be32 subnet_be, __be32 mask_be);      // 198.18.0.0/24
std::string format_protocol(__u8 proto);                          // tcp, udp, or the number
std::string format_kind(__u8 kind);                               // a BPFNET_PORT_KINDS spelling, or the number
// How packets reach a backend's pod, from its backends entry's flags: "route" (the node's routing),
// "redirect_peer" (bpf_redirect_peer straight into its namespace) or "veth" (through the veth's host side).
std::string format_pod_delivery(__u32 backend_flags);
std::string format_seconds(double seconds); // 0.4 s, 12.0 s, 3 m 5 s, ...
std::string format_rate(double per_second); // 0, 12.5, 1234

// Seconds rounded to milliseconds for JSON: stable output, no float noise in the last digits.
double json_seconds(double seconds);

} // namespace bpfnet::cli
