// bpfnetctl's table and JSON helpers: alignment, and how addresses, MACs, ports and times are spelled.
#include "cli/output.hpp"
#include "maps/bpfnet_maps.h"
#include "packet.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <sstream>

namespace bpfnet::cli {
namespace {

using test::ip;
using test::key_ip;

TEST(CliTable, PadsEachColumnToItsWidestCellWithoutTrailingBlanks) {
    TextTable table({"IP", "MAC"});
    table.add_row({"198.18.0.10", "02:00:00:00:00:10"});
    table.add_row({"198.18.0.9", "02:00:00:00:00:09"});
    std::ostringstream out;
    table.print(out);
    EXPECT_EQ(out.str(), "IP           MAC\n"
                         "198.18.0.10  02:00:00:00:00:10\n"
                         "198.18.0.9   02:00:00:00:00:09\n");
}

TEST(CliTable, HeaderWiderThanCellsSetsTheWidth) {
    TextTable table({"SERVICE IP", "PORT"});
    table.add_row({"a", "1"});
    std::ostringstream out;
    table.print(out);
    EXPECT_EQ(out.str(), "SERVICE IP  PORT\na           1\n");
}

TEST(CliTable, EmptyTablePrintsItsHeader) {
    std::ostringstream out;
    TextTable({"IP", "MAC"}).print(out);
    EXPECT_EQ(out.str(), "IP  MAC\n");
}

TEST(CliTable, RowWithTheWrongNumberOfCellsIsABug) {
    TextTable table({"A", "B"});
    EXPECT_THROW(table.add_row({"only one"}), std::logic_error);
}

TEST(CliKeyValueList, AlignsValuesAndKeepsRepeatedKeys) {
    KeyValueList list;
    list.add("interface", "prov0");
    list.add("service IP", "198.18.0.2");
    list.add("service IP", "198.18.0.3");
    std::ostringstream out;
    list.print(out);
    EXPECT_EQ(out.str(), "interface   prov0\n"
                         "service IP  198.18.0.2\n"
                         "service IP  198.18.0.3\n");
}

TEST(CliFormat, AddressesPortsAndMacs) {
    const __u8 mac[6] = {0x02, 0, 0, 0, 0xab, 0x10};
    EXPECT_EQ(format_ipv4(ip("198.18.0.2")), "198.18.0.2");
    EXPECT_EQ(format_mac(mac), "02:00:00:00:ab:10");
    EXPECT_EQ(format_endpoint(key_ip("198.18.100.2"), htons(8080)), "198.18.100.2:8080");
    EXPECT_EQ(format_endpoint(key_ip("fd00:1::2"), htons(6385)), "[fd00:1::2]:6385");
    EXPECT_EQ(format_prefix(ip("198.18.0.0"), ip("255.255.255.0")), "198.18.0.0/24");
    EXPECT_EQ(format_prefix(ip("198.18.0.0"), ip("255.254.0.0")), "198.18.0.0/15");
}

TEST(CliFormat, ProtocolsAndKindsByNameElseByNumber) {
    EXPECT_EQ(format_protocol(6), "tcp");
    EXPECT_EQ(format_protocol(17), "udp");
    EXPECT_EQ(format_protocol(1), "1");
    EXPECT_EQ(format_kind(BPFNET_KIND_PLAIN), "plain");
    EXPECT_EQ(format_kind(BPFNET_KIND_TFTP), "tftp");
    EXPECT_EQ(format_kind(BPFNET_KIND_DHCP), "dhcp");
    EXPECT_EQ(format_kind(9), "9");
}

TEST(CliFormat, SecondsAndRates) {
    EXPECT_EQ(format_seconds(0.42), "0.4 s");
    EXPECT_EQ(format_seconds(59.94), "59.9 s");
    EXPECT_EQ(format_seconds(185), "3 m 5 s");
    EXPECT_EQ(format_seconds(7300), "2 h 1 m");
    EXPECT_EQ(format_rate(0), "0");
    EXPECT_EQ(format_rate(2.24), "2.2");
    EXPECT_EQ(format_rate(1234.4), "1234");
    EXPECT_DOUBLE_EQ(json_seconds(1.23456), 1.235);
}

TEST(CliJson, OneDocumentPerLineInInsertionOrder) {
    Json doc;
    doc["zeta"] = 1;
    doc["alpha"] = {{"b", nullptr}, {"a", "x"}};
    std::ostringstream out;
    print_json(out, doc);
    EXPECT_EQ(out.str(), "{\"zeta\":1,\"alpha\":{\"b\":null,\"a\":\"x\"}}\n");
}

} // namespace
} // namespace bpfnet::cli
