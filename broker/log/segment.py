"""One log segment: `<base>.log` plus its `.index` and `.timeindex`, named by base offset.

Appends go straight to the file descriptor (os.write), so the bytes are in the kernel - and
survive the process being killed - before `append` returns; fsync happens only in `flush`.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from broker.log.batch import BatchHeader
from broker.log.config import LogConfig
from broker.log.errors import RecordError
from broker.log.index import INT32_MAX, OffsetIndex, TimeIndex
from broker.log.record_codec import decode_records
from broker.log.segment_scan import read_one_header, scan_chunk
from broker.log.txn_index import TXN_INDEX_SUFFIX, TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
RECOVERY_CHUNK_BYTES = 1024 * 1024
# Suffixes of a compaction swap (Kafka's): the cleaner writes `.cleaned` files, renames them to
# `.swap` (the commit point), renames the replaced segments' files to `.deleted`, then drops
# `.swap`. Loading a log completes or discards an interrupted swap (`compaction_recovery`).
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"

# (size_bytes, last_offset, max_timestamp) of one batch being appended.
BatchSpan = tuple[int, int, int]
# (position, size_bytes, last_offset) of a run of whole batches in a segment file.
SegmentSlice = tuple[int, int, int]


def batch_spans(
    headers: list[BatchHeader], first_offset: int, log_append_time_ms: int
) -> list[BatchSpan]:
    """(size, last offset, max timestamp) of each batch after offset assignment."""
    spans: list[BatchSpan] = []
    next_offset = first_offset
    for header in headers:
        last_offset = next_offset + header.last_offset_delta
        timestamp = log_append_time_ms if log_append_time_ms >= 0 else header.max_timestamp
        spans.append((header.size_bytes, last_offset, timestamp))
        next_offset = last_offset + 1
    return spans


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def _with_suffix(path: Path, old_suffix: str, new_suffix: str) -> Path:
    if not path.name.endswith(old_suffix):
        raise ValueError(f"{path} does not end with {old_suffix!r}")
    stem = path.name[: len(path.name) - len(old_suffix)]
    return path.with_name(stem + new_suffix)


class LogSegment:
    def __init__(
        self,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        file_suffix: str = "",
    ) -> None:
        """`file_suffix` names the files of a segment that is not (yet) part of the log: the
        cleaner writes `<base>.log.cleaned` and renames it in (`change_file_suffixes`)."""
        self.base_offset = base_offset
        self.log_path = directory / (segment_file_name(base_offset, LOG_SUFFIX) + file_suffix)
        self.index_interval_bytes = config.index_interval_bytes
        self.created_ms = now_ms
        index_path = directory / (segment_file_name(base_offset, INDEX_SUFFIX) + file_suffix)
        time_index_path = directory / (
            segment_file_name(base_offset, TIME_INDEX_SUFFIX) + file_suffix
        )
        # An index that is missing while the log has data must be rebuilt by recovery.
        self.indexes_missing = not index_path.exists() or not time_index_path.exists()
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size_bytes = os.fstat(self._fd).st_size
        self.indexes_missing = self.indexes_missing and self.size_bytes > 0
        try:
            self.offset_index = OffsetIndex(index_path, base_offset, config.segment_index_bytes)
        except Exception:
            os.close(self._fd)
            raise
        try:
            self.time_index = TimeIndex(time_index_path, base_offset, config.segment_index_bytes)
        except Exception:
            os.close(self._fd)
            self.offset_index.close()
            raise
        self.txn_index = TransactionIndex(
            directory / (segment_file_name(base_offset, TXN_INDEX_SUFFIX) + file_suffix)
        )
        self.next_offset = base_offset
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp_so_far = base_offset
        self.bytes_since_last_index_entry = 0
        self._rolling_based_timestamp: int | None = None

    # ---- state -----------------------------------------------------------------------------

    def load_state(self) -> None:
        """Trust the files: take state from the indexes, then walk the tail after the last
        offset-index entry (cut off an incomplete tail there, which a crash can leave)."""
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = self.time_index.last_entry
        last_indexed_offset, position = self.offset_index.lookup(self.offset_index.last_offset)
        self.next_offset = self.base_offset
        if self.offset_index.entries:
            self.next_offset = last_indexed_offset + 1
        end = position
        for batch_position, header in self.iter_batches(position):
            self._track_timestamp(header.last_offset, header.max_timestamp)
            self.next_offset = header.last_offset + 1
            end = batch_position + header.size_bytes
        self.bytes_since_last_index_entry = end - position
        if end < self.size_bytes:
            self._truncate_file(end)

    def recover(self) -> int:
        """Re-validate every batch, rebuild both indexes; truncate at the first bad batch.

        Returns the number of bytes truncated.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp_so_far = self.base_offset
        self.bytes_since_last_index_entry = 0
        self.next_offset = self.base_offset
        valid_bytes = 0
        for position, header in self.iter_batches(0, verify=True):
            if header.base_offset < self.next_offset:
                break  # offsets going backwards: treat as corruption
            self._index_batch(position, header.size_bytes, header.last_offset, header.max_timestamp)
            self.next_offset = header.last_offset + 1
            valid_bytes = position + header.size_bytes
        truncated_bytes = self.size_bytes - valid_bytes
        if truncated_bytes:
            self._truncate_file(valid_bytes)
        self.time_index.maybe_append(
            self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, skip_full_check=True
        )
        self.indexes_missing = False
        return truncated_bytes

    def sanity_check(self) -> None:
        """Raises CorruptIndexError when an index cannot be trusted."""
        self.offset_index.sanity_check(self.size_bytes)
        self.time_index.sanity_check()

    # ---- append ----------------------------------------------------------------------------

    def append(self, data: bytes | bytearray, batches: Sequence[BatchSpan]) -> None:
        """Write validated, offset-assigned batches; index every index_interval_bytes."""
        position = self.size_bytes
        view = memoryview(data)
        written = 0
        try:
            while written < len(view):
                written += os.write(self._fd, view[written:])
        except OSError:
            # A partial write (disk full, I/O error) must not leave torn bytes that the next
            # append would land after; put the file back as it was, then report.
            os.ftruncate(self._fd, position)
            raise
        for size_bytes, last_offset, max_timestamp in batches:
            if self._rolling_based_timestamp is None:
                self._rolling_based_timestamp = max_timestamp
            self._index_batch(position, size_bytes, last_offset, max_timestamp)
            position += size_bytes
            self.next_offset = last_offset + 1
        self.size_bytes = position

    def _track_timestamp(self, last_offset: int, max_timestamp: int) -> None:
        if max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = max_timestamp
            self.offset_of_max_timestamp_so_far = last_offset

    def _index_batch(self, position: int, size_bytes: int, last_offset: int, max_ts: int) -> None:
        self._track_timestamp(last_offset, max_ts)
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far
            )
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += size_bytes

    def should_roll(
        self, config: LogConfig, size_bytes: int, max_timestamp: int, last_offset: int, now_ms: int
    ) -> bool:
        if self.size_bytes == 0:
            return False  # rolling an empty segment would only recreate it
        return (
            self.size_bytes > config.segment_bytes - size_bytes
            or self._time_waited_ms(max_timestamp, now_ms) > config.segment_ms
            or self.offset_index.is_full
            or self.time_index.is_full
            or last_offset - self.base_offset > INT32_MAX
        )

    def _time_waited_ms(self, max_timestamp: int, now_ms: int) -> int:
        """Kafka's rule: timestamps of the data when known, else wall time since creation."""
        if self._rolling_based_timestamp is None and self.size_bytes > 0:
            first = next(self.iter_batches(0), None)
            self._rolling_based_timestamp = first[1].max_timestamp if first else -1
        if self._rolling_based_timestamp is not None and self._rolling_based_timestamp >= 0:
            return max_timestamp - self._rolling_based_timestamp
        return now_ms - self.created_ms

    # ---- read ------------------------------------------------------------------------------

    def iter_batches(
        self, position: int, verify: bool = False
    ) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from `position`, stopping at the first bad one.

        With `verify`, each batch's CRC is checked too (recovery); reads trust the file.
        """
        chunk_bytes = RECOVERY_CHUNK_BYTES if verify else 2 * self.index_interval_bytes + 4096
        end = self.size_bytes
        while position < end:
            chunk = os.pread(self._fd, min(chunk_bytes, end - position), position)
            consumed = 0
            for chunk_position, header in scan_chunk(chunk, verify):
                yield position + chunk_position, header
                consumed = chunk_position + header.size_bytes
            if consumed == 0:
                single = read_one_header(self._fd, position, end, verify)
                if single is None:
                    return
                yield position, single
                consumed = single.size_bytes
            position += consumed

    def translate_offset(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset >= `offset`."""
        _, position = self.offset_index.lookup(offset)
        for batch_position, header in self.iter_batches(position):
            if header.last_offset >= offset:
                return batch_position, header
        return None

    def read(
        self, start_offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool
    ) -> bytes | None:
        """Whole batches from the one holding `start_offset`; None if no batch reaches it."""
        found = self.slice(start_offset, max_bytes, max_offset, min_one_batch)
        if found is None:
            return None
        position, size_bytes, _ = found
        return self.read_bytes(position, size_bytes) if size_bytes else b""

    def slice(
        self, start_offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool
    ) -> SegmentSlice | None:
        """Where `read` would read, without reading the records: (position, size in bytes,
        last offset of the last batch) of the whole batches from the one holding
        `start_offset`, up to `max_bytes` (the first batch even if larger, with
        `min_one_batch`), none with base offset >= `max_offset`; size 0 when there are none,
        and None if no batch reaches `start_offset`. Only batch headers near the two ends
        are read: the offset index leads close to the end (Kafka's LogSegment.read finds
        its slice the same way, but may end it mid-batch; ours ends on a batch boundary, so
        clients and followers only ever see whole batches)."""
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        position, first = found
        if max_offset is not None and first.base_offset >= max_offset:
            return position, 0, -1
        if first.size_bytes > max_bytes:
            if not min_one_batch:
                return position, 0, -1
            return position, first.size_bytes, first.last_offset
        limit = min(position + max_bytes, self.size_bytes)
        end, last_offset = position + first.size_bytes, first.last_offset
        # Every batch before an index entry at or below both bounds fits: start there.
        walk_from = max(end, self._indexed_position_within(limit, max_offset))
        for batch_position, header in self.iter_batches(walk_from):
            if batch_position + header.size_bytes > limit or (
                max_offset is not None and header.base_offset >= max_offset
            ):
                if batch_position > end:  # skipped to an index entry: what ends before it
                    last_offset = header.base_offset - 1
                end = batch_position
                break
            end, last_offset = batch_position + header.size_bytes, header.last_offset
        return position, end - position, last_offset

    def _indexed_position_within(self, limit: int, max_offset: int | None) -> int:
        """The position of a batch such that every batch before it ends by `limit` and has
        offsets below `max_offset`: the offset index's last entry meeting both (0 if none).
        An entry names the last offset of the batch at its position."""
        index = self.offset_index
        slot = bisect.bisect_right(index.values, limit) - 1
        if max_offset is not None:
            slot = min(slot, bisect.bisect_right(index.keys, max_offset - self.base_offset) - 1)
        return index.values[slot] if slot >= 0 else 0

    def read_bytes(self, position: int, size_bytes: int) -> bytes:
        return os.pread(self._fd, size_bytes, position)

    def find_offset_by_timestamp(
        self, timestamp_ms: int, start_offset: int
    ) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record >= start_offset with timestamp >= target."""
        _, indexed_offset = self.time_index.lookup(timestamp_ms)
        _, position = self.offset_index.lookup(max(indexed_offset, start_offset))
        for batch_position, header in self.iter_batches(position):
            if header.max_timestamp < timestamp_ms or header.last_offset < start_offset:
                continue
            if header.timestamp_type == 1:  # LogAppendTime: every record carries max_timestamp
                return max(header.base_offset, start_offset), header.max_timestamp
            batch = self.read_bytes(batch_position, header.size_bytes)
            try:
                records = decode_records(batch)
            except RecordError:
                # Stored batches are only CRC-checked; if the records inside cannot be read,
                # answer at batch granularity rather than fail the request.
                return max(header.base_offset, start_offset), header.max_timestamp
            for record in records:
                if record.timestamp_ms >= timestamp_ms and record.offset >= start_offset:
                    return record.offset, record.timestamp_ms
        return None

    # ---- truncation and lifecycle ----------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove the batch holding `offset` and everything after; returns bytes removed."""
        found = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        if found is None:
            return 0
        truncated_bytes = self.size_bytes - found[0]
        self._truncate_file(found[0])
        if self.size_bytes == 0:
            self._rolling_based_timestamp = None
        self.load_state()
        return truncated_bytes

    def _truncate_file(self, size_bytes: int) -> None:
        os.ftruncate(self._fd, size_bytes)
        self.size_bytes = size_bytes

    def on_become_inactive(self) -> None:
        """Record the final max timestamp so the time index covers the whole segment."""
        self.time_index.maybe_append(
            self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, skip_full_check=True
        )

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)
            self.offset_index.flush()
            self.time_index.flush()
            self.txn_index.flush()

    def close(self) -> None:
        if self._fd < 0:
            return
        self.on_become_inactive()
        os.close(self._fd)
        self._fd = -1
        self.offset_index.close()
        self.time_index.close()

    def close_handles(self) -> None:
        """Close without writing anything (for segments about to be deleted)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.offset_index.close()
        self.time_index.close()

    def delete(self) -> None:
        self.close_handles()
        self.log_path.unlink(missing_ok=True)
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()

    def move_to(self, directory: Path) -> None:
        """The partition directory was renamed: the same files, at their new paths."""
        self.log_path = directory / self.log_path.name
        for index in (self.offset_index, self.time_index, self.txn_index):
            index.path = directory / index.path.name

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename the files from `<name><old_suffix>` to `<name><new_suffix>`; open handles
        stay valid. The index files go first and the `.log` last, so a `.log` with the new
        suffix means the whole segment was renamed."""
        for index in (self.offset_index, self.time_index, self.txn_index):
            index.rename(_with_suffix(index.path, old_suffix, new_suffix))
        renamed = _with_suffix(self.log_path, old_suffix, new_suffix)
        os.replace(self.log_path, renamed)
        self.log_path = renamed

    @property
    def file_descriptor(self) -> int:
        """For zero-copy sends (os.sendfile) of slices found with `translate_offset`."""
        return self._fd

    @property
    def largest_timestamp(self) -> int:
        return self.max_timestamp_so_far

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path}, size={self.size_bytes}, next={self.next_offset})"
