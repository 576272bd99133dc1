"""Bounds on what a record batch can make the broker allocate (issue 9, part 2).

A few kilobytes of compressed zeros can claim gigabytes ("decompression bombs"), and a header
can claim 2**31-1 records or record headers. Each case must be refused quickly, holding no
more than a few megabytes.
"""

from __future__ import annotations

import contextlib
import tracemalloc
import zlib
from collections.abc import Callable

import lz4.frame
import pytest
import zstandard

from broker.log import compression
from broker.log.batch import (
    CURRENT_MAGIC,
    HEADER_SIZE_BYTES,
    HEADER_STRUCT,
    LOG_OVERHEAD_BYTES,
    compute_crc,
)
from broker.log.errors import CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE, RecordError
from broker.log.record_codec import SimpleRecord, build_batch, decode_records, encode_varint
from broker.log.records import validate_batches

MIB = 1024 * 1024
GIB = 1024 * MIB
LIMIT_BYTES = compression.MAX_DECOMPRESSED_BYTES_DEFAULT
# Bombs are bigger than the default max.message.bytes; these tests are about what is inside.
MAX_MESSAGE_BYTES = 16 * MIB
# Counting a bomb holds one chunk plus the codec's own buffers.
COUNT_PEAK_BYTES = 8 * MIB
# Decoding holds the payload up to the limit it is given.
DECODE_LIMIT_BYTES = 16 * MIB
DECODE_PEAK_BYTES = 32 * MIB
ZEROS_CHUNK = bytes(MIB)


def _batch(section: bytes, codec: int, records_count: int = 1) -> bytes:
    """A client-style batch around an arbitrary records section, with a valid CRC."""
    batch = bytearray(HEADER_SIZE_BYTES + len(section))
    HEADER_STRUCT.pack_into(
        batch,
        0,
        0,  # base offset
        len(batch) - LOG_OVERHEAD_BYTES,
        -1,  # partition leader epoch
        CURRENT_MAGIC,
        0,  # crc, set below
        codec,  # attributes
        records_count - 1,  # last offset delta
        1_000,  # base timestamp
        1_000,  # max timestamp
        -1,  # producer id
        -1,  # producer epoch
        -1,  # base sequence
        records_count,
    )
    batch[HEADER_SIZE_BYTES:] = section
    batch[17:21] = compute_crc(batch, 0, len(batch)).to_bytes(4, "big")
    return bytes(batch)


def _with_records_count(batch: bytes, records_count: int) -> bytes:
    """`batch` claiming another record count (and matching offset delta), CRC fixed."""
    section = batch[HEADER_SIZE_BYTES:]
    codec = batch[22] & 0x07
    return _batch(section, codec, records_count)


