"""RecordBatch v2 (magic 2) headers: decode, validate and patch without touching records.

Layout (big-endian), 61 bytes before the records:
base_offset i64 | batch_length i32 | partition_leader_epoch i32 | magic i8 | crc u32 |
attributes i16 | last_offset_delta i32 | base_timestamp i64 | max_timestamp i64 |
producer_id i64 | producer_epoch i16 | base_sequence i32 | records_count i32
The CRC-32C covers attributes..end, so base offset and leader epoch can be patched in place.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import crc32c

from broker.log import compression
from broker.log.errors import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    MESSAGE_TOO_LARGE,
    UNSUPPORTED_COMPRESSION_TYPE,
    RecordError,
)

HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE_BYTES = HEADER_STRUCT.size  # 61
LOG_OVERHEAD_BYTES = 12  # base_offset + batch_length precede what batch_length counts
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
CURRENT_MAGIC = 2

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
MAX_COMPRESSION_TYPE = 4  # zstd
# The smallest v2 record: length, attributes, timestamp delta, offset delta, key length, value
# length and header count take at least one byte each. Bounds what `records_count` may claim.
MIN_RECORD_BYTES = 7

_OFFSET_AND_EPOCH = struct.Struct(">qii")  # base_offset, batch_length, partition_leader_epoch
_LENGTH = struct.Struct(">qi")
_I64 = struct.Struct(">q")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")

Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The 61-byte RecordBatch v2 header, decoded."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD_BYTES

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression_type(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)


def read_batch_header(data: Buffer, position: int) -> BatchHeader:
    """Decode the header at `position`; checks magic and that the whole batch is present.

    The CRC is not checked here (see `validate_batches`) so index rebuilding and reads can
    walk headers cheaply.
    """
    available_bytes = len(data) - position
    if available_bytes < HEADER_SIZE_BYTES:
        raise RecordError(CORRUPT_MESSAGE, f"truncated batch header at position {position}")
    header = BatchHeader(*HEADER_STRUCT.unpack_from(data, position))
    _check_magic(header.magic, position)
    if header.batch_length < HEADER_SIZE_BYTES - LOG_OVERHEAD_BYTES:
        raise RecordError(
            CORRUPT_MESSAGE, f"batch length {header.batch_length} too small at {position}"
        )
    if header.size_bytes > available_bytes:
        raise RecordError(CORRUPT_MESSAGE, f"truncated batch at position {position}")
    return header


def _check_magic(magic: int, position: int) -> None:
    if magic == CURRENT_MAGIC:
        return
    # Produce v3+ may only carry magic 2; legacy v0/v1 message sets are not converted either.
    raise RecordError(CORRUPT_MESSAGE, f"invalid magic {magic} at position {position}")


def compute_crc(data: Buffer, position: int, size_bytes: int) -> int:
    """CRC-32C of attributes..end of the batch at `position`."""
    view = memoryview(data)[position + ATTRIBUTES_OFFSET : position + size_bytes]
    return int(crc32c.crc32c(view))


def check_crc(data: Buffer, position: int, header: BatchHeader) -> None:
    if compute_crc(data, position, header.size_bytes) != header.crc:
        raise RecordError(CORRUPT_MESSAGE, f"CRC mismatch in batch at offset {header.base_offset}")


def _check_producer_fields(header: BatchHeader) -> None:
    """What Kafka checks on batches coming from clients (never on replicated ones)."""
    if header.records_count < 1:
        raise RecordError(INVALID_RECORD, "batch has no records")
    if header.last_offset_delta != header.records_count - 1:
        raise RecordError(INVALID_RECORD, "offset range does not match the record count")
    if header.compression_type > MAX_COMPRESSION_TYPE:
        raise RecordError(
            UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression type {header.compression_type}"
        )
    if header.is_control:
        raise RecordError(INVALID_RECORD, "clients may not write control batches")
    if header.is_transactional and header.producer_id < 0:
        raise RecordError(INVALID_RECORD, "transactional batch without a producer id")


def validate_batches(
    data: Buffer,
    max_message_bytes: int,
    from_client: bool = True,
    max_decompressed_bytes: int = compression.MAX_DECOMPRESSED_BYTES_DEFAULT,
    compressed_checked: bool = False,
) -> list[BatchHeader]:
    """Check that `data` is a sequence of complete, intact v2 batches; return their headers.

    One header decode and one CRC per batch. Uncompressed records are never looked at; the
    records of a compressed batch from a client are decompressed (counted, not kept) so that
    a small batch cannot expand past `max_decompressed_bytes` in a later reader. Replicated
    batches (`from_client=False`) were checked by the leader and stay opaque.
    """
    headers: list[BatchHeader] = []
    position = 0
    total_bytes = len(data)
    while position < total_bytes:
        header = read_batch_header(data, position)
        if from_client and header.size_bytes > max_message_bytes:
            raise RecordError(
                MESSAGE_TOO_LARGE,
                f"batch of {header.size_bytes} bytes exceeds max.message.bytes {max_message_bytes}",
            )
        check_crc(data, position, header)
        if from_client:
            _check_producer_fields(header)
            if not (compressed_checked and header.compression_type != compression.NONE):
                _check_records_count_fits(data, position, header, max_decompressed_bytes)
        headers.append(header)
        position += header.size_bytes
    return headers


def check_compressed_records(data: Buffer, max_decompressed_bytes: int) -> None:
    """The decompressing part of `validate_batches`, alone, so that a caller can run it on a
    worker thread (the codecs release the GIL) and then validate with `compressed_checked`."""
    position = 0
    while position < len(data):
        header = read_batch_header(data, position)
        if header.compression_type != compression.NONE:
            _check_records_count_fits(data, position, header, max_decompressed_bytes)
        position += header.size_bytes


def is_transactional(data: Buffer) -> bool:
    """Whether the first batch is a transactional v2 batch (legacy message sets never are)."""
    if len(data) < HEADER_SIZE_BYTES or data[MAGIC_OFFSET] != CURRENT_MAGIC:
        return False
    return bool(_I16.unpack_from(data, ATTRIBUTES_OFFSET)[0] & TRANSACTIONAL_MASK)


def has_transactional_records(request: Any) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords: does the first batch of some partition
    of a Produce request say it is transactional?"""
    return any(
        p.records is not None and is_transactional(p.records)
        for t in request.topic_data
        for p in t.partition_data
    )


