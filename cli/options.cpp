#include "cli/options.hpp"

#include "cli/errors.hpp"
#include "core/addresses.hpp"
#include "core/node.hpp"

#include <arpa/inet.h>
#include <net/if.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace bpfnet::cli {

namespace {

[[noreturn]] void invalid(const std::string &what, const std::string &text, const std::string &expected) {
    throw CliError(ExitCode::InvalidArgument, what + ": " + expected + ", got '" + text + "'");
}

// Whole-string decimal: from_chars alone would accept "80abc".
bool parse_decimal(const std::string &text, unsigned long &value) {
    if (text.empty() || text.size() > 10)
        return false;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && end == text.data() + text.size();
}

} // namespace

std::string GlobalOptions::control_socket_path() const {
    return control_socket.empty() ? default_control_socket(interface) : control_socket;
}

OutputFormat GlobalOptions::output_format() const {
    return parse_output_format(output, "--output");
}

OutputFormat parse_output_format(const std::string &text, const std::string &what) {
    if (text == "table")
        return OutputFormat::Table;
    if (text == "json")
        return OutputFormat::JsonLines;
    invalid(what, text, "must be table or json");
}

uint32_t parse_ipv4(const std::string &text, const std::string &what) {
    // inet_pton takes only the strict dotted quad: no "10.1", no octal, no trailing text.
    in_addr addr{};
    if (inet_pton(AF_INET, text.c_str(), &addr) != 1)
        invalid(what, text, "must be an IPv4 address like 198.18.100.2");
    return addr.s_addr;
}

bpfnet_ip parse_ip(const std::string &text, const std::string &what) {
    auto ip = bpfnet::parse_ip(text);
    if (!ip)
        invalid(what, text, "must be an IPv4 or IPv6 address like 198.18.100.2 or fd00:1::2");
    return *ip;
}

bpfnet_ip parse_ipv6(const std::string &text, const std::string &what) {
    auto ip = bpfnet::parse_ip(text);
    if (!ip || is_v4(*ip))
        invalid(what, text, "must be an IPv6 address like fd00:1::2");
    return *ip;
}

uint16_t parse_port(const std::string &text, const std::string &what) {
    unsigned long value = 0;
    if (!parse_decimal(text, value) || value < 1 || value > 65535)
        invalid(what, text, "must be a port number between 1 and 65535");
    return static_cast<uint16_t>(value);
}

std::chrono::milliseconds parse_interval(const std::string &text, const std::string &what) {
    char *end = nullptr;
    double seconds = std::strtod(text.c_str(), &end);
    // A day is far more than anyone watches for; the bound keeps the conversion below in range.
    if (text.empty() || *end != '\0' || !std::isfinite(seconds) || seconds < 0.01 || seconds > 86400)
        invalid(what, text, "must be a number of seconds between 0.01 and 86400");
    return std::chrono::milliseconds(std::llround(seconds * 1000));
}

unsigned parse_count(const std::string &text, const std::string &what) {
    unsigned long value = 0;
    if (!parse_decimal(text, value) || value < 1 || value > 1000000000)
        invalid(what, text, "must be a positive whole number");
    return static_cast<unsigned>(value);
}

std::string parse_interface_name(const std::string &text, const std::string &what) {
    if (text.empty() || text.size() >= IFNAMSIZ || text.find_first_of("/ \t\n:") != std::string::npos || text == "." ||
        text == "..")
        invalid(what, text, "must be an interface name (1-15 characters, no '/', ':' or blanks)");
    return text;
}

std::vector<std::string> pinned_interfaces(const std::string &pin_root) {
    std::vector<std::string> names;
    std::error_code error;
    for (const auto &entry : std::filesystem::directory_iterator(pin_root, error)) {
        if (!entry.is_directory(error))
            continue;
        names.push_back(interface_of_pin_dir(entry.path().filename().string()));
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string chosen_interface(const std::string &pin_root) {
    const std::vector<std::string> pinned = pinned_interfaces(pin_root);
    if (pinned.empty())
        return kDefaultInterface;
    if (pinned.size() == 1)
        return pinned.front();
    std::string names;
    for (const auto &name : pinned)
        names += (names.empty() ? "" : ", ") + name;
    throw CliError(ExitCode::Usage, "datapaths of several interfaces are pinned under " + pin_root + " (" + names +
                                        "): choose one with --interface");
}

} // namespace bpfnet::cli