def _gzip_bomb(size_bytes: int) -> bytes:
    """A valid gzip stream of `size_bytes` zeros (a multiple of 1 MiB), about size/1000 bytes.

    After a full flush deflate starts afresh, byte-aligned, so every further 1 MiB of zeros
    compresses to the same bytes: compress two chunks, repeat the second.
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = compressor.compress(ZEROS_CHUNK) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeated = compressor.compress(ZEROS_CHUNK) + compressor.flush(zlib.Z_FULL_FLUSH)
    end_of_stream = compressor.flush(zlib.Z_FINISH)[:-8]  # final empty block, no trailer
    crc = 0
    for _ in range(size_bytes // MIB):
        crc = zlib.crc32(ZEROS_CHUNK, crc)
    trailer = crc.to_bytes(4, "little") + (size_bytes % 2**32).to_bytes(4, "little")
    return first + repeated * (size_bytes // MIB - 1) + end_of_stream + trailer


def _zstd_bomb(size_bytes: int) -> bytes:
    """One zstd frame of `size_bytes` zeros, streamed 1 MiB at a time (about 32 bytes/MiB)."""
    compressor = zstandard.ZstdCompressor(level=1).compressobj()
    parts = [compressor.compress(ZEROS_CHUNK) for _ in range(size_bytes // MIB)]
    parts.append(compressor.flush())
    return b"".join(parts)


def _lz4_bomb(size_bytes: int) -> bytes:
    """One LZ4 frame of zeros; LZ4 tops out near 255:1, so 256 MiB take about 1 MiB."""
    compressor = lz4.frame.LZ4FrameCompressor(
        block_size=lz4.frame.BLOCKSIZE_MAX4MB, block_linked=True, content_checksum=False
    )
    parts = [compressor.begin()]
    parts.extend(compressor.compress(ZEROS_CHUNK) for _ in range(size_bytes // MIB))
    parts.append(compressor.flush())
    return b"".join(parts)


def _snappy_bomb(size_bytes: int) -> bytes:
    """Xerial-framed snappy of zeros: one 32 KiB block (about 1.5 KiB) repeated."""
    one_block = compression.compress(compression.SNAPPY, bytes(32 * 1024))
    header_bytes = 16  # magic, version, compatible version
    return one_block + one_block[header_bytes:] * (size_bytes // (32 * 1024) - 1)


@pytest.fixture(scope="module")
def bombs() -> dict[int, bytes]:
    """Client batches whose records section decompresses far past the limit."""
    return {
        compression.GZIP: _batch(_gzip_bomb(GIB), compression.GZIP),
        compression.ZSTD: _batch(_zstd_bomb(GIB), compression.ZSTD),
        compression.LZ4: _batch(_lz4_bomb(256 * MIB), compression.LZ4),
        compression.SNAPPY: _batch(_snappy_bomb(2 * LIMIT_BYTES), compression.SNAPPY),
    }


def _peak_bytes(action: Callable[[], object]) -> int:
    """Peak Python-allocated bytes while `action` runs (it is expected to raise RecordError)."""
    tracemalloc.start()
    try:
        action()
    except RecordError:
        pass
    finally:
        _, peak_bytes = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak_bytes


def _error_code(action: Callable[[], object], match: str = "") -> int:
    with pytest.raises(RecordError, match=match) as error:
        action()
    return error.value.error_code


BOMB_CODECS = [compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD]


def test_gzip_bomb_builder_makes_a_valid_stream() -> None:
    assert zlib.decompress(_gzip_bomb(4 * MIB), wbits=31) == bytes(4 * MIB)


def test_zstd_and_gzip_bombs_are_small(bombs: dict[int, bytes]) -> None:
    assert len(bombs[compression.ZSTD]) < 64 * 1024
    assert len(bombs[compression.GZIP]) < 1100 * 1024


@pytest.mark.parametrize("codec", BOMB_CODECS)
def test_produce_refuses_bomb_as_too_large_in_little_memory(
    bombs: dict[int, bytes], codec: int
) -> None:
    batch = bombs[codec]
    assert len(batch) < MAX_MESSAGE_BYTES  # refused for what it expands to, not its own size

    def refuse() -> object:
        return validate_batches(batch, MAX_MESSAGE_BYTES)

    # Speed is for scripts/bench; here the bound that matters is memory.
    assert _error_code(refuse, match="decompress") == MESSAGE_TOO_LARGE
    assert _peak_bytes(refuse) < COUNT_PEAK_BYTES


@pytest.mark.parametrize("codec", BOMB_CODECS)
def test_decode_records_refuses_bomb_holding_at_most_its_limit(
    bombs: dict[int, bytes], codec: int
) -> None:
    def decode() -> object:
        return decode_records(bombs[codec], max_decompressed_bytes=DECODE_LIMIT_BYTES)

    assert _error_code(decode) == MESSAGE_TOO_LARGE
    assert _peak_bytes(decode) < DECODE_PEAK_BYTES


def test_decode_records_refuses_bomb_at_the_default_limit(bombs: dict[int, bytes]) -> None:
    assert _error_code(lambda: decode_records(bombs[compression.ZSTD])) == MESSAGE_TOO_LARGE


def test_follower_append_does_not_decompress(bombs: dict[int, bytes]) -> None:
    # Replicated batches were checked by the leader; they stay opaque (header and CRC only).
    headers = validate_batches(bombs[compression.ZSTD], MAX_MESSAGE_BYTES, from_client=False)
    assert len(headers) == 1


@pytest.mark.parametrize("codec", BOMB_CODECS)
def test_refused_bomb_leaves_no_view_on_the_callers_buffer(
    bombs: dict[int, bytes], codec: int
) -> None:
    data = bytearray(bombs[codec])
    with contextlib.suppress(RecordError):
        validate_batches(data, MAX_MESSAGE_BYTES)
    data += b"x"  # a lingering memoryview would make this raise BufferError


def test_snappy_block_declaring_4_gib_is_refused_before_decompressing() -> None:
    lying_block = bytearray()
    _encode_unsigned_varint(2**32 - 1, lying_block)
    lying_block += b"\x00" * 16
    batch = _batch(bytes(lying_block), compression.SNAPPY)
    assert _error_code(lambda: validate_batches(batch, MAX_MESSAGE_BYTES)) == MESSAGE_TOO_LARGE
    assert _peak_bytes(lambda: validate_batches(batch, MAX_MESSAGE_BYTES)) < MIB


def _encode_unsigned_varint(value: int, out: bytearray) -> None:
    """Snappy's length preamble: a little-endian base-128 varint, not zig-zag."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


RECORDS = [SimpleRecord(b"key-%d" % i, b"value" * 200, (("h", b"v"),), 1_000) for i in range(50)]


def _records_section_bytes(records: list[SimpleRecord]) -> int:
    return len(build_batch(records)) - HEADER_SIZE_BYTES


