/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the standalone config file: one full config parsed to the exact struct, defaults, and
 * one test per validation rule checking that the error names the offending field.
 */
#include "standalone/config.hpp"

#include <arpa/inet.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include <gtest/gtest.h>

namespace bpfnet {

/* Readable gtest output when a parsed config differs from the expected one. */
void PrintTo(const PortRule &rule, std::ostream *os) {
    *os << "{" << rule.name << " " << to_string(rule.protocol) << " " << rule.port << "->" << rule.target_port << " "
        << to_string(rule.kind) << "}";
}

void PrintTo(const Config &c, std::ostream *os) {
    *os << "{interface=" << c.interface << " serviceIP=" << format_ipv4(c.service_ip_be)
        << " subnet=" << format_ipv4(c.subnet_be) << "/" << unsigned{c.prefix_len} << " pinRoot=" << c.pin_root
        << " xdpMode=" << to_string(c.xdp_mode) << " heartbeat=" << c.heartbeat_interval.count() << "/"
        << c.heartbeat_timeout.count() << "ms garp=" << c.garp_count << "x" << c.garp_interval.count() << "ms ports=[";
    for (const PortRule &rule : c.ports)
        PrintTo(rule, os);
    *os << "] backend=";
    if (c.backend)
        *os << format_ipv4(c.backend->ip_be) << " veth=" << (c.backend->veth.empty() ? "auto" : c.backend->veth);
    else
        *os << "none";
    *os << "}";
}

namespace {

constexpr const char *kSource = "bpfnet.yaml";

uint32_t ip(const char *text) {
    in_addr addr{};
    EXPECT_EQ(inet_pton(AF_INET, text, &addr), 1) << text;
    return addr.s_addr;
}

// A backend pod at an IPv4 address, here, its veth found by the loader.
bpfnet::Backend backend_at(uint32_t ip_be) {
    bpfnet::Backend backend;
    backend.ip_be = ip_be;
    return backend;
}

Config parse(const std::string &yaml) {
    return parse_config(yaml, kSource);
}

/* The three required scalars, so a test can break exactly one of them. */
std::string head(std::string_view interface, std::string_view service_ip, std::string_view subnet) {
    return "interface: " + std::string(interface) + "\nserviceIP: " + std::string(service_ip) +
           "\nsubnet: " + std::string(subnet) + "\n";
}

const std::string kHead = head("prov0", "198.18.0.2", "198.18.0.0/24");
const std::string kOnePort = "ports:\n  - {name: ironic-api, protocol: tcp, port: 6385}\n";

/* A valid minimal config plus extra top-level sections. */
std::string minimal_with(std::string_view extra) {
    return kHead + kOnePort + std::string(extra);
}

/* A valid head with the given port list entries (YAML list items, indented by two). */
std::string with_ports(std::string_view items) {
    return kHead + "ports:\n" + std::string(items);
}

/* The config must be refused with an error on `field` whose message contains `fragment`. */
testing::AssertionResult Rejected(const std::string &yaml, std::string_view field, std::string_view fragment) {
    try {
        const Config config = parse(yaml);
        return testing::AssertionFailure() << "accepted:\n" << yaml << "\nas " << testing::PrintToString(config);
    } catch (const ConfigError &e) {
        const std::string message = e.what();
        if (e.field() != field)
            return testing::AssertionFailure()
                   << "error names field \"" << e.field() << "\", want \"" << field << "\": " << message;
        if (message.find(field) == std::string::npos || message.find(fragment) == std::string::npos)
            return testing::AssertionFailure()
                   << "message \"" << message << "\" lacks \"" << field << "\" or \"" << fragment << "\"";
        return testing::AssertionSuccess();
    }
}

std::string error_message(const std::string &yaml) {
    try {
        parse(yaml);
    } catch (const ConfigError &e) {
        return e.what();
    }
    ADD_FAILURE() << "accepted:\n" << yaml;
    return "";
}

/* tests/unit/ -> the repository root; __FILE__ is absolute under CMake, relative to the root by hand. */
std::filesystem::path source_root() {
    return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

std::string read_text(const std::filesystem::path &path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

/* ---- accepted configs ---- */

TEST(ConfigParse, FullConfigParsesToExpectedStruct) {
    const Config config = parse(R"(
interface: prov0
serviceIP: 198.18.0.2
subnet: 198.18.0.0/24
pinRoot: /sys/fs/bpf/test/
xdpMode: generic
heartbeat:
  intervalMs: 500
  timeoutMs: 2000
gratuitousARP:
  count: 5
  intervalMs: 100
ports:
  - name: ironic-api
    protocol: tcp
    port: 6385
  - name: images-tls
    protocol: tcp
    port: 443
    targetPort: 6183
  - name: dhcp
    protocol: udp
    port: 67
    kind: dhcp
  - name: tftp
    protocol: udp
    port: 69
    kind: tftp
backend:
  ip: 10.244.1.7
  veth: cali12345
)");

    Config want;
    want.interface = "prov0";
    want.service_ip_be = ip("198.18.0.2");
    want.subnet_be = ip("198.18.0.0");
    want.prefix_len = 24;
    want.pin_root = "/sys/fs/bpf/test"; /* trailing '/' dropped */
    want.xdp_mode = XdpMode::Generic;
    want.heartbeat_interval = std::chrono::milliseconds(500);
    want.heartbeat_timeout = std::chrono::milliseconds(2000);
    want.garp_count = 5;
    want.garp_interval = std::chrono::milliseconds(100);
    want.ports = {
        {"ironic-api", Protocol::Tcp, 6385, 6385, PortKind::Plain},
        {"images-tls", Protocol::Tcp, 443, 6183, PortKind::Plain},
        {"dhcp", Protocol::Udp, 67, 67, PortKind::Dhcp},
        {"tftp", Protocol::Udp, 69, 69, PortKind::Tftp},
    };
    want.backend = Backend{};
    want.backend->ip_be = ip("10.244.1.7");
    want.backend->veth = "cali12345";
    EXPECT_EQ(config, want);
    EXPECT_EQ(config.pin_dir(), "/sys/fs/bpf/test/prov0");
}

// bpffs refuses names with a dot, and VLAN sub-interfaces are named prov0.100: the pin directory writes the
// dot as ':', which no interface name holds, so the loader and bpfnetctl agree and no two interfaces collide.
TEST(ConfigParse, VlanInterfacePinsWithoutDots) {
    Config config = parse(minimal_with(""));
    config.interface = "prov0.100";
    EXPECT_EQ(config.pin_dir(), BPFNET_DEFAULT_PIN_ROOT "/prov0:100");
    EXPECT_EQ(interface_pin_dir("/sys/fs/bpf/x", "bond0.4.12"), "/sys/fs/bpf/x/bond0:4:12");
    EXPECT_NE(interface_pin_dir("/r", "prov0.100"), interface_pin_dir("/r", "prov0_100"));
}

TEST(ConfigParse, MinimalConfigGetsDefaults) {
    const Config config = parse(minimal_with(""));

    EXPECT_EQ(config.pin_root, BPFNET_DEFAULT_PIN_ROOT);
    EXPECT_EQ(config.pin_dir(), BPFNET_DEFAULT_PIN_ROOT "/prov0");
    EXPECT_EQ(config.xdp_mode, XdpMode::Auto);
    EXPECT_EQ(config.tc_attach, TcAttach::Auto);
    EXPECT_EQ(config.redirect_peer, RedirectPeer::Auto);
    EXPECT_EQ(config.heartbeat_interval, std::chrono::milliseconds(1000));
    EXPECT_EQ(config.heartbeat_timeout, std::chrono::milliseconds(5000));
    EXPECT_EQ(config.garp_count, 3u);
    EXPECT_EQ(config.garp_interval, std::chrono::milliseconds(200));
    ASSERT_EQ(config.ports.size(), 1u);
    EXPECT_EQ(config.ports[0], (PortRule{"ironic-api", Protocol::Tcp, 6385, 6385, PortKind::Plain}));
    EXPECT_FALSE(config.backend.has_value());
}

TEST(ConfigParse, EmptySectionsAndAutoVethMeanDefaults) {
    const Config config = parse(minimal_with("heartbeat:\ngratuitousARP:\nbackend:\n"));
    EXPECT_EQ(config, parse(minimal_with("")));

    const Config with_backend = parse(minimal_with("backend:\n  ip: 10.244.0.9\n  veth: auto\n"));
    EXPECT_EQ(with_backend.backend, (backend_at(ip("10.244.0.9"))));
}

TEST(ConfigParse, SamePortOnTcpAndUdpIsAllowed) {
    const Config config = parse(with_ports("  - {name: a, protocol: tcp, port: 53}\n"
                                           "  - {name: b, protocol: udp, port: 53}\n"));
    EXPECT_EQ(config.ports.size(), 2u);
}

TEST(ConfigParse, SubnetMaskAndHelpers) {
    const Config config = parse(head("prov0", "10.1.2.3", "10.0.0.0/8") + kOnePort);
    EXPECT_EQ(config.subnet_mask_be(), ip("255.0.0.0"));
    EXPECT_EQ(parse(minimal_with("")).subnet_mask_be(), ip("255.255.255.0"));

    EXPECT_EQ(format_ipv4(ip("198.18.0.2")), "198.18.0.2");
    EXPECT_EQ(to_string(Protocol::Tcp), "tcp");
    EXPECT_EQ(to_string(Protocol::Udp), "udp");
    EXPECT_EQ(to_string(PortKind::Plain), "plain");
    EXPECT_EQ(to_string(PortKind::Tftp), "tftp");
    EXPECT_EQ(to_string(PortKind::Dhcp), "dhcp");
    EXPECT_EQ(to_string(XdpMode::Generic), "generic");
}

/* The shipped example and the complete examples in the docs must stay valid. */
TEST(ConfigParse, ExampleConfigAndDocExamplesParse) {
    const auto example = source_root() / "standalone/example-config.yaml";
    const auto docs = source_root() / "docs/config.md";
    if (!std::filesystem::exists(example) || !std::filesystem::exists(docs))
        GTEST_SKIP() << "sources not found from " << __FILE__;

    EXPECT_NO_THROW(load_config_file(example.string()));

    /* Every ```yaml block that starts with "interface:" is a complete config. */
    const std::string text = read_text(docs);
    const std::string fence = "```yaml\n";
    int complete = 0;
    for (size_t start = text.find(fence); start != std::string::npos; start = text.find(fence, start)) {
        start += fence.size();
        const std::string block = text.substr(start, text.find("```", start) - start);
        if (block.starts_with("interface:")) {
            complete++;
            EXPECT_NO_THROW(parse(block)) << block;
        }
    }
    EXPECT_GE(complete, 2);
}

/* ---- error reporting ---- */

TEST(ConfigErrors, MessageNamesSourceLineAndField) {
    EXPECT_EQ(error_message(kHead + "ports:\n"
                                    "  - {name: api, protocol: tcp, port: 6385}\n"
                                    "  - name: images\n"
                                    "    port: 70000\n"
                                    "    protocol: tcp\n"),
              "bpfnet.yaml:7: ports[1].port: must be between 1 and 65535, got 70000");
}

TEST(ConfigErrors, YamlSyntaxErrorHasLine) {
    try {
        parse(kHead + "ports: [\n  {name: a\n");
        FAIL() << "accepted";
    } catch (const ConfigError &e) {
        EXPECT_TRUE(e.line().has_value());
        EXPECT_TRUE(std::string(e.what()).starts_with("bpfnet.yaml:")) << e.what();
        EXPECT_NE(std::string(e.what()).find("invalid YAML"), std::string::npos) << e.what();
    }
    EXPECT_EQ(error_message("interface: prov0\n  serviceIP: 198.18.0.2\n").substr(0, 14), "bpfnet.yaml:2:");
}

TEST(ConfigErrors, EmptyOrMultiDocumentFileIsRejected) {
    EXPECT_EQ(error_message(""), "bpfnet.yaml: the config is empty");
    EXPECT_EQ(error_message("# only a comment\n"), "bpfnet.yaml: the config is empty");
    EXPECT_NE(error_message(minimal_with("---\ninterface: prov1\n")).find("one YAML document"), std::string::npos);
    EXPECT_NE(error_message("- a\n- b\n").find("must be a mapping, got a list"), std::string::npos);
}

// yaml-cpp 0.7 loops forever on a token that cannot begin a node at a document's top level (a ',' found by
// tests/libfuzz/fuzz_config, a '?' after two scalars by fuzz_kubeconfig): such a file is refused before it is
// loaded, in every document, whatever the top-level node is, with the line yaml-cpp stopped on.
TEST(ConfigErrors, CommaAtTheTopLevelIsRefusedNotLooped) {
    for (const std::string text : {",", "\n,\n", "\"a\" ,", "&x ,", "!t ,", "--- ,", "interface: prov0\n--- ,"})
        EXPECT_NE(error_message(text).find("invalid YAML: a ',' outside any sequence or map"), std::string::npos)
            << text;
    EXPECT_EQ(error_message("\n,\n"), "bpfnet.yaml:2: invalid YAML: a ',' outside any sequence or map");
    EXPECT_EQ(error_message("\"a\" x\n\n?\n"), "bpfnet.yaml:3: invalid YAML: a '?' outside any sequence or map");
    EXPECT_NE(error_message("\"cluster\" s\n?\n\xf7\ns:\"").find("a '?' outside any sequence or map"),
              std::string::npos);
    // A ',' in a flow collection, or where yaml-cpp itself refuses it, is what it always was.
    EXPECT_EQ(
        parse(kHead + "ports: [{name: a, protocol: tcp, port: 1}, {name: b, protocol: tcp, port: 2}]\n").ports.size(),
        2u);
    EXPECT_NE(error_message("interface:\n  ,\n").find("invalid YAML"), std::string::npos);
}

TEST(ConfigErrors, UnknownFieldIsRejectedAtEveryLevel) {
    EXPECT_TRUE(Rejected(minimal_with("serviceIp: 198.18.0.3\n"), "serviceIp", "unknown field"));
    EXPECT_TRUE(Rejected(minimal_with("heartbeat:\n  intervalMS: 500\n"), "heartbeat.intervalMS", "unknown field"));
    EXPECT_TRUE(Rejected(minimal_with("gratuitousARP:\n  cnt: 1\n"), "gratuitousARP.cnt", "unknown field"));
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, protocol: tcp, port: 1, target: 2}\n"), "ports[0].target",
                         "expected one of: name, protocol, port, targetPort, kind"));
    EXPECT_TRUE(Rejected(minimal_with("backend:\n  ip: 10.0.0.1\n  vteh: auto\n"), "backend.vteh", "unknown field"));
}

TEST(ConfigErrors, DuplicateKeyIsRejected) {
    EXPECT_TRUE(
        Rejected(kHead + "interface: prov1\n" + kOnePort, "interface", "given more than once (first on line 1)"));
}

TEST(ConfigErrors, WrongTypesAreRejected) {
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, protocol: tcp, port: \"6385\"}\n"), "ports[0].port",
                         "must be an integer between 1 and 65535, got the string \"6385\""));
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, protocol: tcp, port: !!str 6385}\n"), "ports[0].port",
                         "got the string \"6385\""));
    EXPECT_TRUE(
        Rejected(with_ports("  - {name: a, protocol: tcp, port: 0x10}\n"), "ports[0].port", "must be an integer"));
    EXPECT_TRUE(
        Rejected(with_ports("  - {name: a, protocol: tcp, port: 80.5}\n"), "ports[0].port", "must be an integer"));
    EXPECT_TRUE(
        Rejected(with_ports("  - {name: a, protocol: tcp, port: 080}\n"), "ports[0].port", "must be an integer"));
    EXPECT_TRUE(Rejected(head("[prov0]", "198.18.0.2", "198.18.0.0/24") + kOnePort, "interface",
                         "must be a string, got a list"));
    EXPECT_TRUE(Rejected(kHead + "ports:\n  name: a\n", "ports", "must be a list of ports, got a mapping"));
    EXPECT_TRUE(Rejected(kHead + "ports:\n  - ironic-api\n", "ports[0]", "must be a mapping"));
    EXPECT_TRUE(Rejected(minimal_with("heartbeat: 1000\n"), "heartbeat", "must be a mapping"));
}

