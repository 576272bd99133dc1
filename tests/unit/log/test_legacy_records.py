"""Old message formats (magic 0/1) converted up to record batches v2 and back down, checked
against kafka-python's own legacy message-set reader and writer."""

from __future__ import annotations

import struct

import lz4.frame
import pytest
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from broker.log import compression
from broker.log.errors import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    UNSUPPORTED_COMPRESSION_TYPE,
    RecordError,
)
from broker.log.legacy_records import (
    _with_lz4_checksum,
    down_convert,
    encode_message,
    is_legacy,
    to_record_batch,
)
from broker.log.record_codec import SimpleRecord, build_batch, decode_records

LIMIT_BYTES = 1 << 20
CODECS = (compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4)
# kafka-python needs the xxhash package for magic 0 lz4 (its flawed checksum), which is not
# installed; that case is checked by a round trip here and by librdkafka in the integration
# tests.
KAFKA_PYTHON_CASES = [
    (magic, codec) for magic in (0, 1) for codec in CODECS if (magic, codec) != (0, compression.LZ4)
]


def _kafka_python_set(magic: int, codec: int, count: int = 5) -> bytes:
    builder = MemoryRecordsBuilder(magic, codec, 1 << 20)
    for index in range(count):
        builder.append(1_000 + index, f"k{index}".encode(), f"v{index}".encode() * 10, [])
    builder.close()
    return bytes(builder.buffer())


