from __future__ import annotations

import struct

import pytest
import snappy
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from broker.log import compression
from broker.log.batch import walk_headers
from broker.log.errors import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    MESSAGE_TOO_LARGE,
)
from broker.log.record_codec import decode_varint, encode_varint
from broker.log.records import (
    HEADER_SIZE_BYTES,
    RecordError,
    SimpleRecord,
    assign_offsets,
    build_batch,
    decode_records,
    read_batch_header,
    set_log_append_time,
    validate_batches,
)

from .support import make_batch

CODECS = [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD]
RECORDS = [
    SimpleRecord(b"key", b"value" * 300, (("h1", b"x"), ("h2", None)), 1_700_000_000_000),
    SimpleRecord(None, None, (), 1_700_000_000_005),
    SimpleRecord(b"", b"", (), 1_699_999_999_999),
]


@pytest.mark.parametrize("codec", CODECS)
def test_build_then_decode_round_trips_every_codec(codec: int) -> None:
    batch = build_batch(RECORDS, base_offset=10, compression_type=codec)
    header = validate_batches(batch, 1 << 20)[0]
    assert header.compression_type == codec
    assert (header.base_offset, header.last_offset, header.records_count) == (10, 12, 3)
    assert header.max_timestamp == 1_700_000_000_005
    decoded = decode_records(batch)
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp_ms) for r in decoded] == [
        (10 + i, r.key, r.value, r.headers, r.timestamp_ms) for i, r in enumerate(RECORDS)
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_batches_we_build(codec: int) -> None:
    batch = build_batch(RECORDS, base_offset=5, compression_type=codec)
    client_batch = MemoryRecords(batch).next_batch()
    assert client_batch.validate_crc()
    assert [(r.offset, r.key, r.value) for r in client_batch] == [
        (5 + i, r.key, r.value) for i, r in enumerate(RECORDS)
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_we_decode_batches_kafka_python_builds(codec: int) -> None:
    builder = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 20)
    builder.append(timestamp=42, key=b"a", value=b"b" * 1000, headers=[("h", b"v")])
    builder.close()
    data = bytes(builder.buffer())
    validate_batches(data, 1 << 20)
    (record,) = decode_records(data)
    assert (record.key, record.value, record.headers, record.timestamp_ms) == (
        b"a",
        b"b" * 1000,
        (("h", b"v"),),
        42,
    )


def test_snappy_uses_xerial_framing_and_raw_snappy_also_decodes() -> None:
    framed = compression.compress(compression.SNAPPY, b"x" * 100_000)
    assert framed.startswith(compression.XERIAL_MAGIC)
    assert compression.decompress(compression.SNAPPY, framed) == b"x" * 100_000
    raw = snappy.compress(b"raw payload")
    assert compression.decompress(compression.SNAPPY, raw) == b"raw payload"


def test_lz4_is_a_standard_frame() -> None:
    framed = compression.compress(compression.LZ4, b"y" * 1000)
    assert framed[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic


def test_garbage_compressed_payload_is_corrupt() -> None:
    with pytest.raises(RecordError) as error:
        compression.decompress(compression.GZIP, b"not gzip")
    assert error.value.error_code == CORRUPT_MESSAGE


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -(2**63)])
def test_varint_round_trip(value: int) -> None:
    out = bytearray()
    encode_varint(value, out)
    assert decode_varint(out, 0) == (value, len(out))


def test_header_is_61_bytes_and_properties_decode_attributes() -> None:
    batch = build_batch(
        RECORDS[:1],
        compression_type=compression.LZ4,
        is_transactional=True,
        producer_id=7,
        producer_epoch=1,
        base_sequence=0,
    )
    header = read_batch_header(batch, 0)
    assert HEADER_SIZE_BYTES == 61
    assert header.size_bytes == len(batch)
    assert header.is_transactional and not header.is_control
    assert (header.compression_type, header.timestamp_type) == (compression.LZ4, 0)


