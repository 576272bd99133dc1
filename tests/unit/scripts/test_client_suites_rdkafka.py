"""scripts/client_suites --suite rdkafka reads librdkafka's test-runner output: the rows of its
summary table (colours and all) and, for a failed test, the failure lines of the log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _tools.client_suites_rdkafka import (
    DEFAULT_TESTS,
    RdkafkaError,
    RowResult,
    failure_details,
    parse_summary,
    select_tests,
)

# The end of one runner's output, shaped like librdkafka 2.12's (stderr and stdout merged).
OUTPUT = (
    "\x1b[36m[0129_fetch_aborted_msgs     /  3.100s] Produced 10 messages\n"
    "\x1b[0m\x1b[36m[0129_fetch_aborted_msgs     /  3.200s] Consuming from offset 0\n"
    "\x1b[0m\x1b[31m[0129_fetch_aborted_msgs     /  9.300s] TEST FAILURE\n"
    '\x1b[31m### Test "0129_fetch_aborted_msgs" failed at 0129-fetch_aborted_msgs.c:98:'
    "do_test() at Thu Nov 27 05:40:11 2025: ###\n"
    "Expected 10 messages, got 0\n"
    "TEST 20251127054011 (bare, scenario default) SUMMARY\n"
    "#==================================================================#\n"
    "|\x1b[31m <MAIN>                                   |     FAILED |  12.004s \x1b[0m|\n"
    "|\x1b[36m 0103_transactions_local                  |    SKIPPED |   0.000s \x1b[0m|"
    "\x1b[36m Filtered due to negative test flags\x1b[0m\n"
    "|\x1b[32m 0103_transactions                        |     PASSED |  86.147s \x1b[0m|\n"
    "|\x1b[31m 0129_fetch_aborted_msgs                  |     FAILED |   9.301s \x1b[0m|"
    "\x1b[31m do_test():98: Expected 10 messages, got 0\x1b[0m\n"
    "|\x1b[35m 0137_barrier_batch_consume               |    RUNNING |  30.000s \x1b[0m|\n"
    "|\x1b[36m 0045_subscribe_update_topic_remove       |    SKIPPED |   0.000s \x1b[0m|\n"
    "#==================================================================#\n"
)


def test_the_summary_rows_become_outcomes_without_main() -> None:
    assert parse_summary(OUTPUT) == [
        RowResult(
            "0103_transactions_local",
            "SKIPPED",
            "broker-less (local/mock), sockem or known-issue test",
        ),
        RowResult("0103_transactions", "PASSED", ""),
        RowResult("0129_fetch_aborted_msgs", "FAILED", "do_test():98: Expected 10 messages, got 0"),
        RowResult("0137_barrier_batch_consume", "FAILED", "still running when the runner stopped"),
        RowResult(
            "0045_subscribe_update_topic_remove",
            "SKIPPED",
            "left out by the runner without a reason (e.g. it needs another test scenario)",
        ),
    ]


def test_a_failure_keeps_its_header_message_and_the_lines_before() -> None:
    details = failure_details(OUTPUT, before=2)
    assert list(details) == ["0129_fetch_aborted_msgs"]
    assert details["0129_fetch_aborted_msgs"] == [
        "[0129_fetch_aborted_msgs     /  3.200s] Consuming from offset 0",
        "[0129_fetch_aborted_msgs     /  9.300s] TEST FAILURE",
        '### Test "0129_fetch_aborted_msgs" failed at 0129-fetch_aborted_msgs.c:98:do_test() '
        "at Thu Nov 27 05:40:11 2025: ###",
        "Expected 10 messages, got 0",
    ]


def test_no_summary_means_no_rows() -> None:
    assert parse_summary("Segmentation fault\n") == []


def test_test_selection(tmp_path: Path) -> None:
    for name in ("0000-unittests.c", "0103-transactions.c", "0061-consumer_lag.cpp", "test.c"):
        (tmp_path / name).write_text("")
    assert select_tests(None, tmp_path) == list(DEFAULT_TESTS)
    assert select_tests("0103_transactions, 0061,0103", tmp_path) == ["0103", "0061"]
    assert select_tests("all", tmp_path) == ["0061", "0103"]
    with pytest.raises(RdkafkaError):
        select_tests("transactions", tmp_path)
    with pytest.raises(RdkafkaError):
        select_tests("0104", tmp_path)
