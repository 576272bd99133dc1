"""Kafka's `Utils.abs` and Java int wrap-around, which Kafka uses (with `String.hashCode`,
`zk.json_order.java_string_hash`) to place things: a group's offsets partition, a partition's
replica fetcher. We must place them the same way."""

from __future__ import annotations

from zk.json_order import java_string_hash

__all__ = ["java_abs", "java_string_hash", "key_partition", "to_int32"]

INT_MIN = -(1 << 31)


def to_int32(value: int) -> int:
    """Wrap an integer to a Java int."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def java_abs(value: int) -> int:
    """Kafka's `Utils.abs`: the absolute value, with Integer.MIN_VALUE taken as 0."""
    return 0 if value == INT_MIN else abs(value)


def key_partition(key: str, partition_count: int) -> int:
    """The internal-topic partition of a group id or transactional id: Kafka's
    `Utils.abs(key.hashCode) % partitionCount`."""
    return java_abs(java_string_hash(key)) % partition_count
