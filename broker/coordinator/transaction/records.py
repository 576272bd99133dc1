"""The records of `__transaction_state`, in Kafka's TransactionLogKey / TransactionLogValue
schemas, so Kafka's own tools can read the topic.

- Key v0: the transactional id.
- Value v0 (classic encoding) and v1 (flexible: compact strings and arrays, tagged fields):
  producer id, producer epoch, transaction timeout, status (`TxnState`), the partitions of
  the transaction (null when Empty, as Kafka writes it), last update and start timestamps.
  We write v0, which every Kafka version reads.
- A null value (tombstone) removes an expired transactional id.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.cluster.java_hash import key_partition
from broker.coordinator.record_io import RecordFormatError, RecordReader, RecordWriter
from broker.coordinator.transaction.state import TxnState

KEY_VERSION = 0
VALUE_VERSION = 0
FLEXIBLE_VALUE_VERSION = 1

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    last_update_timestamp_ms: int
    start_timestamp_ms: int


def encode_key(transactional_id: str) -> bytes:
    return bytes(RecordWriter().int16(KEY_VERSION).string(transactional_id).buffer)


def decode_key(data: bytes) -> str:
    reader = RecordReader(data)
    version = reader.int16()
    if version != KEY_VERSION:
        raise RecordFormatError(f"unknown transaction log key version {version}")
    return reader.string()


def encode_value(value: TxnLogValue) -> bytes:
    writer = RecordWriter().int16(VALUE_VERSION).int64(value.producer_id)
    writer.int16(value.producer_epoch).int32(value.transaction_timeout_ms).int8(value.state)
    if value.state == TxnState.EMPTY:
        if value.partitions:
            raise RecordFormatError("an Empty transaction has no partitions")
        writer.int32(-1)
    else:
        by_topic = _by_topic(value.partitions)
        writer.int32(len(by_topic))
        for topic, partition_ids in by_topic.items():
            writer.string(topic).int32(len(partition_ids))
            for partition in partition_ids:
                writer.int32(partition)
    writer.int64(value.last_update_timestamp_ms).int64(value.start_timestamp_ms)
    return bytes(writer.buffer)


def decode_value(data: bytes) -> TxnLogValue:
    reader = RecordReader(data)
    version = reader.int16()
    if version not in (VALUE_VERSION, FLEXIBLE_VALUE_VERSION):
        raise RecordFormatError(f"unknown transaction log value version {version}")
    flexible = version == FLEXIBLE_VALUE_VERSION
    producer_id, producer_epoch = reader.int64(), reader.int16()
    timeout_ms, status = reader.int32(), reader.int8()
    try:
        state = TxnState(status)
    except ValueError:
        raise RecordFormatError(f"unknown transaction status {status}") from None
    partitions = _read_partitions(reader, flexible)
    last_update_ms, start_ms = reader.int64(), reader.int64()
    if flexible:
        reader.skip_tagged_fields()
    return TxnLogValue(
        producer_id, producer_epoch, timeout_ms, state, partitions, last_update_ms, start_ms
    )


def _read_partitions(reader: RecordReader, flexible: bool) -> frozenset[TopicPartition]:
    count = reader.compact_array_count() if flexible else _nullable_count(reader)
    found: set[TopicPartition] = set()
    for _ in range(count or 0):
        topic = reader.compact_string() if flexible else reader.string()
        ids = reader.compact_array_count() if flexible else reader.array_count()
        found.update((topic, reader.int32()) for _ in range(ids or 0))
        if flexible:
            reader.skip_tagged_fields()
    return frozenset(found)


def _nullable_count(reader: RecordReader) -> int | None:
    count = reader.int32()
    if count == -1:
        return None
    if count < 0 or count > len(reader.data) - reader.position:
        raise RecordFormatError(f"array count {count} does not fit")
    return count


def _by_topic(partitions: frozenset[TopicPartition]) -> dict[str, list[int]]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return by_topic


def partition_for(transactional_id: str, partition_count: int) -> int:
    """The `__transaction_state` partition of a transactional id."""
    return key_partition(transactional_id, partition_count)
