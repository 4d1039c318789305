#include "cli/commands_stats.hpp"

#include "cli/commands.hpp"
#include "maps/layout.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <thread>

namespace bpfnet::cli {

namespace {

constexpr std::string_view kDropPrefix = "drop_";

struct StatsArgs {
    bool watch = false;
    std::string interval = "1";
    std::string count;
};

void add_rows(TextTable &table, const CounterValues &totals, const std::vector<double> *rates, bool drops) {
    for (size_t i = 0; i < totals.size() && i < counter_names.size(); i++) {
        std::string name(counter_names[i]);
        if (is_drop_counter(name) != drops)
            continue;
        std::vector<std::string> row{drops ? drop_reason(name) : name, std::to_string(totals[i])};
        if (rates)
            row.push_back(format_rate((*rates)[i]));
        table.add_row(std::move(row));
    }
}

Json group(const CounterValues &totals, bool drops) {
    Json object = Json::object();
    for (size_t i = 0; i < totals.size() && i < counter_names.size(); i++) {
        std::string name(counter_names[i]);
        if (is_drop_counter(name) == drops)
            object[drops ? drop_reason(name) : name] = totals[i];
    }
    return object;
}

Json rate_group(const std::vector<double> &rates, bool drops) {
    Json object = Json::object();
    for (size_t i = 0; i < rates.size() && i < counter_names.size(); i++) {
        std::string name(counter_names[i]);
        if (is_drop_counter(name) == drops)
            object[drops ? drop_reason(name) : name] = std::round(rates[i] * 1000) / 1000;
    }
    return object;
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

} // namespace

bool is_drop_counter(const std::string &name) {
    return name.starts_with(kDropPrefix);
}

std::string drop_reason(const std::string &name) {
    return is_drop_counter(name) ? name.substr(kDropPrefix.size()) : name;
}

std::vector<double> counter_rates(const CounterValues &before, const CounterValues &after, double seconds) {
    std::vector<double> rates(after.size(), 0.0);
    for (size_t i = 0; i < after.size() && i < before.size(); i++)
        if (seconds > 0 && after[i] >= before[i])
            rates[i] = static_cast<double>(after[i] - before[i]) / seconds;
    return rates;
}

void print_stats_table(std::ostream &out, const CounterValues &totals, const std::vector<double> *rates) {
    std::vector<std::string> path_headers{"PATH", "COUNT"};
    std::vector<std::string> drop_headers{"DROP REASON", "COUNT"};
    if (rates) {
        path_headers.push_back("PER SECOND");
        drop_headers.push_back("PER SECOND");
    }
    TextTable paths(path_headers);
    TextTable drops(drop_headers);
    add_rows(paths, totals, rates, false);
    add_rows(drops, totals, rates, true);
    // Both sections share their column widths, so they read as one table.
    std::vector<size_t> widths = paths.column_widths();
    std::vector<size_t> drop_widths = drops.column_widths();
    for (size_t i = 0; i < widths.size(); i++)
        widths[i] = std::max(widths[i], drop_widths[i]);
    paths.print(out, widths);
    out << '\n';
    drops.print(out, widths);
}

Json stats_json(const CounterValues &totals) {
    return {{"paths", group(totals, false)}, {"drops", group(totals, true)}};
}

Json stats_watch_json(const CounterValues &totals, const std::vector<double> &rates, double seconds) {
    Json json = stats_json(totals);
    json["interval_seconds"] = json_seconds(seconds);
    json["rates"] = {{"paths", rate_group(rates, false)}, {"drops", rate_group(rates, true)}};
    return json;
}

void add_stats_command(CLI::App &app, CommandSet &commands) {
    auto args = std::make_shared<StatsArgs>();
    auto *sub = app.add_subcommand("stats", "every datapath counter, summed over CPUs: paths and drops by reason");
    auto *watch_flag = sub->add_flag("-w,--watch", args->watch, "refresh every --interval, with rates per second");
    sub->add_option("--interval", args->interval, "seconds between refreshes (with --watch)")
        ->capture_default_str()
        ->needs(watch_flag);
    sub->add_option("--count", args->count, "stop after this many refreshes (with --watch)")->needs(watch_flag);
    commands.add(sub, [args](Context &context) { run_stats(context, *args); });
}

} // namespace bpfnet::cli
