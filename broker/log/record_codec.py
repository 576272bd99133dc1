"""Records inside a v2 batch: varint encoding, building batches, decoding them.

Not on the produce/fetch hot path: used by tests, by the broker's own writes (e.g. internal
topics) and by features that truly need records (compaction, timestamp lookups).
Record layout: length varint | attributes i8 | timestamp_delta varlong | offset_delta varint |
key_length varint | key | value_length varint | value | header_count varint |
(key_length varint | key utf-8 | value_length varint | value)*; -1 lengths mean null.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker.log import compression
from broker.log.batch import (
    CONTROL_MASK,
    CURRENT_MAGIC,
    HEADER_SIZE_BYTES,
    HEADER_STRUCT,
    LOG_OVERHEAD_BYTES,
    MIN_RECORD_BYTES,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    Buffer,
    compute_crc,
    read_batch_header,
)
from broker.log.errors import CORRUPT_MESSAGE, RecordError

RecordHeaders = tuple[tuple[str, bytes | None], ...]

# The smallest record header: key length and value length varints of one byte each.
MIN_HEADER_BYTES = 2


@dataclass(frozen=True, slots=True)
class SimpleRecord:
    key: bytes | None
    value: bytes | None
    headers: RecordHeaders = ()
    timestamp_ms: int = 0


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: RecordHeaders = ()


def encode_varint(value: int, out: bytearray) -> None:
    """Zig-zag varint (Kafka's signed varint/varlong)."""
    unsigned = (value << 1) ^ (value >> 63)
    while unsigned >= 0x80:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)


def decode_varint(data: Buffer, position: int) -> tuple[int, int]:
    """Return (value, next_position); raises RecordError on a varint running off the end."""
    shift = 0
    unsigned = 0
    while True:
        if position >= len(data) or shift > 63:
            raise RecordError(CORRUPT_MESSAGE, "truncated or overlong varint")
        byte = data[position]
        position += 1
        unsigned |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (unsigned >> 1) ^ -(unsigned & 1), position
        shift += 7


def _encode_bytes(value: bytes | None, out: bytearray) -> None:
    if value is None:
        encode_varint(-1, out)
        return
    encode_varint(len(value), out)
    out += value


def _encode_record(record: SimpleRecord, offset_delta: int, base_timestamp: int) -> bytes:
    body = bytearray(b"\x00")  # attributes: unused in v2
    encode_varint(record.timestamp_ms - base_timestamp, body)
    encode_varint(offset_delta, body)
    _encode_bytes(record.key, body)
    _encode_bytes(record.value, body)
    encode_varint(len(record.headers), body)
    for header_key, header_value in record.headers:
        _encode_bytes(header_key.encode("utf-8"), body)
        _encode_bytes(header_value, body)
    framed = bytearray()
    encode_varint(len(body), framed)
    return bytes(framed + body)


