/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parsing and validation of the standalone loader's config file (format: docs/config.md).
 *
 * The document is walked by hand rather than with yaml-cpp's as<T>() conversions: those accept
 * quoted numbers, hex and YAML 1.1 spellings, and they do not know which field they are reading, so
 * they could neither reject a typo nor say where it is.
 */
#include "standalone/config.hpp"

#include "core/yaml_documents.hpp"

#include "core/node_rules.hpp"
#include "core/service_rules.hpp"
#include "core/shared_addresses.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <system_error>
#include <utility>

#include <yaml-cpp/yaml.h>

namespace bpfnet {

namespace {

struct Range {
    int64_t min;
    int64_t max;
};

/* Limits of the settings only this file has; docs/config.md lists the same values. The node settings both
 * modes have are checked by core/node_rules.hpp, within the limits it holds. */
constexpr Range kHeartbeatIntervalMs{100, 60000};
constexpr int64_t kMaxHeartbeatTimeoutMs = 600000;
constexpr Range kGarpCount{0, 20};
constexpr Range kGarpIntervalMs{10, 10000};
constexpr Range kDhcpMaxHops{1, BPFNET_DHCP_MAX_HOPS_LIMIT}; /* RFC 1542 4.1.1: never more than 16 */
/* Any count of seconds; core/node_rules.hpp holds the limits (4..1800 for the RA interval). */
constexpr Range kSeconds{0, std::numeric_limits<uint32_t>::max()};
constexpr Range kPortNumber{1, 65535};
constexpr size_t kMaxPortNameLen = 63;
constexpr std::string_view kAutoVeth = "auto";
/* A config is a few hundred bytes; the cap keeps a wrong path (say /dev/zero) from eating memory. */
constexpr size_t kMaxConfigBytes = 1 << 20;

/* How the config file spells the node settings core/node_rules.hpp checks (paths from the document's root). */
constexpr NodeFieldNames kNodeFieldNames{.interface = "interface",
                                         .subnet = "subnet",
                                         .subnet_v6 = "subnetV6",
                                         .pin_root = "pinRoot",
                                         .control_socket = "controlSocket",
                                         .dhcp_relays = "dhcpRelay.relays",
                                         .router_advertisements = "routerAdvertisements.enabled",
                                         .ra_interval = "routerAdvertisements.intervalSeconds"};

std::optional<int> line_of(const YAML::Mark &mark) {
    if (mark.is_null())
        return std::nullopt;
    return mark.line + 1;
}

/*
 * A plain scalar is written without quotes or tag; yaml-cpp tags those "?", quoted ones "!" and
 * explicitly tagged ones with the full tag. Only plain (or !!int) scalars may be numbers.
 */
bool is_plain(const YAML::Node &node) {
    return node.IsScalar() && node.Tag() == "?";
}

bool may_be_integer(const YAML::Node &node) {
    return is_plain(node) || (node.IsScalar() && node.Tag() == "tag:yaml.org,2002:int");
}

/* How a value looks in the document, for "got ..." in error messages. */
std::string describe(const YAML::Node &node) {
    switch (node.Type()) {
    case YAML::NodeType::Map:
        return "a mapping";
    case YAML::NodeType::Sequence:
        return "a list";
    case YAML::NodeType::Scalar:
        return (may_be_integer(node) ? "" : "the string ") + in_quotes(node.Scalar());
    default:
        return "null";
    }
}

/*
 * A value in the document and where it is: its path (for example ports[1].port) and the position of
 * its key. The key rather than the value marks the spot because an empty value's mark points at the
 * next line.
 */
struct Field {
    std::string_view source;
    std::string path;
    YAML::Node node;
    YAML::Mark mark;

    [[noreturn]] void fail(std::string_view detail) const { throw ConfigError(source, line_of(mark), path, detail); }

    std::string member_path(std::string_view key) const {
        return path.empty() ? std::string(key) : path + "." + std::string(key);
    }

    Field member(std::string_view key, const YAML::Node &value, const YAML::Mark &key_mark) const {
        return {source, member_path(key), value, key_mark};
    }

    /* An empty list item's mark points at the next line; no line beats a wrong one. */
    Field item(size_t index) const {
        const YAML::Node value = node[index];
        const YAML::Mark where = value.IsNull() ? YAML::Mark::null_mark() : value.Mark();
        return {source, path + "[" + std::to_string(index) + "]", value, where};
    }
};

/*
 * A mapping whose keys are checked up front: a key the format does not know is a typo, and a key given
 * twice would otherwise silently lose one of its values.
 */
class Mapping {
public:
    Mapping(const Field &self, std::initializer_list<std::string_view> known) : self_(self) {
        if (!self.node.IsMap())
            self.fail("must be a mapping, got " + describe(self.node));
        for (const auto &entry : self.node)
            add_member(entry.first, entry.second, known);
    }

