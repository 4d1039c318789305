#include "cli/output.hpp"

#include "maps/bpfnet_maps.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace bpfnet::cli {

namespace {

void print_padded(std::ostream &out, const std::vector<std::string> &cells, const std::vector<size_t> &widths) {
    for (size_t i = 0; i < cells.size(); i++) {
        out << cells[i];
        if (i + 1 < cells.size())
            out << std::string(widths[i] - cells[i].size() + 2, ' ');
    }
    out << '\n';
}

} // namespace

TextTable::TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void TextTable::add_row(std::vector<std::string> cells) {
    if (cells.size() != headers_.size())
        throw std::logic_error("table row has " + std::to_string(cells.size()) + " cells, want " +
                               std::to_string(headers_.size()));
    rows_.push_back(std::move(cells));
}

std::vector<size_t> TextTable::column_widths() const {
    std::vector<size_t> widths(headers_.size());
    for (size_t i = 0; i < headers_.size(); i++) {
        widths[i] = headers_[i].size();
        for (const auto &row : rows_)
            widths[i] = std::max(widths[i], row[i].size());
    }
    return widths;
}

void TextTable::print(std::ostream &out, const std::vector<size_t> &min_widths) const {
    std::vector<size_t> widths = column_widths();
    for (size_t i = 0; i < widths.size() && i < min_widths.size(); i++)
        widths[i] = std::max(widths[i], min_widths[i]);
    print_padded(out, headers_, widths);
    for (const auto &row : rows_)
        print_padded(out, row, widths);
}

void KeyValueList::add(std::string key, std::string value) {
    lines_.emplace_back(std::move(key), std::move(value));
}

void KeyValueList::print(std::ostream &out) const {
    size_t width = 0;
    for (const auto &[key, value] : lines_)
        width = std::max(width, key.size());
    for (const auto &[key, value] : lines_)
        out << key << std::string(width - key.size() + 2, ' ') << value << '\n';
}

void print_json(std::ostream &out, const Json &document) {
    out << document.dump() << '\n';
}

Mac to_mac(const __u8 mac[6]) {
    Mac out{};
    std::copy(mac, mac + out.size(), out.begin());
    return out;
}

std::string format_endpoint(const bpfnet_ip &ip, __be16 port_be) {
    std::string port = std::to_string(ntohs(port_be));
    return is_v4(ip) ? format_ip(ip) + ":" + port : "[" + format_ip(ip) + "]:" + port;
}

std::string format_prefix(__be32 subnet_be, __be32 mask_be) {
    return bpfnet::format_prefix(subnet_be, static_cast<uint8_t>(__builtin_popcount(ntohl(mask_be))));
}

// The spellings of core/node.hpp; a number without one (another version's entry) is shown as the number.
std::string format_protocol(__u8 proto) {
    return to_string(static_cast<Protocol>(proto));
}

std::string format_kind(__u8 kind) {
    return to_string(static_cast<PortKind>(kind));
}

std::string format_pod_delivery(__u32 backend_flags) {
    if (backend_flags & BPFNET_BACKEND_ROUTE)
        return "route";
    return (backend_flags & BPFNET_BACKEND_REDIRECT_PEER) ? "redirect_peer" : "veth";
}

std::string format_seconds(double seconds) {
    char text[48];
    if (seconds < 60) {
        std::snprintf(text, sizeof(text), "%.1f s", seconds);
    } else if (seconds < 3600) {
        auto whole = static_cast<long long>(seconds);
        std::snprintf(text, sizeof(text), "%lld m %lld s", whole / 60, whole % 60);
    } else {
        auto whole = static_cast<long long>(seconds);
        std::snprintf(text, sizeof(text), "%lld h %lld m", whole / 3600, whole % 3600 / 60);
    }
    return text;
}

std::string format_rate(double per_second) {
    char text[32];
    // Whole numbers when they are large enough that a fraction is noise.
    if (per_second == 0 || per_second >= 100)
        std::snprintf(text, sizeof(text), "%.0f", per_second);
    else
        std::snprintf(text, sizeof(text), "%.1f", per_second);
    return text;
}

double json_seconds(double seconds) {
    return std::round(seconds * 1000) / 1000;
}

} // namespace bpfnet::cli
