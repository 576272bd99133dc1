from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from broker.log.errors import (
    MESSAGE_TOO_LARGE,
    RECORD_LIST_TOO_LARGE,
    LogInvariantError,
    UnexpectedAppendOffsetError,
)
from broker.log.log import Log, LogConfig, OffsetOutOfRangeError, parse_partition_dir
from broker.log.records import RecordError, decode_records, validate_batches

from .support import SMALL_CONFIG, all_values, count_segment_fsyncs, make_batch, open_log


def test_append_then_read_round_trip(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    info = log.append_as_leader(make_batch(3), leader_epoch=4, now_ms=0)
    assert (info.first_offset, info.last_offset, info.log_append_time_ms) == (0, 2, -1)
    info = log.append_as_leader(make_batch(2, timestamp_ms=5000), leader_epoch=4, now_ms=0)
    assert (info.first_offset, info.last_offset, info.max_timestamp) == (3, 4, 5001)
    assert log.log_end_offset == 5
    data = log.read(0, 1 << 20)
    headers = validate_batches(data, 1 << 20, from_client=False)
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 4), (3, 4)]
    assert [r.offset for r in decode_records(data)] == [0, 1, 2, 3, 4]
    assert log.leader_epoch_cache.entries == [(4, 0)]
    log.close()


