"""Fetch responses (v4-v17) encoded straight from the handler's values, as a list of buffers
that leaves the record sets uncopied.

A fetch response is mostly record bytes read from the log. Through kio they were copied into
one buffer, then twice more by the connection (header, size prefix), and building the kio
entities cost more than the encoding for small fetches (a follower fetches once per produce
request). Here the small fields go into short buffers and each record set is handed on as the
very object the log read returned; the socket write gathers them (DESIGN.md, "Copies on the
hot path"). The values are the adapter's union-of-versions dicts (see adapter.build); the
layout is FetchResponse.json's for v4-v17, and a unit test holds it byte-identical to kio's.
v13+ names each topic by its id. Tagged fields (v12+) are not written here: the handler has
kio encode the rare responses that set one (a current leader, v16+).
"""

from __future__ import annotations

import datetime
import struct
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.log.file_records import FileRecords
    from broker.protocol.adapter import BodyPart

LOWEST_ENCODED_VERSION = 4
HIGHEST_ENCODED_VERSION = 17
# The versions at which FetchResponse.json adds a field or turns flexible.
LOG_START_OFFSET_VERSION = 5
SESSION_VERSION = 7
PREFERRED_READ_REPLICA_VERSION = 11
FLEXIBLE_VERSION = 12
TOPIC_ID_VERSION = 13
# Record sets below this are cheaper to copy into the neighbouring buffer than to hand to the
# socket as one more gather element.
SEPARATE_RECORDS_MIN_BYTES = 4096

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PARTITION_HEAD = struct.Struct(">ihqq")  # partition, error code, high watermark, LSO
_INT64 = struct.Struct(">q")
_ABORTED = struct.Struct(">qq")
_NO_TAGGED_FIELDS = b"\x00"
_ZERO_UUID_BYTES = bytes(16)


def can_encode(version: int) -> bool:
    return LOWEST_ENCODED_VERSION <= version <= HIGHEST_ENCODED_VERSION


def encode_parts(version: int, values: Mapping[str, Any]) -> list[BodyPart]:
    """The response body as buffers to be written in order (their concatenation is the body)."""
    if not can_encode(version):
        raise ValueError(f"Fetch v{version} is not laid out here")
    return _Writer(version).response(values)


def _int(value: Any) -> int:
    # Error codes arrive as kio's ErrorCode or as plain ints.
    return int(getattr(value, "value", value))


def _millis(value: Any) -> int:
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)


class _Writer:
    def __init__(self, version: int) -> None:
        self._version = version
        self._flexible = version >= FLEXIBLE_VERSION
        self._parts: list[BodyPart] = []
        self._buffer = bytearray()

    def response(self, values: Mapping[str, Any]) -> list[BodyPart]:
        buffer = self._buffer
        buffer += _INT32.pack(_millis(values["throttle_time"]))
        if self._version >= SESSION_VERSION:
            buffer += _INT16.pack(_int(values["error_code"]))
            buffer += _INT32.pack(values["session_id"])
        self._array_length(len(values["responses"]))
        for topic in values["responses"]:
            if self._version >= TOPIC_ID_VERSION:
                self._uuid(topic["topic_id"])
            else:
                self._string(topic["topic"])
            self._array_length(len(topic["partitions"]))
            for partition in topic["partitions"]:
                self._partition(partition)
            self._end_struct()
        self._end_struct()
        self._parts.append(bytes(self._buffer))
        return self._parts

    def _partition(self, partition: Mapping[str, Any]) -> None:
        buffer = self._buffer
        buffer += _PARTITION_HEAD.pack(
            partition["partition_index"],
            _int(partition["error_code"]),
            partition["high_watermark"],
            partition.get("last_stable_offset", -1),
        )
        if self._version >= LOG_START_OFFSET_VERSION:
            buffer += _INT64.pack(partition.get("log_start_offset", -1))
        self._aborted(partition["aborted_transactions"])
        if self._version >= PREFERRED_READ_REPLICA_VERSION:
            buffer += _INT32.pack(partition.get("preferred_read_replica", -1))
        self._records(partition["records"])
        self._end_struct()

    def _aborted(self, aborted: Any) -> None:
        if aborted is None:
            self._null_length()
            return
        self._array_length(len(aborted))
        for transaction in aborted:
            self._buffer += _ABORTED.pack(transaction["producer_id"], transaction["first_offset"])
            self._end_struct()

    def _records(self, records: bytes | FileRecords | None) -> None:
        if records is None:
            self._null_length()
            return
        self._length(len(records))
        # A slice of a segment file (FileRecords) is always a part of its own: the
        # connection sends it with sendfile.
        if isinstance(records, bytes | bytearray) and len(records) < SEPARATE_RECORDS_MIN_BYTES:
            self._buffer += records
            return
        self._parts.append(bytes(self._buffer))
        self._parts.append(records)
        self._buffer = bytearray()

    # -- primitives ------------------------------------------------------------------------

    def _string(self, value: str) -> None:
        encoded = value.encode("utf-8")
        if self._flexible:
            self._buffer += unsigned_varint(len(encoded) + 1)
        else:
            self._buffer += _INT16.pack(len(encoded))
        self._buffer += encoded

    def _uuid(self, value: uuid.UUID | None) -> None:
        self._buffer += _ZERO_UUID_BYTES if value is None else value.bytes

    def _array_length(self, count: int) -> None:
        self._length(count)

    def _length(self, count: int) -> None:
        # Arrays and bytes share the rule: compact (length + 1 as a varint) when flexible.
        if self._flexible:
            self._buffer += unsigned_varint(count + 1)
        else:
            self._buffer += _INT32.pack(count)

    def _null_length(self) -> None:
        self._buffer += unsigned_varint(0) if self._flexible else _INT32.pack(-1)

    def _end_struct(self) -> None:
        if self._flexible:
            self._buffer += _NO_TAGGED_FIELDS


def unsigned_varint(value: int) -> bytes:
    """Kafka's unsigned varint (compact lengths, tagged-field counts)."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
