"""Pure decisions of the log cleaner (Kafka's LogCleanerManager and Cleaner): which part of a
log is dirty and may be cleaned, whether it is worth cleaning, the tombstone horizon, and how
segments are grouped into cleaned segments.

Offsets below the checkpointed first dirty offset were compacted before ("clean"); from there to
the first uncleanable offset is "dirty" and cleanable. The first uncleanable offset is a segment
boundary: the base of the active segment, of the first segment not wholly below the high
watermark (consumers have not seen that data yet; Kafka's last stable offset), or of the first
segment holding a record newer than min.compaction.lag.ms (by its largest timestamp).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from broker.log.config import LONG_MAX
from broker.log.index import INT32_MAX


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What the plan needs of one inactive segment, read on the event loop."""

    base_offset: int
    end_offset: int  # base offset of the following segment: every offset here is below it
    size_bytes: int
    largest_timestamp: int  # -1 when no batch had a timestamp
    offset_index_bytes: int = 0
    time_index_bytes: int = 0


@dataclass(frozen=True, slots=True)
class CleanableRange:
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int  # segments wholly below the first dirty offset
    dirty_bytes: int  # segments holding cleanable dirty offsets

    @property
    def dirty_ratio(self) -> float:
        """Kafka's cleanable ratio: dirty bytes / (clean + dirty bytes)."""
        total_bytes = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total_bytes if total_bytes else 0.0


def first_dirty_offset(checkpointed: int | None, log_start_offset: int, log_end_offset: int) -> int:
    """The checkpointed offset, or the log start when there is none or it no longer fits the
    log (retention moved the start past it, or a truncation moved the end below it)."""
    if checkpointed is None or not log_start_offset <= checkpointed <= log_end_offset:
        return log_start_offset
    return checkpointed


def first_uncleanable_offset(
    segments: Sequence[SegmentInfo],
    active_base_offset: int,
    first_dirty: int,
    high_watermark: int,
    now_ms: int,
    min_compaction_lag_ms: int,
) -> int:
    """The base of the first segment (from the dirty ones on) the cleaner may not touch;
    `segments` are the inactive segments, oldest first."""
    for segment in segments:
        if segment.end_offset <= first_dirty:
            continue
        above_high_watermark = segment.end_offset > high_watermark
        too_recent = (
            min_compaction_lag_ms > 0 and segment.largest_timestamp > now_ms - min_compaction_lag_ms
        )
        if above_high_watermark or too_recent:
            return segment.base_offset
    return active_base_offset


def cleanable_range(
    segments: Sequence[SegmentInfo],
    active_base_offset: int,
    first_dirty: int,
    high_watermark: int,
    now_ms: int,
    min_compaction_lag_ms: int,
) -> CleanableRange:
    uncleanable = first_uncleanable_offset(
        segments, active_base_offset, first_dirty, high_watermark, now_ms, min_compaction_lag_ms
    )
    clean_bytes = dirty_bytes = 0
    for segment in segments:
        if segment.end_offset <= first_dirty:
            clean_bytes += segment.size_bytes
        elif segment.base_offset < uncleanable:
            dirty_bytes += segment.size_bytes
    return CleanableRange(first_dirty, uncleanable, clean_bytes, dirty_bytes)


def max_compaction_delay_ms(
    first_batch_timestamps: Iterable[int], now_ms: int, max_compaction_lag_ms: int
) -> int:
    """How far past max.compaction.lag.ms the oldest dirty record is (0: not past it), from
    the first batch timestamp of each dirty inactive segment (Kafka's maxCompactionDelay)."""
    known = [timestamp for timestamp in first_batch_timestamps if timestamp > 0]
    earliest = min(known) if known else LONG_MAX
    clean_until = now_ms - max(max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


def needs_cleaning(
    cleanable: CleanableRange, min_cleanable_dirty_ratio: float, compaction_delay_ms: int
) -> bool:
    """Kafka: dirty enough (strictly above the ratio), or held past max.compaction.lag.ms."""
    if cleanable.dirty_bytes == 0:
        return False
    return compaction_delay_ms > 0 or cleanable.dirty_ratio > min_cleanable_dirty_ratio


def delete_horizon_ms(last_clean_segment_modified_ms: int | None, delete_retention_ms: int) -> int:
    """Tombstones in segments last modified at or before this time may be dropped: the last
    clean segment's modification time minus delete.retention.ms (Kafka 2.x); with nothing
    clean yet, 0, so every tombstone stays this pass."""
    if last_clean_segment_modified_ms is None:
        return 0
    return last_clean_segment_modified_ms - delete_retention_ms


def retains_deletes(segment_modified_ms: int, horizon_ms: int) -> bool:
    return segment_modified_ms > horizon_ms


def group_segments_by_size(
    segments: Sequence[SegmentInfo], max_size_bytes: int, max_index_bytes: int
) -> list[list[SegmentInfo]]:
    """Consecutive segments merged while the group's log and indexes stay within a segment's
    limits and its offsets within an index's 32-bit relative offsets (Kafka's
    groupSegmentsBySize); each group becomes one cleaned segment."""
    groups: list[list[SegmentInfo]] = []
    for segment in segments:
        if groups and _fits(groups[-1], segment, max_size_bytes, max_index_bytes):
            groups[-1].append(segment)
        else:
            groups.append([segment])
    return groups


def _fits(
    group: list[SegmentInfo], segment: SegmentInfo, max_size_bytes: int, max_index_bytes: int
) -> bool:
    offsets_fit = (
        segment.size_bytes == 0 or segment.end_offset - 1 - group[0].base_offset <= INT32_MAX
    )
    return (
        sum(s.size_bytes for s in group) + segment.size_bytes <= max_size_bytes
        and sum(s.offset_index_bytes for s in group) + segment.offset_index_bytes <= max_index_bytes
        and sum(s.time_index_bytes for s in group) + segment.time_index_bytes <= max_index_bytes
        and offsets_fit
    )