def _flip(batch: bytes, position: int) -> bytes:
    corrupted = bytearray(batch)
    corrupted[position] ^= 0xFF
    return bytes(corrupted)


def test_corrupt_crc_is_corrupt_message() -> None:
    batch = bytes(make_batch(3))
    with pytest.raises(RecordError) as error:
        validate_batches(_flip(batch, len(batch) - 1), 1 << 20)
    assert error.value.error_code == CORRUPT_MESSAGE


def test_bad_magic_is_corrupt_message() -> None:
    with pytest.raises(RecordError) as error:
        validate_batches(_flip(bytes(make_batch()), 16), 1 << 20)
    assert error.value.error_code == CORRUPT_MESSAGE


def test_legacy_magic_is_corrupt_message() -> None:
    batch = bytearray(make_batch())
    batch[16] = 1
    with pytest.raises(RecordError) as error:
        validate_batches(batch, 1 << 20)
    assert error.value.error_code == CORRUPT_MESSAGE


@pytest.mark.parametrize("cut", [1, 12, 60, 61, 100])
def test_truncated_buffer_is_corrupt_message(cut: int) -> None:
    batch = bytes(make_batch(2, value_bytes=64))
    with pytest.raises(RecordError) as error:
        validate_batches(batch + batch[:cut], 1 << 20)
    assert error.value.error_code == CORRUPT_MESSAGE


def test_batch_length_below_header_is_corrupt() -> None:
    batch = bytearray(make_batch())
    struct.pack_into(">i", batch, 8, 10)
    with pytest.raises(RecordError) as error:
        validate_batches(batch, 1 << 20)
    assert error.value.error_code == CORRUPT_MESSAGE


def test_oversize_batch_is_message_too_large() -> None:
    batch = make_batch(1, value_bytes=2000)
    with pytest.raises(RecordError) as error:
        validate_batches(batch, 1000)
    assert error.value.error_code == MESSAGE_TOO_LARGE


def test_offset_delta_not_matching_count_is_invalid_record() -> None:
    batch = bytearray(make_batch(3))
    struct.pack_into(">i", batch, 57, 2)  # records_count; the CRC covers it, so re-stamp
    set_log_append_time(batch, 0, 0)  # recomputes the CRC
    with pytest.raises(RecordError) as error:
        validate_batches(batch, 1 << 20)
    assert error.value.error_code == INVALID_RECORD
    assert validate_batches(batch, 1 << 20, from_client=False)  # replicas are not re-checked


def test_control_batch_from_client_is_invalid_record() -> None:
    batch = build_batch(RECORDS[:1], is_control=True)
    with pytest.raises(RecordError) as error:
        validate_batches(batch, 1 << 20)
    assert error.value.error_code == INVALID_RECORD


def test_assign_offsets_patches_offsets_and_epoch_and_keeps_crc_valid() -> None:
    data = make_batch(3) + make_batch(2)
    last_offset = assign_offsets(data, 100, 7)
    assert last_offset == 104
    headers = validate_batches(data, 1 << 20)
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(100, 7), (103, 7)]
    assert [r.offset for r in decode_records(data)] == [100, 101, 102, 103, 104]


def test_log_append_time_sets_type_bit_max_timestamp_and_record_timestamps() -> None:
    data = make_batch(2, timestamp_ms=5)
    set_log_append_time(data, 0, 999)
    (header,) = validate_batches(data, 1 << 20)
    assert (header.timestamp_type, header.max_timestamp) == (1, 999)
    assert [r.timestamp_ms for r in decode_records(data)] == [999, 999]


def test_walk_headers_stops_before_a_partial_batch() -> None:
    batch = bytes(make_batch())
    entries, complete_bytes = walk_headers(batch + batch + batch[:30])
    assert len(entries) == 2 and complete_bytes == 2 * len(batch)


def test_empty_buffer_has_no_batches() -> None:
    assert validate_batches(b"", 100) == []