def _kafka_python_read(data: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    records = MemoryRecords(data)
    out = []
    while (batch := records.next_batch()) is not None:
        out.extend((r.offset, r.timestamp, r.key, r.value) for r in batch)
    return out


@pytest.mark.parametrize(("magic", "codec"), KAFKA_PYTHON_CASES)
def test_message_set_from_kafka_python_becomes_one_v2_batch(magic: int, codec: int) -> None:
    data = _kafka_python_set(magic, codec)
    assert is_legacy(data)
    batch = to_record_batch(data, LIMIT_BYTES)
    assert not is_legacy(batch)
    assert batch[21:23] == struct.pack(">h", codec)  # the wrapper's codec is kept
    records = decode_records(batch)
    assert [(r.offset, r.key, r.value) for r in records] == [
        (i, f"k{i}".encode(), f"v{i}".encode() * 10) for i in range(5)
    ]
    # CreateTime kept from magic 1; magic 0 messages carry none.
    expected_ms = [1_000 + i if magic else -1 for i in range(5)]
    assert [r.timestamp_ms for r in records] == expected_ms


@pytest.mark.parametrize(("magic", "codec"), KAFKA_PYTHON_CASES)
def test_down_converted_batches_read_back_with_kafka_python(magic: int, codec: int) -> None:
    records = [SimpleRecord(f"k{i}".encode(), f"v{i}".encode(), (), 5_000 + i) for i in range(4)]
    batch = build_batch(records, base_offset=10, compression_type=codec)
    converted = down_convert(batch, magic, fetch_offset=10, max_bytes=LIMIT_BYTES)
    read = _kafka_python_read(converted)
    expected_ms = [5_000 + i if magic else None for i in range(4)]
    assert read == [(10 + i, expected_ms[i], f"k{i}".encode(), f"v{i}".encode()) for i in range(4)]


def test_a_bad_crc_is_corrupt_message() -> None:
    data = bytearray(_kafka_python_set(1, compression.NONE))
    data[-1] ^= 0xFF
    with pytest.raises(RecordError) as caught:
        to_record_batch(bytes(data), LIMIT_BYTES)
    assert caught.value.error_code == CORRUPT_MESSAGE


def test_a_truncated_message_is_corrupt_message() -> None:
    data = _kafka_python_set(0, compression.NONE)
    with pytest.raises(RecordError) as caught:
        to_record_batch(data[:-3], LIMIT_BYTES)
    assert caught.value.error_code == CORRUPT_MESSAGE


def test_a_wrapper_inside_a_wrapper_is_invalid() -> None:
    inner = _kafka_python_set(1, compression.GZIP)
    wrapper = encode_message(0, 1, compression.GZIP, 0, None, compression.compress(1, inner))
    with pytest.raises(RecordError) as caught:
        to_record_batch(wrapper, LIMIT_BYTES)
    assert caught.value.error_code == INVALID_RECORD


def test_magic_0_lz4_is_written_with_kafkas_flawed_descriptor_checksum() -> None:
    batch = build_batch([SimpleRecord(b"k", b"v" * 100)], compression_type=compression.LZ4)
    converted = down_convert(batch, 0, 0, LIMIT_BYTES)
    # offset, size, crc, magic, attributes, key length (-1), value length: 26 bytes
    value = bytes(converted[26:])
    # A standard LZ4 reader refuses the checksum old Kafka clients expect with magic 0 ...
    with pytest.raises(RuntimeError, match="headerChecksum_invalid"):
        lz4.frame.decompress(value)
    inner = lz4.frame.decompress(_with_lz4_checksum(value, broken=False))
    assert inner.endswith(b"v" * 100)
    # ... which the broker reads back when such a message set is produced ...
    assert [r.value for r in decode_records(to_record_batch(converted, LIMIT_BYTES))] == [
        b"v" * 100
    ]
    # ... and the one at magic 1 is the standard one.
    converted_v1 = down_convert(batch, 1, 0, LIMIT_BYTES)
    assert _kafka_python_read(converted_v1)[0][3] == b"v" * 100


def test_magic_1_wrapper_carries_relative_inner_offsets_and_the_last_offset() -> None:
    records = [SimpleRecord(None, b"x", (), 7) for _ in range(3)]
    batch = build_batch(records, base_offset=40, compression_type=compression.GZIP)
    converted = down_convert(batch, 1, 40, LIMIT_BYTES)
    (wrapper_offset,) = struct.unpack_from(">q", converted, 0)
    assert wrapper_offset == 42
    value_start = 8 + 4 + 4 + 1 + 1 + 8 + 4 + 4  # through key length (-1) and value length
    inner = compression.decompress(compression.GZIP, converted[value_start:])
    offsets, position = [], 0
    while position < len(inner):
        offset, size = struct.unpack_from(">qi", inner, position)
        offsets.append(offset)
        position += 12 + size
    assert offsets == [0, 1, 2]


def test_uncompressed_records_before_the_fetch_offset_are_left_out() -> None:
    records = [SimpleRecord(None, b"%d" % i, (), 1) for i in range(5)]
    batch = build_batch(records, base_offset=0)
    assert [r[0] for r in _kafka_python_read(down_convert(batch, 1, 3, LIMIT_BYTES))] == [3, 4]


def test_control_batches_are_dropped_and_a_partial_batch_ends_the_set() -> None:
    control = build_batch([SimpleRecord(b"\x00\x00\x00\x00", b"")], base_offset=0, is_control=True)
    data = build_batch([SimpleRecord(None, b"a", (), 1)], base_offset=1)
    partial = build_batch([SimpleRecord(None, b"b", (), 1)], base_offset=2)[:30]
    converted = down_convert(control + data + partial, 1, 0, LIMIT_BYTES)
    assert [r[0] for r in _kafka_python_read(converted)] == [1]


def test_zstd_cannot_be_down_converted() -> None:
    batch = build_batch([SimpleRecord(None, b"a")], compression_type=compression.ZSTD)
    with pytest.raises(RecordError) as caught:
        down_convert(batch, 1, 0, LIMIT_BYTES)
    assert caught.value.error_code == UNSUPPORTED_COMPRESSION_TYPE


def test_timestamps_too_far_apart_for_a_v2_batch_are_refused() -> None:
    data = encode_message(0, 1, 0, -(2**63), None, b"a") + encode_message(
        1, 1, 0, 2**63 - 1, None, b"b"
    )
    with pytest.raises(RecordError) as caught:
        to_record_batch(data, LIMIT_BYTES)
    assert caught.value.error_code == 32  # INVALID_TIMESTAMP
