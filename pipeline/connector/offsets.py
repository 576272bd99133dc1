"""Offsets as Spark's Kafka connector writes them, and the arithmetic on offset ranges.

Spark's connector keeps per-partition positions as `{"topic": {"0": 23, "1": 8}}` in its
offset log and accepts the same JSON in `startingOffsets` / `endingOffsets`, where -2 means
earliest and -1 latest. Everything here is pure, so the planning rules are unit-tested
without Spark or a cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

# Spark's markers inside per-partition offset JSON.
EARLIEST_OFFSET = -2
LATEST_OFFSET = -1

OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
TIMESTAMPS_EXAMPLE = '{"topicA":{"0":1000,"1":1000},"topicB":{"0":2000}}'
ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[2,4]}'

TopicPartition = tuple[str, int]
PartitionOffsets = dict[TopicPartition, int]


class OffsetsError(ValueError):
    """A malformed offsets, timestamps or assign value; the caller names the option."""


@dataclass(frozen=True)
class OffsetRange:
    """Records `from_offset <= offset < until_offset` of one topic partition."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return max(0, self.until_offset - self.from_offset)


def parse_partition_offsets(text: str, example: str = OFFSETS_EXAMPLE) -> PartitionOffsets:
    """`{"t":{"0":23}}` -> {("t", 0): 23}."""
    try:
        document = json.loads(text)
    except ValueError as error:
        raise OffsetsError(f"expected e.g. {example}, got {text}") from error
    if not isinstance(document, dict):
        raise OffsetsError(f"expected e.g. {example}, got {text}")
    offsets: PartitionOffsets = {}
    for topic, partitions in document.items():
        if not isinstance(partitions, dict):
            raise OffsetsError(f"expected e.g. {example}, got {text}")
        for partition_text, offset in partitions.items():
            if not _is_int_text(partition_text) or not isinstance(offset, int):
                raise OffsetsError(f"expected e.g. {example}, got {text}")
            if isinstance(offset, bool):
                raise OffsetsError(f"expected e.g. {example}, got {text}")
            offsets[(topic, int(partition_text))] = offset
    return offsets


def parse_assign(text: str) -> list[TopicPartition]:
    """`{"t":[0,1]}` -> [("t", 0), ("t", 1)], sorted."""
    try:
        document = json.loads(text)
    except ValueError as error:
        raise OffsetsError(f"expected e.g. {ASSIGN_EXAMPLE}, got {text}") from error
    if not isinstance(document, dict) or not document:
        raise OffsetsError(f"expected e.g. {ASSIGN_EXAMPLE}, got {text}")
    partitions: set[TopicPartition] = set()
    for topic, numbers in document.items():
        if not isinstance(numbers, list) or not all(_is_partition_number(n) for n in numbers):
            raise OffsetsError(f"expected e.g. {ASSIGN_EXAMPLE}, got {text}")
        partitions.update((topic, number) for number in numbers)
    return sorted(partitions)


def _is_int_text(text: str) -> bool:
    return text.isdigit()


def _is_partition_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def to_json_dict(offsets: PartitionOffsets) -> dict[str, dict[str, int]]:
    """Spark's offset-log form; partitions in numeric order so replays print the same JSON."""
    document: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        document.setdefault(topic, {})[str(partition)] = offsets[(topic, partition)]
    return document


def from_json_dict(document: dict[str, dict[str, int]]) -> PartitionOffsets:
    return {
        (topic, int(partition)): int(offset)
        for topic, partitions in document.items()
        for partition, offset in partitions.items()
    }


def rate_limit(
    start: PartitionOffsets, latest: PartitionOffsets, max_offsets: int
) -> PartitionOffsets:
    """End offsets that advance at most `max_offsets` in total, shared in proportion to each
    partition's backlog. Spark rounds each share separately and may overshoot; here the
    leftover offsets go to the largest remainders, so the total never exceeds the limit."""
    backlog = {tp: max(0, latest[tp] - start[tp]) for tp in latest}
    total = sum(backlog.values())
    if total <= max_offsets:
        return dict(latest)
    shares = {tp: max_offsets * size // total for tp, size in backlog.items()}
    leftover = max_offsets - sum(shares.values())
    by_remainder = sorted(backlog, key=lambda tp: (-(max_offsets * backlog[tp] % total), tp))
    for tp in by_remainder[:leftover]:
        shares[tp] += 1
    return {tp: start[tp] + min(shares[tp], backlog[tp]) for tp in latest}


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """One range per topic partition; with `minPartitions` above that count, large ranges
    are cut into pieces in proportion to their size (as Spark's offset range calculator)."""
    ranges = [r for r in ranges if r.size > 0]
    if min_partitions is None or min_partitions <= len(ranges):
        return ranges
    total = sum(r.size for r in ranges)
    pieces: list[OffsetRange] = []
    for offset_range in ranges:
        wanted = max(1, round(offset_range.size * min_partitions / total))
        pieces.extend(_cut(offset_range, min(wanted, offset_range.size)))
    return pieces


def _cut(offset_range: OffsetRange, parts: int) -> list[OffsetRange]:
    step, extra = divmod(offset_range.size, parts)
    pieces = []
    begin = offset_range.from_offset
    for index in range(parts):
        end = begin + step + (1 if index < extra else 0)
        pieces.append(OffsetRange(offset_range.topic, offset_range.partition, begin, end))
        begin = end
    return pieces


def describe(tp: TopicPartition) -> str:
    """Kafka's `topic-partition` spelling, as Spark's messages use it."""
    return f"{tp[0]}-{tp[1]}"
