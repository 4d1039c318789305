#include "cli/commands_stats.hpp"

#include "cli/commands.hpp"
#include "maps/layout.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <thread>
#include <type_traits>
#include <utility>

namespace bpfnet::cli {

namespace {

void add_rows(TextTable &table, const CounterValues &totals, const std::vector<double> *rates, CounterKind kind) {
    for (size_t i = 0; i < totals.size() && i < counter_table.size(); i++) {
        if (counter_table[i].kind != kind)
            continue;
        std::vector<std::string> row{std::string(counter_label(counter_table[i])), std::to_string(totals[i])};
        if (rates)
            row.push_back(format_rate((*rates)[i]));
        table.add_row(std::move(row));
    }
}

// The JSON groups: "drops" and "events" by kind. "paths" keeps what it listed before events had a group of
// their own (docs/cli.md: keys are only added): every counter not named drop_*, events included.
bool in_json_group(const CounterInfo &counter, std::string_view group) {
    if (group == "paths")
        return !counter.name.starts_with("drop_");
    return counter.kind == (group == "drops" ? CounterKind::Drop : CounterKind::Event);
}

template <typename Value>
Json json_group(const std::vector<Value> &values, std::string_view group) {
    Json object = Json::object();
    for (size_t i = 0; i < values.size() && i < counter_table.size(); i++)
        if (in_json_group(counter_table[i], group)) {
            if constexpr (std::is_floating_point_v<Value>)
                object[std::string(counter_label(counter_table[i]))] = std::round(values[i] * 1000) / 1000;
            else
                object[std::string(counter_label(counter_table[i]))] = values[i];
        }
    return object;
}

template <typename Value>
Json json_groups(const std::vector<Value> &values) {
    return {{"paths", json_group(values, "paths")},
            {"drops", json_group(values, "drops")},
            {"events", json_group(values, "events")}};
}

// A refresh on a terminal redraws in place; into a pipe or file the samples follow one another.
void print_watch_table(Context &context, const CounterValues &totals, const std::vector<double> &rates, double seconds,
                       unsigned sample) {
    if (&context.out == &std::cout && isatty(STDOUT_FILENO))
        context.out << "\033[H\033[2J";
    else if (sample > 1)
        context.out << '\n';
    context.out << "bpfnetctl stats on " << context.options.interface << ": sample " << sample << ", rates over "
                << format_seconds(seconds) << "\n\n";
    print_stats_table(context.out, totals, &rates);
    context.out.flush();
}

void watch(Context &context, const DatapathMaps &maps, std::chrono::milliseconds interval,
           std::optional<unsigned> count) {
    CounterValues before = maps.counters.all();
    auto before_at = std::chrono::steady_clock::now();
    for (unsigned sample = 1; !count || sample <= *count; sample++) {
        std::this_thread::sleep_for(interval);
        CounterValues after = maps.counters.all();
        auto after_at = std::chrono::steady_clock::now();
        double seconds = std::chrono::duration<double>(after_at - before_at).count();
        std::vector<double> rates = counter_rates(before, after, seconds);
        if (context.json()) {
            print_json(context.out, stats_watch_json(after, rates, seconds));
            context.out.flush();
        } else {
            print_watch_table(context, after, rates, seconds, sample);
        }
        before = std::move(after);
        before_at = after_at;
    }
}

} // namespace

void run_stats(Context &context, const StatsArgs &args) {
    // Arguments are checked before the datapath is opened: a bad value is reported as such.
    auto interval = parse_interval(args.interval, "--interval");
    std::optional<unsigned> count;
    if (!args.count.empty())
        count = parse_count(args.count, "--count");
    DatapathMaps maps = context.open_datapath();
    if (args.watch) {
        watch(context, maps, interval, count);
        return;
    }
    CounterValues totals = maps.counters.all();
    if (context.json())
        print_json(context.out, stats_json(totals));
    else
        print_stats_table(context.out, totals);
}

std::vector<double> counter_rates(const CounterValues &before, const CounterValues &after, double seconds) {
    std::vector<double> rates(after.size(), 0.0);
    for (size_t i = 0; i < after.size() && i < before.size(); i++)
        if (seconds > 0 && after[i] >= before[i])
            rates[i] = static_cast<double>(after[i] - before[i]) / seconds;
    return rates;
}

void print_stats_table(std::ostream &out, const CounterValues &totals, const std::vector<double> *rates) {
    std::vector<TextTable> sections;
    for (auto [kind, header] : {std::pair{CounterKind::Path, "PATH"}, std::pair{CounterKind::Drop, "DROP REASON"},
                                std::pair{CounterKind::Event, "EVENT"}}) {
        std::vector<std::string> headers{header, "COUNT"};
        if (rates)
            headers.push_back("PER SECOND");
        sections.emplace_back(headers);
        add_rows(sections.back(), totals, rates, kind);
    }
    // The sections share their column widths, so they read as one table.
    std::vector<size_t> widths = sections.front().column_widths();
    for (const TextTable &section : sections) {
        std::vector<size_t> own = section.column_widths();
        for (size_t i = 0; i < widths.size(); i++)
            widths[i] = std::max(widths[i], own[i]);
    }
    for (size_t i = 0; i < sections.size(); i++) {
        if (i > 0)
            out << '\n';
        sections[i].print(out, widths);
    }
}

Json stats_json(const CounterValues &totals) {
    return json_groups(totals);
}

Json stats_watch_json(const CounterValues &totals, const std::vector<double> &rates, double seconds) {
    Json json = stats_json(totals);
    json["interval_seconds"] = json_seconds(seconds);
    json["rates"] = json_groups(rates);
    return json;
}

} // namespace bpfnet::cli