    /* A field given as null (say "heartbeat:" with nothing under it) counts as absent. */
    std::optional<Field> find(std::string_view key) const {
        const auto it = members_.find(std::string(key));
        if (it == members_.end() || it->second.node.IsNull())
            return std::nullopt;
        return it->second;
    }

    Field require(std::string_view key) const {
        std::optional<Field> field = find(key);
        if (!field)
            locate(key).fail("is required");
        return *field;
    }

    /* The field if present, else a stand-in at the mapping's position, for errors about defaults. */
    Field locate(std::string_view key) const {
        if (std::optional<Field> field = find(key))
            return *field;
        return {self_.source, self_.member_path(key), YAML::Node(), self_.mark};
    }

private:
    void add_member(const YAML::Node &key, const YAML::Node &value, std::initializer_list<std::string_view> known) {
        if (!key.IsScalar())
            self_.member("<key>", value, key.Mark()).fail("keys must be plain names");
        const std::string name = key.Scalar();
        const Field field = self_.member(name, value, key.Mark());
        if (std::find(known.begin(), known.end(), name) == known.end())
            field.fail("unknown field; expected one of: " + join(known));
        const auto [existing, inserted] = members_.emplace(name, field);
        if (!inserted)
            field.fail("given more than once (first on line " + std::to_string(existing->second.mark.line + 1) + ")");
    }

    static std::string join(std::initializer_list<std::string_view> names) {
        std::string out;
        for (const std::string_view name : names)
            out += (out.empty() ? "" : ", ") + std::string(name);
        return out;
    }