@pytest.mark.parametrize("codec", BOMB_CODECS)
def test_batch_decompressing_exactly_to_the_limit_is_accepted(codec: int) -> None:
    batch = build_batch(RECORDS, compression_type=codec)
    size_bytes = _records_section_bytes(RECORDS)
    (header,) = validate_batches(batch, MAX_MESSAGE_BYTES, max_decompressed_bytes=size_bytes)
    assert header.records_count == len(RECORDS)
    assert len(decode_records(batch, max_decompressed_bytes=size_bytes)) == len(RECORDS)


@pytest.mark.parametrize("codec", BOMB_CODECS)
def test_batch_one_byte_past_the_limit_is_too_large(codec: int) -> None:
    batch = build_batch(RECORDS, compression_type=codec)
    limit_bytes = _records_section_bytes(RECORDS) - 1

    def validate() -> object:
        return validate_batches(batch, MAX_MESSAGE_BYTES, max_decompressed_bytes=limit_bytes)

    assert _error_code(validate) == MESSAGE_TOO_LARGE
    assert _error_code(lambda: decode_records(batch, limit_bytes)) == MESSAGE_TOO_LARGE


def test_batch_just_under_the_default_limit_is_accepted() -> None:
    value_bytes = 4 * MIB
    records = [SimpleRecord(None, bytes(value_bytes), (), 1_000) for _ in range(15)]
    batch = build_batch(records, compression_type=compression.ZSTD)
    assert LIMIT_BYTES - 5 * MIB < _records_section_bytes(records) < LIMIT_BYTES
    assert len(validate_batches(batch, MAX_MESSAGE_BYTES)) == 1


@pytest.mark.parametrize("codec", [compression.NONE, *BOMB_CODECS])
def test_records_count_beyond_what_the_bytes_hold_is_invalid(codec: int) -> None:
    batch = build_batch(RECORDS, compression_type=codec)
    fits = _records_section_bytes(RECORDS) // 7
    validate_batches(_with_records_count(batch, fits), MAX_MESSAGE_BYTES)
    forged = _with_records_count(batch, fits + 1)
    assert _error_code(lambda: validate_batches(forged, MAX_MESSAGE_BYTES)) == INVALID_RECORD


@pytest.mark.parametrize("codec", [compression.NONE, compression.ZSTD])
def test_decode_records_refuses_a_forged_records_count_before_looping(codec: int) -> None:
    batch = _with_records_count(build_batch(RECORDS, compression_type=codec), 2**31 - 1)
    assert _error_code(lambda: decode_records(batch)) == CORRUPT_MESSAGE
    # Nothing is reserved for the claimed count (timing is for scripts/bench, not tests).
    assert _peak_bytes(lambda: decode_records(batch)) < MIB


def _record_with_header_count(header_count: int) -> bytes:
    """One record (no key, value b"v") whose header count is `header_count`, no headers."""
    body = bytearray(b"\x00")  # attributes
    encode_varint(0, body)  # timestamp delta
    encode_varint(0, body)  # offset delta
    encode_varint(-1, body)  # null key
    encode_varint(1, body)
    body += b"v"
    encode_varint(header_count, body)
    framed = bytearray()
    encode_varint(len(body), framed)
    return bytes(framed + body)


@pytest.mark.parametrize("header_count", [2**31 - 1, 5, -1, -(2**31)])
def test_header_count_beyond_the_record_bytes_or_negative_is_corrupt(header_count: int) -> None:
    batch = _batch(_record_with_header_count(header_count), compression.NONE)
    assert _error_code(lambda: decode_records(batch)) == CORRUPT_MESSAGE
    # Nothing is reserved for the claimed count (timing is for scripts/bench, not tests).
    assert _peak_bytes(lambda: decode_records(batch)) < MIB


def test_record_without_headers_still_decodes() -> None:
    batch = _batch(_record_with_header_count(0), compression.NONE)
    (record,) = decode_records(batch)
    assert (record.key, record.value, record.headers) == (None, b"v", ())


@pytest.mark.parametrize("codec", BOMB_CODECS)
def test_decompressed_size_counts_what_decompress_returns(codec: int) -> None:
    payload = b"abc" * 100_000
    compressed = compression.compress(codec, payload)
    assert compression.decompressed_size(codec, compressed, len(payload)) == len(payload)
    assert compression.decompress(codec, memoryview(compressed)) == payload


@pytest.mark.parametrize("codec", [compression.GZIP, compression.LZ4])
def test_truncated_stream_is_corrupt(codec: int) -> None:
    compressed = compression.compress(codec, b"abc" * 100_000)
    truncated = compressed[: len(compressed) // 2]
    assert _error_code(lambda: compression.decompressed_size(codec, truncated, MIB)) == (
        CORRUPT_MESSAGE
    )
