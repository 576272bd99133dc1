"""Fetch responses (v4-v12) encoded as a list of buffers that leaves the record sets uncopied.

kio's writer copies every record set into one buffer, and the connection used to copy the
whole body twice more (header, then size prefix). A fetch response is mostly record bytes
read from the log, so here the small fields go into short buffers and each record set is
handed on as the very object the log read returned; the socket write gathers them
(DESIGN.md, "Copies on the hot path"). The layout is FetchResponse.json's for v4-v12; a
unit test holds it byte-identical to kio's encoding. A response carrying any tagged field
(never set by our handler) is left to kio.
"""

from __future__ import annotations

import struct
from typing import Any

from kio.schema.fetch.v12.response import EpochEndOffset, LeaderIdAndEpoch, SnapshotId

FETCH_API_KEY = 1
LOWEST_ENCODED_VERSION = 4
HIGHEST_ENCODED_VERSION = 12
# The versions at which FetchResponse.json adds a field or turns flexible.
LOG_START_OFFSET_VERSION = 5
SESSION_VERSION = 7
PREFERRED_READ_REPLICA_VERSION = 11
FLEXIBLE_VERSION = 12
# Record sets below this are cheaper to copy into the neighbouring buffer than to hand to the
# socket as one more gather element.
SEPARATE_RECORDS_MIN_BYTES = 4096

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PARTITION_HEAD = struct.Struct(">ihqq")  # partition, error code, high watermark, LSO
_INT64 = struct.Struct(">q")
_ABORTED = struct.Struct(">qq")
_NO_TAGGED_FIELDS = b"\x00"
_DEFAULT_TAGS = (
    ("diverging_epoch", EpochEndOffset()),
    ("current_leader", LeaderIdAndEpoch()),
    ("snapshot_id", SnapshotId()),
)


def can_encode(entity: Any) -> bool:
    """A Fetch response of a version this module lays out, with no tagged field set."""
    cls = type(entity)
    if getattr(cls, "__api_key__", None) != FETCH_API_KEY or not cls.__name__.endswith("Response"):
        return False
    if not LOWEST_ENCODED_VERSION <= cls.__version__ <= HIGHEST_ENCODED_VERSION:
        return False
    return all(_no_tags(p) for t in entity.responses for p in t.partitions)


def _no_tags(partition: Any) -> bool:
    # Compared field by field: the nested tag classes differ per version, their values do not.
    return all(
        _same_values(getattr(partition, name, default), default) for name, default in _DEFAULT_TAGS
    )


def _same_values(value: Any, default: Any) -> bool:
    return all(
        getattr(value, field) == getattr(default, field) for field in default.__dataclass_fields__
    )


def encode_parts(entity: Any) -> list[bytes]:
    """The response body as buffers to be written in order (their concatenation is the body)."""
    return _Writer(int(type(entity).__version__)).response(entity)


class _Writer:
    def __init__(self, version: int) -> None:
        self._version = version
        self._flexible = version >= FLEXIBLE_VERSION
        self._parts: list[bytes] = []
        self._buffer = bytearray()

    def response(self, entity: Any) -> list[bytes]:
        buffer = self._buffer
        buffer += _INT32.pack(round(entity.throttle_time.total_seconds() * 1000))
        if self._version >= SESSION_VERSION:
            buffer += _INT16.pack(entity.error_code.value)
            buffer += _INT32.pack(entity.session_id)
        self._array_length(len(entity.responses))
        for topic in entity.responses:
            self._string(topic.topic)
            self._array_length(len(topic.partitions))
            for partition in topic.partitions:
                self._partition(partition)
            self._end_struct()
        self._end_struct()
        self._parts.append(bytes(self._buffer))
        return self._parts

    def _partition(self, partition: Any) -> None:
        buffer = self._buffer
        buffer += _PARTITION_HEAD.pack(
            partition.partition_index,
            partition.error_code.value,
            partition.high_watermark,
            partition.last_stable_offset,
        )
        if self._version >= LOG_START_OFFSET_VERSION:
            buffer += _INT64.pack(partition.log_start_offset)
        self._aborted(partition.aborted_transactions)
        if self._version >= PREFERRED_READ_REPLICA_VERSION:
            buffer += _INT32.pack(partition.preferred_read_replica)
        self._records(partition.records)
        self._end_struct()

    def _aborted(self, aborted: Any) -> None:
        if aborted is None:
            self._null_length()
            return
        self._array_length(len(aborted))
        for transaction in aborted:
            self._buffer += _ABORTED.pack(transaction.producer_id, transaction.first_offset)
            self._end_struct()

    def _records(self, records: bytes | None) -> None:
        if records is None:
            self._null_length()
            return
        self._length(len(records))
        if len(records) < SEPARATE_RECORDS_MIN_BYTES:
            self._buffer += records
            return
        self._parts.append(bytes(self._buffer))
        self._parts.append(records)
        self._buffer = bytearray()

    # -- primitives ------------------------------------------------------------------------

    def _string(self, value: str) -> None:
        encoded = value.encode("utf-8")
        if self._flexible:
            self._buffer += _uvarint(len(encoded) + 1)
        else:
            self._buffer += _INT16.pack(len(encoded))
        self._buffer += encoded

    def _array_length(self, count: int) -> None:
        self._length(count)

    def _length(self, count: int) -> None:
        # Arrays and bytes share the rule: compact (length + 1 as a varint) when flexible.
        if self._flexible:
            self._buffer += _uvarint(count + 1)
        else:
            self._buffer += _INT32.pack(count)

    def _null_length(self) -> None:
        self._buffer += _uvarint(0) if self._flexible else _INT32.pack(-1)

    def _end_struct(self) -> None:
        if self._flexible:
            self._buffer += _NO_TAGGED_FIELDS


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