/* ---- top-level fields ---- */

TEST(ConfigValidation, RequiredFieldsAreNamed) {
    EXPECT_TRUE(Rejected("serviceIP: 198.18.0.2\nsubnet: 198.18.0.0/24\n" + kOnePort, "interface", "is required"));
    EXPECT_TRUE(Rejected("interface: prov0\nsubnet: 198.18.0.0/24\n" + kOnePort, "serviceIP", "is required"));
    EXPECT_TRUE(Rejected("interface: prov0\nserviceIP: 198.18.0.2\n" + kOnePort, "subnet", "is required"));
    EXPECT_TRUE(Rejected(kHead, "ports", "is required"));
    EXPECT_TRUE(Rejected(with_ports("  - {protocol: tcp, port: 1}\n"), "ports[0].name", "is required"));
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, port: 1}\n"), "ports[0].protocol", "is required"));
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, protocol: tcp}\n"), "ports[0].port", "is required"));
}

TEST(ConfigValidation, InterfaceMustBeAKernelInterfaceName) {
    for (const char *bad : {"prov0123456789ab", "a/b", "\"a b\"", "\"\"", "..", "eth0:1"})
        EXPECT_TRUE(
            Rejected(head(bad, "198.18.0.2", "198.18.0.0/24") + kOnePort, "interface", "is not a valid interface name"))
            << bad;
    EXPECT_EQ(parse(head("prov012345678ab", "198.18.0.2", "198.18.0.0/24") + kOnePort).interface, "prov012345678ab");
}

