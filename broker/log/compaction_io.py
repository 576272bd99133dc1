"""The cleaner's file work, run on a worker thread: reading segments, building the offset map,
writing a cleaned segment. Nothing here touches a Log's live state: source segments are read
through file handles of our own, opened by path, so the event loop may meanwhile append, roll,
close or delete without this code reading a reused file descriptor; the swap on the loop then
checks that the segments read are still the log's (`Log.replace_segments`).

Every batch read is CRC-checked: a corrupt batch aborts the cleaning of that log instead of
being copied into a cleaned segment.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from broker.log.batch import (
    CURRENT_MAGIC,
    HEADER_SIZE_BYTES,
    HEADER_STRUCT,
    BatchHeader,
    check_crc,
)
from broker.log.compaction_map import OffsetMap
from broker.log.compaction_plan import SegmentInfo, retains_deletes
from broker.log.compaction_records import (
    filter_batch,
    parse_records,
    records_section,
)
from broker.log.compaction_recovery import swap_end_path, write_swap_end
from broker.log.compaction_txn import TxnCleaning
from broker.log.config import LogConfig
from broker.log.errors import LogCorruptError, RecordError
from broker.log.segment import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    BatchSpan,
    LogSegment,
    segment_file_name,
)
from broker.log.txn_index import TXN_INDEX_SUFFIX

NANOSECONDS_PER_MILLISECOND = 1_000_000
THROTTLE_WINDOW_S = 0.3  # Kafka's Throttler checks its rate every 300 ms


class CleaningAborted(Exception):
    """The cleaner is stopping, or a source segment vanished (the log was deleted)."""


@dataclass(frozen=True, slots=True)
class SourceSegment:
    """An inactive segment as the event loop saw it; `segment` is only used for identity."""

    info: SegmentInfo
    log_path: Path
    segment: LogSegment


class Throttler:
    """Keeps the cleaner's I/O under log.cleaner.io.max.bytes.per.second (sleeping on the
    worker thread), which also bounds how much CPU - and GIL - it takes from the event loop."""

    def __init__(
        self,
        max_bytes_per_second: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.max_bytes_per_second = max_bytes_per_second
        self._clock = clock
        self._sleep = sleep
        self._window_start_s = clock()
        self._window_bytes = 0

    def consumed(self, size_bytes: int) -> None:
        self._window_bytes += size_bytes
        elapsed_s = self._clock() - self._window_start_s
        if elapsed_s < THROTTLE_WINDOW_S:
            return
        wanted_s = self._window_bytes / self.max_bytes_per_second
        if wanted_s > elapsed_s:
            self._sleep(wanted_s - elapsed_s)
        self._window_start_s = self._clock()
        self._window_bytes = 0


@dataclass(slots=True)
class CleanerIo:
    """How the worker reads: chunk size, the stop signal, the throttle, and what it counted."""

    read_chunk_bytes: int
    stop: threading.Event
    throttler: Throttler
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0

    def check_stop(self) -> None:
        if self.stop.is_set():
            raise CleaningAborted("the log cleaner is stopping")


def read_batches(path: Path, size_bytes: int, io: CleanerIo) -> Iterator[tuple[BatchHeader, bytes]]:
    """(header, batch bytes) of each batch in the first `size_bytes` of the segment file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError as error:
        raise CleaningAborted(f"{path} is gone") from error
    try:
        position = 0
        while position < size_bytes:
            io.check_stop()
            chunk = os.pread(fd, min(io.read_chunk_bytes, size_bytes - position), position)
            batches = list(_complete_batches(chunk, path, position))
            if not batches:  # one batch larger than a chunk: read it alone
                batches = [_read_one_batch(fd, path, position, size_bytes)]
            chunk_bytes = sum(header.size_bytes for header, _ in batches)
            io.bytes_read += chunk_bytes
            io.throttler.consumed(chunk_bytes)
            for header, batch in batches:
                yield header, batch
                position += header.size_bytes
    finally:
        os.close(fd)