    Field self_;
    std::map<std::string, Field> members_;
};

/*
 * The field at a dotted path below root ("dhcpRelay.relays"), for a problem found after the document was
 * read (by core/node_rules.hpp); when it is absent (a defaulted value), a stand-in at the deepest mapping
 * on the way.
 */
Field locate_path(const Field &root, std::string_view path) {
    Field at = root;
    while (!path.empty()) {
        const size_t dot = path.find('.');
        const std::string key(path.substr(0, dot));
        path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
        const auto entry =
            !at.node.IsMap() ? at.node.end() : std::find_if(at.node.begin(), at.node.end(), [&](const auto &member) {
                return member.first.IsScalar() && member.first.Scalar() == key;
            });
        if (entry == at.node.end() || entry->second.IsNull())
            return {root.source, at.member_path(key) + (path.empty() ? "" : "." + std::string(path)), YAML::Node(),
                    at.mark};
        at = at.member(key, entry->second, entry->first.Mark());
    }
    return at;
}

/* A node setting refused by core/node_rules.hpp, reported at its key (or its list entry). */
[[noreturn]] void fail_node_setting(const Field &root, const NodeProblem &problem) {
    const Field field = locate_path(root, kNodeFieldNames[problem.field]);
    if (problem.index && field.node.IsSequence())
        field.item(*problem.index).fail(problem.detail);
    field.fail(problem.detail);
}

/* ---- scalar readers ---- */

std::string read_string(const Field &field) {
    if (!field.node.IsScalar())
        field.fail("must be a string, got " + describe(field.node));
    return field.node.Scalar();
}

/* Plain decimal only: a leading zero means octal in YAML 1.1 and decimal in 1.2, so it is refused. */
std::optional<int64_t> parse_decimal(std::string_view text) {
    const std::string_view digits = text.starts_with('-') ? text.substr(1) : text;
    if (digits.empty() || (digits.size() > 1 && digits.front() == '0'))
        return std::nullopt;
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

std::string range_text(Range range) {
    return std::to_string(range.min) + " and " + std::to_string(range.max);
}

int64_t read_integer(const Field &field, Range range) {
    std::optional<int64_t> value;
    if (may_be_integer(field.node))
        value = parse_decimal(field.node.Scalar());
    if (!value)
        field.fail("must be an integer between " + range_text(range) + ", got " + describe(field.node));
    if (*value < range.min || *value > range.max)
        field.fail("must be between " + range_text(range) + ", got " + std::to_string(*value));
    return *value;
}

std::chrono::milliseconds read_millis(const Field &field, Range range) {
    return std::chrono::milliseconds(read_integer(field, range));
}

/* true or false, unquoted (YAML 1.2's core schema; "yes", "on" and quoted words are refused). */
bool read_bool(const Field &field) {
    if (is_plain(field.node) && (field.node.Scalar() == "true" || field.node.Scalar() == "false"))
        return field.node.Scalar() == "true";
    field.fail("must be true or false, got " + describe(field.node));
}

uint16_t read_port_number(const Field &field) {
    return static_cast<uint16_t>(read_integer(field, kPortNumber));
}

/* One of the spellings core/node.hpp defines for T (the same words the flags and bpfnetctl use). */
template <typename T>
T read_choice(const Field &field, std::optional<T> (*parse)(std::string_view)) {
    const std::string text = read_string(field);
    if (const std::optional<T> value = parse(text))
        return *value;
    std::string names;
    for (const std::string_view name : spellings<T>())
        names += (names.empty() ? "" : ", ") + std::string(name);
    field.fail("must be one of: " + names + "; got " + in_quotes(text));
}

/* ---- names and paths ---- */

std::string read_interface_name(const Field &field) {
    const std::string name = read_string(field);
    if (const auto problem = interface_name_problem(name))
        field.fail(*problem);
    return name;
}

/* Like Kubernetes port names: they end up in metrics labels and bpfnetctl output. */
std::string read_port_name(const Field &field) {
    const std::string name = read_string(field);
    const bool charset_ok = std::all_of(
        name.begin(), name.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
    if (name.empty() || name.size() > kMaxPortNameLen || !charset_ok)
        field.fail("must be 1 to " + std::to_string(kMaxPortNameLen) + " characters of a-z, 0-9 and '-', got " +
                   in_quotes(name));
    return name;
}

/* ---- addresses ---- */

uint32_t read_ipv4(const Field &field) {
    const std::string text = read_string(field);
    const std::optional<uint32_t> ip_be = parse_ipv4(text);
    if (!ip_be)
        field.fail("must be an IPv4 address like 198.18.0.2, got " + in_quotes(text));
    return *ip_be;
}

/* A provisioning subnet of the family; its limits are checked with the other node settings. */
Prefix read_subnet(const Field &field, IpFamily family) {
    const ParsedPrefix subnet = parse_subnet(read_string(field), family, kNodeFieldNames);
    if (!subnet.prefix)
        field.fail(subnet.error);
    return *subnet.prefix;
}

bpfnet_ip read_ipv6(const Field &field) {
    const std::string text = read_string(field);
    const std::optional<bpfnet_ip> ip = parse_ip(text);
    if (!ip || is_v4(*ip))
        field.fail("must be an IPv6 address like fd00:1::2, got " + in_quotes(text));
    return *ip;
}

/* An address hosts on the LAN reach directly (the service IP, a relay agent): a usable host address there. */
uint32_t read_lan_host_ip(const Field &field, const NodeSettings &node) {
    const uint32_t ip_be = read_ipv4(field);
    if (const auto problem = lan_host_problem(ip_be, node.subnet_be, node.prefix_len))
        field.fail(*problem);
    return ip_be;
}

/* ---- sections ---- */

void read_heartbeat(const Field &field, Config &config) {
    const Mapping heartbeat(field, {"intervalMs", "timeoutMs"});
    if (const auto interval = heartbeat.find("intervalMs"))
        config.heartbeat_interval = read_millis(*interval, kHeartbeatIntervalMs);
    if (const auto timeout = heartbeat.find("timeoutMs"))
        config.heartbeat_timeout = read_millis(*timeout, {1, kMaxHeartbeatTimeoutMs});

    /* One late heartbeat must not make the node stop answering ARP for the service IP. */
    const auto min_timeout = 2 * config.heartbeat_interval;
    if (config.heartbeat_timeout < min_timeout) {
        const std::string got = heartbeat.find("timeoutMs")
                                    ? "got " + std::to_string(config.heartbeat_timeout.count())
                                    : "the default " + std::to_string(kDefaultHeartbeatTimeout.count()) +
                                          " is too short; set it explicitly";
        heartbeat.locate("timeoutMs")
            .fail("must be at least twice heartbeat.intervalMs (" + std::to_string(min_timeout.count()) + "), " + got);
    }
}

void read_gratuitous_arp(const Field &field, Config &config) {
    const Mapping garp(field, {"count", "intervalMs"});
    if (const auto count = garp.find("count"))
        config.garp_count = static_cast<uint32_t>(read_integer(*count, kGarpCount));
    if (const auto interval = garp.find("intervalMs"))
        config.garp_interval = read_millis(*interval, kGarpIntervalMs);
}

/*
 * Relay agents on the LAN (routers forwarding other segments' DHCP): the server's replies go to them. Where
 * they may be is a node rule (core/node_rules.hpp); here only the addresses are read.
 */
std::vector<bpfnet_ip> read_dhcp_relays(const Field &field) {
    if (!field.node.IsSequence())
        field.fail("must be a list of relay agent addresses, got " + describe(field.node));
    std::vector<bpfnet_ip> relays;
    for (size_t i = 0; i < field.node.size(); i++) {
        const Field item = field.item(i);
        std::string error;
        const std::optional<bpfnet_ip> ip = parse_relay(read_string(item), error);
        if (!ip)
            item.fail(error);
        relays.push_back(*ip);
    }
    return relays;
}

/* The datapath itself is the relay for its own service addresses: a relay agent there would be a loop. */
void check_relays_are_not_service_ips(const Field &root, const Config &config) {
    for (size_t i = 0; i < config.dhcp_relays.size(); i++) {
        const bpfnet_ip &relay = config.dhcp_relays[i];
        if (is_v4(relay) && v4_of(relay) == config.service_ip_be)
            locate_path(root, kNodeFieldNames.dhcp_relays)
                .item(i)
                .fail(format_ip(relay) + " is the service IP: the datapath itself is the relay there");
        if (config.service_ip6 && relay == *config.service_ip6)
            locate_path(root, kNodeFieldNames.dhcp_relays)
                .item(i)
                .fail(format_ip(relay) + " is the service IPv6 address: the datapath itself is the relay there");
    }
}

/* One source range, IPv4 ("198.18.0.0/24") or IPv6 ("fd00:1::/64"), written without host bits. */
SourceRange read_source_range(const Field &item) {
    const ParsedPrefix range = parse_prefix(read_string(item));
    if (!range.prefix)
        item.fail(range.error);
    return *range.prefix;
}

/*
 * Who may reach the listed ports: CIDRs of any length (0.0.0.0/0, ::/0: everyone of that family). Each
 * service address takes the ranges of its family, so a family with an address here must have a range: an
 * IPv4-only list would otherwise close the IPv6 address to every host (or, read the other way, leave it open).
 */
std::vector<SourceRange> read_source_ranges(const Field &field, const Config &config) {
    if (!field.node.IsSequence())
        field.fail("must be a list of CIDRs like 198.18.0.0/24, got " + describe(field.node));
    if (field.node.size() > kMaxSourceRangesPerIp)
        field.fail("must list at most " + std::to_string(kMaxSourceRangesPerIp) + " ranges, got " +
                   std::to_string(field.node.size()));
    std::vector<SourceRange> ranges;
    for (size_t i = 0; i < field.node.size(); i++) {
        const Field item = field.item(i);
        const SourceRange range = read_source_range(item);
        if (std::find(ranges.begin(), ranges.end(), range) != ranges.end())
            item.fail("lists " + format_prefix(range) + " twice");
        if (is_v4(range.network) ? config.service_ip_be == 0 : !config.service_ip6)
            item.fail(format_prefix(range) + " is " +
                      (is_v4(range.network) ? "IPv4 but there is no serviceIP" : "IPv6 but there is no serviceIPv6"));
        ranges.push_back(range);
    }
    const auto has_family = [&](bool v4) {
        return std::any_of(ranges.begin(), ranges.end(), [&](const SourceRange &r) { return is_v4(r.network) == v4; });
    };
    if (config.service_ip_be != 0 && !has_family(true))
        field.fail("lists no IPv4 range for serviceIP: add the IPv4 ranges that may reach it (0.0.0.0/0: every host)");
    if (config.service_ip6 && !has_family(false))
        field.fail("lists no IPv6 range for serviceIPv6: add the IPv6 ranges that may reach it (::/0: every host)");
    return ranges;
}

void read_dhcp_relay(const Field &field, Config &config) {
    const Mapping relay(field, {"maxHops", "relays"});
    if (const auto hops = relay.find("maxHops"))
        config.dhcp_max_hops = static_cast<uint8_t>(read_integer(*hops, kDhcpMaxHops));
    if (const auto relays = relay.find("relays"))
        config.dhcp_relays = read_dhcp_relays(*relays);
}

/* Router advertisements for subnetV6 (docs/config.md): off unless enabled. */
void read_router_advertisements(const Field &field, Config &config) {
    const Mapping ra(field, {"enabled", "intervalSeconds"});
    if (const auto enabled = ra.find("enabled"))
        config.router_advertisements = read_bool(*enabled);
    if (const auto interval = ra.find("intervalSeconds"))
        config.ra_interval = std::chrono::seconds(read_integer(*interval, kSeconds));
}

PortRule read_port_rule(const Mapping &entry) {
    PortRule rule;
    rule.name = read_port_name(entry.require("name"));
    rule.protocol = read_choice(entry.require("protocol"), parse_protocol);
    rule.port = read_port_number(entry.require("port"));
    const auto target_port = entry.find("targetPort");
    rule.target_port = target_port ? read_port_number(*target_port) : rule.port;
    if (const auto kind = entry.find("kind"))
        rule.kind = read_choice(*kind, parse_port_kind);
    return rule;
}

std::vector<PortRule> read_ports(const Field &field) {
    if (!field.node.IsSequence())
        field.fail("must be a list of ports, got " + describe(field.node));
    if (field.node.size() == 0)
        field.fail("must list at least one port");

    std::vector<PortRule> rules;
    std::vector<Mapping> entries;
    for (size_t i = 0; i < field.node.size(); i++) {
        entries.emplace_back(field.item(i),
                             std::initializer_list<std::string_view>{"name", "protocol", "port", "targetPort", "kind"});
        rules.push_back(read_port_rule(entries.back()));
    }
    /* The rules both modes share (core/service_rules.hpp), reported at the field they concern. */
    const auto problem =
        port_rules_problem(rules, [&field](size_t i) { return field.path + "[" + std::to_string(i) + "]"; });
    if (!problem)
        return rules;
    if (!problem->index)
        field.fail(problem->detail);
    const Mapping &entry = entries[*problem->index];
    /* A defaulted targetPort collides too; the message says where the value came from. */
    const bool defaulted = problem->field == "targetPort" && !entry.find("targetPort");
    entry.locate(problem->field).fail(problem->detail + (defaulted ? " (defaulted from port)" : ""));
}

/* A relayed port is one family's: dhcp relays for serviceIP, dhcpv6 for serviceIPv6. */
void check_relay_families(const Field &field, const Config &config) {
    for (size_t i = 0; i < config.ports.size(); i++) {
        const PortKind kind = config.ports[i].kind;
        const Mapping entry(field.item(i), {"name", "protocol", "port", "targetPort", "kind"});
        if (kind == PortKind::Dhcp && config.service_ip_be == 0)
            entry.locate("kind").fail("dhcp relays DHCPv4 for serviceIP, and the config has none (an IPv6 LAN "
                                      "uses kind dhcpv6 on port 547)");
        if (kind == PortKind::Dhcp6 && !config.service_ip6)
            entry.locate("kind").fail("dhcpv6 relays DHCPv6 for serviceIPv6, and the config has none");
    }
}

/* "node", or an address of the node's (or the control plane's VIP): any unicast address of either family but
 * a service address, and none of the provisioning subnets, whose addresses are the datapath's to own. */
std::optional<bpfnet_ip> read_shared_address(const Field &field, const Config &config) {
    const std::string text = read_string(field);
    // Said first: the service address is inside the provisioning subnet too, and this is what is wrong with it.
    if (const std::optional<bpfnet_ip> ip = parse_ip(text);
        ip && ((is_v4(*ip) && config.service_ip_be != 0 && v4_of(*ip) == config.service_ip_be) ||
               (config.service_ip6 && *ip == *config.service_ip6)))
        field.fail(text + " is a service address: the datapath owns those, a shared address is the node's");
    const ParsedSharedChoice parsed = parse_shared_choice(text, config);
    if (!parsed.choice)
        field.fail(parsed.error);
    return *parsed.choice;
}

/* A shared address's ports: plain ports, TCP or UDP (the relays and TFTP need the provisioning LAN). */
std::vector<PortRule> read_shared_ports(const Field &field) {
    std::vector<PortRule> rules = read_ports(field);
    for (size_t i = 0; i < rules.size(); i++)
        if (rules[i].kind != PortKind::Plain)
            Mapping(field.item(i), {"name", "protocol", "port", "targetPort", "kind"})
                .locate("kind")
                .fail("must be plain on a shared address (" + to_string(rules[i].kind) +
                      " needs the provisioning LAN: list it under the top-level ports)");
    return rules;
}

/*
 * The pod's replies are told apart by its port alone (the reverse table's key): a pod port of one family serves
 * the service address or one shared address of that family, never two of them. "node" is IPv4.
 */
void check_target_ports_apart(const Field &field, const std::vector<SharedAddress> &list, const Config &config) {
    struct Owner {
        bool v4;
        std::string name; // "ports[0]" or "sharedAddresses[1].ports[0]"
    };
    std::map<std::pair<Protocol, uint16_t>, std::vector<Owner>> owners;
    for (size_t i = 0; i < config.ports.size(); i++) {
        const PortRule &rule = config.ports[i];
        if (config.service_ip_be != 0 && rule.kind != PortKind::Dhcp6)
            owners[{rule.protocol, rule.target_port}].push_back({true, "ports[" + std::to_string(i) + "]"});
        if (config.service_ip6 && rule.kind != PortKind::Dhcp)
            owners[{rule.protocol, rule.target_port}].push_back({false, "ports[" + std::to_string(i) + "]"});
    }
    for (size_t i = 0; i < list.size(); i++) {
        const bool v4 = !list[i].ip || is_v4(*list[i].ip);
        const Field ports = Mapping(field.item(i), {"address", "ports"}).require("ports");
        for (size_t j = 0; j < list[i].ports.size(); j++) {
            const PortRule &rule = list[i].ports[j];
            auto &seen = owners[{rule.protocol, rule.target_port}];
            for (const Owner &owner : seen) {
                if (owner.v4 != v4)
                    continue;
                const Mapping entry(ports.item(j), {"name", "protocol", "port", "targetPort", "kind"});
                entry.locate(entry.find("targetPort") ? "targetPort" : "port")
                    .fail(to_string(rule.protocol) + " " + std::to_string(rule.target_port) +
                          " is already the pod port of " + owner.name +
                          ": the pod's replies are told apart by its port, so a pod port serves one address of a "
                          "family");
            }
            seen.push_back({v4, field.path + "[" + std::to_string(i) + "].ports[" + std::to_string(j) + "]"});
        }
    }
}

/* sharedAddresses (docs/config.md): at most BPFNET_MAX_SHARED_ADDRESSES, each once. */
std::vector<SharedAddress> read_shared_addresses(const Field &field, const Config &config) {
    if (!field.node.IsSequence())
        field.fail("must be a list of addresses with their ports, got " + describe(field.node));
    if (field.node.size() == 0 || field.node.size() > BPFNET_MAX_SHARED_ADDRESSES)
        field.fail("must list 1 to " + std::to_string(BPFNET_MAX_SHARED_ADDRESSES) + " addresses, got " +
                   std::to_string(field.node.size()));
    std::vector<SharedAddress> list;
    for (size_t i = 0; i < field.node.size(); i++) {
        const Mapping entry(field.item(i), {"address", "ports"});
        SharedAddress shared;
        shared.ip = read_shared_address(entry.require("address"), config);
        shared.ports = read_shared_ports(entry.require("ports"));
        if (std::find_if(list.begin(), list.end(), [&](const SharedAddress &s) { return s.ip == shared.ip; }) !=
            list.end())
            entry.locate("address").fail("lists " + bpfnet::describe(shared.ip) + " twice");
        list.push_back(std::move(shared));
    }
    return list;
}

/* backend.node / nodeV6: the node the pod runs on when it is not this one, a unicast address of the family.
 * Only shared addresses named by address can be handed to another node: a service address's relays and
 * neighbours need the pod here, and "node" means each node's own address, which the pod's node does not hold.
 * The family must be one the shared addresses have. That the address is on the NIC's network is for the kernel
 * to show: the node's neighbour table resolves it there, or the packets handed on go nowhere. */
std::optional<bpfnet_ip> read_backend_node(const Mapping &section, const char *key, bool v4, const Config &config,
                                           const Backend &backend) {
    const auto field = section.find(key);
    if (!field)
        return std::nullopt;
    const bpfnet_ip ip = v4 ? ip_from_v4(read_ipv4(*field)) : read_ipv6(*field);
    if (const auto reason = v4 ? non_unicast_reason(v4_of(ip)) : non_unicast_reason6(ip))
        field->fail("must be a unicast address of the pod's node, " + *reason);
    if (config.service_ip_be != 0 || config.service_ip6)
        field->fail("the pod must be on this node for the service addresses (their relays and neighbours are this "
                    "node's): only shared addresses are handed to another node");
    const auto &shared = config.shared_addresses;
    if (std::any_of(shared.begin(), shared.end(), [](const SharedAddress &s) { return !s.ip; }))
        field->fail("a shared address is \"node\", each node's own: the pod's node does not hold this one's, so it "
                    "cannot be handed on; name the VIP instead");
    if (std::any_of(shared.begin(), shared.end(), [&](const SharedAddress &s) { return s.ip == ip; }))
        field->fail(format_ip(ip) + " is a shared address: name the pod's node's own address");
    if (ip == (v4 ? ip_from_v4(backend.ip_be) : backend.ip6.value_or(bpfnet_ip{})))
        field->fail(format_ip(ip) + " is the pod's address: name the address of the node it runs on");
    if (!serves_family(config, v4))
        field->fail(std::string("no shared address is ") + (v4 ? "IPv4" : "IPv6") + ": leave " + key + " out");
    return ip;
}

/* The pod lives on the pod network; only the datapath may put the service IP in front of it. It has an
 * address of each family the service has (a dual-stack pod for a dual-stack service). */
Backend read_backend(const Field &field, const Config &config) {
    const Mapping section(field, {"ip", "ipv6", "veth", "delivery", "node", "nodeV6"});
    Backend backend;
    if (serves_family(config, true)) {
        const Field ip = section.require("ip");
        backend.ip_be = read_ipv4(ip);
        if (const auto problem =
                backend_ip_problem(backend.ip_be, {config.service_ip_be}, config.subnet_be, config.prefix_len))
            ip.fail(*problem);
        if (const auto shared = shared_address_problem(ip_from_v4(backend.ip_be), config))
            ip.fail(*shared);
    } else if (section.find("ip")) {
        section.locate("ip").fail("the service has no IPv4 address (no serviceIP, no IPv4 shared address): leave "
                                  "ip out");
    }
    if (serves_family(config, false)) {
        const Field ip6 = section.require("ipv6");
        backend.ip6 = read_ipv6(ip6);
        const auto problem = backend_ip6_problem(*backend.ip6, config.service_ip6.value_or(bpfnet_ip{}), config.subnet6,
                                                 config.prefix6_len);
        if (problem)
            ip6.fail(*problem);
        if (const auto shared = shared_address_problem(*backend.ip6, config))
            ip6.fail(*shared);
    } else if (section.find("ipv6")) {
        section.locate("ipv6").fail("the service has no IPv6 address (no serviceIPv6, no IPv6 shared address): "
                                    "leave ipv6 out");
    }

    if (const auto veth = section.find("veth")) {
        const std::string name = read_interface_name(*veth);
        if (name == config.interface)
            veth->fail("must be the pod's veth, not the provisioning interface " + in_quotes(name));
        if (name != kAutoVeth)
            backend.veth = name;
    }
    if (const auto delivery = section.find("delivery"))
        backend.delivery = read_choice(*delivery, parse_pod_delivery);
    backend.node = read_backend_node(section, "node", true, config, backend);
    backend.node6 = read_backend_node(section, "nodeV6", false, config, backend);
    if (backend.elsewhere()) {
        for (const char *local : {"veth", "delivery"})
            if (section.find(local))
                section.locate(local).fail("the pod runs on the node named by node/nodeV6: its veth and delivery "
                                           "are that node's to set");
        for (const bool v4 : {true, false})
            if (serves_family(config, v4) && !(v4 ? backend.node : backend.node6))
                section.locate(backend.node ? "node" : "nodeV6")
                    .fail(std::string("the shared addresses have ") + (v4 ? "IPv4" : "IPv6") +
                          " too: name the pod's node's address of it in " + (v4 ? "node" : "nodeV6"));
    }
    return backend;
}

/*
 * The provisioning subnets of the service addresses: an IPv4 pair (serviceIP in subnet), an IPv6 pair
 * (serviceIPv6 in subnetV6), or both (dual stack). Each address needs its subnet and each subnet its address.
 */
void read_subnets(const Mapping &document, Config &config) {
    const bool v4 = document.find("serviceIP") || document.find("subnet");
    const bool v6 = document.find("serviceIPv6") || document.find("subnetV6");
    if (!v4 && !v6 && !document.find("sharedAddresses"))
        document.locate("serviceIP")
            .fail("is required (or serviceIPv6 and subnetV6 for an IPv6 LAN, or "
                  "sharedAddresses without a provisioning LAN)");
    if (v4) {
        const Prefix subnet = read_subnet(document.require("subnet"), IpFamily::V4);
        config.subnet_be = v4_of(subnet.network);
        config.prefix_len = subnet.prefix_len;
    }
    if (v6) {
        const Prefix subnet = read_subnet(document.require("subnetV6"), IpFamily::V6);
        config.subnet6 = subnet.network;
        config.prefix6_len = subnet.prefix_len;
    }
}

/*
 * The settings of the node, shared with Kubernetes mode and checked by the rules both modes obey
 * (core/node_rules.hpp) before the service is read against them: a service IP is only checked against a
 * subnet known to be usable.
 */
void read_node_settings(const Field &root, const Mapping &document, Config &config) {
    config.interface = read_string(document.require("interface"));
    read_subnets(document, config);
    if (const auto pin_root = document.find("pinRoot"))
        config.pin_root = without_trailing_slashes(read_string(*pin_root));
    if (const auto control_socket = document.find("controlSocket"))
        config.control_socket = read_string(*control_socket);
    if (const auto xdp_mode = document.find("xdpMode"))
        config.xdp_mode = read_choice(*xdp_mode, parse_xdp_mode);
    if (const auto tc_attach = document.find("tcAttach"))
        config.tc_attach = read_choice(*tc_attach, parse_tc_attach);
    if (const auto redirect_peer = document.find("redirectPeer"))
        config.redirect_peer = read_choice(*redirect_peer, parse_redirect_peer);
    if (const auto heartbeat = document.find("heartbeat"))
        read_heartbeat(*heartbeat, config);
    if (const auto garp = document.find("gratuitousARP"))
        read_gratuitous_arp(*garp, config);
    if (const auto relay = document.find("dhcpRelay"))
        read_dhcp_relay(*relay, config);
    if (const auto ra = document.find("routerAdvertisements"))
        read_router_advertisements(*ra, config);
    if (const auto problem = validate_node_settings(config, kNodeFieldNames, !document.find("sharedAddresses")))
        fail_node_setting(root, *problem);
}

/* The service addresses, each a host of its subnet. */
void read_service_addresses(const Mapping &document, Config &config) {
    if (config.prefix_len != 0)
        config.service_ip_be = read_lan_host_ip(document.require("serviceIP"), config);
    if (config.prefix6_len != 0) {
        const Field ip = document.require("serviceIPv6");
        const bpfnet_ip service = read_ipv6(ip);
        if (const auto problem = lan_host_problem6(service, config.subnet6, config.prefix6_len))
            ip.fail(*problem);
        config.service_ip6 = service;
    }
}

Config read_config(const Field &root) {
    const Mapping document(root,
                           {"interface", "serviceIP", "subnet", "serviceIPv6", "subnetV6", "pinRoot", "controlSocket",
                            "xdpMode", "tcAttach", "redirectPeer", "heartbeat", "gratuitousARP", "dhcpRelay",
                            "routerAdvertisements", "ports", "backend", "sourceRanges", "sharedAddresses"});
    Config config;
    read_node_settings(root, document, config);
    read_service_addresses(document, config);
    check_relays_are_not_service_ips(root, config);
    if (config.service_ip_be != 0 || config.service_ip6) {
        config.ports = read_ports(document.require("ports"));
        check_relay_families(document.require("ports"), config);
    } else if (document.find("ports")) {
        document.locate("ports").fail("lists the ports of the service addresses, and there is none (no serviceIP, "
                                      "no serviceIPv6): a shared address's ports are listed under it");
    }
    if (const auto shared = document.find("sharedAddresses")) {
        config.shared_addresses = read_shared_addresses(*shared, config);
        check_target_ports_apart(*shared, config.shared_addresses, config);
    }
    if (const auto backend = document.find("backend"))
        config.backend = read_backend(*backend, config);
    if (const auto ranges = document.find("sourceRanges"))
        config.source_ranges = read_source_ranges(*ranges, config);
    return config;
}

/* A second document would be ignored by the reader, so it is refused rather than silently dropped. */
YAML::Node load_single_document(std::string_view yaml_text, std::string_view source_name) {
    std::vector<YAML::Node> documents;
    try {
        documents = load_yaml_documents(std::string(yaml_text));
    } catch (const YAML::Exception &e) {
        throw ConfigError(source_name, line_of(e.mark), "", "invalid YAML: " + e.msg);
    }
    if (documents.empty() || documents.front().IsNull())
        throw ConfigError(source_name, std::nullopt, "", "the config is empty");
    if (documents.size() > 1)
        throw ConfigError(source_name, line_of(documents[1].Mark()), "",
                          "expected one YAML document, found " + std::to_string(documents.size()));
    return documents.front();
}

struct FileCloser {
    void operator()(std::FILE *file) const { std::fclose(file); }
};

std::string errno_text(int error) {
    return std::error_code(error, std::generic_category()).message();
}

std::string read_config_text(const std::string &path) {
    const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "re"));
    if (!file)
        throw ConfigError(path, std::nullopt, "", "cannot open: " + errno_text(errno));
    std::string text;
    char buffer[4096];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof(buffer), file.get())) > 0) {
        text.append(buffer, got);
        if (text.size() > kMaxConfigBytes)
            throw ConfigError(path, std::nullopt, "", "larger than " + std::to_string(kMaxConfigBytes) + " bytes");
    }
    if (std::ferror(file.get()))
        throw ConfigError(path, std::nullopt, "", "cannot read: " + errno_text(errno));
    return text;
}