TEST(ConfigValidation, AddressesMustBeDottedQuads) {
    for (const char *bad : {"198.18.0.256", "198.18.2", "198.018.0.2", "fd00::2", "prov"})
        EXPECT_TRUE(Rejected(head("prov0", bad, "198.18.0.0/24") + kOnePort, "serviceIP", "must be an IPv4 address"))
            << bad;
}

TEST(ConfigValidation, SubnetMustBeACidr) {
    for (const char *bad : {"198.18.0.0", "198.18.0.0/", "198.18.0.0/x", "198.18.0.0/024", "/24"})
        EXPECT_TRUE(Rejected(head("prov0", "198.18.0.2", bad) + kOnePort, "subnet", "must be a CIDR")) << bad;
}

TEST(ConfigValidation, SubnetPrefixMustBeBetween8And30) {
    EXPECT_TRUE(Rejected(head("prov0", "198.18.0.2", "198.18.0.0/31") + kOnePort, "subnet",
                         "prefix length must be between 8 and 30, got 31"));
    EXPECT_TRUE(Rejected(head("prov0", "10.0.0.2", "10.0.0.0/7") + kOnePort, "subnet", "got 7"));
}

TEST(ConfigValidation, SubnetHostBitsMustBeZero) {
    EXPECT_TRUE(Rejected(head("prov0", "198.18.0.2", "198.18.0.1/24") + kOnePort, "subnet",
                         "has host bits set: \"198.18.0.1/24\"; did you mean 198.18.0.0/24?"));
}

TEST(ConfigValidation, SourceRangesAreCidrsWithoutHostBits) {
    const Config config = parse(minimal_with("sourceRanges: [198.18.0.0/28, 0.0.0.0/0, 10.1.2.3/32]\n"));
    const std::vector<SourceRange> want = {
        {*parse_ip("198.18.0.0"), 28}, {*parse_ip("0.0.0.0"), 0}, {*parse_ip("10.1.2.3"), 32}};
    EXPECT_EQ(config.source_ranges, want);
    EXPECT_EQ(service_specs(config, std::nullopt).at(0).source_ranges, want);
    EXPECT_TRUE(parse(minimal_with("")).source_ranges.empty());
    EXPECT_TRUE(Rejected(minimal_with("sourceRanges: [198.18.0.1/24]\n"), "sourceRanges[0]",
                         "has host bits set: \"198.18.0.1/24\"; did you mean 198.18.0.0/24?"));
    EXPECT_TRUE(
        Rejected(minimal_with("sourceRanges: [10.0.0.0/8, 198.18.0.0/33]\n"), "sourceRanges[1]", "must be a CIDR"));
    EXPECT_TRUE(Rejected(minimal_with("sourceRanges: [10.0.0.0/8, 10.0.0.0/8]\n"), "sourceRanges[1]",
                         "lists 10.0.0.0/8 twice"));
    EXPECT_TRUE(Rejected(minimal_with("sourceRanges: 10.0.0.0/8\n"), "sourceRanges", "must be a list of CIDRs"));
    EXPECT_TRUE(Rejected(minimal_with("sourceRanges: [10.0.0.0/8, 'fd00:1::/64']\n"), "sourceRanges[1]",
                         "fd00:1::/64 is IPv6 but there is no serviceIPv6"));
}

TEST(ConfigValidation, ServiceIPMustBeInsideSubnet) {
    EXPECT_TRUE(Rejected(head("prov0", "198.18.1.2", "198.18.0.0/24") + kOnePort, "serviceIP",
                         "198.18.1.2 is not inside subnet 198.18.0.0/24"));
}

TEST(ConfigValidation, ServiceIPMustNotBeNetworkOrBroadcastAddress) {
    EXPECT_TRUE(
        Rejected(head("prov0", "198.18.0.0", "198.18.0.0/24") + kOnePort, "serviceIP", "is the network address"));
    EXPECT_TRUE(
        Rejected(head("prov0", "198.18.0.255", "198.18.0.0/24") + kOnePort, "serviceIP", "is the broadcast address"));
    EXPECT_TRUE(Rejected(head("prov0", "127.0.0.2", "127.0.0.0/8") + kOnePort, "serviceIP", "a loopback address"));
}

TEST(ConfigValidation, PinRootMustBeAbsolute) {
    EXPECT_TRUE(Rejected(minimal_with("pinRoot: sys/fs/bpf\n"), "pinRoot", "must be an absolute path"));
    EXPECT_TRUE(Rejected(minimal_with("pinRoot: /\n"), "pinRoot", "below \"/\""));
    EXPECT_TRUE(Rejected(minimal_with("pinRoot: /sys/fs/bpf/../x\n"), "pinRoot", "must not contain \"..\""));
}

TEST(ConfigValidation, XdpModeMustBeAutoNativeOrGeneric) {
    EXPECT_TRUE(Rejected(minimal_with("xdpMode: offload\n"), "xdpMode",
                         "must be one of: auto, native, generic; got \"offload\""));
}

TEST(ConfigValidation, KernelDependentChoicesTakeTheirSpellingsOnly) {
    EXPECT_EQ(parse(minimal_with("tcAttach: clsact\n")).tc_attach, TcAttach::Clsact);
    EXPECT_EQ(parse(minimal_with("tcAttach: tcx\n")).tc_attach, TcAttach::Tcx);
    EXPECT_EQ(parse(minimal_with("redirectPeer: off\n")).redirect_peer, RedirectPeer::Off);
    EXPECT_EQ(parse(minimal_with("xdpMode: generic\n")).xdp_mode, XdpMode::Generic);
    EXPECT_TRUE(Rejected(minimal_with("tcAttach: ingress\n"), "tcAttach",
                         "must be one of: auto, tcx, clsact; got \"ingress\""));
    EXPECT_TRUE(Rejected(minimal_with("redirectPeer: on\n"), "redirectPeer", "must be one of: auto, off; got \"on\""));
    // The command-line flags take the same spellings.
    EXPECT_EQ(parse_tc_attach("tcx"), TcAttach::Tcx);
    EXPECT_EQ(parse_tc_attach("TCX"), std::nullopt);
    EXPECT_EQ(parse_xdp_mode("auto"), XdpMode::Auto);
    EXPECT_EQ(parse_redirect_peer("off"), RedirectPeer::Off);
}

TEST(ConfigValidation, HeartbeatIntervalRange) {
    EXPECT_TRUE(Rejected(minimal_with("heartbeat:\n  intervalMs: 99\n"), "heartbeat.intervalMs",
                         "must be between 100 and 60000, got 99"));
    EXPECT_TRUE(Rejected(minimal_with("heartbeat:\n  intervalMs: 60001\n  timeoutMs: 600000\n"), "heartbeat.intervalMs",
                         "got 60001"));
}