def _complete_batches(
    chunk: bytes, path: Path, base_position: int
) -> list[tuple[BatchHeader, bytes]]:
    batches: list[tuple[BatchHeader, bytes]] = []
    position = 0
    while len(chunk) - position >= HEADER_SIZE_BYTES:
        header = _checked_header(chunk, position, path, base_position)
        if position + header.size_bytes > len(chunk):
            break
        batch = chunk[position : position + header.size_bytes]
        _check_batch_crc(batch, header, path, base_position + position)
        batches.append((header, batch))
        position += header.size_bytes
    return batches


def _read_one_batch(
    fd: int, path: Path, position: int, size_bytes: int
) -> tuple[BatchHeader, bytes]:
    head = os.pread(fd, HEADER_SIZE_BYTES, position)
    if len(head) < HEADER_SIZE_BYTES:
        raise LogCorruptError(f"{path}: torn batch header at position {position}")
    header = _checked_header(head, 0, path, position)
    if position + header.size_bytes > size_bytes:
        raise LogCorruptError(f"{path}: batch at position {position} runs past the segment")
    batch = os.pread(fd, header.size_bytes, position)
    _check_batch_crc(batch, header, path, position)
    return header, batch


def _checked_header(data: bytes, position: int, path: Path, base_position: int) -> BatchHeader:
    header = BatchHeader(*HEADER_STRUCT.unpack_from(data, position))
    if header.magic != CURRENT_MAGIC or header.size_bytes < HEADER_SIZE_BYTES:
        raise LogCorruptError(f"{path}: bad batch header at position {base_position + position}")
    return header


def _check_batch_crc(batch: bytes, header: BatchHeader, path: Path, position: int) -> None:
    if len(batch) != header.size_bytes:
        raise LogCorruptError(f"{path}: torn batch at position {position}")
    try:
        check_crc(batch, 0, header)
    except RecordError as error:
        raise LogCorruptError(f"{path}: {error} (position {position})") from error


def first_batch_timestamp(path: Path) -> int:
    """The first batch's max timestamp (Kafka's getFirstBatchTimestamp); -1 if none."""
    try:
        with open(path, "rb") as file:
            head = file.read(HEADER_SIZE_BYTES)
    except FileNotFoundError:
        return -1
    if len(head) < HEADER_SIZE_BYTES:
        return -1
    return BatchHeader(*HEADER_STRUCT.unpack_from(head)).max_timestamp


