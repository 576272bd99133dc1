"""A crash in the middle of a compaction swap: loading the log finishes or discards it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from broker.log.compaction import take_snapshot
from broker.log.compaction_io import (
    CleanerIo,
    Throttler,
    build_offset_map,
    write_cleaned_segment,
)
from broker.log.compaction_map import OffsetMap
from broker.log.compaction_recovery import SWAP_END_SUFFIX, swap_end_path
from broker.log.compaction_txn import TxnCleaning
from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.record_codec import SimpleRecord, build_batch, decode_records
from broker.log.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    segment_file_name,
)

CONFIG = LogConfig(
    segment_bytes=1024, index_interval_bytes=128, segment_index_bytes=4096, cleanup_policy="compact"
)
GROUP_SIZE = 3
Entry = tuple[int, bytes | None, bytes | None]


def _filled_log(tmp_path: Path) -> tuple[Log, list[Entry]]:
    log = Log.open(tmp_path / "topic-0", CONFIG)
    entries: list[Entry] = []
    for offset in range(200):
        key, value = f"k{offset % 5}".encode(), f"value-{offset:05d}".encode() * 3
        batch = build_batch([SimpleRecord(key, value, timestamp_ms=1_000)])
        log.append_as_leader(bytearray(batch), 0, 0)
        entries.append((offset, key, value))
    log.update_high_watermark(log.log_end_offset)
    return log, entries


def _contents(log: Log) -> list[Entry]:
    out: list[Entry] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        records = [r for r in decode_records(log.read(offset, 1 << 20)) if r.offset >= offset]
        if not records:
            break
        out.extend((r.offset, r.key, r.value) for r in records)
        offset = records[-1].offset + 1
    return out


def _clean_first_group(log: Log) -> tuple[LogSegment, list[LogSegment], list[Entry], int]:
    """Write the `.cleaned` segment for the first GROUP_SIZE segments, as the cleaner would;
    returns it, the segments it replaces, what the log holds once it is swapped in, and the
    offset where the group ends."""
    snapshot = take_snapshot(log)
    io = CleanerIo(4096, threading.Event(), Throttler(1e300))
    offset_map = OffsetMap(1 << 20)
    uncleanable = snapshot.active_base_offset
    build_offset_map(snapshot.sources, 0, uncleanable, offset_map, io, 1 << 24, TxnCleaning(()))
    group = list(snapshot.sources[:GROUP_SIZE])
    cleaned = write_cleaned_segment(
        log.directory, group, CONFIG, offset_map, 0, {}, TxnCleaning(()), io
    )
    group_end = group[-1].info.end_offset
    latest = {key: offset for offset, key, _ in _contents(log) if offset < uncleanable}
    expected = [e for e in _contents(log) if e[0] >= group_end or latest[e[1]] == e[0]]
    return cleaned, [source.segment for source in group], expected, group_end


def _crash(log: Log, *segments: LogSegment) -> None:
    for segment in [*log.segments, *segments]:
        segment.close_handles()


def _rename(segment: LogSegment, old_suffix: str, new_suffix: str, only: str | None = None) -> None:
    directory = segment.log_path.parent
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, LOG_SUFFIX):
        if only is not None and suffix != only:
            continue
        name = segment_file_name(segment.base_offset, suffix)
        (directory / (name + old_suffix)).rename(directory / (name + new_suffix))


def _leftovers(directory: Path) -> list[str]:
    suffixes = (CLEANED_SUFFIX, SWAP_SUFFIX, DELETED_SUFFIX, SWAP_END_SUFFIX)
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(suffixes))


def _reopen_after(
    tmp_path: Path, crash_state: Callable[[LogSegment, list[LogSegment]], None]
) -> tuple[list[Entry], list[Entry], list[Entry]]:
    """Contents (before, if the swap completed, after reopening) around a crash state."""
    log, _ = _filled_log(tmp_path)
    before = _contents(log)
    cleaned, replaced, expected, _ = _clean_first_group(log)
    _crash(log, cleaned)
    crash_state(cleaned, replaced)
    reopened = Log.open(tmp_path / "topic-0", CONFIG)
    after = _contents(reopened)
    assert _leftovers(tmp_path / "topic-0") == []
    reopened.close()
    return before, expected, after


def test_leftover_cleaned_files_are_discarded(tmp_path: Path) -> None:
    before, expected, after = _reopen_after(tmp_path, lambda cleaned, replaced: None)
    assert expected != before
    assert after == before


def test_swap_index_files_without_the_log_swap_are_discarded(tmp_path: Path) -> None:
    def indexes_renamed(cleaned: LogSegment, replaced: list[LogSegment]) -> None:
        _rename(cleaned, CLEANED_SUFFIX, SWAP_SUFFIX, only=INDEX_SUFFIX)
        _rename(cleaned, CLEANED_SUFFIX, SWAP_SUFFIX, only=TIME_INDEX_SUFFIX)

    before, _, after = _reopen_after(tmp_path, indexes_renamed)
    assert after == before


def test_a_committed_swap_replaces_the_old_segments(tmp_path: Path) -> None:
    def committed(cleaned: LogSegment, replaced: list[LogSegment]) -> None:
        _rename(cleaned, CLEANED_SUFFIX, SWAP_SUFFIX)

    _, expected, after = _reopen_after(tmp_path, committed)
    assert after == expected


def test_a_committed_swap_whose_indexes_were_not_renamed_rebuilds_them(tmp_path: Path) -> None:
    def log_only(cleaned: LogSegment, replaced: list[LogSegment]) -> None:
        _rename(cleaned, CLEANED_SUFFIX, SWAP_SUFFIX, only=LOG_SUFFIX)

    _, expected, after = _reopen_after(tmp_path, log_only)
    assert after == expected


@pytest.mark.parametrize("renamed_old_segments", [1, GROUP_SIZE])
def test_a_swap_interrupted_while_retiring_old_segments_completes(
    tmp_path: Path, renamed_old_segments: int
) -> None:
    def retiring(cleaned: LogSegment, replaced: list[LogSegment]) -> None:
        _rename(cleaned, CLEANED_SUFFIX, SWAP_SUFFIX)
        for segment in replaced[:renamed_old_segments]:
            _rename(segment, "", DELETED_SUFFIX)

    _, expected, after = _reopen_after(tmp_path, retiring)
    assert after == expected


def test_a_swap_interrupted_while_dropping_the_swap_suffix_completes(tmp_path: Path) -> None:
    def finishing(cleaned: LogSegment, replaced: list[LogSegment]) -> None:
        _rename(cleaned, CLEANED_SUFFIX, SWAP_SUFFIX)
        for segment in replaced:
            _rename(segment, "", DELETED_SUFFIX)
        _rename(cleaned, SWAP_SUFFIX, "", only=INDEX_SUFFIX)

    _, expected, after = _reopen_after(tmp_path, finishing)
    assert after == expected


def test_a_crash_after_the_swap_before_the_old_files_were_deleted(tmp_path: Path) -> None:
    log, _ = _filled_log(tmp_path)
    cleaned, replaced, expected, group_end = _clean_first_group(log)
    assert log.replace_segments(replaced, cleaned, log.truncation_count)
    assert _contents(log) == expected
    assert log.segments[1].base_offset == group_end
    # The replaced segments' .deleted files, and the swap's end marker.
    assert len(_leftovers(tmp_path / "topic-0")) == 3 * GROUP_SIZE + 1
    _crash(log, *replaced)
    reopened = Log.open(tmp_path / "topic-0", CONFIG)
    assert _contents(reopened) == expected
    assert _leftovers(tmp_path / "topic-0") == []
    reopened.close()


def test_released_segments_leave_no_files(tmp_path: Path) -> None:
    log, _ = _filled_log(tmp_path)
    cleaned, replaced, expected, _ = _clean_first_group(log)
    assert log.replace_segments(replaced, cleaned, log.truncation_count)
    log.release_replaced_segments(replaced)
    swap_end_path(log.directory, cleaned.base_offset).unlink()
    assert _leftovers(tmp_path / "topic-0") == []
    log.close()
    reopened = Log.open(tmp_path / "topic-0", CONFIG, had_clean_shutdown=True)
    assert _contents(reopened) == expected
    reopened.close()


def test_a_stray_end_marker_without_a_swap_is_removed(tmp_path: Path) -> None:
    def marker_only(cleaned: LogSegment, replaced: list[LogSegment]) -> None:
        for path in cleaned.log_path.parent.glob("*" + CLEANED_SUFFIX):
            path.unlink()

    before, _, after = _reopen_after(tmp_path, marker_only)
    assert after == before


def test_without_the_end_marker_kafkas_rule_keeps_wholly_compacted_segments(
    tmp_path: Path,
) -> None:
    """Kafka's rule alone (the swap's own next offset) misses a replaced segment whose records
    were all compacted away: it survives, holding only older versions of later keys."""

    def committed_without_marker(cleaned: LogSegment, replaced: list[LogSegment]) -> None:
        _rename(cleaned, CLEANED_SUFFIX, SWAP_SUFFIX)
        swap_end_path(cleaned.log_path.parent, cleaned.base_offset).unlink()

    before, expected, after = _reopen_after(tmp_path, committed_without_marker)
    assert set(expected) <= set(after) <= set(before)
    assert [offset for offset, _, _ in after] == sorted({offset for offset, _, _ in after})