def build_batch(
    records: Sequence[SimpleRecord],
    base_offset: int = 0,
    compression_type: int = 0,
    timestamp_type: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
) -> bytes:
    """Encode one RecordBatch v2 with a valid CRC, as a Kafka producer would."""
    if not records:
        raise ValueError("a batch needs at least one record")
    base_timestamp = records[0].timestamp_ms
    max_timestamp = max(record.timestamp_ms for record in records)
    body = b"".join(
        _encode_record(record, delta, base_timestamp) for delta, record in enumerate(records)
    )
    body = compression.compress(compression_type, body)
    attributes = compression_type
    attributes |= TIMESTAMP_TYPE_MASK if timestamp_type else 0
    attributes |= TRANSACTIONAL_MASK if is_transactional else 0
    attributes |= CONTROL_MASK if is_control else 0
    batch = bytearray(HEADER_SIZE_BYTES + len(body))
    HEADER_STRUCT.pack_into(
        batch,
        0,
        base_offset,
        len(batch) - LOG_OVERHEAD_BYTES,
        partition_leader_epoch,
        CURRENT_MAGIC,
        0,
        attributes,
        len(records) - 1,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    batch[HEADER_SIZE_BYTES:] = body
    crc = compute_crc(batch, 0, len(batch))
    batch[17:21] = crc.to_bytes(4, "big")
    return bytes(batch)


def _decode_bytes(data: Buffer, position: int) -> tuple[bytes | None, int]:
    length, position = decode_varint(data, position)
    if length < 0:
        return None, position
    end = position + length
    if end > len(data):
        raise RecordError(CORRUPT_MESSAGE, "record field runs past the end of the batch")
    return bytes(data[position:end]), end


def _decode_headers(data: Buffer, position: int, end: int) -> tuple[RecordHeaders, int]:
    """The headers of a record ending at `end`.

    The count is checked against the bytes left before looping, so a forged count (up to
    2**31-1) cannot make us loop or allocate by it. Kafka refuses any negative count.
    """
    count, position = decode_varint(data, position)
    if count < 0 or count * MIN_HEADER_BYTES > end - position:
        raise RecordError(CORRUPT_MESSAGE, f"invalid number of record headers {count}")
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        header_key, position = _decode_bytes(data, position)
        header_value, position = _decode_bytes(data, position)
        headers.append(((header_key or b"").decode("utf-8", "replace"), header_value))
    return tuple(headers), position


def _decode_record(
    data: Buffer, position: int, base_offset: int, base_timestamp: int
) -> tuple[DecodedRecord, int]:
    length, position = decode_varint(data, position)
    end = position + length
    if length < 0 or end > len(data):
        raise RecordError(CORRUPT_MESSAGE, "record length runs past the end of the batch")
    position += 1  # attributes
    timestamp_delta, position = decode_varint(data, position)
    offset_delta, position = decode_varint(data, position)
    key, position = _decode_bytes(data, position)
    value, position = _decode_bytes(data, position)
    headers, _ = _decode_headers(data, position, end)
    record = DecodedRecord(
        base_offset + offset_delta, base_timestamp + timestamp_delta, key, value, headers
    )
    return record, end


def decode_records(
    batch: Buffer, max_decompressed_bytes: int = compression.MAX_DECOMPRESSED_BYTES_DEFAULT
) -> list[DecodedRecord]:
    """Every record of one or more concatenated batches (decompressing as needed).

    Each batch's records may decompress to at most `max_decompressed_bytes` (MESSAGE_TOO_LARGE
    past it). For LogAppendTime batches each record's timestamp is the batch's max timestamp,
    as in Kafka.
    """
    records: list[DecodedRecord] = []
    position = 0
    while position < len(batch):
        header = read_batch_header(batch, position)
        payload = _records_payload(batch, position, header, max_decompressed_bytes)
        batch_records = _decode_batch_records(
            payload, header.base_offset, header.records_count, header.base_timestamp
        )
        if header.timestamp_type == 1:
            batch_records = [_with_timestamp(r, header.max_timestamp) for r in batch_records]
        records.extend(batch_records)
        position += header.size_bytes
    return records


def _records_payload(
    batch: Buffer, position: int, header: BatchHeader, max_decompressed_bytes: int
) -> Buffer:
    """The records section of the batch at `position`, decompressed if need be.

    Its size is checked against `records_count` here, before any per-record loop.
    """
    section = memoryview(batch)[position + HEADER_SIZE_BYTES : position + header.size_bytes]
    payload: Buffer = section
    if header.compression_type != compression.NONE:
        payload = compression.decompress(header.compression_type, section, max_decompressed_bytes)
    if header.records_count < 0 or header.records_count * MIN_RECORD_BYTES > len(payload):
        raise RecordError(
            CORRUPT_MESSAGE,
            f"records count {header.records_count} does not match {len(payload)} bytes of records",
        )
    return payload


def _with_timestamp(record: DecodedRecord, timestamp_ms: int) -> DecodedRecord:
    return DecodedRecord(record.offset, timestamp_ms, record.key, record.value, record.headers)


def _decode_batch_records(
    payload: Buffer, base_offset: int, records_count: int, base_timestamp: int
) -> list[DecodedRecord]:
    records: list[DecodedRecord] = []
    position = 0
    for _ in range(records_count):
        record, position = _decode_record(payload, position, base_offset, base_timestamp)
        records.append(record)
    return records
