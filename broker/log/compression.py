"""Kafka's compression codecs for the records section of a batch, framed as Kafka writes them.

Codec ids (batch attributes & 7): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
- gzip: a plain gzip stream (what java.util.zip.GZIPOutputStream writes).
- snappy: xerial framing (magic, version, compat, then length-prefixed raw blocks) as the Java
  client writes it; raw snappy is also accepted on decode since some clients send it.
- lz4: the LZ4 frame format with independent 64 KiB blocks and no content size/checksum, which
  every client's reader handles.
- zstd: a standard zstd frame.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import lz4.frame
import snappy
import zstandard

from broker.log.errors import CORRUPT_MESSAGE, UNSUPPORTED_COMPRESSION_TYPE, RecordError

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")  # magic, version, compatible version
_XERIAL_BLOCK_BYTES = 32 * 1024  # snappy-java's default block size
_I32 = struct.Struct(">i")
_GZIP_LEVEL = 6  # java.util.zip's default level


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


def decompress(codec: int, data: bytes) -> bytes:
    try:
        return _decompress(codec, data)
    except RecordError:
        raise
    except Exception as error:  # each codec library raises its own error types
        name = CODEC_NAMES.get(codec, str(codec))
        raise RecordError(CORRUPT_MESSAGE, f"cannot decompress {name} records: {error}") from error


def _decompress(codec: int, data: bytes) -> bytes:
    if codec == NONE:
        return data
    if codec == GZIP:
        return zlib.decompress(data, wbits=31)
    if codec == SNAPPY:
        if data.startswith(XERIAL_MAGIC):
            return _xerial_decompress(data)
        return bytes(snappy.decompress(data))
    if codec == LZ4:
        return bytes(lz4.frame.decompress(data))
    if codec == ZSTD:
        reader = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)
        return bytes(reader.decompress(data))
    raise RecordError(UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression type {codec}")


def _xerial_compress(data: bytes) -> bytes:
    parts = [_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1)]
    for start in range(0, len(data), _XERIAL_BLOCK_BYTES):
        block = snappy.compress(data[start : start + _XERIAL_BLOCK_BYTES])
        parts.append(_I32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _xerial_decompress(data: bytes) -> bytes:
    position = _XERIAL_HEADER.size
    parts: list[bytes] = []
    while position < len(data):
        (block_bytes,) = _I32.unpack_from(data, position)
        position += _I32.size
        block_end = position + block_bytes
        if block_bytes < 0 or block_end > len(data):
            raise RecordError(CORRUPT_MESSAGE, "truncated xerial snappy block")
        parts.append(snappy.decompress(data[position:block_end]))
        position = block_end
    return b"".join(parts)