std::string error_message(std::string_view source, std::optional<int> line, std::string_view field,
                          std::string_view detail) {
    std::string message(source);
    if (line)
        message += ":" + std::to_string(*line);
    message += ": ";
    if (!field.empty())
        message += std::string(field) + ": ";
    return message + std::string(detail);
}

} // namespace

std::optional<std::string> shared_address_problem(const bpfnet_ip &pod, const Config &config) {
    for (const SharedAddress &shared : config.shared_addresses)
        if (shared.ip && *shared.ip == pod)
            return "must not be the shared address " + format_ip(pod) +
                   ": it is the pod's own address on the pod "
                   "network";
    return std::nullopt;
}

bool serves_family(const Config &config, bool v4) {
    if (v4 ? config.service_ip_be != 0 : config.service_ip6.has_value())
        return true;
    return std::any_of(config.shared_addresses.begin(), config.shared_addresses.end(),
                       [v4](const SharedAddress &s) { return s.ip ? is_v4(*s.ip) == v4 : v4; }); // "node": IPv4
}

ConfigError::ConfigError(std::string_view source, std::optional<int> line, std::string_view field,
                         std::string_view detail)
    : std::runtime_error(error_message(source, line, field, detail)), field_(field), line_(line) {}

Config parse_config(std::string_view yaml_text, std::string_view source_name) {
    const Field root{source_name, "", load_single_document(yaml_text, source_name), YAML::Mark::null_mark()};
    try {
        return read_config(root);
    } catch (const YAML::Exception &e) {
        /* The walk only uses non-throwing accessors; this keeps a yaml-cpp surprise a ConfigError. */
        throw ConfigError(source_name, line_of(e.mark), "", e.msg);
    }
}

Config load_config_file(const std::string &path) {
    return parse_config(read_config_text(path), path);
}

} // namespace bpfnet
