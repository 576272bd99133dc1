"""The records of `__consumer_offsets`, in Kafka's own key and value schemas.

Every key and value starts with an int16 schema version, so Kafka's tools (and Kafka itself)
can read the topic:

- key v0/v1 `OffsetCommitKey`: group, topic, partition. Value `OffsetCommitValue` v0
  (offset, metadata, commit timestamp), v1 (+ expire timestamp), v2 (v0's fields), v3
  (offset, leader epoch, metadata, commit timestamp). We write v3, as Kafka 2.1+ does.
- key v2 `GroupMetadataKey`: group. Value `GroupMetadataValue` v0-v3 (protocol type,
  generation, protocol, leader, then v2+ current state timestamp, then the members; member
  v1+ adds the rebalance timeout, v3+ the group instance id). We write v3.
- A null value (tombstone) deletes the key's offset or group.

Strings are int16-length-prefixed UTF-8 (-1 = null), bytes int32-length-prefixed, arrays int32
counts: the classic non-flexible encoding.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.cluster.java_hash import key_partition
from broker.coordinator.record_io import RecordFormatError, RecordReader, RecordWriter

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3
NO_LEADER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1  # only in v1 values, written by old brokers


@dataclass(frozen=True, slots=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberValue, ...]


# ---- encoding -------------------------------------------------------------------------------


def encode_offset_key(key: OffsetKey) -> bytes:
    writer = RecordWriter().int16(OFFSET_COMMIT_KEY_VERSION)
    return bytes(writer.string(key.group).string(key.topic).int32(key.partition).buffer)


def encode_group_key(key: GroupKey) -> bytes:
    return bytes(RecordWriter().int16(GROUP_METADATA_KEY_VERSION).string(key.group).buffer)


def encode_offset_value(value: OffsetValue) -> bytes:
    writer = RecordWriter().int16(OFFSET_COMMIT_VALUE_VERSION).int64(value.offset)
    writer.int32(value.leader_epoch).string(value.metadata).int64(value.commit_timestamp_ms)
    return bytes(writer.buffer)


def encode_group_value(value: GroupValue) -> bytes:
    writer = RecordWriter().int16(GROUP_METADATA_VALUE_VERSION).string(value.protocol_type)
    writer.int32(value.generation).string(value.protocol).string(value.leader)
    writer.int64(value.current_state_timestamp_ms).int32(len(value.members))
    for member in value.members:
        writer.string(member.member_id).string(member.group_instance_id)
        writer.string(member.client_id).string(member.client_host)
        writer.int32(member.rebalance_timeout_ms).int32(member.session_timeout_ms)
        writer.bytes_(member.subscription).bytes_(member.assignment)
    return bytes(writer.buffer)


# ---- decoding -------------------------------------------------------------------------------


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    reader = RecordReader(data)
    version = reader.int16()
    if version in (0, 1):
        return OffsetKey(reader.string(), reader.string(), reader.int32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupKey(reader.string())
    raise RecordFormatError(f"unknown key version {version}")


def decode_offset_value(data: bytes) -> OffsetValue:
    reader = RecordReader(data)
    version = reader.int16()
    if version in (0, 2):
        offset, metadata, timestamp = reader.int64(), reader.string(), reader.int64()
        return OffsetValue(offset, NO_LEADER_EPOCH, metadata, timestamp)
    if version == 1:
        offset, metadata, timestamp = reader.int64(), reader.string(), reader.int64()
        return OffsetValue(offset, NO_LEADER_EPOCH, metadata, timestamp, reader.int64())
    if version == 3:
        offset, epoch = reader.int64(), reader.int32()
        return OffsetValue(offset, epoch, reader.string(), reader.int64())
    raise RecordFormatError(f"unknown offset value version {version}")


def decode_group_value(data: bytes) -> GroupValue:
    reader = RecordReader(data)
    version = reader.int16()
    if not 0 <= version <= GROUP_METADATA_VALUE_VERSION:
        raise RecordFormatError(f"unknown group value version {version}")
    protocol_type, generation = reader.string(), reader.int32()
    protocol, leader = reader.nullable_string(), reader.nullable_string()
    timestamp_ms = reader.int64() if version >= 2 else -1
    members = tuple(_decode_member(reader, version) for _ in range(reader.array_count()))
    return GroupValue(protocol_type, generation, protocol, leader, timestamp_ms, members)


def _decode_member(reader: RecordReader, version: int) -> MemberValue:
    member_id = reader.string()
    instance_id = reader.nullable_string() if version >= 3 else None
    client_id, client_host = reader.string(), reader.string()
    rebalance_timeout_ms = reader.int32() if version >= 1 else -1
    session_timeout_ms = reader.int32()
    if rebalance_timeout_ms < 0:
        rebalance_timeout_ms = session_timeout_ms  # v0 had a single timeout
    subscription, assignment = reader.bytes_(), reader.bytes_()
    return MemberValue(
        member_id,
        instance_id,
        client_id,
        client_host,
        rebalance_timeout_ms,
        session_timeout_ms,
        subscription,
        assignment,
    )


def partition_for(group_id: str, partition_count: int) -> int:
    """The offsets partition of a group (Integer.MIN_VALUE's absolute value taken as 0)."""
    return key_partition(group_id, partition_count)