def test_segment_files_use_twenty_digit_names(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(60):
        log.append_as_leader(make_batch(1, value_bytes=100), 0, 0)
    names = sorted(p.name for p in log.directory.iterdir() if p.suffix == ".log")
    assert len(names) > 1 and names[0] == "00000000000000000000.log"
    assert all(len(name) == 24 for name in names)
    assert {p.suffix for p in log.directory.iterdir()} >= {".log", ".index", ".timeindex"}
    log.close()


def test_roll_by_size_keeps_segments_under_segment_bytes(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    batch_size = len(make_batch(1, value_bytes=200))
    for _ in range(100):
        log.append_as_leader(make_batch(1, value_bytes=200), 0, 0)
    assert len(log.segments) >= 100 * batch_size // SMALL_CONFIG.segment_bytes
    assert all(s.size_bytes <= SMALL_CONFIG.segment_bytes for s in log.segments)
    assert [s.base_offset for s in log.segments[1:]] == [s.next_offset for s in log.segments[:-1]]
    assert [offset for offset, _ in all_values(log)] == list(range(100))
    log.close()


def test_roll_by_time_uses_batch_timestamps(tmp_path: Path) -> None:
    log = open_log(tmp_path, dataclasses.replace(SMALL_CONFIG, segment_ms=1000))
    log.append_as_leader(make_batch(1, timestamp_ms=10_000), 0, now_ms=0)
    log.append_as_leader(make_batch(1, timestamp_ms=10_900), 0, now_ms=0)
    assert len(log.segments) == 1
    log.append_as_leader(make_batch(1, timestamp_ms=11_001), 0, now_ms=0)
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.close()


def test_roll_by_time_uses_creation_time_without_timestamps(tmp_path: Path) -> None:
    log = open_log(tmp_path, dataclasses.replace(SMALL_CONFIG, segment_ms=1000), now_ms=0)
    log.append_as_leader(make_batch(1, timestamp_ms=-1), 0, now_ms=10)
    log.append_as_leader(make_batch(1, timestamp_ms=-1), 0, now_ms=900)
    assert len(log.segments) == 1
    log.append_as_leader(make_batch(1, timestamp_ms=-1), 0, now_ms=1001)
    assert len(log.segments) == 2
    log.close()


def test_roll_when_index_full(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=1, segment_index_bytes=24)
    log = open_log(tmp_path, config)
    for _ in range(10):
        log.append_as_leader(make_batch(1), 0, 0)
    assert len(log.segments) > 1
    assert all(s.offset_index.entries <= 3 for s in log.segments)
    log.close()


def test_index_lookups_across_many_segments(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for i in range(300):
        log.append_as_leader(make_batch(1 + i % 3, value_bytes=30), 0, 0)
    assert len(log.segments) > 5
    for offset in range(0, log.log_end_offset, 7):
        data = log.read(offset, 100)  # one small batch
        header = validate_batches(data, 1 << 20, from_client=False)[0]
        assert header.base_offset <= offset <= header.last_offset
    log.close()


def test_read_respects_max_bytes_with_whole_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    batch_size = len(make_batch(1))
    for _ in range(10):
        log.append_as_leader(make_batch(1), 0, 0)
    assert len(log.read(0, batch_size * 3 + 10)) == batch_size * 3
    assert len(log.read(0, batch_size - 1)) == batch_size  # min_one_batch (KIP-74)
    assert log.read(0, batch_size - 1, min_one_batch=False) == b""
    log.close()


def test_read_stops_at_max_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(5):
        log.append_as_leader(make_batch(2), 0, 0)  # batches at 0, 2, 4, 6, 8
    headers = validate_batches(log.read(0, 1 << 20, max_offset=5), 1 << 20, from_client=False)
    assert [h.base_offset for h in headers] == [0, 2, 4]
    assert log.read(6, 1 << 20, max_offset=6) == b""
    assert log.read(3, 1 << 20, max_offset=4)[:8] == (2).to_bytes(8, "big")
    log.close()


def test_read_at_log_end_is_empty_and_outside_range_raises(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(make_batch(3), 0, 0)
    assert log.read(3, 1000) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 1000)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 1000)
    log.close()


def test_oversize_batch_rejected_and_log_unchanged(tmp_path: Path) -> None:
    log = open_log(tmp_path, dataclasses.replace(SMALL_CONFIG, max_message_bytes=200))
    with pytest.raises(RecordError) as error:
        log.append_as_leader(make_batch(1, value_bytes=500), 0, 0)
    assert error.value.error_code == MESSAGE_TOO_LARGE
    assert log.log_end_offset == 0 and log.active_segment.size_bytes == 0
    log.close()


def test_record_set_larger_than_segment_is_record_list_too_large(tmp_path: Path) -> None:
    log = open_log(tmp_path, dataclasses.replace(SMALL_CONFIG, max_message_bytes=1 << 20))
    with pytest.raises(RecordError) as error:
        log.append_as_leader(make_batch(1, value_bytes=5000), 0, 0)
    assert error.value.error_code == RECORD_LIST_TOO_LARGE
    log.close()


def test_log_append_time_stamps_batches(tmp_path: Path) -> None:
    config = dataclasses.replace(SMALL_CONFIG, message_timestamp_type="LogAppendTime")
    log = open_log(tmp_path, config)
    info = log.append_as_leader(make_batch(2, timestamp_ms=5), 0, now_ms=777)
    assert (info.log_append_time_ms, info.max_timestamp) == (777, 777)
    assert [r.timestamp_ms for r in decode_records(log.read(0, 1 << 20))] == [777, 777]
    log.close()


def test_offset_for_timestamp_finds_first_record_at_or_after(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for i in range(100):
        log.append_as_leader(make_batch(2, value_bytes=80, timestamp_ms=1000 + 10 * i), 0, 0)
    assert len(log.segments) > 2
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(1001) == (1, 1001)
    assert log.offset_for_timestamp(1002) == (2, 1010)
    assert log.offset_for_timestamp(1505) == (102, 1510)
    assert log.offset_for_timestamp(1991) == (199, 1991)
    assert log.offset_for_timestamp(1992) is None
    assert log.offset_for_timestamp(-1) == (200, -1)
    assert log.offset_for_timestamp(-2) == (0, -1)
    log.close()


def test_offset_for_timestamp_with_out_of_order_timestamps(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for timestamp in [100, 50, 300, 200, 400]:
        log.append_as_leader(make_batch(1, timestamp_ms=timestamp), 0, 0)
    assert log.offset_for_timestamp(150) == (2, 300)
    assert log.offset_for_timestamp(60) == (0, 100)
    log.close()


def test_truncate_to_removes_later_segments_and_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for _ in range(100):
        log.append_as_leader(make_batch(1, value_bytes=100), leader_epoch=0, now_ms=0)
    log.append_as_leader(make_batch(1), leader_epoch=1, now_ms=0)
    log.truncate_to(37)
    assert log.log_end_offset == 37
    assert [offset for offset, _ in all_values(log)] == list(range(37))
    assert all(s.base_offset <= 37 for s in log.segments)
    assert log.leader_epoch_cache.entries == [(0, 0)]
    info = log.append_as_leader(make_batch(1), 2, 0)
    assert info.first_offset == 37
    log.close()


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(make_batch(5), 0, 0)
    log.truncate_fully_and_start_at(1000)
    assert (log.log_start_offset, log.log_end_offset) == (1000, 1000)
    assert log.append_as_leader(make_batch(1), 0, 0).first_offset == 1000
    assert [p.name for p in log.directory.glob("*.log")] == ["00000000000000001000.log"]
    log.close()


def test_follower_append_keeps_offsets_and_rejects_going_back(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    for epoch in (0, 0, 3):
        leader.append_as_leader(make_batch(2), epoch, 0)
    follower = open_log(tmp_path / "follower")
    info = follower.append_as_follower(leader.read(0, 1 << 20))
    assert (info.first_offset, info.last_offset) == (0, 5)
    assert follower.read(0, 1 << 20) == leader.read(0, 1 << 20)
    assert follower.leader_epoch_cache.entries == [(0, 0), (3, 4)]
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(leader.read(2, 1 << 20))
    leader.close()
    follower.close()


def test_empty_append_writes_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    assert log.append_as_leader(bytearray(), 0, 0).first_offset == -1
    assert log.log_end_offset == 0
    log.close()


def test_partition_dir_names() -> None:
    assert parse_partition_dir("my-topic-12") == ("my-topic", 12)
    with pytest.raises(ValueError):
        parse_partition_dir("no_partition")


def test_flush_advances_recovery_point(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(make_batch(4), 0, 0)
    assert log.recovery_point == 0
    log.flush()
    assert log.recovery_point == 4
    log.close()


def test_flush_syncs_only_segments_changed_since_the_last_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushed = count_segment_fsyncs(monkeypatch)
    log = open_log(tmp_path)
    log.append_as_leader(make_batch(4), 0, 0)
    log.flush()
    assert flushed == [0]
    log.flush()  # nothing new: no fsync
    assert flushed == [0]
    log.truncate_to(2)  # a truncation with no append after it still needs one
    log.flush()
    assert flushed == [0, 0]
    log.flush()
    assert flushed == [0, 0]
    log.close()


def test_delete_removes_directory(tmp_path: Path) -> None:
    log: Log = open_log(tmp_path)
    log.append_as_leader(make_batch(1), 0, 0)
    log.delete()
    assert not log.directory.exists()


def test_max_timestamp_and_offset_finds_first_record_with_largest_timestamp(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path)
    assert log.max_timestamp_and_offset() is None
    for timestamp in [100, 900, 300, 900, 200]:
        log.append_as_leader(make_batch(1, timestamp_ms=timestamp), 0, 0)
    assert log.max_timestamp_and_offset() == (1, 900)
    log.close()


def test_high_watermark_outside_log_start_and_log_end_is_refused_not_clamped(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(make_batch(5), leader_epoch=0, now_ms=0)
    log.increment_log_start_offset(2)
    assert log.update_high_watermark(5) == 5
    assert log.update_high_watermark(2) == 2
    with pytest.raises(LogInvariantError, match="high watermark 6 outside"):
        log.update_high_watermark(6)
    with pytest.raises(LogInvariantError, match="high watermark 1 outside"):
        log.update_high_watermark(1)
    assert log.high_watermark == 2  # unchanged by the refused updates
    log.close()