def modified_ms(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns // NANOSECONDS_PER_MILLISECOND
    except FileNotFoundError as error:
        raise CleaningAborted(f"{path} is gone") from error


# ---- the offset map -----------------------------------------------------------------------


def build_offset_map(
    dirty: Sequence[SourceSegment],
    first_dirty: int,
    end_offset: int,
    offset_map: OffsetMap,
    io: CleanerIo,
    max_decompressed_bytes: int,
    txns: TxnCleaning,
) -> None:
    """Map each key to its latest offset in [first_dirty, end_offset), segment by segment,
    until the map is full; `offset_map.latest_offset` then says how far it got. Markers and
    aborted data stay out of the map."""
    for source in dirty:
        for header, batch in read_batches(source.log_path, source.info.size_bytes, io):
            if header.last_offset < first_dirty:
                continue
            if header.base_offset >= end_offset:
                return
            if not header.is_control and not txns.is_aborted(header):
                section = records_section(batch, header, max_decompressed_bytes)
                for record in parse_records(section, header):
                    if record.key is None or record.offset < first_dirty:
                        continue
                    if not offset_map.put(record.key, record.offset):
                        return  # full: the records from here on stay dirty
            offset_map.update_latest_offset(min(header.last_offset, end_offset - 1))


# ---- writing a cleaned segment --------------------------------------------------------------


def cleaned_file_paths(directory: Path, base_offset: int) -> list[Path]:
    return [
        directory / (segment_file_name(base_offset, suffix) + CLEANED_SUFFIX)
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
    ]


def remove_cleaned_files(directory: Path, base_offset: int) -> None:
    for path in cleaned_file_paths(directory, base_offset):
        path.unlink(missing_ok=True)


class _SegmentWriter:
    """Appends batches to the cleaned segment a chunk at a time."""

    def __init__(self, segment: LogSegment, io: CleanerIo) -> None:
        self._segment = segment
        self._io = io
        self._buffer = bytearray()
        self._spans: list[BatchSpan] = []

    def add(self, batch: bytes) -> None:
        header = BatchHeader(*HEADER_STRUCT.unpack_from(batch))
        self._buffer += batch
        self._spans.append((header.size_bytes, header.last_offset, header.max_timestamp))
        if len(self._buffer) >= self._io.read_chunk_bytes:
            self.flush()

    def flush(self) -> None:
        if not self._buffer:
            return
        self._segment.append(self._buffer, self._spans)
        self._io.bytes_written += len(self._buffer)
        self._io.throttler.consumed(len(self._buffer))
        self._buffer = bytearray()
        self._spans = []


def write_cleaned_segment(
    directory: Path,
    group: Sequence[SourceSegment],
    config: LogConfig,
    offset_map: OffsetMap,
    horizon_ms: int,
    producer_last_offsets: Mapping[int, int],
    txns: TxnCleaning,
    io: CleanerIo,
) -> LogSegment:
    """Filter the group's batches into `<base>.log.cleaned` (+ indexes), fsynced, with the
    group's latest modification time (the tombstone clock), and write `<base>.swap-end`
    (`compaction_recovery`). The caller swaps it in, then calls `discard_swap_end`."""
    base_offset = group[0].info.base_offset
    remove_cleaned_files(directory, base_offset)  # an earlier, abandoned attempt
    now_ms = time.time_ns() // NANOSECONDS_PER_MILLISECOND
    cleaned = LogSegment(directory, base_offset, config, now_ms, file_suffix=CLEANED_SUFFIX)
    try:
        writer = _SegmentWriter(cleaned, io)
        newest_modified_ms = 0
        for source in group:
            source_modified_ms = modified_ms(source.log_path)
            newest_modified_ms = max(newest_modified_ms, source_modified_ms)
            retain_deletes = retains_deletes(source_modified_ms, horizon_ms)
            for header, batch in read_batches(source.log_path, source.info.size_bytes, io):
                _check_within(header, source)
                filtered = filter_batch(
                    batch,
                    header,
                    offset_map,
                    retain_deletes,
                    producer_last_offsets,
                    config.max_decompressed_bytes,
                    txns,
                )
                io.records_read += filtered.records_read
                io.records_kept += filtered.records_kept
                if filtered.data:
                    writer.add(filtered.data)
        writer.flush()
        # The aborts whose markers this group keeps: the cleaned segment's .txnindex.
        cleaned.txn_index.replace(txns.kept_aborts(base_offset, group[-1].info.end_offset))
        cleaned.on_become_inactive()
        cleaned.flush()
        modified_ns = newest_modified_ms * NANOSECONDS_PER_MILLISECOND
        os.utime(cleaned.log_path, ns=(modified_ns, modified_ns))
        write_swap_end(directory, base_offset, group[-1].info.end_offset)
    except BaseException:
        cleaned.delete()
        discard_swap_end(directory, base_offset)
        raise
    return cleaned


def discard_swap_end(directory: Path, base_offset: int) -> None:
    """After the swap (or instead of it): the end marker is only needed while it runs."""
    swap_end_path(directory, base_offset).unlink(missing_ok=True)


def _check_within(header: BatchHeader, source: SourceSegment) -> None:
    """A batch must lie within its segment's offsets; anything else is corruption, and
    copying it would break the ordering of the log."""
    if header.base_offset < source.info.base_offset or header.last_offset >= source.info.end_offset:
        raise LogCorruptError(
            f"{source.log_path}: batch {header.base_offset}..{header.last_offset} outside "
            f"[{source.info.base_offset}, {source.info.end_offset})"
        )
