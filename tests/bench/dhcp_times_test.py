#!/usr/bin/python3
"""dhcp_times.py's reading of perfdhcp output, on a made-up run (no root, no network)."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dhcp_times  # noqa: E402

# Two exchanges overlapping in time: client 1 sent its DISCOVER first but got its OFFER last, so client 2's
# REQUEST-ACK comes first in perfdhcp's list. A join by order would pair them wrongly. Client 3's REQUEST
# was never answered.
OUTPUT = """Rate: 199.5 4-way exchanges/second, expected rate: 200
***Statistics for: DISCOVER-OFFER***
sent packets: 3
received packets: 3
drops: 0
***Statistics for: REQUEST-ACK***
sent packets: 3
received packets: 2
drops: 1
***Timestamps for packets: DISCOVER-OFFER***
sent / received: 000000.010000 / 000000.013000
sent / received: 000000.011000 / 000000.011500
sent / received: 000000.020000 / 000000.020100
***Timestamps for packets: REQUEST-ACK***
sent / received: 000000.011510 / 000000.012000
sent / received: 000000.013010 / 000000.014000
"""


class PerfdhcpOutput(unittest.TestCase):
    def test_each_ack_is_joined_to_the_offer_that_started_its_exchange(self):
        offers = dhcp_times.timestamps(OUTPUT, "DISCOVER-OFFER")
        acks = dhcp_times.timestamps(OUTPUT, "REQUEST-ACK")
        self.assertEqual(len(offers), 3)
        times = dhcp_times.join(offers, acks)
        # client 2: 0.011000 -> 0.012000; client 1: 0.010000 -> 0.014000 (in order: 0.002 and 0.003)
        self.assertEqual([round(t, 6) for t in times], [0.001, 0.004])

    def test_the_printed_line_has_rate_quantiles_and_drops(self):
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(OUTPUT)
        try:
            sys.argv = ["dhcp_times.py", f.name]
            from io import StringIO
            out, saved = StringIO(), sys.stdout
            sys.stdout = out
            try:
                dhcp_times.main()
            finally:
                sys.stdout = saved
            rate, p50, p99, drops = out.getvalue().split()
            self.assertEqual(rate, "199.5")
            self.assertEqual((p50, p99), ("1.000", "4.000"))  # ms; nearest rank of two values
            self.assertEqual(drops, "16.67")  # 1 of 6 messages unanswered
        finally:
            os.unlink(f.name)


if __name__ == "__main__":
    unittest.main()