TEST(ConfigValidation, HeartbeatTimeoutAtLeastTwiceIntervalAndAtMost600000) {
    EXPECT_TRUE(Rejected(minimal_with("heartbeat:\n  intervalMs: 1000\n  timeoutMs: 1999\n"), "heartbeat.timeoutMs",
                         "must be at least twice heartbeat.intervalMs (2000), got 1999"));
    /* A long interval with the default timeout must name the defaulted field, not pass silently. */
    EXPECT_TRUE(Rejected(minimal_with("heartbeat:\n  intervalMs: 3000\n"), "heartbeat.timeoutMs",
                         "the default 5000 is too short"));
    EXPECT_TRUE(Rejected(minimal_with("heartbeat:\n  timeoutMs: 600001\n"), "heartbeat.timeoutMs",
                         "must be between 1 and 600000, got 600001"));
    EXPECT_EQ(parse(minimal_with("heartbeat:\n  intervalMs: 1000\n  timeoutMs: 2000\n")).heartbeat_timeout,
              std::chrono::milliseconds(2000));
}

TEST(ConfigValidation, GratuitousArpRanges) {
    EXPECT_TRUE(Rejected(minimal_with("gratuitousARP:\n  count: 21\n"), "gratuitousARP.count",
                         "must be between 0 and 20, got 21"));
    EXPECT_TRUE(Rejected(minimal_with("gratuitousARP:\n  count: -1\n"), "gratuitousARP.count", "got -1"));
    EXPECT_TRUE(Rejected(minimal_with("gratuitousARP:\n  intervalMs: 9\n"), "gratuitousARP.intervalMs",
                         "must be between 10 and 10000, got 9"));
    EXPECT_EQ(parse(minimal_with("gratuitousARP:\n  count: 0\n")).garp_count, 0u);
}

TEST(ConfigValidation, DhcpRelaysAreHostsOnTheProvisioningSubnet) {
    EXPECT_TRUE(parse(minimal_with("")).dhcp_relays.empty()) << "no relay is trusted by default";
    EXPECT_EQ(parse(minimal_with("dhcpRelay:\n  relays: [198.18.0.1, 198.18.0.254]\n")).dhcp_relays,
              (std::vector<bpfnet_ip>{ip_from_v4(ip("198.18.0.1")), ip_from_v4(ip("198.18.0.254"))}));
    EXPECT_TRUE(Rejected(minimal_with("dhcpRelay:\n  relays: [203.0.113.1]\n"), "dhcpRelay.relays[0]",
                         "203.0.113.1 is not inside subnet 198.18.0.0/24"));
    EXPECT_TRUE(Rejected(minimal_with("dhcpRelay:\n  relays: [198.18.0.1, 198.18.0.255]\n"), "dhcpRelay.relays[1]",
                         "is the broadcast address of subnet 198.18.0.0/24"));
    EXPECT_TRUE(
        Rejected(minimal_with("dhcpRelay:\n  relays: [198.18.0.2]\n"), "dhcpRelay.relays[0]", "is the service IP"));
    EXPECT_TRUE(Rejected(minimal_with("dhcpRelay:\n  relays: [198.18.0.1, 198.18.0.1]\n"), "dhcpRelay.relays[1]",
                         "listed twice"));
    EXPECT_TRUE(Rejected(minimal_with("dhcpRelay:\n  relays: 198.18.0.1\n"), "dhcpRelay.relays",
                         "must be a list of relay agent addresses"));
    std::string many = "dhcpRelay:\n  relays: [";
    for (int i = 1; i <= BPFNET_MAX_DHCP_RELAYS + 1; i++)
        many += (i > 1 ? ", 198.18.0." : "198.18.0.") + std::to_string(i + 2);
    EXPECT_TRUE(Rejected(minimal_with(many + "]\n"), "dhcpRelay.relays", "at most 16 relays, got 17"));
}

/* ---- ports ---- */

TEST(ConfigValidation, PortsMustListOneToMaxServices) {
    EXPECT_TRUE(Rejected(kHead + "ports: []\n", "ports", "must list at least one port"));

    std::string many = "ports:\n";
    for (int i = 1; i <= BPFNET_MAX_SERVICES + 1; i++)
        many += "  - {name: p" + std::to_string(i) + ", protocol: tcp, port: " + std::to_string(i) + "}\n";
    EXPECT_TRUE(Rejected(kHead + many, "ports", "must list at most 256 ports, got 257"));
}

TEST(ConfigValidation, PortNameCharsetAndLength) {
    for (const char *bad : {"Ironic", "ironic_api", "\"\"", "a.b"})
        EXPECT_TRUE(Rejected(with_ports("  - {name: " + std::string(bad) + ", protocol: tcp, port: 1}\n"),
                             "ports[0].name", "characters of a-z, 0-9 and '-'"))
            << bad;
    const std::string name63(63, 'a');
    EXPECT_EQ(parse(with_ports("  - {name: " + name63 + ", protocol: tcp, port: 1}\n")).ports[0].name, name63);
    EXPECT_TRUE(Rejected(with_ports("  - {name: " + name63 + "a, protocol: tcp, port: 1}\n"), "ports[0].name",
                         "1 to 63 characters"));
}

TEST(ConfigValidation, PortNamesAreUnique) {
    EXPECT_TRUE(Rejected(with_ports("  - {name: api, protocol: tcp, port: 1}\n"
                                    "  - {name: api, protocol: tcp, port: 2}\n"),
                         "ports[1].name", "name \"api\" is already used by ports[0]"));
}

TEST(ConfigValidation, ProtocolMustBeTcpOrUdp) {
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, protocol: sctp, port: 1}\n"), "ports[0].protocol",
                         "must be one of: tcp, udp; got \"sctp\""));
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, protocol: TCP, port: 1}\n"), "ports[0].protocol", "got \"TCP\""));
}

TEST(ConfigValidation, PortAndTargetPortRange) {
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, protocol: tcp, port: 0}\n"), "ports[0].port",
                         "must be between 1 and 65535, got 0"));
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, protocol: tcp, port: 1, targetPort: 65536}\n"),
                         "ports[0].targetPort", "must be between 1 and 65535, got 65536"));
}

TEST(ConfigValidation, KindMustBeKnown) {
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, protocol: udp, port: 1, kind: dns}\n"), "ports[0].kind",
                         "must be one of: plain, tftp, dhcp, dhcpv6; got \"dns\""));
}

TEST(ConfigValidation, TftpAndDhcpRequireUdp) {
    EXPECT_TRUE(Rejected(with_ports("  - {name: tftp, protocol: tcp, port: 69, kind: tftp}\n"), "ports[0].kind",
                         "tftp requires protocol udp, got tcp"));
    EXPECT_TRUE(Rejected(with_ports("  - {name: dhcp, protocol: tcp, port: 67, kind: dhcp}\n"), "ports[0].kind",
                         "dhcp requires protocol udp, got tcp"));
}

TEST(ConfigValidation, DhcpRequiresPort67) {
    EXPECT_TRUE(Rejected(with_ports("  - {name: dhcp, protocol: udp, port: 68, kind: dhcp}\n"), "ports[0].kind",
                         "dhcp requires port 67, got 68"));
}

TEST(ConfigValidation, DuplicateProtocolAndPortIsRejected) {
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, protocol: tcp, port: 80, targetPort: 8080}\n"
                                    "  - {name: b, protocol: tcp, port: 80, targetPort: 8081}\n"),
                         "ports[1].port", "tcp port 80 is already used by ports[0]"));
}

TEST(ConfigValidation, DuplicateProtocolAndTargetPortIsRejected) {
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, protocol: udp, port: 80, targetPort: 8080}\n"
                                    "  - {name: b, protocol: udp, port: 81, targetPort: 8080}\n"),
                         "ports[1].targetPort", "udp targetPort 8080 is already used by ports[0]"));
    /* A defaulted targetPort collides too, and the message says where the value came from. */
    EXPECT_TRUE(Rejected(with_ports("  - {name: a, protocol: tcp, port: 80, targetPort: 8080}\n"
                                    "  - {name: b, protocol: tcp, port: 8080}\n"),
                         "ports[1].targetPort", "(defaulted from port)"));
}

/* ---- backend ---- */

TEST(ConfigValidation, BackendIpIsRequiredAndMustBeUnicast) {
    EXPECT_TRUE(Rejected(minimal_with("backend:\n  veth: auto\n"), "backend.ip", "is required"));
    EXPECT_TRUE(Rejected(minimal_with("backend:\n  ip: 224.0.0.5\n"), "backend.ip", "a multicast address"));
    EXPECT_TRUE(Rejected(minimal_with("backend:\n  ip: pod\n"), "backend.ip", "must be an IPv4 address"));
}

