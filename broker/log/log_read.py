"""A log's reads: Fetch's record reads (bytes, or a file slice for sendfile) and ListOffsets'
timestamp lookups.

A mixin of `broker.log.log.Log` (kept apart so that module stays about appends, truncation and
the segments' lifecycle): it reads the segments and offsets of its host class.
"""

from __future__ import annotations

import bisect
import logging

from broker.log.errors import OffsetOutOfRangeError
from broker.log.file_records import FileRecords, records_bytes
from broker.log.segment import LogSegment

logger = logging.getLogger(__name__)

LATEST_TIMESTAMP = -1  # ListOffsets' "latest" sentinel
EARLIEST_TIMESTAMP = -2  # ListOffsets' "earliest" sentinel


class LogReadMixin:
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    _segments: list[LogSegment]
    # The segments' base offsets, in order (bisected to find an offset's segment).
    _bases: list[int]

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> bytes:
        """Whole batches from the one holding `start_offset`, up to `max_bytes` (but at least
        one batch with `min_one_batch`), none with base offset >= `max_offset`."""
        return records_bytes(self.read_records(start_offset, max_bytes, max_offset, min_one_batch))

    def read_records(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
        zero_copy_min_bytes: int | None = None,
    ) -> bytes | FileRecords:
        """What `read` reads; with `zero_copy_min_bytes`, a read of at least that many bytes
        is left in the segment file as a `FileRecords` slice (for sendfile) instead, unless
        no file descriptor is left to hold it."""
        if start_offset < self.log_start_offset or start_offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {start_offset} outside [{self.log_start_offset}, {self.log_end_offset}]"
                f" of {self.topic}-{self.partition}"
            )
        if start_offset == self.log_end_offset:
            return b""
        if max_offset is not None and start_offset >= max_offset:
            return b""
        slot = max(bisect.bisect_right(self._bases, start_offset) - 1, 0)
        for segment in self._segments[slot:]:
            found = segment.slice(start_offset, max_bytes, max_offset, min_one_batch)
            if found is None:
                continue
            position, size_bytes, last_offset = found
            if not size_bytes:
                return b""
            if zero_copy_min_bytes is not None and size_bytes >= zero_copy_min_bytes:
                try:
                    return FileRecords.duplicate(
                        segment.file_descriptor, position, size_bytes, last_offset
                    )
                except OSError as error:  # out of descriptors: copy, as before sendfile
                    logger.debug("reading %s with a copy: %s", self, error)
            return segment.read_bytes(position, size_bytes)
        return b""

    def segment_for(self, offset: int) -> LogSegment:
        """The segment whose range holds `offset` (for zero-copy reads)."""
        return self._segments[max(bisect.bisect_right(self._bases, offset) - 1, 0)]

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= `timestamp_ms`.

        Also answers ListOffsets' sentinels: -1 (latest) -> (log_end_offset, -1) and
        -2 (earliest) -> (log_start_offset, -1).
        """
        if timestamp_ms == LATEST_TIMESTAMP:
            return self.log_end_offset, -1
        if timestamp_ms == EARLIEST_TIMESTAMP:
            return self.log_start_offset, -1
        for segment in self._segments:
            if segment.next_offset <= self.log_start_offset:
                continue
            if segment.largest_timestamp >= timestamp_ms:
                found = segment.find_offset_by_timestamp(timestamp_ms, self.log_start_offset)
                if found is not None:
                    return found
        return None

    def max_timestamp_and_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record carrying the log's largest timestamp
        (ListOffsets' MAX_TIMESTAMP, -3); None for an empty log."""
        live = [s for s in self._segments if s.next_offset > self.log_start_offset]
        if not live or max(s.largest_timestamp for s in live) < 0:
            return None
        newest = max(live, key=lambda segment: segment.largest_timestamp)
        return newest.find_offset_by_timestamp(newest.largest_timestamp, self.log_start_offset)
