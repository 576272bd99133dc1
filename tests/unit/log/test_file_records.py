"""Reads left in their segment files (FileRecords, for sendfile): the slice a fetch sends is
exactly the whole batches a copying read returns, and it stays readable while retention,
compaction or closing take its segment away; a truncation under it is detected."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from broker.log.batch import walk_headers
from broker.log.file_records import FileRecords, FileRecordsTruncatedError, records_bytes
from broker.log.log import Log, LogConfig
from broker.log.segment import LogSegment
from tests.unit.log.support import make_batch, open_log

# Small index interval and large segments: many index entries in one segment, so a slice's
# end is found by a jump through the index and a short walk.
CONFIG = LogConfig(segment_bytes=1 << 20, index_interval_bytes=512, segment_index_bytes=1 << 16)


def _copying_read(
    segment: LogSegment, start: int, max_bytes: int, max_offset: int | None, min_one: bool
) -> bytes | None:
    """The read before slices existed: read up to `max_bytes`, keep the whole batches."""
    found = segment.translate_offset(start)
    if found is None:
        return None
    position, first = found
    if max_offset is not None and first.base_offset >= max_offset:
        return b""
    if first.size_bytes > max_bytes:
        return segment.read_bytes(position, first.size_bytes) if min_one else b""
    data = segment.read_bytes(position, min(max_bytes, segment.size_bytes - position))
    entries, complete_bytes = walk_headers(data)
    if max_offset is not None and entries and entries[-1][1] >= max_offset:
        complete_bytes = next(pos for pos, base, _, _ in entries if base >= max_offset)
    return data[:complete_bytes]


def _filled_log(tmp_path: Path, seed: int) -> Log:
    chooser = random.Random(seed)
    log = open_log(tmp_path, CONFIG)
    for _ in range(300):
        count = chooser.choice([1, 1, 2, 5, 20])
        log.append_as_leader(make_batch(count, chooser.choice([8, 40, 300, 2000])), 0, 0)
    return log


@pytest.mark.parametrize("seed", range(4))
def test_a_slice_holds_exactly_the_batches_a_copying_read_returns(
    tmp_path: Path, seed: int
) -> None:
    log = _filled_log(tmp_path, seed)
    assert log.segments[0].offset_index.entries > 50
    chooser = random.Random(seed)
    for _ in range(400):
        segment = chooser.choice(log.segments)
        start = chooser.randrange(segment.base_offset, segment.next_offset)
        max_bytes = chooser.choice([1, 100, 700, 5000, 40_000, 1 << 30])
        max_offset = chooser.choice([None, start, start + 1, chooser.randrange(log.log_end_offset)])
        min_one = chooser.random() < 0.7
        expected = _copying_read(segment, start, max_bytes, max_offset, min_one)
        found = segment.slice(start, max_bytes, max_offset, min_one)
        if expected is None:
            assert found is None
            continue
        assert found is not None
        position, size_bytes, last_offset = found
        assert segment.read_bytes(position, size_bytes) == expected
        batches, _ = walk_headers(expected)
        assert last_offset == (batches[-1][2] if batches else -1)


def test_large_reads_stay_in_the_file_and_small_ones_are_copied(tmp_path: Path) -> None:
    log = _filled_log(tmp_path, 7)
    whole = log.read(0, 1 << 30)
    records = log.read_records(0, 1 << 30, zero_copy_min_bytes=len(whole))
    assert isinstance(records, FileRecords)
    assert len(records) == len(whole)
    assert records.read() == whole
    assert records_bytes(records) == whole
    with pytest.raises(ValueError):
        records.read()  # records_bytes closed it
    small = log.read_records(0, 1 << 30, zero_copy_min_bytes=len(whole) + 1)
    assert small == whole
    assert log.read_records(log.log_end_offset, 1 << 30, zero_copy_min_bytes=1) == b""


def test_a_slice_outlives_its_segment_being_deleted(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_bytes=4096, index_interval_bytes=256))
    while len(log.segments) < 3:
        log.append_as_leader(make_batch(5, 200), 0, 0)
    first = log.segments[0]
    expected = log.read(0, first.size_bytes)
    records = log.read_records(0, first.size_bytes, zero_copy_min_bytes=1)
    assert isinstance(records, FileRecords)
    path = first.log_path
    # Retention: without a running loop the worker deletes the files at once.
    assert log.delete_oldest_segments(1) == 1
    assert not path.exists() and not path.with_name(path.name + ".deleted").exists()
    assert records.read() == expected
    # Its own descriptor: what the segment held was closed, another file may take its
    # number, and the slice still reads its bytes.
    reused = os.open(tmp_path / "other", os.O_RDWR | os.O_CREAT)
    try:
        assert records.read() == expected
    finally:
        os.close(reused)
        records.close()


def test_a_slice_cut_by_a_truncation_is_detected(tmp_path: Path) -> None:
    log = open_log(tmp_path, CONFIG)
    for _ in range(10):
        log.append_as_leader(make_batch(2, 100), 0, 0)
    records = log.read_records(0, 1 << 20, zero_copy_min_bytes=1)
    assert isinstance(records, FileRecords)
    log.truncate_to(6)
    with pytest.raises(FileRecordsTruncatedError):
        records.read()
    records.close()


def test_a_dropped_slice_gives_its_descriptor_back(tmp_path: Path) -> None:
    log = _filled_log(tmp_path, 3)
    records = log.read_records(0, 1 << 20, zero_copy_min_bytes=1)
    assert isinstance(records, FileRecords)
    fd = records.fd
    os.fstat(fd)
    del records
    with pytest.raises(OSError):
        os.fstat(fd)
