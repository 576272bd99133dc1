"""Message formats v0 and v1 (magic 0 and 1): reading the message sets of old producers into a
record batch v2, and writing v2 batches back as old message sets for old consumers.

Kafka 3.x stores only record batches v2 (`log.message.format.version` is ignored from
inter-broker protocol 3.0 on), so it converts both ways, as this module does:
- Produce v0-v2 may carry old message sets; all the messages of one request's partition become
  one v2 batch with the wrapper's compression codec, CreateTime timestamps kept (v0 messages
  have none: -1), every message's CRC checked (CORRUPT_MESSAGE).
- Fetch v0-v1 reads magic 0 and v2-v3 magic 1: each v2 batch becomes messages (uncompressed)
  or one wrapper message (compressed with the batch's codec); control batches are dropped and
  headers lost; zstd cannot be expressed (UNSUPPORTED_COMPRESSION_TYPE).

Message layout: offset i64 | size i32 | crc u32 | magic i8 | attributes i8 | [timestamp i64,
magic 1] | key (i32 length, -1 null) | value (same). The CRC is CRC-32 of magic..end. A
compressed wrapper's value holds the inner messages; magic 1 inner offsets are relative (0..n-1)
and the wrapper carries the last inner offset.

LZ4 under magic 0: Kafka's first LZ4 code computed the frame descriptor's checksum over the
frame's magic number too. Old clients write and expect that flawed byte with magic 0, so it is
repaired before decoding and reproduced when writing magic 0.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import xxhash

from broker.log import compression
from broker.log.batch import Buffer, read_batch_header
from broker.log.errors import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    INVALID_TIMESTAMP,
    UNSUPPORTED_COMPRESSION_TYPE,
    RecordError,
)
from broker.log.record_codec import SimpleRecord, build_batch, decode_records

MAGIC_OFFSET = 16  # same place as a v2 batch's magic: offset i64, size i32, crc u32
CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
NO_TIMESTAMP = -1
_ENTRY_HEAD = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_LOG_OVERHEAD_BYTES = 12
_CRC_START = 16  # CRC covers magic..end
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
# The smallest message: crc, magic, attributes, key length, value length.
_MIN_MESSAGE_BYTES = {0: 14, 1: 22}
_LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    offset: int
    magic: int
    attributes: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK


def is_legacy(data: Buffer) -> bool:
    """Whether `data` starts with a magic 0 or 1 message rather than a v2 batch."""
    return len(data) > MAGIC_OFFSET and data[MAGIC_OFFSET] in (0, 1)


def to_record_batch(data: Buffer, max_decompressed_bytes: int) -> bytes:
    """One v2 batch (CreateTime, the wrappers' codec) holding every message of `data`.

    Raises RecordError: CORRUPT_MESSAGE for a bad CRC or a truncated message, INVALID_RECORD
    for nested wrappers, mixed magic inside a wrapper, or an empty set.
    """
    records: list[SimpleRecord] = []
    codec = compression.NONE
    for message in _read_messages(data, outer=True):
        if message.codec == compression.NONE:
            records.append(_simple(message, message.timestamp_ms))
            continue
        codec = message.codec
        records.extend(_inner_records(message, max_decompressed_bytes))
    if not records:
        raise RecordError(INVALID_RECORD, "no messages in the message set")
    _check_timestamp_deltas(records)
    return build_batch(records, compression_type=codec)


def _check_timestamp_deltas(records: list[SimpleRecord]) -> None:
    """A v2 record stores its timestamp as a varlong delta from the first one; Kafka lets that
    wrap around 64 bits, which Python's integers do not, so such a set (only forged timestamps
    far below -1 make one) is refused instead."""
    base_ms = records[0].timestamp_ms
    if any(not _INT64_MIN <= r.timestamp_ms - base_ms <= _INT64_MAX for r in records):
        raise RecordError(INVALID_TIMESTAMP, "message timestamps too far apart for one batch")


def _inner_records(wrapper: LegacyMessage, max_decompressed_bytes: int) -> list[SimpleRecord]:
    if wrapper.codec > compression.LZ4:
        raise RecordError(INVALID_RECORD, f"compression {wrapper.codec} needs magic 2")
    payload = _decompress(wrapper, max_decompressed_bytes)
    log_append_time = wrapper.magic == 1 and bool(wrapper.attributes & TIMESTAMP_TYPE_MASK)
    inner_records = []
    for inner in _read_messages(payload, outer=False):
        if inner.magic != wrapper.magic or inner.codec != compression.NONE:
            raise RecordError(INVALID_RECORD, "inner message does not match its wrapper")
        timestamp_ms = wrapper.timestamp_ms if log_append_time else inner.timestamp_ms
        inner_records.append(_simple(inner, timestamp_ms))
    return inner_records


def _simple(message: LegacyMessage, timestamp_ms: int) -> SimpleRecord:
    return SimpleRecord(message.key, message.value, (), timestamp_ms)


def _decompress(wrapper: LegacyMessage, max_decompressed_bytes: int) -> bytearray:
    value = wrapper.value or b""
    if wrapper.codec == compression.LZ4:
        value = _with_lz4_checksum(value, broken=False)
    return compression.decompress(wrapper.codec, value, max_decompressed_bytes)


def _read_messages(data: Buffer, outer: bool) -> Iterator[LegacyMessage]:
    view = memoryview(data)
    position = 0
    while position < len(view):
        if position + _ENTRY_HEAD.size > len(view):
            raise RecordError(CORRUPT_MESSAGE, f"truncated message at position {position}")
        offset, size, crc, magic, attributes = _ENTRY_HEAD.unpack_from(view, position)
        end = position + _LOG_OVERHEAD_BYTES + size
        if magic not in (0, 1):
            raise RecordError(INVALID_RECORD if outer else CORRUPT_MESSAGE, f"magic {magic}")
        if size < _MIN_MESSAGE_BYTES[magic] or end > len(view):
            raise RecordError(CORRUPT_MESSAGE, f"message size {size} at position {position}")
        if zlib.crc32(view[position + _CRC_START : end]) != crc:
            raise RecordError(CORRUPT_MESSAGE, f"message at position {position} fails its CRC")
        yield _decode_message(view, position + _ENTRY_HEAD.size, end, offset, magic, attributes)
        position = end


def _decode_message(
    view: memoryview, position: int, end: int, offset: int, magic: int, attributes: int
) -> LegacyMessage:
    timestamp_ms = NO_TIMESTAMP
    if magic == 1:
        (timestamp_ms,) = _I64.unpack_from(view, position)
        position += _I64.size
    key, position = _read_bytes(view, position, end)
    value, position = _read_bytes(view, position, end)
    return LegacyMessage(offset, magic, attributes, timestamp_ms, key, value)


def _read_bytes(view: memoryview, position: int, end: int) -> tuple[bytes | None, int]:
    if position + _I32.size > end:
        raise RecordError(CORRUPT_MESSAGE, "message field runs past the end of the message")
    (length,) = _I32.unpack_from(view, position)
    position += _I32.size
    if length < 0:
        return None, position
    if position + length > end:
        raise RecordError(CORRUPT_MESSAGE, "message field runs past the end of the message")
    return bytes(view[position : position + length]), position + length


def down_convert(records: Buffer, to_magic: int, fetch_offset: int, max_bytes: int) -> bytes:
    """The v2 batches of `records` as a message set of `to_magic` (0 or 1).

    Uncompressed batches keep only records at or past `fetch_offset` (old consumers do not
    skip them); compressed ones are converted whole, as in Kafka. A trailing partial batch is
    dropped. Raises RecordError UNSUPPORTED_COMPRESSION_TYPE for a zstd batch.
    """
    out = bytearray()
    position = 0
    while position < len(records):
        try:
            header = read_batch_header(records, position)
        except RecordError:
            break  # a partial batch at the end of a fetch
        batch = memoryview(records)[position : position + header.size_bytes]
        position += header.size_bytes
        if header.is_control:
            continue
        if header.compression_type == compression.ZSTD:
            raise RecordError(UNSUPPORTED_COMPRESSION_TYPE, "zstd batches cannot be down-converted")
        _convert_batch(batch, header.compression_type, to_magic, fetch_offset, max_bytes, out)
    return bytes(out)


def _convert_batch(
    batch: Buffer, codec: int, to_magic: int, fetch_offset: int, max_bytes: int, out: bytearray
) -> None:
    header = read_batch_header(batch, 0)
    timestamp_type = header.timestamp_type if to_magic == 1 else 0
    decoded = decode_records(batch, max_bytes)
    if codec == compression.NONE:
        for record in decoded:
            if record.offset >= fetch_offset:
                out += encode_message(
                    record.offset, to_magic, timestamp_type << 3, record.timestamp_ms,
                    record.key, record.value,
                )  # fmt: skip
        return
    if not decoded:
        return
    inner = bytearray()
    for relative, record in enumerate(decoded):
        inner_offset = relative if to_magic == 1 else record.offset
        inner += encode_message(
            inner_offset, to_magic, timestamp_type << 3, record.timestamp_ms,
            record.key, record.value,
        )  # fmt: skip
    value = compression.compress(codec, bytes(inner))
    if codec == compression.LZ4 and to_magic == 0:
        value = _with_lz4_checksum(value, broken=True)
    wrapper_timestamp = header.max_timestamp
    attributes = codec | (timestamp_type << 3)
    out += encode_message(decoded[-1].offset, to_magic, attributes, wrapper_timestamp, None, value)


def encode_message(
    offset: int,
    magic: int,
    attributes: int,
    timestamp_ms: int,
    key: bytes | None,
    value: bytes | None,
) -> bytes:
    """One message of `magic` (0 or 1) with its CRC."""
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == 1:
        body += _I64.pack(timestamp_ms)
    for field in (key, value):
        body += _I32.pack(-1 if field is None else len(field))
        body += field or b""
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)


def _with_lz4_checksum(frame: bytes, broken: bool) -> bytes:
    """`frame` with its descriptor checksum byte recomputed: correctly (over the descriptor)
    or as Kafka's magic 0 writers did (over the frame magic number and the descriptor)."""
    if len(frame) < 7 or frame[:4] != _LZ4_FRAME_MAGIC:
        return frame  # not a frame: let the decoder report it
    flags = frame[4]
    descriptor_end = 6 + (8 if flags & 0x08 else 0) + (4 if flags & 0x01 else 0)
    if len(frame) <= descriptor_end:
        return frame
    start = 0 if broken else 4
    checksum = (xxhash.xxh32_intdigest(frame[start:descriptor_end]) >> 8) & 0xFF
    return frame[:descriptor_end] + bytes((checksum,)) + frame[descriptor_end + 1 :]
