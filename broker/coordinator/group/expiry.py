"""Which committed offsets have expired (`offsets.retention.minutes`), as Kafka 2.1+ decides
(KIP-211): a group with members keeps its offsets; an Empty group's offsets all expire one
retention period after it became Empty; offsets of a group without membership (consumers that
assign partitions themselves) expire one by one, a retention period after their commit (or at
the explicit expire timestamp an old v1 commit carried)."""

from __future__ import annotations

from collections.abc import Mapping

from broker.coordinator.group.records import OffsetValue

TopicPartition = tuple[str, int]


def expired_offsets(
    offsets: Mapping[TopicPartition, OffsetValue],
    has_members: bool,
    empty_since_ms: int | None,
    now_ms: int,
    retention_ms: int,
) -> list[TopicPartition]:
    if has_members:
        return []
    if empty_since_ms is not None and empty_since_ms >= 0:
        if now_ms - empty_since_ms < retention_ms:
            return []
        return list(offsets)
    return [tp for tp, value in offsets.items() if _expires_ms(value, retention_ms) <= now_ms]


def _expires_ms(value: OffsetValue, retention_ms: int) -> int:
    if value.expire_timestamp_ms >= 0:
        return value.expire_timestamp_ms
    return value.commit_timestamp_ms + retention_ms
