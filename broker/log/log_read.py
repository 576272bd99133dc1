"""A log's reads over its segments: Fetch's record reads (bytes, or a file slice for sendfile)
and ListOffsets' timestamp lookups.

Functions of the segment list that `broker.log.log.Log` owns and passes in (kept apart so that
module stays about appends, truncation and the segments' lifecycle). `bases` is the segments'
base offsets, in order, bisected to find an offset's segment.
"""

from __future__ import annotations

import bisect
import logging

from broker.log.file_records import FileRecords
from broker.log.segment import LogSegment

logger = logging.getLogger(__name__)

LATEST_TIMESTAMP = -1  # ListOffsets' "latest" sentinel
EARLIEST_TIMESTAMP = -2  # ListOffsets' "earliest" sentinel


def read_records(
    segments: list[LogSegment],
    bases: list[int],
    start_offset: int,
    max_bytes: int,
    max_offset: int | None,
    min_one_batch: bool,
    zero_copy_min_bytes: int | None,
) -> bytes | FileRecords:
    """Whole batches from the one holding `start_offset` (inside the log's range), up to
    `max_bytes` (but at least one batch with `min_one_batch`), none with base offset >=
    `max_offset`; with `zero_copy_min_bytes`, a read of at least that many bytes is left in the
    segment file as a `FileRecords` slice (for sendfile) instead, unless no file descriptor is
    left to hold it."""
    if max_offset is not None and start_offset >= max_offset:
        return b""
    slot = max(bisect.bisect_right(bases, start_offset) - 1, 0)
    for segment in segments[slot:]:
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
                logger.debug("reading %s with a copy: %s", segment, error)
        return segment.read_bytes(position, size_bytes)
    return b""


def segment_for(segments: list[LogSegment], bases: list[int], offset: int) -> LogSegment:
    """The segment whose range holds `offset`."""
    return segments[max(bisect.bisect_right(bases, offset) - 1, 0)]


def offset_for_timestamp(
    segments: list[LogSegment], log_start_offset: int, log_end_offset: int, timestamp_ms: int
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record with timestamp >= `timestamp_ms`.

    Also answers ListOffsets' sentinels: -1 (latest) -> (log_end_offset, -1) and
    -2 (earliest) -> (log_start_offset, -1).
    """
    if timestamp_ms == LATEST_TIMESTAMP:
        return log_end_offset, -1
    if timestamp_ms == EARLIEST_TIMESTAMP:
        return log_start_offset, -1
    for segment in segments:
        if segment.next_offset <= log_start_offset:
            continue
        if segment.largest_timestamp >= timestamp_ms:
            found = segment.find_offset_by_timestamp(timestamp_ms, log_start_offset)
            if found is not None:
                return found
    return None


def max_timestamp_and_offset(
    segments: list[LogSegment], log_start_offset: int
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record carrying the log's largest timestamp
    (ListOffsets' MAX_TIMESTAMP, -3); None for an empty log."""
    live = [s for s in segments if s.next_offset > log_start_offset]
    if not live or max(s.largest_timestamp for s in live) < 0:
        return None
    newest = max(live, key=lambda segment: segment.largest_timestamp)
    return newest.find_offset_by_timestamp(newest.largest_timestamp, log_start_offset)
