"""`scripts/bench --compare-jvm-perf` reads the final figures from the output of Kafka 3.9's
ProducerPerformance and ConsumerPerformance (lines built from those tools' format strings)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _tools.bench_jvm_perf import client_warnings, parse_consumer, parse_producer

PRODUCER_STDOUT = (
    "61423 records sent, 12284.6 records/sec (1.17 MB/sec), 1520.3 ms avg latency, "
    "2410.0 ms max latency.\n"
    "200000 records sent, 15873.015873 records/sec (1.51 MB/sec), 1402.51 ms avg latency, "
    "2410.00 ms max latency, 1388 ms 50th, 2201 ms 95th, 2350 ms 99th, 2402 ms 99.9th.\n"
)
CONSUMER_HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
)
CONSUMER_LINE = (
    "2026-11-27 09:50:01:123, 2026-11-27 09:50:05:623, 19.0735, 4.2386, 200000, 44444.4444, "
    "3012, 1488, 12.8182, 134408.6022\n"
)


def test_the_producer_summary_is_its_last_line_with_percentiles() -> None:
    figures = parse_producer(PRODUCER_STDOUT)
    assert figures is not None
    assert figures.records == 200_000
    assert figures.records_per_s == 15873.015873
    assert figures.mb_per_s == 1.51
    assert (figures.avg_latency_ms, figures.max_latency_ms) == (1402.51, 2410.0)
    assert (figures.p50_latency_ms, figures.p99_latency_ms) == (1388, 2350)


def test_a_producer_without_its_summary_gives_nothing() -> None:
    assert parse_producer(PRODUCER_STDOUT.splitlines()[0]) is None


def test_the_consumer_rates_leave_the_group_join_out() -> None:
    figures = parse_consumer(CONSUMER_HEADER + CONSUMER_LINE)
    assert figures is not None
    assert figures.records == 200_000
    assert (figures.records_per_s, figures.mb_per_s) == (134408.6022, 12.8182)
    assert (figures.rebalance_ms, figures.fetch_ms) == (3012, 1488)
    assert not figures.stopped_short


def test_a_consumer_that_timed_out_says_so() -> None:
    warning = (
        "WARNING: Exiting before consuming the expected number of messages: timeout "
        "(10000 ms) exceeded. You can use the --timeout option to increase the timeout.\n"
    )
    figures = parse_consumer(CONSUMER_HEADER + warning + CONSUMER_LINE)
    assert figures is not None
    assert figures.stopped_short


def test_a_consumer_without_its_result_gives_nothing() -> None:
    assert parse_consumer(CONSUMER_HEADER) is None
    assert parse_consumer("") is None


def test_client_warnings_are_counted_and_sampled_once_each() -> None:
    stderr = (
        "[2026-11-27 09:50:01,123] WARN [Producer clientId=perf-producer-client] Got error "
        "produce response with correlation id 12 on topic-partition t-0, retrying "
        "(2147483646 attempts left). Error: NOT_ENOUGH_REPLICAS "
        "(org.apache.kafka.clients.producer.internals.Sender)\n"
        "[2026-11-27 09:50:01,124] WARN [Producer clientId=perf-producer-client] Got error "
        "produce response with correlation id 12 on topic-partition t-0, retrying "
        "(2147483646 attempts left). Error: NOT_ENOUGH_REPLICAS "
        "(org.apache.kafka.clients.producer.internals.Sender)\n"
        "[2026-11-27 09:50:02,000] INFO not a warning (org.apache.kafka.Some)\n"
        "\tat a.stack.Trace(Trace.java:1)\n"
    )
    found = client_warnings(stderr)
    assert found["client_warnings"] == 2
    samples = found["client_warning_samples"]
    assert isinstance(samples, list)
    assert len(samples) == 1
    assert "NOT_ENOUGH_REPLICAS" in samples[0]
