"""Offset JSON, rate limiting and range splitting, without Spark or a cluster."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.connector.offsets import (
    OffsetRange,
    OffsetsError,
    from_json_dict,
    parse_assign,
    parse_partition_offsets,
    rate_limit,
    split_ranges,
    to_json_dict,
)


def test_partition_offsets_parse_spark_json() -> None:
    parsed = parse_partition_offsets('{"a":{"0":23,"1":-1},"b":{"0":-2}}')
    assert parsed == {("a", 0): 23, ("a", 1): -1, ("b", 0): -2}


@pytest.mark.parametrize("text", ['{"a":{"0":', '["a"]', '{"a":{"x":1}}', '{"a":{"0":"1"}}'])
def test_malformed_offsets_are_refused_with_an_example(text: str) -> None:
    with pytest.raises(OffsetsError, match="expected e.g."):
        parse_partition_offsets(text)


def test_assign_parses_and_sorts() -> None:
    assert parse_assign('{"b":[1],"a":[2,0]}') == [("a", 0), ("a", 2), ("b", 1)]
    with pytest.raises(OffsetsError):
        parse_assign('{"a":[-1]}')


def test_offset_log_json_round_trips_in_partition_order() -> None:
    offsets = {("t", 10): 5, ("t", 2): 7}
    document = to_json_dict(offsets)
    assert list(document["t"]) == ["2", "10"]
    assert from_json_dict(document) == offsets


def test_rate_limit_shares_in_proportion_to_backlog() -> None:
    start = {("t", 0): 0, ("t", 1): 0}
    assert rate_limit(start, {("t", 0): 300, ("t", 1): 100}, 100) == {("t", 0): 75, ("t", 1): 25}


@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=8),
    st.integers(1, 500),
)
def test_rate_limit_never_exceeds_the_limit_or_the_latest(
    spans: list[tuple[int, int]], limit: int
) -> None:
    start = {("t", i): begin for i, (begin, _) in enumerate(spans)}
    latest = {("t", i): begin + size for i, (begin, size) in enumerate(spans)}
    end = rate_limit(start, latest, limit)
    assert sum(end[tp] - start[tp] for tp in start) <= limit
    assert all(start[tp] <= end[tp] <= latest[tp] for tp in start)
    if sum(latest[tp] - start[tp] for tp in start) > limit:
        assert sum(end[tp] - start[tp] for tp in start) == limit


def test_split_ranges_drops_empty_and_honours_min_partitions() -> None:
    ranges = [OffsetRange("t", 0, 0, 90), OffsetRange("t", 1, 5, 5), OffsetRange("t", 2, 0, 10)]
    assert split_ranges(ranges, None) == [ranges[0], ranges[2]]
    pieces = split_ranges(ranges, 10)
    assert len(pieces) == 10
    assert sum(p.size for p in pieces) == 100
    assert [p for p in pieces if p.partition == 2] == [ranges[2]]