TEST(ConfigValidation, BackendIpMustNotBeTheServiceIP) {
    EXPECT_TRUE(Rejected(minimal_with("backend:\n  ip: 198.18.0.2\n"), "backend.ip", "must not be the service IP"));
}

TEST(ConfigValidation, BackendIpMustNotBeInsideTheProvisioningSubnet) {
    EXPECT_TRUE(Rejected(minimal_with("backend:\n  ip: 198.18.0.9\n"), "backend.ip",
                         "198.18.0.9 is inside subnet 198.18.0.0/24"));
}

TEST(ConfigValidation, BackendVethMustBeAnInterfaceName) {
    EXPECT_TRUE(Rejected(minimal_with("backend:\n  ip: 10.244.0.9\n  veth: a/b\n"), "backend.veth",
                         "is not a valid interface name"));
    EXPECT_TRUE(Rejected(minimal_with("backend:\n  ip: 10.244.0.9\n  veth: prov0\n"), "backend.veth",
                         "not the provisioning interface"));
}

TEST(ConfigValidation, BackendDeliveryIsAutoOrRoute) {
    EXPECT_EQ(parse(minimal_with("backend:\n  ip: 10.244.0.9\n")).backend->delivery, PodDelivery::Auto);
    EXPECT_EQ(parse(minimal_with("backend:\n  ip: 10.244.0.9\n  delivery: route\n")).backend->delivery,
              PodDelivery::Route);
    EXPECT_TRUE(Rejected(minimal_with("backend:\n  ip: 10.244.0.9\n  delivery: peer\n"), "backend.delivery",
                         "must be one of: auto, route; got \"peer\""));
}

/* ---- files ---- */

class ConfigFile : public testing::Test {
protected:
    void SetUp() override {
        char name[] = "/tmp/bpfnet-config-test-XXXXXX";
        const int fd = mkstemp(name);
        ASSERT_GE(fd, 0);
        close(fd);
        path_ = name;
    }
    void TearDown() override { std::filesystem::remove(path_); }

    std::string path_;
};

TEST_F(ConfigFile, LoadsFileAndNamesItInErrors) {
    std::ofstream(path_) << minimal_with("");
    EXPECT_EQ(load_config_file(path_), parse(minimal_with("")));

    std::ofstream(path_) << minimal_with("xdpMode: fast\n");
    try {
        load_config_file(path_);
        FAIL() << "accepted";
    } catch (const ConfigError &e) {
        EXPECT_EQ(std::string(e.what()), path_ + ":6: xdpMode: must be one of: auto, native, generic; got \"fast\"");
    }
}

TEST_F(ConfigFile, ReadErrorsNameThePathAndErrno) {
    const std::string missing = path_ + ".missing";
    try {
        load_config_file(missing);
        FAIL() << "accepted";
    } catch (const ConfigError &e) {
        EXPECT_EQ(std::string(e.what()), missing + ": cannot open: No such file or directory");
    }
    try {
        load_config_file("/");
        FAIL() << "accepted";
    } catch (const ConfigError &e) {
        EXPECT_EQ(std::string(e.what()), "/: cannot read: Is a directory");
    }
}

} // namespace
} // namespace bpfnet

