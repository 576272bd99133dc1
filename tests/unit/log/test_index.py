from __future__ import annotations

import struct
from pathlib import Path

import pytest

from broker.log.index import CorruptIndexError, OffsetIndex, TimeIndex

from .support import open_log


def test_offset_index_file_is_kafka_format_and_lookup_finds_floor(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "00000000000000000100.index", 100, 1024)
    index.append(105, 0)
    index.append(120, 4096)
    index.append(130, 8192)
    raw = (tmp_path / "00000000000000000100.index").read_bytes()
    assert raw == struct.pack(">iiiiii", 5, 0, 20, 4096, 30, 8192)
    assert index.lookup(99) == (100, 0)
    assert index.lookup(104) == (100, 0)
    assert index.lookup(105) == (105, 0)
    assert index.lookup(125) == (120, 4096)
    assert index.lookup(10_000) == (130, 8192)
    index.close()


def test_offset_index_reloads_truncates_and_refuses_backwards(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0, 1024)
    for offset in range(10, 60, 10):
        index.append(offset, offset * 100)
    with pytest.raises(ValueError):
        index.append(50, 9999)
    index.truncate_to(30)
    index.close()
    reloaded = OffsetIndex(path, 0, 1024)
    assert list(reloaded.keys) == [10, 20] and path.stat().st_size == 16
    reloaded.close()


def test_offset_index_full_at_max_index_bytes(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "00000000000000000000.index", 0, 24)
    for offset in range(3):
        assert not index.is_full
        index.append(offset, offset)
    assert index.is_full
    index.close()


def test_partial_entry_file_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(b"\x00" * 12)
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0, 1024)


def test_sanity_check_rejects_non_monotonic_and_out_of_file_entries(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(struct.pack(">iiii", 5, 100, 3, 200))
    index = OffsetIndex(path, 0, 1024)
    with pytest.raises(CorruptIndexError):
        index.sanity_check(10_000)
    index.close()
    path.write_bytes(struct.pack(">iiii", 5, 100, 9, 200))
    index = OffsetIndex(path, 0, 1024)
    index.sanity_check(10_000)
    with pytest.raises(CorruptIndexError):
        index.sanity_check(150)
    index.close()


def test_time_index_appends_only_growing_timestamps_and_looks_up(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000010.timeindex"
    index = TimeIndex(path, 10, 1200)
    index.maybe_append(1000, 12)
    index.maybe_append(1000, 15)  # same timestamp: skipped
    index.maybe_append(900, 16)  # lower: skipped
    index.maybe_append(2000, 20)
    assert path.read_bytes() == struct.pack(">qiqi", 1000, 2, 2000, 10)
    assert index.lookup(999) == (-1, 10)
    assert index.lookup(1500) == (1000, 12)
    assert index.lookup(5000) == (2000, 20)
    assert index.last_entry == (2000, 20)
    index.truncate_to(20)
    assert index.last_entry == (1000, 12)
    index.sanity_check()
    index.close()


def test_time_index_sanity_rejects_decreasing_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.timeindex"
    path.write_bytes(struct.pack(">qiqi", 2000, 1, 1000, 2))
    index = TimeIndex(path, 0, 1200)
    with pytest.raises(CorruptIndexError):
        index.sanity_check()
    index.close()


def test_time_index_of_a_segment_closed_empty_stays_empty_as_kafkas(tmp_path: Path) -> None:
    """An empty log closed (a follower that never fetched, a topic never written): Kafka's
    `.timeindex` holds no entry for it, since the max timestamp so far (-1) does not grow past
    an empty index's; a log dir ours leaves is then the same bytes."""
    log = open_log(tmp_path)
    log.close()
    assert (log.directory / "00000000000000000000.timeindex").read_bytes() == b""
    index = TimeIndex(tmp_path / "00000000000000000000.timeindex", 0, 1200)
    index.maybe_append(-1, 0, skip_full_check=True)
    assert index.entries == 0
    index.maybe_append(0, 0)
    assert index.last_entry == (0, 0)
    index.close()
