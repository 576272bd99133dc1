from __future__ import annotations

import dataclasses
from pathlib import Path

from broker.log.cleaner import delete_retained_segments
from broker.log.log import Log

from .support import SMALL_CONFIG, make_batch, open_log


def _filled_log(tmp_path: Path, retention_ms: int, retention_bytes: int = -1) -> Log:
    config = dataclasses.replace(
        SMALL_CONFIG, retention_ms=retention_ms, retention_bytes=retention_bytes
    )
    log = open_log(tmp_path, config)
    for i in range(60):
        log.append_as_leader(make_batch(2, value_bytes=100, timestamp_ms=1000 * i), 0, 0)
    return log


def test_retention_ms_deletes_old_segments_and_moves_log_start(tmp_path: Path) -> None:
    log = _filled_log(tmp_path, retention_ms=20_000)
    segments = log.segments
    deleted = delete_retained_segments(log, now_ms=60_000, high_watermark=log.log_end_offset)
    assert deleted > 0
    assert all(s.largest_timestamp >= 40_000 for s in log.segments[:-1])
    assert log.log_start_offset == log.segments[0].base_offset
    assert not segments[0].log_path.exists()
    log.close()


def test_retention_bytes_keeps_at_least_the_limit(tmp_path: Path) -> None:
    log = _filled_log(tmp_path, retention_ms=-1, retention_bytes=5000)
    delete_retained_segments(log, now_ms=0, high_watermark=log.log_end_offset)
    assert log.size_bytes >= 5000
    assert log.size_bytes - log.segments[0].size_bytes < 5000
    log.close()


def test_retention_never_passes_high_watermark_or_active_segment(tmp_path: Path) -> None:
    log = _filled_log(tmp_path, retention_ms=0)
    assert delete_retained_segments(log, now_ms=10**9, high_watermark=0) == 0
    delete_retained_segments(log, now_ms=10**9, high_watermark=log.log_end_offset)
    assert len(log.segments) == 1 and log.log_end_offset == 120
    log.close()


def test_log_start_offset_breach_deletes_wholly_covered_segments(tmp_path: Path) -> None:
    log = _filled_log(tmp_path, retention_ms=-1)
    target = log.segments[2].base_offset + 1
    log.increment_log_start_offset(target)
    assert delete_retained_segments(log, now_ms=0, high_watermark=log.log_end_offset) == 2
    assert log.log_start_offset == target
    log.close()
