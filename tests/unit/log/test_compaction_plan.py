"""Pure decisions of the cleaner: dirty range, ratio, lags, tombstone horizon, grouping."""

from __future__ import annotations

from broker.log.compaction_plan import (
    CleanableRange,
    SegmentInfo,
    cleanable_range,
    delete_horizon_ms,
    first_dirty_offset,
    first_uncleanable_offset,
    group_segments_by_size,
    max_compaction_delay_ms,
    needs_cleaning,
    retains_deletes,
)
from broker.log.config import LONG_MAX
from broker.log.index import INT32_MAX

NOW_MS = 1_000_000


def _segments(*sizes: int, step: int = 10, timestamp_ms: int = 0) -> list[SegmentInfo]:
    """Inactive segments at offsets 0, step, 2*step ... (the active one starts after them)."""
    return [
        SegmentInfo(i * step, (i + 1) * step, size, timestamp_ms) for i, size in enumerate(sizes)
    ]


def test_first_dirty_offset_falls_back_to_the_log_start() -> None:
    assert first_dirty_offset(None, 5, 100) == 5
    assert first_dirty_offset(40, 5, 100) == 40
    assert first_dirty_offset(3, 5, 100) == 5, "retention moved the start past it"
    assert first_dirty_offset(120, 5, 100) == 5, "truncation moved the end below it"


def test_active_segment_is_never_cleanable() -> None:
    segments = _segments(100, 100)
    assert first_uncleanable_offset(segments, 20, 0, 10**9, NOW_MS, 0) == 20


def test_segments_reaching_past_the_high_watermark_are_not_cleanable() -> None:
    segments = _segments(100, 100, 100)
    assert first_uncleanable_offset(segments, 30, 0, 25, NOW_MS, 0) == 20
    assert first_uncleanable_offset(segments, 30, 0, 20, NOW_MS, 0) == 20
    assert first_uncleanable_offset(segments, 30, 0, 19, NOW_MS, 0) == 10
    assert first_uncleanable_offset(segments, 30, 0, 0, NOW_MS, 0) == 0


def test_min_compaction_lag_keeps_recent_segments_dirty() -> None:
    segments = [
        SegmentInfo(0, 10, 100, NOW_MS - 5_000),
        SegmentInfo(10, 20, 100, NOW_MS - 500),
        SegmentInfo(20, 30, 100, NOW_MS - 5_000),
    ]
    assert first_uncleanable_offset(segments, 30, 0, 10**9, NOW_MS, 1_000) == 10
    assert first_uncleanable_offset(segments, 30, 0, 10**9, NOW_MS, 0) == 30


def test_dirty_ratio_counts_clean_and_dirty_segments() -> None:
    segments = _segments(100, 100, 200, 600)
    cleanable = cleanable_range(segments, 40, 20, 10**9, NOW_MS, 0)
    assert cleanable == CleanableRange(20, 40, clean_bytes=200, dirty_bytes=800)
    assert cleanable.dirty_ratio == 0.8
    nothing = cleanable_range(segments, 40, 40, 10**9, NOW_MS, 0)
    assert nothing.dirty_bytes == 0 and nothing.dirty_ratio == 0.0


def test_cleaning_needs_a_ratio_strictly_above_the_minimum_or_a_deadline() -> None:
    half = CleanableRange(0, 10, clean_bytes=100, dirty_bytes=100)
    assert not needs_cleaning(half, 0.5, 0)
    assert needs_cleaning(half, 0.49, 0)
    assert needs_cleaning(half, 0.9, compaction_delay_ms=1)
    assert not needs_cleaning(CleanableRange(0, 0, 100, 0), 0.0, 1), "nothing dirty"


def test_max_compaction_lag_delay_from_the_oldest_first_batch() -> None:
    assert max_compaction_delay_ms([NOW_MS - 10_000, -1], NOW_MS, 4_000) == 6_000
    assert max_compaction_delay_ms([NOW_MS - 1_000], NOW_MS, 4_000) == 0
    assert max_compaction_delay_ms([], NOW_MS, 4_000) == 0
    assert max_compaction_delay_ms([NOW_MS - 10_000], NOW_MS, LONG_MAX) == 0


def test_delete_horizon_from_the_last_clean_segment() -> None:
    assert delete_horizon_ms(None, 1_000) == 0
    horizon = delete_horizon_ms(NOW_MS, 1_000)
    assert horizon == NOW_MS - 1_000
    assert retains_deletes(NOW_MS - 999, horizon)
    assert not retains_deletes(NOW_MS - 1_000, horizon)


def test_groups_stay_within_segment_bytes() -> None:
    segments = _segments(400, 400, 300, 900, 50, 50)
    groups = group_segments_by_size(segments, max_size_bytes=1000, max_index_bytes=10**6)
    assert [[s.base_offset for s in group] for group in groups] == [[0, 10], [20], [30, 40, 50]]


def test_groups_stay_within_index_bytes_and_relative_offsets() -> None:
    indexed = [SegmentInfo(i * 10, i * 10 + 10, 10, 0, 60, 60) for i in range(3)]
    groups = group_segments_by_size(indexed, max_size_bytes=10**6, max_index_bytes=100)
    assert len(groups) == 3
    far = [SegmentInfo(0, 10, 10, 0), SegmentInfo(10, INT32_MAX + 5, 10, 0)]
    assert len(group_segments_by_size(far, 10**6, 10**6)) == 2
    empty_far = [SegmentInfo(0, 10, 10, 0), SegmentInfo(10, INT32_MAX + 5, 0, 0)]
    assert len(group_segments_by_size(empty_far, 10**6, 10**6)) == 1
