// One table, many views: the counters are declared once, with their kind, in maps/bpfnet_maps.h
// (BPFNET_COUNTERS). The C++ tables are derived from it at compile time; the docs are written by hand, so
// this test fails when docs/observability.md's three tables and the declaration disagree.
#include "maps/layout.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace bpfnet {
namespace {

std::string read_file(const std::string &path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The first column's `label` of every row of the table that follows `heading`.
std::set<std::string> table_labels(const std::string &doc, const std::string &heading) {
    std::set<std::string> labels;
    size_t at = doc.find(heading);
    if (at == std::string::npos)
        return labels;
    std::istringstream lines(doc.substr(at + heading.size()));
    std::string line;
    bool in_table = false;
    while (std::getline(lines, line)) {
        if (line.rfind("| `", 0) == 0) {
            in_table = true;
            labels.insert(line.substr(3, line.find('`', 3) - 3));
        } else if (in_table && line.rfind('|', 0) != 0) {
            break;
        }
    }
    return labels;
}

std::set<std::string> labels_of(CounterKind kind) {
    std::set<std::string> labels;
    for (const CounterInfo &counter : counter_table)
        if (counter.kind == kind)
            labels.insert(std::string(counter_label(counter)));
    return labels;
}

TEST(CounterTable, DerivedNamesFollowTheSlots) {
    EXPECT_EQ(counter_names[BPFNET_CTR_PASS], "pass");
    EXPECT_EQ(counter_names[BPFNET_CTR_NEIGHBOUR_MISS], "neighbour_miss");
    EXPECT_EQ(counter_table[BPFNET_CTR_NEIGHBOUR_MISS].kind, CounterKind::Drop);
    EXPECT_EQ(counter_label(counter_table[BPFNET_CTR_DROP_NOT_ALLOWED]), "not_allowed");
    EXPECT_EQ(counter_names[BPFNET_CTR_DROP_REWRITE_FAILED], "drop_rewrite_failed");
    std::set<std::string_view> unique(counter_names.begin(), counter_names.end());
    EXPECT_EQ(unique.size(), counter_names.size()) << "two counters with one name";
    for (const CounterInfo &counter : counter_table) {
        EXPECT_FALSE(counter.help.empty()) << counter.name;
        // A drop_ name that is not a drop (or the reverse) would read as the wrong thing in every view.
        EXPECT_EQ(counter.name.starts_with("drop_"),
                  counter.kind == CounterKind::Drop && counter.name != "neighbour_miss")
            << counter.name;
    }
}

TEST(CounterTable, ObservabilityDocListsEveryCounterUnderItsKind) {
    std::string doc = read_file(BPFNET_SOURCE_DIR "/docs/observability.md");
    ASSERT_FALSE(doc.empty());
    EXPECT_EQ(table_labels(doc, "### `decision` values of `bpfnet_datapath_packets_total`"),
              labels_of(CounterKind::Path));
    EXPECT_EQ(table_labels(doc, "### `reason` values of `bpfnet_datapath_drops_total`"), labels_of(CounterKind::Drop));
    EXPECT_EQ(table_labels(doc, "### `event` values of `bpfnet_datapath_events_total`"), labels_of(CounterKind::Event));
}

} // namespace
} // namespace bpfnet
