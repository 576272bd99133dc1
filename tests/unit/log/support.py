"""Shared helpers for log tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.log.log import Log, LogConfig
from broker.log.records import SimpleRecord, build_batch, decode_records
from broker.log.segment import LogSegment

SMALL_CONFIG = LogConfig(segment_bytes=4096, index_interval_bytes=256, segment_index_bytes=4096)


def make_batch(
    count: int = 1, value_bytes: int = 16, timestamp_ms: int = 1_000, compression_type: int = 0
) -> bytearray:
    """A producer-style batch (base offset 0) of `count` records with distinct values."""
    records = [
        SimpleRecord(
            key=f"k{i}".encode(),
            value=(f"v{i}-".encode() * value_bytes)[:value_bytes],
            timestamp_ms=timestamp_ms + i,
        )
        for i in range(count)
    ]
    return bytearray(build_batch(records, compression_type=compression_type))


def open_log(tmp_path: Path, config: LogConfig = SMALL_CONFIG, **kwargs: object) -> Log:
    return Log.open(tmp_path / "topic-0", config, **kwargs)  # type: ignore[arg-type]


def all_values(log: Log) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record in the log, read batch run by batch run."""
    out: list[tuple[int, bytes | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        records = [r for r in decode_records(data) if r.offset >= offset]
        if not records:
            break
        out.extend((r.offset, r.value) for r in records)
        offset = records[-1].offset + 1
    return out


def count_segment_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The base offsets of the segments fsynced from now on, in order."""
    flushed: list[int] = []
    real_flush = LogSegment.flush

    def counting_flush(segment: LogSegment) -> None:
        flushed.append(segment.base_offset)
        real_flush(segment)

    monkeypatch.setattr(LogSegment, "flush", counting_flush)
    return flushed
