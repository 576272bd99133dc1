"""Kafka's compression codecs for the records section of a batch, framed as Kafka writes them.

Codec ids (batch attributes & 7): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
- gzip: a plain gzip stream (what java.util.zip.GZIPOutputStream writes).
- snappy: xerial framing (magic, version, compat, then length-prefixed raw blocks) as the Java
  client writes it; raw snappy is also accepted on decode since some clients send it.
- lz4: the LZ4 frame format with independent 64 KiB blocks and no content size/checksum, which
  every client's reader handles.
- zstd: a standard zstd frame.

Decompression is bounded: a few hundred compressed bytes can claim gigabytes (a
"decompression bomb"), so output is produced in chunks of at most `CHUNK_BYTES` and refused with
MESSAGE_TOO_LARGE as soon as it passes the caller's limit. Memory therefore stays within the
limit plus one chunk, and `decompressed_size` (validation only) holds a single chunk.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Iterator

import lz4.frame
import snappy
import zstandard

from broker.log.errors import (
    CORRUPT_MESSAGE,
    MESSAGE_TOO_LARGE,
    UNSUPPORTED_COMPRESSION_TYPE,
    RecordError,
)

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

# Default for the broker's message.max.decompressed.bytes (not a Kafka key: Kafka is bounded by
# its JVM heap instead). Defined once here; LogConfig and record decoding use it.
MAX_DECOMPRESSED_BYTES_DEFAULT = 64 * 1024 * 1024
# Output produced per step: the most a bounded decompression holds beyond its limit.
CHUNK_BYTES = 64 * 1024
# Compressed input fed to zlib or lz4 per step, so their copies of unused input stay small.
_INPUT_CHUNK_BYTES = 64 * 1024
# A snappy length preamble is a little-endian base-128 varint of at most 32 bits.
_SNAPPY_PREAMBLE_MAX_BYTES = 5

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")  # magic, version, compatible version
_XERIAL_BLOCK_BYTES = 32 * 1024  # snappy-java's default block size
_I32 = struct.Struct(">i")
_GZIP_LEVEL = 6  # java.util.zip's default level

Buffer = bytes | bytearray | memoryview


def compress(codec: int, data: bytes) -> bytes:
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.compress(data, compresslevel=_GZIP_LEVEL, mtime=0)
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        return bytes(
            lz4.frame.compress(
                data,
                block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                block_linked=False,
                content_checksum=False,
                store_size=False,
            )
        )
    if codec == ZSTD:
        return bytes(zstandard.ZstdCompressor().compress(data))
    raise RecordError(UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression type {codec}")


def decompress(
    codec: int, data: Buffer, max_bytes: int = MAX_DECOMPRESSED_BYTES_DEFAULT
) -> bytearray:
    """The whole decompressed payload, refused (MESSAGE_TOO_LARGE) past `max_bytes`.

    Returns a bytearray so the chunks are gathered in place: joining a list of chunks into
    bytes would hold the payload twice.
    """
    output = bytearray()
    for chunk in _bounded_chunks(codec, data, max_bytes):
        output += chunk
    return output


def decompressed_size(codec: int, data: Buffer, max_bytes: int) -> int:
    """How many bytes `data` decompresses to, holding one chunk at a time (for validation).

    Raises RecordError: MESSAGE_TOO_LARGE past `max_bytes`, CORRUPT_MESSAGE if the data does
    not decompress.
    """
    if codec == NONE:
        return len(data)
    return sum(len(chunk) for chunk in _bounded_chunks(codec, data, max_bytes))


def _bounded_chunks(codec: int, data: Buffer, max_bytes: int) -> Iterator[Buffer]:
    """Decompressed chunks, stopping with MESSAGE_TOO_LARGE once their total passes the limit;
    library errors become CORRUPT_MESSAGE. A chunk may be a view valid only until the next."""
    name = CODEC_NAMES.get(codec, str(codec))
    total_bytes = 0
    try:
        for chunk in _codec_chunks(codec, data, max_bytes):
            total_bytes += len(chunk)
            if total_bytes > max_bytes:
                raise _too_large(name, max_bytes)
            yield chunk
    except RecordError:
        raise
    except Exception as error:  # each codec library raises its own error types
        raise RecordError(CORRUPT_MESSAGE, f"cannot decompress {name} records: {error}") from error


def _too_large(name: str, max_bytes: int) -> RecordError:
    return RecordError(MESSAGE_TOO_LARGE, f"{name} records decompress to over {max_bytes} bytes")


def _codec_chunks(codec: int, data: Buffer, max_bytes: int) -> Iterator[Buffer]:
    if codec == NONE:
        return iter((data,))
    if codec == GZIP:
        return _gzip_chunks(data)
    if codec == SNAPPY:
        return _snappy_chunks(data, max_bytes)
    if codec == LZ4:
        return _lz4_chunks(data)
    if codec == ZSTD:
        return _zstd_chunks(data)
    raise RecordError(UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression type {codec}")


def _truncated(name: str) -> RecordError:
    return RecordError(CORRUPT_MESSAGE, f"truncated {name} records")


def _gzip_chunks(data: Buffer) -> Iterator[bytes]:
    """The first gzip member, as zlib.decompress(wbits=31) reads it (trailing bytes ignored)."""
    decompressor = zlib.decompressobj(wbits=31)
    view = memoryview(data)
    position = 0
    pending: Buffer = b""
    while not decompressor.eof:
        if not pending and position < len(view):
            pending = view[position : position + _INPUT_CHUNK_BYTES]
            position += len(pending)
        chunk = decompressor.decompress(pending, CHUNK_BYTES)
        pending = decompressor.unconsumed_tail
        if chunk:
            yield chunk
        elif not pending and position >= len(view):
            raise _truncated("gzip")


def _lz4_chunks(data: Buffer) -> Iterator[bytes]:
    """One LZ4 frame, as lz4.frame.decompress reads it (trailing bytes ignored).

    Input goes in slices: the decompressor copies whatever input it has not used yet, so
    handing it everything at once would copy the rest of the input at every chunk.
    """
    decompressor = lz4.frame.LZ4FrameDecompressor()
    view = memoryview(data)
    position = 0
    while not decompressor.eof:
        piece: Buffer = b""
        if decompressor.needs_input:
            if position >= len(view):
                raise _truncated("lz4")
            piece = view[position : position + _INPUT_CHUNK_BYTES]
            position += len(piece)
        chunk = decompressor.decompress(piece, max_length=CHUNK_BYTES)
        if chunk:
            yield chunk


def _zstd_chunks(data: Buffer) -> Iterator[memoryview]:
    """Every zstd frame in `data` (Kafka's reader continues across frames).

    Chunks are views of one reused buffer, valid until the next chunk is asked for; this
    spares an allocation per chunk on the produce path.
    python-zstandard's streaming readers do not report a frame cut short, so a truncated
    frame yields what it holds (as the whole-buffer decompressobj used before did); only the
    records count check then catches it.
    """
    reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
    buffer = bytearray(CHUNK_BYTES)
    with memoryview(buffer) as view:
        while count := reader.readinto(buffer):
            yield view[:count]


def _snappy_chunks(data: Buffer, max_bytes: int) -> Iterator[bytes]:
    """Raw snappy blocks are decoded whole, so each block's declared length is checked first:
    the library allocates that length before it looks at the data."""
    blocks = _xerial_blocks(data) if bytes(data[:8]) == XERIAL_MAGIC else iter((data,))
    remaining_bytes = max_bytes
    for block in blocks:
        if _snappy_uncompressed_bytes(block) > remaining_bytes:
            raise _too_large("snappy", max_bytes)
        chunk = bytes(snappy.decompress(block))
        remaining_bytes -= len(chunk)
        yield chunk


def _snappy_uncompressed_bytes(block: Buffer) -> int:
    """The uncompressed length a raw snappy block declares in its varint preamble."""
    length = 0
    for index in range(min(len(block), _SNAPPY_PREAMBLE_MAX_BYTES)):
        byte = block[index]
        length |= (byte & 0x7F) << (7 * index)
        if byte < 0x80:
            return length
    raise RecordError(CORRUPT_MESSAGE, "snappy block without a valid length preamble")


def _xerial_compress(data: bytes) -> bytes:
    parts = [_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1)]
    for start in range(0, len(data), _XERIAL_BLOCK_BYTES):
        block = snappy.compress(data[start : start + _XERIAL_BLOCK_BYTES])
        parts.append(_I32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _xerial_blocks(data: Buffer) -> Iterator[memoryview]:
    """The raw snappy blocks of a xerial stream, as views (not copies) of `data`."""
    view = memoryview(data)
    position = _XERIAL_HEADER.size
    while position < len(view):
        if position + _I32.size > len(view):
            raise RecordError(CORRUPT_MESSAGE, "truncated xerial snappy block length")
        (block_bytes,) = _I32.unpack_from(view, position)
        position += _I32.size
        block_end = position + block_bytes
        if block_bytes < 0 or block_end > len(view):
            raise RecordError(CORRUPT_MESSAGE, "truncated xerial snappy block")
        yield view[position:block_end]
        position = block_end