def is_compressed(data: Buffer) -> bool:
    """Whether the first batch's records are compressed (cheap: one attributes read)."""
    if len(data) < HEADER_SIZE_BYTES:
        return False
    return bool(_I16.unpack_from(data, ATTRIBUTES_OFFSET)[0] & COMPRESSION_MASK)


def _check_records_count_fits(
    data: Buffer, position: int, header: BatchHeader, max_decompressed_bytes: int
) -> None:
    """Refuse a `records_count` the records section cannot hold, so readers that size
    anything by it are bounded by real bytes (Kafka: "records count does not match").

    A compressed section is measured decompressed, which also refuses decompression bombs
    (MESSAGE_TOO_LARGE, so Java producers split the batch) and undecodable data
    (CORRUPT_MESSAGE).
    """
    records_bytes = header.size_bytes - HEADER_SIZE_BYTES
    if header.compression_type != compression.NONE:
        start = position + HEADER_SIZE_BYTES
        section = memoryview(data)[start : position + header.size_bytes]
        records_bytes = compression.decompressed_size(
            header.compression_type, section, max_decompressed_bytes
        )
    if header.records_count * MIN_RECORD_BYTES > records_bytes:
        raise RecordError(
            INVALID_RECORD,
            f"records count {header.records_count} does not match {records_bytes} bytes of records",
        )


def assign_offsets(data: bytearray, first_offset: int, partition_leader_epoch: int) -> int:
    """Patch base offset and leader epoch of every batch in place; return the last offset.

    Assumes `data` already passed `validate_batches`.
    """
    position = 0
    next_offset = first_offset
    total_bytes = len(data)
    while position < total_bytes:
        _, batch_length, _ = _OFFSET_AND_EPOCH.unpack_from(data, position)
        last_offset_delta = struct.unpack_from(">i", data, position + 23)[0]
        _OFFSET_AND_EPOCH.pack_into(
            data, position, next_offset, batch_length, partition_leader_epoch
        )
        next_offset += last_offset_delta + 1
        position += batch_length + LOG_OVERHEAD_BYTES
    return next_offset - 1


def set_log_append_time(data: bytearray, position: int, now_ms: int) -> None:
    """Stamp a batch with LogAppendTime: timestamp-type bit, max timestamp, fresh CRC."""
    size_bytes = _LENGTH.unpack_from(data, position)[1] + LOG_OVERHEAD_BYTES
    attributes = _I16.unpack_from(data, position + ATTRIBUTES_OFFSET)[0]
    _I16.pack_into(data, position + ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(data, position + MAX_TIMESTAMP_OFFSET, now_ms)
    _U32.pack_into(data, position + CRC_OFFSET, compute_crc(data, position, size_bytes))


def scan_valid_prefix(data: Buffer, base_position: int = 0) -> tuple[list[BatchHeader], int]:
    """Headers of the leading intact batches and the byte count they span (for recovery).

    Stops quietly at the first torn or corrupt batch instead of raising.
    """
    headers: list[BatchHeader] = []
    position = base_position
    total_bytes = len(data)
    while position < total_bytes:
        try:
            header = read_batch_header(data, position)
            check_crc(data, position, header)
        except RecordError:
            break
        headers.append(header)
        position += header.size_bytes
    return headers, position - base_position


def walk_headers(data: Buffer) -> tuple[list[tuple[int, int, int, int]], int]:
    """(position, base_offset, last_offset, size_bytes) of each complete batch; no CRC check.

    Used on reads, where the bytes were validated on the way in. Returns the bytes spanned.
    """
    entries: list[tuple[int, int, int, int]] = []
    position = 0
    total_bytes = len(data)
    while total_bytes - position >= HEADER_SIZE_BYTES:
        base_offset, batch_length = _LENGTH.unpack_from(data, position)
        size_bytes = batch_length + LOG_OVERHEAD_BYTES
        if position + size_bytes > total_bytes:
            break
        last_offset_delta = struct.unpack_from(">i", data, position + 23)[0]
        entries.append((position, base_offset, base_offset + last_offset_delta, size_bytes))
        position += size_bytes
    return entries, position
