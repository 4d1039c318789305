#!/usr/bin/python3
"""arp_probe.py's matching of replies to probes (--every), on made-up times (no root, no network)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from arp_probe import Attribution, attribute  # noqa: E402

A, B = b"\x02\0\0\0\0\x0a", b"\x02\0\0\0\0\x0b"
SENDS = [0.00, 0.01, 0.02, 0.03, 0.04]


def answered(results):
    return [macs for _, macs in results]


class Attribute(unittest.TestCase):
    def test_each_reply_answers_the_probe_before_it(self):
        replies = [(t + 0.0005, A) for t in SENDS]
        self.assertEqual(answered(attribute(SENDS, replies)), [[A]] * 5)

    def test_a_late_reply_answers_its_probe_not_the_next(self):
        # The answer to the second probe came in after the third left (soft interrupts ran late).
        replies = [(0.0005, A), (0.0215, A), (0.0216, A), (0.0305, A), (0.0405, A)]
        self.assertEqual(answered(attribute(SENDS, replies)), [[A]] * 5)

    def test_a_request_nobody_answered_stays_silent(self):
        replies = [(0.0005, A), (0.0205, A), (0.0305, A), (0.0405, A)]
        self.assertEqual(answered(attribute(SENDS, replies)), [[A], [], [A], [A], [A]])

    def test_a_gap_is_not_closed_by_the_answers_after_it(self):
        sends = [i * 0.01 for i in range(300)]
        replies = [(t + 0.0005, A) for t in sends if not 1.0 <= t < 2.0]
        results = answered(attribute(sends, replies))
        self.assertEqual(sum(1 for macs in results if not macs), 100)
        self.assertEqual(results[99:101], [[A], []])
        self.assertEqual(results[199:201], [[], [A]])

    def test_two_macs_in_one_probe_are_both_named_in_order(self):
        replies = [(0.0105, B), (0.0103, A)] + [(t + 0.0005, A) for t in SENDS if t != 0.01]
        self.assertEqual(answered(attribute(SENDS, replies))[1], [A, B])

    def test_a_reply_older_than_a_second_or_before_the_first_probe_is_dropped(self):
        sends = [0.0, 2.0]
        replies = [(-0.5, A), (2.0005, A), (2.0006, A)]  # the second: a duplicate, its earlier probe too old
        self.assertEqual(answered(attribute(sends, replies)), [[], [A]])


class Settled(unittest.TestCase):
    def test_a_probe_is_settled_a_second_after_it_left_and_not_before(self):
        answered = Attribution()
        for t in SENDS:
            answered.sent(t)
        self.assertEqual(answered.settled(0.5), 0)
        self.assertEqual(answered.settled(1.015), 2)  # the probes of 0.00 and 0.01
        self.assertEqual(answered.settled(5.0), 5)

    def test_no_reply_after_settling_changes_a_settled_probe(self):
        answered = Attribution()
        for t in SENDS:
            answered.sent(t)
        settled = answered.settled(1.015)
        before = [list(macs) for macs in answered.answers[:settled]]
        for stamp in (1.016, 1.02, 2.0):  # the kernel took these after read_to
            answered.reply(stamp, A)
            answered.reply(stamp, B)
        self.assertEqual(answered.answers[:settled], before)


if __name__ == "__main__":
    unittest.main()
