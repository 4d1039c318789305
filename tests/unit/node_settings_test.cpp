// The node settings both modes share, refused by both in the same words (core/node_rules.hpp): one table of
// bad settings, written once as a config file (standalone/config.cpp) and once as flags (k8s/flags.cpp).
// And the one parser of CIDRs both modes and the Service model use (core/addresses.hpp).
#include "core/addresses.hpp"
#include "core/node_rules.hpp"
#include "k8s/flags.hpp"
#include "standalone/config.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace bpfnet;

namespace {

/* ---- the one CIDR parser ---- */

bpfnet_ip ip(const char *text) {
    return *parse_ip(text);
}

TEST(Prefix, ParsesNetworksOfEitherFamily) {
    EXPECT_EQ(parse_prefix("172.22.0.0/24").prefix, (Prefix{ip("172.22.0.0"), 24}));
    EXPECT_EQ(parse_prefix("fd00:1::/64").prefix, (Prefix{ip("fd00:1::"), 64}));
    for (const char *good : {"0.0.0.0/0", "198.18.0.2/32", "::/0", "fd00:1::2/128"})
        EXPECT_TRUE(parse_prefix(good).prefix) << good;
    EXPECT_EQ(parse_prefix("172.22.0.0/24").prefix->family(), IpFamily::V4);
    EXPECT_EQ(parse_prefix("fd00:1::/64").prefix->family(), IpFamily::V6);
}

TEST(Prefix, RefusesTheRestInWordsThatSayWhy) {
    for (const char *bad : {"", "172.22.0.0", "172.22.0.0/", "172.22.0.0/33", "172.22.0.0/024", "172.22.0/24",
                            "172.22.0.0/2a", "/24", "172.22.0.0/-1", "172.22.0.0/1234", "fd00:1::/129", "fd00:1::/064",
                            "fd00:1:::/64", "::ffff:172.22.0.0/120", "fd00::/"}) {
        const ParsedPrefix parsed = parse_prefix(bad);
        EXPECT_FALSE(parsed.prefix) << bad;
        EXPECT_EQ(parsed.error.find("must be a CIDR like 198.18.0.0/24 or fd00:1::/64, got \"" + std::string(bad)), 0u)
            << parsed.error;
    }
    EXPECT_EQ(parse_prefix("172.22.0.0/33").error,
              "must be a CIDR like 198.18.0.0/24 or fd00:1::/64, got \"172.22.0.0/33\" (the length must be 0 to 32, "
              "without leading zeros)");
    EXPECT_EQ(parse_prefix("172.22.0.0").error,
              "must be a CIDR like 198.18.0.0/24 or fd00:1::/64, got \"172.22.0.0\" (no /length)");
}

TEST(Prefix, HostBitsAreRefusedOrCleared) {
    EXPECT_EQ(parse_prefix("172.22.0.1/24").error, "has host bits set: \"172.22.0.1/24\"; did you mean 172.22.0.0/24?");
    EXPECT_EQ(parse_prefix("fd00:1::1/64").error, "has host bits set: \"fd00:1::1/64\"; did you mean fd00:1::/64?");
    EXPECT_EQ(parse_prefix("172.22.0.1/24", HostBits::Cleared).prefix, (Prefix{ip("172.22.0.0"), 24}));
    EXPECT_EQ(parse_prefix("fd00:1::1/64", HostBits::Cleared).prefix, (Prefix{ip("fd00:1::"), 64}));
}

TEST(Prefix, ContainsAddressesOfItsFamilyOnly) {
    const Prefix v4 = *parse_prefix("172.22.0.0/24").prefix;
    EXPECT_TRUE(v4.contains(ip("172.22.0.9")));
    EXPECT_FALSE(v4.contains(ip("172.22.1.9")));
    EXPECT_FALSE(v4.contains(ip("::ac16:9"))) << "an IPv6 address is in no IPv4 prefix";
    const Prefix every6 = *parse_prefix("::/0").prefix;
    EXPECT_TRUE(every6.contains(ip("fd00:1::2")));
    EXPECT_FALSE(every6.contains(ip("172.22.0.9"))) << "::/0 is every IPv6 address, no IPv4 one";
    EXPECT_TRUE(parse_prefix("0.0.0.0/0").prefix->contains(ip("203.0.113.1")));
    EXPECT_EQ(format_prefix(v4), "172.22.0.0/24");
}

/* ---- one table of bad node settings, both modes ---- */

// Node settings as an operator writes them; empty: not given (the default, or no such subnet).
struct Settings {
    std::string interface = "prov0";
    std::string subnet = "198.18.0.0/24";
    std::string subnet_v6;
    std::vector<std::string> relays;
    bool router_advertisements = false;
    std::string ra_interval;
    std::string pin_root;
    std::string control_socket;
};

struct Row {
    const char *what;
    NodeField field;
    std::optional<size_t> index; // the list entry the config file names (a flag names the whole list)
    Settings settings;
    std::string detail; // the words after the field's name; {subnet} and {subnet_v6} stand for their spellings
};

// Each mode's spelling of the fields, as its documentation gives them (docs/config.md, docs/kubernetes.md).
const std::map<NodeField, std::string> kConfigKeys = {{NodeField::Interface, "interface"},
                                                      {NodeField::Subnet, "subnet"},
                                                      {NodeField::SubnetV6, "subnetV6"},
                                                      {NodeField::PinRoot, "pinRoot"},
                                                      {NodeField::ControlSocket, "controlSocket"},
                                                      {NodeField::DhcpRelays, "dhcpRelay.relays"},
                                                      {NodeField::RouterAdvertisements, "routerAdvertisements.enabled"},
                                                      {NodeField::RaInterval, "routerAdvertisements.intervalSeconds"}};
const std::map<NodeField, std::string> kFlags = {{NodeField::Interface, "--interface"},
                                                 {NodeField::Subnet, "--subnet"},
                                                 {NodeField::SubnetV6, "--subnet-v6"},
                                                 {NodeField::PinRoot, "--pin-root"},
                                                 {NodeField::ControlSocket, "--control-socket"},
                                                 {NodeField::DhcpRelays, "--dhcp-relays"},
                                                 {NodeField::RouterAdvertisements, "--router-advertisements"},
                                                 {NodeField::RaInterval, "--ra-interval"}};

std::string spelled(std::string detail, const std::map<NodeField, std::string> &names) {
    for (const auto &[placeholder, field] : {std::pair{std::string("{subnet_v6}"), NodeField::SubnetV6},
                                             std::pair{std::string("{subnet}"), NodeField::Subnet}})
        for (size_t at = detail.find(placeholder); at != std::string::npos; at = detail.find(placeholder))
            detail.replace(at, placeholder.size(), names.at(field));
    return detail;
}

std::string yaml_list(const std::vector<std::string> &items) {
    std::string list;
    for (const std::string &item : items)
        list += (list.empty() ? "'" : ", '") + item + "'";
    return "[" + list + "]";
}

std::string config_file(const Settings &s) {
    std::string yaml = "interface: '" + s.interface + "'\n";
    if (!s.subnet.empty())
        yaml += "serviceIP: 198.18.0.2\nsubnet: '" + s.subnet + "'\n";
    if (!s.subnet_v6.empty())
        yaml += "serviceIPv6: 'fd00:1::2'\nsubnetV6: '" + s.subnet_v6 + "'\n";
    if (!s.pin_root.empty())
        yaml += "pinRoot: '" + s.pin_root + "'\n";
    if (!s.control_socket.empty())
        yaml += "controlSocket: '" + s.control_socket + "'\n";
    if (!s.relays.empty())
        yaml += "dhcpRelay:\n  relays: " + yaml_list(s.relays) + "\n";
    if (s.router_advertisements || !s.ra_interval.empty())
        yaml += "routerAdvertisements:\n  enabled: " + std::string(s.router_advertisements ? "true" : "false") + "\n";
    if (!s.ra_interval.empty())
        yaml += "  intervalSeconds: " + s.ra_interval + "\n";
    return yaml + "ports:\n  - {name: ironic-api, protocol: tcp, port: 6385}\n";
}

std::vector<std::string> flags(const Settings &s) {
    std::vector<std::string> argv = {"--kubernetes",         "--interface", s.interface,       "--node-name",  "node-a",
                                     "--allowed-namespaces", "metal3",      "--allowed-cidrs", "198.18.0.0/24"};
    const auto add = [&argv](const char *flag, const std::string &value) {
        if (!value.empty())
            argv.insert(argv.end(), {flag, value});
    };
    add("--subnet", s.subnet);
    add("--subnet-v6", s.subnet_v6);
    add("--pin-root", s.pin_root);
    add("--control-socket", s.control_socket);
    std::string relays;
    for (const std::string &relay : s.relays)
        relays += (relays.empty() ? "" : ",") + relay;
    add("--dhcp-relays", relays);
    if (s.router_advertisements)
        argv.push_back("--router-advertisements");
    add("--ra-interval", s.ra_interval);
    return argv;
}

// The config file's refusal as (field path, words after it); ("", "") when it is accepted.
std::pair<std::string, std::string> config_refusal(const Settings &s) {
    try {
        parse_config(config_file(s), "node.yaml");
    } catch (const ConfigError &e) {
        const std::string message = e.what();
        const size_t at = message.find(e.field() + ": ");
        return {e.field(), at == std::string::npos ? message : message.substr(at + e.field().size() + 2)};
    }
    return {"", ""};
}

// The flags' refusal (std::invalid_argument's words), "" when they are accepted.
std::string flags_refusal(const Settings &s) {
    CLI::App app;
    k8s::KubernetesFlags parsed;
    k8s::add_kubernetes_flags(app, parsed);
    std::vector<std::string> argv = flags(s);
    std::reverse(argv.begin(), argv.end()); // CLI11 takes a vector in reverse order
    app.parse(argv);
    try {
        k8s::kubernetes_settings(parsed);
    } catch (const std::invalid_argument &e) {
        return e.what();
    }
    return "";
}

Settings with(void (*change)(Settings &)) {
    Settings settings;
    change(settings);
    return settings;
}

const std::string kLongSocket = "/run/" + std::string(103, 's');

std::vector<std::string> relays_1_to(int count) {
    std::vector<std::string> relays;
    for (int i = 1; i <= count; i++)
        relays.push_back("198.18.0." + std::to_string(i + 2));
    return relays;
}

const std::vector<Row> kBadNodeSettings = {
    {"interface with a slash",
     NodeField::Interface,
     {},
     with([](Settings &s) { s.interface = "prov0/1"; }),
     "is not a valid interface name (must not contain '/'), got \"prov0/1\""},
    {"interface over IFNAMSIZ",
     NodeField::Interface,
     {},
     with([](Settings &s) { s.interface = "prov0123456789ab"; }),
     "is not a valid interface name (must be at most 15 characters), got \"prov0123456789ab\""},
    {"subnet without a length",
     NodeField::Subnet,
     {},
     with([](Settings &s) { s.subnet = "198.18.0.0"; }),
     "must be a CIDR like 198.18.0.0/24 or fd00:1::/64, got \"198.18.0.0\" (no /length)"},
    {"subnet length with a leading zero",
     NodeField::Subnet,
     {},
     with([](Settings &s) { s.subnet = "198.18.0.0/024"; }),
     "must be a CIDR like 198.18.0.0/24 or fd00:1::/64, got \"198.18.0.0/024\" (the length must be 0 to 32, "
     "without leading zeros)"},
    {"subnet with host bits",
     NodeField::Subnet,
     {},
     with([](Settings &s) { s.subnet = "198.18.0.1/24"; }),
     "has host bits set: \"198.18.0.1/24\"; did you mean 198.18.0.0/24?"},
    {"subnet /31: no room for hosts",
     NodeField::Subnet,
     {},
     with([](Settings &s) { s.subnet = "198.18.0.0/31"; }),
     "prefix length must be between 8 and 30, got 31"},
    {"subnet /0: every address",
     NodeField::Subnet,
     {},
     with([](Settings &s) { s.subnet = "0.0.0.0/0"; }),
     "prefix length must be between 8 and 30, got 0"},
    {"subnet wider than /8",
     NodeField::Subnet,
     {},
     with([](Settings &s) { s.subnet = "10.0.0.0/7"; }),
     "prefix length must be between 8 and 30, got 7"},
    {"IPv6 subnet as the IPv4 one",
     NodeField::Subnet,
     {},
     with([](Settings &s) { s.subnet = "fd00:1::/64"; }),
     "must be an IPv4 CIDR like 198.18.0.0/24, got \"fd00:1::/64\": an IPv6 subnet goes in {subnet_v6}"},
    {"IPv4 subnet as the IPv6 one",
     NodeField::SubnetV6,
     {},
     with([](Settings &s) { s.subnet_v6 = "198.18.0.0/24"; }),
     "must be an IPv6 CIDR like fd00:1::/64, got \"198.18.0.0/24\": an IPv4 subnet goes in {subnet}"},
    {"IPv6 subnet wider than /16",
     NodeField::SubnetV6,
     {},
     with([](Settings &s) { s.subnet_v6 = "fd00::/8"; }),
     "prefix length must be between 16 and 124, got 8"},
    {"IPv6 subnet /125",
     NodeField::SubnetV6,
     {},
     with([](Settings &s) { s.subnet_v6 = "fd00:1::/125"; }),
     "prefix length must be between 16 and 124, got 125"},
    {"link-local IPv6 subnet",
     NodeField::SubnetV6,
     {},
     with([](Settings &s) { s.subnet_v6 = "fe80::/64"; }),
     "must be a unicast prefix, got \"fe80::/64\", a link-local address"},
    {"IPv6 subnet holding the IPv4-mapped addresses",
     NodeField::SubnetV6,
     {},
     with([](Settings &s) { s.subnet_v6 = "::ff00:0:0/88"; }),
     "must not contain ::ffff:0:0/96, the IPv4-mapped addresses, got \"::ff00:0:0/88\""},
    {"relay that is no address", NodeField::DhcpRelays, 0, with([](Settings &s) { s.relays = {"relay1"}; }),
     "must be an IPv4 or IPv6 address like 198.18.0.1 or fd00:1::1, got \"relay1\""},
    {"relay outside the subnet", NodeField::DhcpRelays, 0, with([](Settings &s) { s.relays = {"203.0.113.1"}; }),
     "203.0.113.1 is not inside subnet 198.18.0.0/24"},
    {"relay at the broadcast address", NodeField::DhcpRelays, 1, with([](Settings &s) {
         s.relays = {"198.18.0.1", "198.18.0.255"};
     }),
     "198.18.0.255 is the broadcast address of subnet 198.18.0.0/24"},
    {"relay listed twice", NodeField::DhcpRelays, 1, with([](Settings &s) {
         s.relays = {"198.18.0.1", "198.18.0.1"};
     }),
     "198.18.0.1 is listed twice"},
    {"IPv6 relay on an IPv4 LAN", NodeField::DhcpRelays, 0, with([](Settings &s) { s.relays = {"fd00:1::fe"}; }),
     "fd00:1::fe is IPv6, and there is no {subnet_v6}"},
    {"IPv4 relay on an IPv6 LAN", NodeField::DhcpRelays, 0, with([](Settings &s) {
         s.subnet = "";
         s.subnet_v6 = "fd00:1::/64";
         s.relays = {"198.18.0.1"};
     }),
     "198.18.0.1 is IPv4, and there is no {subnet}"},
    {"IPv6 relay outside the IPv6 subnet", NodeField::DhcpRelays, 0, with([](Settings &s) {
         s.subnet_v6 = "fd00:1::/64";
         s.relays = {"fd00:2::fe"};
     }),
     "fd00:2::fe is not inside subnet fd00:1::/64"},
    {"17 relays",
     NodeField::DhcpRelays,
     {},
     with([](Settings &s) { s.relays = relays_1_to(17); }),
     "must list at most 16 relays, got 17"},
    {"router advertisements on an IPv4 LAN",
     NodeField::RouterAdvertisements,
     {},
     with([](Settings &s) { s.router_advertisements = true; }),
     "router advertisements are for an IPv6 LAN: give {subnet_v6}"},
    {"RA interval under RFC 4861's floor",
     NodeField::RaInterval,
     {},
     with([](Settings &s) {
         s.subnet_v6 = "fd00:1::/64";
         s.router_advertisements = true;
         s.ra_interval = "3";
     }),
     "must be between 4 and 1800, got 3"},
    {"RA interval over MaxRtrAdvInterval",
     NodeField::RaInterval,
     {},
     with([](Settings &s) {
         s.subnet_v6 = "fd00:1::/64";
         s.ra_interval = "1801";
     }),
     "must be between 4 and 1800, got 1801"},
    {"relative pin root",
     NodeField::PinRoot,
     {},
     with([](Settings &s) { s.pin_root = "sys/fs/bpf"; }),
     "must be an absolute path, got \"sys/fs/bpf\""},
    {"pin root /",
     NodeField::PinRoot,
     {},
     with([](Settings &s) { s.pin_root = "//"; }),
     "must be a directory below \"/\" (normally on bpffs, e.g. " + std::string(kDefaultPinRoot) + ")"},
    {"pin root climbing out",
     NodeField::PinRoot,
     {},
     with([](Settings &s) { s.pin_root = "/sys/fs/bpf/../x"; }),
     "must not contain \"..\", got \"/sys/fs/bpf/../x\""},
    {"relative control socket",
     NodeField::ControlSocket,
     {},
     with([](Settings &s) { s.control_socket = "run/bpfnet.sock"; }),
     "must be the absolute path of a socket file, got \"run/bpfnet.sock\""},
    {"control socket over sun_path",
     NodeField::ControlSocket,
     {},
     with([](Settings &s) { s.control_socket = kLongSocket; }),
     "must be at most 107 bytes long (a Unix socket path), got 108"},
};

TEST(NodeSettingsBothModes, TheGoodSettingsAreTakenByBoth) {
    const Settings dual = with([](Settings &s) {
        s.subnet_v6 = "fd00:1::/64";
        s.relays = {"198.18.0.1", "fd00:1::fe"};
        s.router_advertisements = true;
        s.ra_interval = "30";
        s.pin_root = "/sys/fs/bpf/x/";
        s.control_socket = "/run/bpfnet/x.sock";
    });
    for (const Settings &s : {Settings{}, dual}) {
        EXPECT_EQ(config_refusal(s).second, "") << config_file(s);
        EXPECT_EQ(flags_refusal(s), "");
    }
}

TEST(NodeSettingsBothModes, BothRefuseEachRowInTheSameWords) {
    for (const Row &row : kBadNodeSettings) {
        SCOPED_TRACE(row.what);
        const auto [path, config_words] = config_refusal(row.settings);
        const std::string key = kConfigKeys.at(row.field);
        EXPECT_EQ(path, row.index ? key + "[" + std::to_string(*row.index) + "]" : key) << config_file(row.settings);
        EXPECT_EQ(config_words, spelled(row.detail, kConfigKeys));
        EXPECT_EQ(flags_refusal(row.settings), kFlags.at(row.field) + ": " + spelled(row.detail, kFlags));
    }
}

/* ---- what a reload may change ---- */

NodeSettings running_node() {
    NodeSettings node;
    node.interface = "prov0";
    node.subnet_be = htonl(0xc6120000); // 198.18.0.0/24
    node.prefix_len = 24;
    return node;
}

// A reload takes every setting but the attachment: compared whole, so that a setting added later is
// reloadable unless it is named part of the attachment.
TEST(NodeSettingsReload, AReloadKeepsTheAttachmentAndTakesEverythingElse) {
    const NodeSettings running = running_node();
    NodeSettings next = running;
    next.interface = "prov1";
    next.pin_root = "/sys/fs/bpf/other";
    next.control_socket = "/run/other.sock";
    next.xdp_mode = XdpMode::Generic;
    next.tc_attach = TcAttach::Clsact;
    next.redirect_peer = RedirectPeer::Off;
    next.subnet_be = htonl(0xc6130000);
    next.prefix_len = 16;
    next.heartbeat_interval = std::chrono::milliseconds(250);
    next.dhcp_relays = {ip("198.19.0.1")};
    next.router_advertisements = true;

    NodeSettings want = next;
    want.interface = running.interface;
    want.pin_root = running.pin_root;
    want.control_socket = running.control_socket;
    want.xdp_mode = running.xdp_mode;
    want.tc_attach = running.tc_attach;
    want.redirect_peer = running.redirect_peer;
    EXPECT_EQ(reloaded(running, next), want);
    EXPECT_TRUE(same_attachment(reloaded(running, next), running));
}

TEST(NodeSettingsReload, EachAttachmentSettingCountsAndNothingElse) {
    const NodeSettings running = running_node();
    const std::vector<void (*)(NodeSettings &)> attachment = {
        [](NodeSettings &n) { n.interface = "prov1"; },
        [](NodeSettings &n) { n.pin_root = "/sys/fs/bpf/other"; },
        [](NodeSettings &n) { n.control_socket = "/run/other.sock"; },
        [](NodeSettings &n) { n.xdp_mode = XdpMode::Native; },
        [](NodeSettings &n) { n.tc_attach = TcAttach::Tcx; },
        [](NodeSettings &n) { n.redirect_peer = RedirectPeer::Off; },
    };
    for (size_t i = 0; i < attachment.size(); i++) {
        NodeSettings changed = running;
        attachment[i](changed);
        EXPECT_FALSE(same_attachment(running, changed)) << "attachment setting " << i;
    }
    NodeSettings tuned = running;
    tuned.garp_count = 7;
    tuned.ra_interval = std::chrono::seconds(30);
    tuned.dhcp_max_hops = 2;
    EXPECT_TRUE(same_attachment(running, tuned));
}

} // namespace
