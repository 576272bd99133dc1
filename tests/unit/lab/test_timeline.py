"""The lab's timeline: state-change logs tailed as they grow, and the throughput rate."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _lab.prometheus import SeriesTracker, parse
from _lab.snapshot import BrokerMetrics
from _lab.timeline import StateChangeTail


def _append(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as log:
        log.write(text)


def test_each_poll_returns_only_new_entries_merged_in_time_order(tmp_path: Path) -> None:
    one = tmp_path / "broker-1" / "state-change.log"
    two = tmp_path / "broker-2" / "state-change.log"
    _append(one, "[2026-11-23 10:00:00,100] INFO first (state.change.logger)\n")
    _append(two, "[2026-11-23 10:00:00,050] INFO earlier (state.change.logger)\n")
    tail = StateChangeTail(tmp_path)
    found = tail.poll()
    assert [(e.writer, e.message) for e in found] == [
        ("broker-2", "earlier"),
        ("broker-1", "first"),
    ]
    assert tail.poll() == []
    _append(one, "[2026-11-23 10:00:01,000] INFO second (state.change.logger)\n  at line\n")
    assert [(e.message, e.timestamp) for e in tail.poll()] == [
        ("second\n  at line", "2026-11-23 10:00:01,000")
    ]


def test_a_rewritten_log_is_read_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "broker-1" / "state-change.log"
    _append(log, "[2026-11-23 10:00:00,100] INFO a long first line (state.change.logger)\n")
    tail = StateChangeTail(tmp_path)
    assert len(tail.poll()) == 1
    log.write_text("[2026-11-23 11:00:00,000] INFO new (state.change.logger)\n")
    assert [e.message for e in tail.poll()] == ["new"]


def test_a_missing_directory_gives_no_entries(tmp_path: Path) -> None:
    assert StateChangeTail(tmp_path / "gone").poll() == []


METRICS = """\
# HELP kafka_server_brokertopicmetrics_messagesin Records appended as leader
# TYPE kafka_server_brokertopicmetrics_messagesin counter
kafka_server_brokertopicmetrics_messagesin_total{topic="a"} 7.0
kafka_server_brokertopicmetrics_messagesin_total 12.0
# HELP kafka_log_log_logendoffset Log end offset
# TYPE kafka_log_log_logendoffset gauge
kafka_log_log_logendoffset{partition="0",topic="a"} 5.0
kafka_log_log_logendoffset{partition="1",topic="a"} 7.0
"""


def test_metrics_give_all_topics_messages_in_and_log_end_offsets() -> None:
    found = parse(METRICS)
    assert found.messages_in_total == 12.0
    assert found.log_end_offsets == {("a", 0): 5, ("a", 1): 7}


def _metrics(messages_in: float, produce_p99: float | None = None) -> BrokerMetrics:
    times = {} if produce_p99 is None else {"produce_p99": produce_p99}
    return BrokerMetrics(messages_in, {}, request_times_ms=times)


def test_the_rate_sums_brokers_and_ignores_a_counter_that_went_back() -> None:
    series = SeriesTracker(history_points=3)
    series.observe(100.0, {1: _metrics(10.0), 2: _metrics(100.0)})
    # broker 2 restarted: its counter began again
    series.observe(102.0, {1: _metrics(30.0, 4.0), 2: _metrics(5.0, 9.0)})
    series.observe(103.0, {1: _metrics(40.0)})  # broker 2 down
    series.observe(104.0, {1: _metrics(40.0), 2: _metrics(9.0)})
    found = series.as_json()
    assert found["time"] == [102.0, 103.0, 104.0]
    assert found["messages_in"] == [10.0, 10.0, 0.0]
    assert found["produce_p99"] == [9.0, None, None]  # the slowest broker's


def test_metrics_give_produce_times_and_zookeeper_expiries() -> None:
    text = METRICS + (
        'kafka_network_requestmetrics_totaltimems{quantile="0.99",request="Produce"} 7.5\n'
        'kafka_network_requestmetrics_totaltimems{quantile="0.99",request="Fetch"} 500.0\n'
        "kafka_server_sessionexpirelistener_zookeeperexpires_total 2.0\n"
    )
    found = parse(text)
    assert found.request_times_ms == {"produce_p99": 7.5}
    assert found.zookeeper_expires == 2.0