namespace bpfnet {
namespace {

constexpr const char *kWithRelay = R"(
interface: prov0
serviceIP: 198.18.0.2
subnet: 198.18.0.0/24
dhcpRelay:
  maxHops: %s
ports:
  - {name: dhcp, protocol: udp, port: 67, kind: dhcp}
)";

std::string with_hops(const char *hops) {
    char text[512];
    std::snprintf(text, sizeof(text), kWithRelay, hops);
    return text;
}

TEST(DhcpRelayConfig, MaxHopsDefaultsToTheRfcSuggestion) {
    Config config = parse_config("interface: prov0\nserviceIP: 198.18.0.2\nsubnet: 198.18.0.0/24\nports:\n"
                                 "  - {name: dhcp, protocol: udp, port: 67, kind: dhcp}\n",
                                 "t.yaml");
    EXPECT_EQ(config.dhcp_max_hops, 4);
}

TEST(DhcpRelayConfig, MaxHopsIsRead) {
    EXPECT_EQ(parse_config(with_hops("10"), "t.yaml").dhcp_max_hops, 10);
}

TEST(DhcpRelayConfig, MaxHopsAboveTheRfcLimitIsRejected) {
    try {
        parse_config(with_hops("17"), "t.yaml");
        FAIL() << "maxHops 17 accepted";
    } catch (const ConfigError &e) {
        EXPECT_EQ(e.field(), "dhcpRelay.maxHops");
        EXPECT_NE(std::string(e.what()).find("16"), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace bpfnet

/* ---- IPv6: beside IPv4 (dual stack) or instead of it ---- */

namespace bpfnet {
namespace {

bpfnet_ip ip6(const char *text) {
    auto ip = parse_ip(text);
    EXPECT_TRUE(ip && !is_v4(*ip)) << text;
    return ip.value_or(bpfnet_ip{});
}

const std::string kPorts6 = "ports:\n  - {name: ironic-api, protocol: tcp, port: 6385}\n"
                            "  - {name: dhcp, protocol: udp, port: 67, kind: dhcp}\n"
                            "  - {name: tftp, protocol: udp, port: 69, kind: tftp}\n";
const std::string kHead6 = "interface: prov0\nserviceIPv6: fd00:1::2\nsubnetV6: fd00:1::/64\n";

TEST(ConfigIpv6, Ipv6OnlyConfigParses) {
    const Config config = parse(kHead6 + kOnePort + "backend:\n  ipv6: fd00:10:244::7\n");
    EXPECT_EQ(config.service_ip_be, 0u);
    EXPECT_EQ(config.prefix_len, 0u);
    ASSERT_TRUE(config.service_ip6);
    EXPECT_EQ(*config.service_ip6, ip6("fd00:1::2"));
    EXPECT_EQ(config.subnet6, ip6("fd00:1::"));
    EXPECT_EQ(config.prefix6_len, 64u);
    ASSERT_TRUE(config.backend);
    EXPECT_EQ(config.backend->ip_be, 0u);
    EXPECT_EQ(config.backend->ip6, ip6("fd00:10:244::7"));
}

TEST(ConfigIpv6, DualStackGivesASpecPerFamilyAndKeepsDhcpOnIpv4) {
    const Config config = parse("interface: prov0\nserviceIP: 198.18.0.2\nsubnet: 198.18.0.0/24\n"
                                "serviceIPv6: fd00:1::2\nsubnetV6: fd00:1::/64\n" +
                                kPorts6 + "backend:\n  ip: 10.244.1.7\n  ipv6: fd00:10:244::7\n");
    BackendLocation where;
    where.ifindex = 20;
    const auto specs = service_specs(config, where);
    ASSERT_EQ(specs.size(), 2u);
    EXPECT_EQ(specs[0].service_ip, ip_from_v4(ip("198.18.0.2")));
    EXPECT_EQ(specs[0].backend_ip, ip_from_v4(ip("10.244.1.7")));
    EXPECT_EQ(specs[0].ports.size(), 3u);
    EXPECT_EQ(specs[1].service_ip, ip6("fd00:1::2"));
    EXPECT_EQ(specs[1].backend_ip, ip6("fd00:10:244::7"));
    ASSERT_EQ(specs[1].ports.size(), 2u) << "IPv4's DHCP port is not an IPv6 service port";
    EXPECT_EQ(specs[1].ports[1].kind, PortKind::Tftp);
    EXPECT_EQ(specs[1].location, specs[0].location) << "one pod, one veth";

    const bpfnet_iface iface = iface_entry(config, 3, MacAddress{2, 0, 0, 0, 0, 1});
    EXPECT_EQ(iface.subnet.net, ip_from_v4(ip("198.18.0.0")));
    EXPECT_EQ(iface.subnet6.net, ip6("fd00:1::"));
    EXPECT_EQ(iface.subnet6.len, 64u);
    EXPECT_EQ(iface.dhcp_service_ip, ip_from_v4(ip("198.18.0.2")));
}

TEST(ConfigIpv6, Ipv6OnlyIfaceMatchesNoIpv4Address) {
    const Config config = parse(kHead6 + kOnePort);
    const bpfnet_iface iface = iface_entry(config, 3, MacAddress{2, 0, 0, 0, 0, 1});
    /* (ip & mask) == subnet holds for no IPv4 address: the datapath takes no IPv4 packet as its own. */
    EXPECT_EQ(iface.subnet.len, 0u) << "no IPv4 subnet: nothing is in it";
    EXPECT_EQ(iface.subnet6.len, 64u);
    EXPECT_EQ(service_specs(config, std::nullopt).size(), 1u);
}

TEST(ConfigIpv6, EachAddressNeedsItsSubnet) {
    EXPECT_TRUE(Rejected("interface: prov0\nserviceIPv6: fd00:1::2\n" + kOnePort, "subnetV6", "is required"));
    EXPECT_TRUE(Rejected("interface: prov0\nsubnetV6: fd00:1::/64\n" + kOnePort, "serviceIPv6", "is required"));
    EXPECT_TRUE(Rejected("interface: prov0\n" + kOnePort, "serviceIP", "serviceIPv6"));
}

TEST(ConfigIpv6, AddressesAndPrefixesAreChecked) {
    auto with = [](std::string_view service, std::string_view subnet) {
        return "interface: prov0\nserviceIPv6: " + std::string(service) + "\nsubnetV6: " + std::string(subnet) + "\n" +
               kOnePort;
    };
    EXPECT_TRUE(Rejected(with("198.18.0.2", "fd00:1::/64"), "serviceIPv6", "must be an IPv6 address"));
    EXPECT_TRUE(Rejected(with("fd00:2::2", "fd00:1::/64"), "serviceIPv6", "is not inside"));
    EXPECT_TRUE(Rejected(with("'fd00:1::'", "fd00:1::/64"), "serviceIPv6", "subnet-router anycast"));
    EXPECT_TRUE(Rejected(with("fd00:1::2", "fd00:1::1/64"), "subnetV6", "host bits"));
    EXPECT_TRUE(Rejected(with("fd00:1::2", "fd00::/8"), "subnetV6", "prefix length must be between 16 and 124, got 8"));
    EXPECT_TRUE(Rejected(with("fe80::2", "fe80::/64"), "subnetV6", "link-local"));
    EXPECT_TRUE(Rejected(with("fd00:1::2", "198.18.0.0/24"), "subnetV6", "IPv6 CIDR"));
    EXPECT_TRUE(Rejected(with("::ff00:0:2", "::ff00:0:0/88"), "subnetV6", "IPv4-mapped"));
}

TEST(ConfigIpv6, BackendHasAnAddressOfEachFamily) {
    const std::string dual = "interface: prov0\nserviceIP: 198.18.0.2\nsubnet: 198.18.0.0/24\n"
                             "serviceIPv6: fd00:1::2\nsubnetV6: fd00:1::/64\n" +
                             kOnePort;
    EXPECT_TRUE(Rejected(dual + "backend:\n  ip: 10.244.1.7\n", "backend.ipv6", "is required"));
    EXPECT_TRUE(Rejected(kHead6 + kOnePort + "backend:\n  ip: 10.244.1.7\n", "backend.ip", "no IPv4 address"));
    EXPECT_TRUE(Rejected(kHead + kOnePort + "backend:\n  ip: 10.244.1.7\n  ipv6: fd00:10::7\n", "backend.ipv6",
                         "no IPv6 address"));
    EXPECT_TRUE(Rejected(kHead6 + kOnePort + "backend:\n  ipv6: fd00:1::9\n", "backend.ipv6", "pod network"));
    EXPECT_TRUE(Rejected(kHead6 + kOnePort + "backend:\n  ipv6: fd00:1::2\n", "backend.ipv6", "service IP"));
}

TEST(ConfigIpv6, Ipv4OnlyFeaturesAreRefusedWithIpv6) {
    EXPECT_TRUE(Rejected(kHead6 + kOnePort + "dhcpRelay:\n  relays: [198.18.0.1]\n", "dhcpRelay.relays[0]",
                         "198.18.0.1 is IPv4, and there is no subnet"));
}

// Each service address takes the ranges of its family; a family with an address must have one.
TEST(ConfigIpv6, SourceRangesOfBothFamilies) {
    const std::string dual = "interface: prov0\nserviceIP: 198.18.0.2\nsubnet: 198.18.0.0/24\n"
                             "serviceIPv6: fd00:1::2\nsubnetV6: fd00:1::/64\n" +
                             kPorts6 + "backend:\n  ip: 10.244.1.7\n  ipv6: fd00:10:244::7\n";
    const Config config = parse(dual + "sourceRanges: [198.18.0.0/28, 'fd00:1::/120', '::/0']\n");
    const std::vector<SourceRange> want = {
        {*parse_ip("198.18.0.0"), 28}, {*parse_ip("fd00:1::"), 120}, {*parse_ip("::"), 0}};
    EXPECT_EQ(config.source_ranges, want);
    const DesiredState state = desired_state(config, BackendLocation{});
    EXPECT_EQ(state.source_ranges.size(), 2u + 2u) << "per address: its ranges and the entry refusing the rest";
    EXPECT_TRUE(
        Rejected(dual + "sourceRanges: [198.18.0.0/24]\n", "sourceRanges", "lists no IPv6 range for serviceIPv6"));
    EXPECT_TRUE(
        Rejected(dual + "sourceRanges: ['fd00:1::/64']\n", "sourceRanges", "lists no IPv4 range for serviceIP"));
    EXPECT_TRUE(Rejected(kHead6 + kOnePort + "sourceRanges: [198.18.0.0/24]\n", "sourceRanges[0]",
                         "198.18.0.0/24 is IPv4 but there is no serviceIP"));
    EXPECT_TRUE(Rejected(kHead6 + kOnePort + "sourceRanges: ['fd00:1::1/64']\n", "sourceRanges[0]",
                         "has host bits set: \"fd00:1::1/64\"; did you mean fd00:1::/64?"));
    EXPECT_TRUE(Rejected(kHead6 + kOnePort + "sourceRanges: ['fd00:1::/129']\n", "sourceRanges[0]", "must be a CIDR"));
}

const std::string kDhcp6Port = "  - {name: dhcpv6, protocol: udp, port: 547, kind: dhcpv6}\n";

TEST(ConfigIpv6, Dhcp6IsRelayedForTheIpv6ServiceAddress) {
    const std::string dual = "interface: prov0\nserviceIP: 198.18.0.2\nsubnet: 198.18.0.0/24\n"
                             "serviceIPv6: fd00:1::2\nsubnetV6: fd00:1::/64\n";
    const Config config = parse(dual + kPorts6 + kDhcp6Port + "backend:\n  ip: 10.244.1.7\n  ipv6: fd00:10:244::7\n");
    const auto specs = service_specs(config, BackendLocation{});
    ASSERT_EQ(specs.size(), 2u);
    ASSERT_EQ(specs[0].ports.size(), 3u) << "DHCPv6 is no IPv4 service port";
    ASSERT_EQ(specs[1].ports.size(), 3u);
    EXPECT_EQ(specs[1].ports[2].kind, PortKind::Dhcp6);
    const bpfnet_iface iface = iface_entry(config, 3, MacAddress{2, 0, 0, 0, 0, 1});
    EXPECT_EQ(iface.dhcp_service_ip, ip_from_v4(ip("198.18.0.2")));
    EXPECT_EQ(iface.dhcp6_service_ip, ip6("fd00:1::2"));
    EXPECT_EQ(iface.nic_link_local, bpfnet_ip{}) << "a fact of the NIC, read by the runtime";

    const bpfnet_iface without = iface_entry(parse(kHead6 + kOnePort), 3, MacAddress{2, 0, 0, 0, 0, 1});
    EXPECT_EQ(without.dhcp6_service_ip, bpfnet_ip{}) << "no dhcpv6 port: ff02::1:2 is not relayed";
}

TEST(ConfigIpv6, RelayedPortsBelongToTheirFamily) {
    EXPECT_TRUE(Rejected(kHead6 + "ports:\n  - {name: dhcp, protocol: udp, port: 67, kind: dhcp}\n", "ports[0].kind",
                         "dhcp relays DHCPv4 for serviceIP"));
    EXPECT_TRUE(Rejected(kHead + "ports:\n" + kDhcp6Port, "ports[0].kind", "dhcpv6 relays DHCPv6 for serviceIPv6"));
    EXPECT_TRUE(Rejected(kHead6 + "ports:\n  - {name: dhcpv6, protocol: udp, port: 546, kind: dhcpv6}\n",
                         "ports[0].kind", "dhcpv6 requires port 547, got 546"));
    EXPECT_TRUE(Rejected(kHead6 + "ports:\n  - {name: dhcpv6, protocol: tcp, port: 547, kind: dhcpv6}\n",
                         "ports[0].kind", "requires protocol udp"));
}

TEST(ConfigIpv6, RelayAgentsOfEitherFamilyOnTheirSubnet) {
    const std::string dual = "interface: prov0\nserviceIP: 198.18.0.2\nsubnet: 198.18.0.0/24\n"
                             "serviceIPv6: fd00:1::2\nsubnetV6: fd00:1::/64\n" +
                             kOnePort;
    EXPECT_EQ(parse(dual + "dhcpRelay:\n  relays: [198.18.0.1, 'fd00:1::1']\n").dhcp_relays,
              (std::vector<bpfnet_ip>{ip_from_v4(ip("198.18.0.1")), ip6("fd00:1::1")}));
    EXPECT_TRUE(Rejected(dual + "dhcpRelay:\n  relays: ['fd00:2::1']\n", "dhcpRelay.relays[0]", "is not inside"));
    EXPECT_TRUE(
        Rejected(dual + "dhcpRelay:\n  relays: ['fd00:1::2']\n", "dhcpRelay.relays[0]", "is the service IPv6 address"));
    EXPECT_TRUE(Rejected(kHead + kOnePort + "dhcpRelay:\n  relays: ['fd00:1::1']\n", "dhcpRelay.relays[0]",
                         "fd00:1::1 is IPv6, and there is no subnetV6"));
    EXPECT_TRUE(Rejected(dual + "dhcpRelay:\n  relays: [relay]\n", "dhcpRelay.relays[0]", "IPv4 or IPv6 address"));
}

TEST(ConfigIpv6, RouterAdvertisementsAreOffUnlessEnabledOnAnIpv6Lan) {
    EXPECT_FALSE(parse(kHead6 + kOnePort).router_advertisements);
    const Config on = parse(kHead6 + kOnePort + "routerAdvertisements:\n  enabled: true\n  intervalSeconds: 30\n");
    EXPECT_TRUE(on.router_advertisements);
    EXPECT_EQ(on.ra_interval, std::chrono::seconds(30));
    EXPECT_EQ(parse(kHead6 + kOnePort + "routerAdvertisements:\n  enabled: true\n").ra_interval,
              kDefaultRouterAdvertisementInterval);
    EXPECT_TRUE(Rejected(kHead + kOnePort + "routerAdvertisements:\n  enabled: true\n", "routerAdvertisements.enabled",
                         "router advertisements are for an IPv6 LAN: give subnetV6"));
    EXPECT_TRUE(Rejected(kHead6 + kOnePort + "routerAdvertisements:\n  enabled: yes\n", "routerAdvertisements.enabled",
                         "must be true or false"));
    EXPECT_TRUE(Rejected(kHead6 + kOnePort + "routerAdvertisements:\n  intervalSeconds: 2\n",
                         "routerAdvertisements.intervalSeconds", "between 4 and 1800"));
}

/* ---- sharedAddresses ---- */

/* A node without a provisioning LAN: the ramdisk's ports on its VIP and on its own address. */
const std::string kSharedOnly = "interface: eno1\n"
                                "sharedAddresses:\n"
                                "  - address: 192.0.2.10\n"
                                "    ports:\n"
                                "      - {name: ironic-api, protocol: tcp, port: 6385}\n"
                                "      - {name: virtual-media, protocol: tcp, port: 6183, targetPort: 6183}\n"
                                "  - address: node\n"
                                "    ports:\n"
                                "      - {name: images, protocol: tcp, port: 6180}\n"
                                "backend:\n"
                                "  ip: 10.244.1.7\n";

TEST(ConfigShared, WithoutAProvisioningLanParsesToTheAddressesAndPorts) {
    const Config config = parse(kSharedOnly);
    EXPECT_EQ(config.prefix_len, 0);
    EXPECT_EQ(config.prefix6_len, 0);
    EXPECT_EQ(config.service_ip_be, 0u);
    EXPECT_TRUE(config.ports.empty());
    ASSERT_EQ(config.shared_addresses.size(), 2u);
    EXPECT_EQ(config.shared_addresses[0].ip, parse_ip("192.0.2.10"));
    EXPECT_EQ(config.shared_addresses[0].ports.size(), 2u);
    EXPECT_EQ(config.shared_addresses[0].ports[1].port, 6183);
    EXPECT_FALSE(config.shared_addresses[1].ip.has_value()) << "\"node\": resolved on the node";
    ASSERT_TRUE(config.backend.has_value());
    EXPECT_EQ(config.backend->ip_be, ip("10.244.1.7"));
}

TEST(ConfigShared, BesideAProvisioningLan) {
    const Config config = parse(minimal_with("sharedAddresses:\n"
                                             "  - address: 192.0.2.10\n"
                                             "    ports: [{name: virtual-media-tls, protocol: tcp, port: 6183}]\n"
                                             "backend: {ip: 10.244.1.7}\n"));
    EXPECT_EQ(config.service_ip_be, ip("198.18.0.2"));
    EXPECT_EQ(config.shared_addresses.size(), 1u);
}

TEST(ConfigShared, RefusedWhereTheAddressCannotBeTheNodes) {
    const std::string ports = "    ports: [{name: ironic-api, protocol: tcp, port: 6385}]\n";
    EXPECT_TRUE(Rejected(minimal_with("sharedAddresses:\n  - address: 198.18.0.7\n" + ports),
                         "sharedAddresses[0].address", "inside the provisioning subnet"));
    EXPECT_TRUE(Rejected(minimal_with("sharedAddresses:\n  - address: 198.18.0.2\n" + ports),
                         "sharedAddresses[0].address", "is a service address"));
    EXPECT_TRUE(Rejected(minimal_with("sharedAddresses:\n  - address: 224.0.0.9\n" + ports),
                         "sharedAddresses[0].address", "must be a unicast address"));
    EXPECT_TRUE(Rejected(minimal_with("sharedAddresses:\n  - address: vip\n" + ports), "sharedAddresses[0].address",
                         "\"node\""));
    EXPECT_TRUE(Rejected(minimal_with("sharedAddresses:\n  - address: node\n" + ports + "  - address: node\n" + ports),
                         "sharedAddresses[1].address", "lists node twice"));
    EXPECT_TRUE(Rejected(minimal_with("sharedAddresses: []\n"), "sharedAddresses", "must list 1 to 8"));
}

TEST(ConfigShared, OnlyPlainPortsAndTheBackendOfTheirFamily) {
    EXPECT_TRUE(Rejected(minimal_with("sharedAddresses:\n  - address: 192.0.2.10\n"
                                      "    ports: [{name: tftp, protocol: udp, port: 69, kind: tftp}]\n"),
                         "sharedAddresses[0].ports[0].kind", "must be plain on a shared address"));
    EXPECT_TRUE(Rejected("interface: eno1\nsharedAddresses:\n  - address: 2001:db8::10\n"
                         "    ports: [{name: ironic-api, protocol: tcp, port: 6385}]\nbackend: {ip: 10.244.1.7}\n",
                         "backend.ip", "no IPv4 shared address): leave ip out"));
    EXPECT_TRUE(Rejected("interface: eno1\nsharedAddresses:\n  - address: 2001:db8::10\n"
                         "    ports: [{name: ironic-api, protocol: tcp, port: 6385}]\nbackend: {veth: auto}\n",
                         "backend.ipv6", "required"));
    EXPECT_TRUE(Rejected("interface: eno1\nsharedAddresses:\n  - address: 192.0.2.10\n"
                         "    ports: [{name: ironic-api, protocol: tcp, port: 6385}]\nbackend: {ip: 192.0.2.10}\n",
                         "backend.ip", "must not be the shared address 192.0.2.10"));
    EXPECT_TRUE(Rejected("interface: eno1\nsharedAddresses:\n  - address: 192.0.2.10\n"
                         "    ports: [{name: ironic-api, protocol: tcp, port: 6385}]\n" +
                             kOnePort,
                         "ports", "a shared address's ports are listed under it"));
    EXPECT_TRUE(Rejected("interface: eno1\n", "serviceIP", "or sharedAddresses"));
}

/* The pod on another node: the shared addresses are handed to it (backend.node, nodeV6). */
TEST(ConfigShared, ThePodOnAnotherNodeIsNamedByItsAddress) {
    const std::string vip = "interface: eno1\nsharedAddresses:\n  - address: 192.0.2.10\n"
                            "    ports: [{name: ironic-api, protocol: tcp, port: 6385}]\n";
    const Config config = parse(vip + "backend: {ip: 10.244.2.7, node: 192.0.2.22}\n");
    ASSERT_TRUE(config.backend.has_value());
    EXPECT_TRUE(config.backend->elsewhere());
    EXPECT_EQ(config.backend->node, parse_ip("192.0.2.22"));
    EXPECT_FALSE(config.backend->node6.has_value());
    EXPECT_FALSE(parse(vip + "backend: {ip: 10.244.2.7}\n").backend->elsewhere());
    EXPECT_TRUE(Rejected(vip + "backend: {ip: 10.244.2.7, node: 224.0.0.9}\n", "backend.node",
                         "must be a unicast address of the pod's node"));
    EXPECT_TRUE(
        Rejected(vip + "backend: {ip: 10.244.2.7, node: 'fd00::22'}\n", "backend.node", "must be an IPv4 address"));
    EXPECT_TRUE(Rejected(vip + "backend: {ip: 10.244.2.7, nodeV6: 'fd00::22'}\n", "backend.nodeV6",
                         "no shared address is IPv6"));
    EXPECT_TRUE(Rejected(vip + "backend: {ip: 10.244.2.7, node: 192.0.2.22, veth: cali1}\n", "backend.veth",
                         "its veth and delivery are that node's"));
    EXPECT_TRUE(Rejected(vip + "backend: {ip: 10.244.2.7, node: 192.0.2.10}\n", "backend.node",
                         "192.0.2.10 is a shared address"));
    EXPECT_TRUE(Rejected(vip + "backend: {ip: 10.244.2.7, node: 10.244.2.7}\n", "backend.node",
                         "10.244.2.7 is the pod's address"));
    EXPECT_TRUE(Rejected("interface: eno1\nsharedAddresses:\n  - address: node\n"
                         "    ports: [{name: ironic-api, protocol: tcp, port: 6385}]\n"
                         "backend: {ip: 10.244.2.7, node: 192.0.2.22}\n",
                         "backend.node", "a shared address is \"node\""));
    EXPECT_TRUE(Rejected(minimal_with("sharedAddresses:\n  - address: 192.0.2.10\n"
                                      "    ports: [{name: media, protocol: tcp, port: 6180}]\n"
                                      "backend: {ip: 10.244.1.7, node: 192.0.2.22}\n"),
                         "backend.node", "only shared addresses are handed to another node"));
    EXPECT_TRUE(Rejected("interface: eno1\nserviceIPv6: 'fd00:1::2'\nsubnetV6: 'fd00:1::/64'\n"
                         "ports: [{name: api, protocol: tcp, port: 6385}]\n"
                         "sharedAddresses:\n  - address: 192.0.2.10\n"
                         "    ports: [{name: media, protocol: tcp, port: 6180}]\n"
                         "backend: {ip: 10.244.1.7, ipv6: 'fd00:10::7', node: 192.0.2.22}\n",
                         "backend.node", "only shared addresses are handed to another node"));
    EXPECT_TRUE(Rejected("interface: eno1\nsharedAddresses:\n"
                         "  - address: 192.0.2.10\n    ports: [{name: api, protocol: tcp, port: 6385}]\n"
                         "  - address: 2001:db8::10\n    ports: [{name: api, protocol: tcp, port: 6385}]\n"
                         "backend: {ip: 10.244.2.7, ipv6: 'fd00:10::7', node: 192.0.2.22}\n",
                         "backend.node", "name the pod's node's address of it in nodeV6"));
}

/* The pod's replies are told apart by its port: one pod port serves one address of a family. */
TEST(ConfigShared, APodPortServesOneAddressOfAFamily) {
    EXPECT_TRUE(Rejected(minimal_with("sharedAddresses:\n  - address: 192.0.2.10\n"
                                      "    ports: [{name: api, protocol: tcp, port: 16385, targetPort: 6385}]\n"),
                         "sharedAddresses[0].ports[0].targetPort", "is already the pod port of ports[0]"));
    EXPECT_TRUE(Rejected("interface: eno1\nsharedAddresses:\n"
                         "  - address: 192.0.2.10\n    ports: [{name: api, protocol: tcp, port: 6385}]\n"
                         "  - address: node\n    ports: [{name: api, protocol: tcp, port: 6385}]\n",
                         "sharedAddresses[1].ports[0].port", "is already the pod port of sharedAddresses[0].ports[0]"));
    /* Another family, or another protocol: apart. */
    EXPECT_NO_THROW(parse(minimal_with("sharedAddresses:\n  - address: 2001:db8::10\n"
                                       "    ports: [{name: api, protocol: tcp, port: 6385}]\n"
                                       "backend: {ip: 10.244.1.7, ipv6: 'fd00:10::7'}\n")));
    EXPECT_NO_THROW(parse(minimal_with("sharedAddresses:\n  - address: 192.0.2.10\n"
                                       "    ports: [{name: api, protocol: udp, port: 6385}]\n")));
    EXPECT_TRUE(Rejected(minimal_with("sharedAddresses:\n  - address: 192.0.2.10\n"
                                      "    ports: [{name: api, protocol: udp, port: 6385}]\n"
                                      "backend: {ip: 192.0.2.10}\n"),
                         "backend.ip", "must not be the shared address 192.0.2.10"));
}

/* Which shared addresses the node holds: an address any interface has; "node" the NIC's own (not its /32). */
TEST(ConfigShared, HeldAddressesFollowTheNodesInterfaces) {
    const Config config = parse(kSharedOnly);
    const bpfnet_ip vip = *parse_ip("192.0.2.10"), own = *parse_ip("192.0.2.21"), other = *parse_ip("10.0.0.4");
    InterfaceAddress vip_on_nic{2, vip, 32, false}, own_on_nic{2, own, 24, false}, elsewhere{5, other, 24, false};
    EXPECT_EQ(held_shared_addresses(config, 2, {vip_on_nic, own_on_nic}), (HeldAddresses{vip, own}));
    EXPECT_EQ(held_shared_addresses(config, 2, {own_on_nic}), (HeldAddresses{std::nullopt, own}))
        << "the VIP is on another node";
    EXPECT_EQ(held_shared_addresses(config, 2, {elsewhere, vip_on_nic}), (HeldAddresses{vip, std::nullopt}))
        << "the NIC's only address is the VIP's /32, a configured shared address: node is none";
    InterfaceAddress vip_on_lo{1, vip, 32, false};
    EXPECT_EQ(held_shared_addresses(config, 2, {vip_on_lo, own_on_nic}), (HeldAddresses{vip, own}))
        << "a VIP on any interface is held";
    InterfaceAddress tentative_vip{2, vip, 32, false, true};
    EXPECT_EQ(held_shared_addresses(config, 2, {tentative_vip}), (HeldAddresses{std::nullopt, std::nullopt}))
        << "an address in duplicate address detection is not held yet";
    Config with_lan = config;
    with_lan.subnet_be = ip("192.0.2.0");
    with_lan.prefix_len = 24;
    EXPECT_EQ(held_shared_addresses(with_lan, 2, {own_on_nic}), (HeldAddresses{std::nullopt, std::nullopt}))
        << "node: the NIC's address on the provisioning subnet is the datapath's to own, not the node's shared one";
    const std::vector<ServiceSpec> specs = service_specs(config, std::nullopt, {vip, own});
    ASSERT_EQ(specs.size(), 2u);
    EXPECT_TRUE(specs[0].shared && specs[1].shared);
    EXPECT_EQ(specs[1].service_ip, own);
    EXPECT_TRUE(service_specs(config, std::nullopt, {std::nullopt, std::nullopt}).empty());
}

} // namespace
} // namespace bpfnet
