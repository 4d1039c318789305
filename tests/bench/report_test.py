#!/usr/bin/python3
"""The benchmark report's arithmetic and rendering, on made-up results (no root, no network)."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402


def table(paired=True):
    return {"title": "Bulk TCP, host -> pod", "unit": "Gbit/s", "better": "higher", "baseline": "plain routing",
            "paired": paired,
            "series": {"bpfnet": [9.0, 10.0, 8.0, 12.0], "plain routing": [10.0, 10.0, 10.0, 10.0],
                       "nftables DNAT": [5.0, 5.0, 5.0, 5.0]},
            "notes": "made up"}


class Arithmetic(unittest.TestCase):
    def test_quantiles_are_nearest_rank(self):
        values = list(range(1, 12))  # 1..11
        self.assertEqual(report.quantile(values, 0.1), 2)
        self.assertEqual(report.quantile(values, 0.9), 10)
        self.assertEqual(report.quantile([7], 0.9), 7)

    def test_paired_ratios_are_taken_per_round(self):
        analysed = report.analyse(table())
        bpfnet = analysed["ratios"]["bpfnet"]
        self.assertEqual(bpfnet["kind"], "per round")
        self.assertAlmostEqual(bpfnet["median"], 0.95)  # median of 0.9, 1.0, 0.8, 1.2
        self.assertAlmostEqual(bpfnet["p10"], 0.8)
        self.assertAlmostEqual(bpfnet["p90"], 1.2)
        self.assertAlmostEqual(analysed["ratios"]["nftables DNAT"]["median"], 0.5)
        self.assertNotIn("plain routing", analysed["ratios"])
        self.assertEqual(analysed["summary"]["bpfnet"]["n"], 4)

    def test_a_zero_baseline_gives_no_ratio_but_the_medians_stay(self):
        zero = dict(table(), series={"bpfnet": [0.0, 1.0], "plain routing": [0.0, 0.0]})
        for paired in (True, False):
            analysed = report.analyse(dict(zero, paired=paired))
            self.assertEqual(analysed["ratios"], {})
            self.assertEqual(analysed["summary"]["bpfnet"]["median"], 0.5)
            self.assertIn("| bpfnet | 0.500 |", "\n".join(report.table_markdown(analysed)))

    def test_unpaired_ratio_is_of_medians(self):
        analysed = report.analyse(table(paired=False))
        self.assertEqual(analysed["ratios"]["bpfnet"], {"kind": "of medians", "median": 0.95})


class Rendering(unittest.TestCase):
    def test_report_files_hold_the_tables_and_the_machine(self):
        with tempfile.TemporaryDirectory() as results:
            with open(os.path.join(results, "tcp.json"), "w") as f:
                json.dump({"benchmark": "tcp_bulk", "tables": [table()]}, f)
            with open(os.path.join(results, "broken.json"), "w") as f:
                json.dump({"benchmark": "small_packets", "error": "pktgen missing", "tables": []}, f)
            prefix = os.path.join(results, "out")
            self.assertEqual(report.main(["report.py", results, prefix]), 0)
            with open(prefix + ".md") as f:
                markdown = f.read()
            with open(prefix + ".json") as f:
                data = json.load(f)
        self.assertIn("| bpfnet | 9.50 | 8.00-12.0 | 4 | 0.950 | 0.800-1.20 |", markdown)
        self.assertIn("| plain routing | 10.0 | 10.0-10.0 | 4 | 1 (baseline) |  |", markdown)
        self.assertIn("Could not run: pktgen missing", markdown)
        self.assertEqual(data["machine"]["cpus"], os.cpu_count())
        self.assertEqual([b["benchmark"] for b in data["benchmarks"]], ["small_packets", "tcp_bulk"])


class AddingTables(unittest.TestCase):
    def test_tables_accumulate_in_one_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tcp.json")
            for title in ("host -> pod", "pod -> host"):
                self.assertEqual(report.main(["report.py", "table", path, "tcp_bulk", "--title", title, "--unit",
                                              "Gbit/s", "--better", "higher", "--baseline", "plain routing",
                                              "--paired", "--series", "bpfnet=9,10", "--series",
                                              "plain routing=10 10"]), 0)
            with open(path) as f:
                data = json.load(f)
        self.assertEqual(data["benchmark"], "tcp_bulk")
        self.assertEqual([t["title"] for t in data["tables"]], ["host -> pod", "pod -> host"])
        self.assertEqual(data["tables"][0]["series"], {"bpfnet": [9.0, 10.0], "plain routing": [10.0, 10.0]})
        self.assertTrue(data["tables"][0]["paired"])

    def test_a_baseline_that_is_not_a_series_is_refused(self):
        with tempfile.TemporaryDirectory() as d, self.assertRaises(SystemExit):
            report.main(["report.py", "table", os.path.join(d, "x.json"), "x", "--title", "t", "--unit", "u",
                         "--better", "lower", "--baseline", "nope", "--series", "a=1"])


if __name__ == "__main__":
    unittest.main()
