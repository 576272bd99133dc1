"""How a log's timestamp bounds resolve (Kafka's LogConfig): before/after.max.ms win when
set, the deprecated difference.max.ms stands in for whichever is left at its default, and
LogAppendTime logs check nothing."""

from __future__ import annotations

from broker.log.config import LONG_MAX, LogConfig


def _bounds(**overrides: str) -> tuple[int, int] | None:
    return LogConfig().with_overrides(overrides).timestamp_bounds_ms


def test_no_bounds_by_default_so_batches_stay_opaque() -> None:
    assert _bounds() is None
    assert not LogConfig().checks_records


def test_difference_stands_in_for_both_bounds() -> None:
    assert _bounds(**{"message.timestamp.difference.max.ms": "1000"}) == (1000, 1000)


def test_before_and_after_win_over_difference() -> None:
    configs = {
        "message.timestamp.difference.max.ms": "1000",
        "message.timestamp.before.max.ms": "5",
    }
    assert _bounds(**configs) == (5, 1000)
    assert _bounds(**{"message.timestamp.after.max.ms": "7"}) == (LONG_MAX, 7)


def test_log_append_time_logs_have_no_bounds() -> None:
    configs = {"message.timestamp.before.max.ms": "5", "message.timestamp.type": "LogAppendTime"}
    assert _bounds(**configs) is None


def test_a_bounded_log_checks_its_records() -> None:
    config = LogConfig().with_overrides({"message.timestamp.after.max.ms": "7"})
    assert config.checks_records
