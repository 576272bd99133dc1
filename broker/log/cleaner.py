"""Retention: which old segments to delete (Kafka's delete cleanup policy).

A segment goes when it is wholly below the log start offset, older than retention.ms (by its
largest timestamp, or its file's mtime when it has none), or when dropping it still leaves at
least retention.bytes. Segments are only deleted from the oldest, never the active one, and
never above the high watermark (consumers may not have seen that data yet).

As in Kafka, retention.ms and retention.bytes apply only when cleanup.policy includes
"delete": a log with cleanup.policy=compact alone keeps everything the cleaner keeps
(`broker.log.compaction`), and loses segments only once they are below the log start offset.
"""

from __future__ import annotations

import itertools

from broker.log.log import Log
from broker.log.segment import LogSegment


def _segment_time_ms(segment: LogSegment) -> int:
    if segment.largest_timestamp >= 0:
        return segment.largest_timestamp
    return int(segment.log_path.stat().st_mtime * 1000)


def deletable_segment_count(log: Log, now_ms: int, high_watermark: int) -> int:
    segments = log.segments
    # Without "delete" in cleanup.policy only the log-start breach removes segments.
    retention_ms = log.config.retention_ms if log.config.delete else -1
    retention_bytes = log.config.retention_bytes if log.config.delete else -1
    remaining_bytes = log.size_bytes
    count = 0
    for segment, following in itertools.pairwise(segments):
        if following.base_offset > high_watermark:
            break
        below_start = following.base_offset <= log.log_start_offset
        too_old = retention_ms >= 0 and now_ms - _segment_time_ms(segment) > retention_ms
        too_big = retention_bytes >= 0 and remaining_bytes - segment.size_bytes >= retention_bytes
        if not (below_start or too_old or too_big):
            break
        remaining_bytes -= segment.size_bytes
        count += 1
    return count


def delete_retained_segments(log: Log, now_ms: int, high_watermark: int) -> int:
    """Apply retention to one log; returns the number of segments deleted."""
    return log.delete_oldest_segments(deletable_segment_count(log, now_ms, high_watermark))
