"""The fuzz corpus (recorded request frames) and the mutations made from it.

A corpus file holds request frames in Kafka's own framing (4-byte big-endian size, then the
payload), so it can be replayed with nothing but a socket. Each frame is analysed once: its API,
where its body starts, and every length or count prefix (the header's client id and tagged
fields, plus what `broker.protocol.bounds.length_positions` finds in the body). Mutations aim at
those prefixes because that is where a parser trusts the input most.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import crc32c
from kio.index import KioIndexError

from broker.protocol.bounds import INT16_LENGTH, INT32_LENGTH, UVARINT_LENGTH, length_positions
from broker.protocol.header import read_fixed_header, skip_tagged_fields
from broker.protocol.registry import is_flexible, request_class

_SIZE = struct.Struct(">i")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
# RecordBatch v2 layout (Kafka's DefaultRecordBatch): offsets of the fields we aim at
BATCH_LENGTH_OFFSET = 8
BATCH_MAGIC_OFFSET = 16
BATCH_CRC_OFFSET = 17
BATCH_ATTRIBUTES_OFFSET = 21  # the CRC covers from here to the end of the batch
BATCH_RECORD_COUNT_OFFSET = 57
BATCH_HEADER_BYTES = 61
CLIENT_ID_LENGTH_POSITION = 8  # after api key (2), api version (2), correlation id (4)
API_VERSION_POSITION = 2
MAX_CORPUS_FRAME_BYTES = 16 * 1024 * 1024  # a recorded request is never near this

# Wild values per prefix encoding; "just past the end" is added per position.
_WILD_INT16 = (0, 1, -1, -2, 0x7FFF, -0x8000)
_WILD_INT32 = (0, 1, -1, -2, 0x7FFF, 0x7FFFFFFF, -0x80000000)
_WILD_UVARINT = (
    b"\x00",
    b"\x01",
    b"\x02",
    b"\xff\xff\xff\xff\x0f",  # the largest 5-byte varint (2^32 - 1)
    b"\xff\xff\xff\xff\x2d",  # 5 bytes whose top bits overflow 32 bits
    b"\xff\xff\xff\xff\xff\x01",  # 6 bytes: longer than any legal varint
    b"\x80",  # a continuation bit with nothing after it (in place)
)
# Inconsistent size prefixes, used for a small share of frames (most must reach the parser).
_WILD_SIZE_DELTAS = (-1, 1, 2, 7, 1000)
_WILD_SIZES = (0, -1, -0x80000000, 0x7FFFFFFF, 104857601)
INCONSISTENT_SIZE_PROBABILITY = 0.06
SECOND_MUTATION_PROBABILITY = 0.3


class CorpusError(ValueError):
    """A corpus file that is not a sequence of well-formed Kafka frames."""


@dataclass(frozen=True, slots=True)
class CorpusFrame:
    payload: bytes  # the frame without its size prefix
    api_key: int
    api_version: int
    # (position, encoding) of every length/count prefix, header and body
    prefixes: tuple[tuple[int, str], ...]
    # (start, end) of every RecordBatch v2 inside (Produce): mutated with a fixed CRC, since a
    # bad CRC stops a batch before any of its interesting parsing (codecs, record varints)
    batches: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Mutant:
    data: bytes  # exactly what goes on the wire: size prefix + payload
    api_key: int | None  # the API of the frame it came from; None for a random frame
    operation: str


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


def save_corpus(path: Path, payloads: list[bytes]) -> None:
    path.write_bytes(b"".join(frame(payload) for payload in payloads))


def load_corpus(path: Path) -> list[bytes]:
    data = path.read_bytes()
    payloads: list[bytes] = []
    position = 0
    while position < len(data):
        if len(data) - position < _SIZE.size:
            raise CorpusError(f"{path}: {len(data) - position} stray bytes at the end")
        (size,) = _SIZE.unpack_from(data, position)
        position += _SIZE.size
        if not 0 <= size <= min(MAX_CORPUS_FRAME_BYTES, len(data) - position):
            raise CorpusError(f"{path}: frame size {size} at byte {position - 4} does not fit")
        payloads.append(data[position : position + size])
        position += size
    return payloads


def analyse(payload: bytes) -> CorpusFrame:
    """Header fields and length prefixes of a legitimate frame.

    Raises `broker.protocol.bounds.BoundsError` (or the header's MalformedRequestError) when the
    frame is refused: for a frame a real client sent, that is a bug in the bounds checker.
    """
    header, offset = read_fixed_header(payload)
    prefixes: list[tuple[int, str]] = [(CLIENT_ID_LENGTH_POSITION, INT16_LENGTH)]
    try:
        cls = request_class(header.api_key, header.api_version)
    except KioIndexError:
        # An API kio has no schema for: still worth sending (the broker must refuse it).
        return CorpusFrame(payload, header.api_key, header.api_version, tuple(prefixes))
    if is_flexible(header.api_key, header.api_version):
        prefixes.append((offset, UVARINT_LENGTH))
        offset = skip_tagged_fields(payload, offset)
    prefixes += length_positions(cls, payload, offset)
    batches = _record_batches(payload, offset)
    return CorpusFrame(payload, header.api_key, header.api_version, tuple(prefixes), batches)


def _record_batches(payload: bytes, start: int) -> tuple[tuple[int, int], ...]:
    """Spans of the RecordBatch v2s in a body: found by magic and a CRC that checks out."""
    spans: list[tuple[int, int]] = []
    position = start
    while position + BATCH_HEADER_BYTES <= len(payload):
        (length,) = _I32.unpack_from(payload, position + BATCH_LENGTH_OFFSET)
        end = position + BATCH_LENGTH_OFFSET + 4 + length
        if _is_batch(payload, position, end):
            spans.append((position, end))
            position = end
        else:
            position += 1
    return tuple(spans)


def _is_batch(payload: bytes, start: int, end: int) -> bool:
    if payload[start + BATCH_MAGIC_OFFSET] != 2 or not start + BATCH_HEADER_BYTES <= end:
        return False
    if end > len(payload):
        return False
    (crc,) = _U32.unpack_from(payload, start + BATCH_CRC_OFFSET)
    return bool(crc == crc32c.crc32c(payload[start + BATCH_ATTRIBUTES_OFFSET : end]))


# ---- byte-level helpers -------------------------------------------------------------------


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _uvarint_width(data: bytes, position: int) -> int:
    """Bytes taken by the varint at `position` (at most 5; clipped at the end of data)."""
    width = 0
    while position + width < len(data) and width < 5:
        width += 1
        if not data[position + width - 1] & 0x80:
            break
    return max(width, 1)


def _replace(data: bytes, position: int, width: int, new: bytes) -> bytes:
    return data[:position] + new + data[position + width :]


# ---- the mutator --------------------------------------------------------------------------


class Mutator:
    """Seeded mutations of corpus frames; each API is picked equally often, whatever its
    share of the recording (a consumer sends far more Fetch than CreateTopics)."""

    def __init__(
        self,
        frames: list[CorpusFrame],
        versions: dict[int, tuple[int, int]],
        seed: int,
    ) -> None:
        self._random = random.Random(seed)
        self._versions = versions
        self._by_api: dict[int, list[CorpusFrame]] = {}
        for corpus_frame in frames:
            self._by_api.setdefault(corpus_frame.api_key, []).append(corpus_frame)
        self._api_keys = sorted(self._by_api)
        self._operations: list[tuple[Callable[[CorpusFrame], bytes], int]] = [
            (self._bit_flips, 20),
            (self._truncate, 8),
            (self._insert, 8),
            (self._overwrite, 8),
            (self._wild_length, 30),
            (self._relabel_version, 8),
            (self._splice, 5),
            (self._replay, 4),
            (self._batch, 10),
        ]
        self._weights = [weight for _, weight in self._operations]
        # Frames without record batches: the same choice minus the batch mutation.
        self._plain_weights = [
            0 if operation == self._batch else weight for operation, weight in self._operations
        ]

    def next(self) -> Mutant:
        if self._random.random() < 0.04:
            return self._random_frame()
        api_key = self._random.choice(self._api_keys)
        source = self._random.choice(self._by_api[api_key])
        weights = self._weights if source.batches else self._plain_weights
        operation = self._random.choices(self._operations, weights)[0][0]
        payload = operation(source)
        name = operation.__name__.lstrip("_")
        if name != "replay" and self._random.random() < SECOND_MUTATION_PROBABILITY:
            payload = self._bit_flips(CorpusFrame(payload, api_key, 0, ()))
            name += "+bit_flips"
        return Mutant(self._size_prefix(len(payload), len(source.payload)) + payload, api_key, name)

    def _size_prefix(self, size: int, original_size: int) -> bytes:
        if self._random.random() >= INCONSISTENT_SIZE_PROBABILITY:
            return _SIZE.pack(size)
        choice = self._random.randrange(3)
        if choice == 0:
            return _SIZE.pack(original_size)  # e.g. a truncated frame that kept its size
        if choice == 1:
            return _SIZE.pack(max(size + self._random.choice(_WILD_SIZE_DELTAS), 0))
        return _SIZE.pack(self._random.choice(_WILD_SIZES))

    def _position(self, payload: bytes) -> int:
        return self._random.randrange(len(payload) + 1)

    def _bit_flips(self, source: CorpusFrame) -> bytes:
        data = bytearray(source.payload)
        if not data:
            return bytes(data)
        for _ in range(self._random.choice((1, 1, 1, 2, 3, 8))):
            data[self._random.randrange(len(data))] ^= 1 << self._random.randrange(8)
        return bytes(data)

    def _truncate(self, source: CorpusFrame) -> bytes:
        return source.payload[: self._random.randrange(len(source.payload) + 1)]

    def _insert(self, source: CorpusFrame) -> bytes:
        position = self._position(source.payload)
        inserted = self._random.randbytes(self._random.choice((1, 1, 2, 4, 8, 64)))
        return source.payload[:position] + inserted + source.payload[position:]

    def _overwrite(self, source: CorpusFrame) -> bytes:
        position = self._random.randrange(max(len(source.payload), 1))
        width = self._random.choice((1, 1, 2, 4, 8))
        filler = self._random.choice((b"\x00", b"\xff", b"\x7f", b"\x80", None))
        new = filler * width if filler is not None else self._random.randbytes(width)
        return _replace(source.payload, position, width, new)[: len(source.payload)]

    def _wild_length(self, source: CorpusFrame) -> bytes:
        if not source.prefixes:
            return self._bit_flips(source)
        position, encoding = self._random.choice(source.prefixes)
        if encoding == UVARINT_LENGTH:
            return self._wild_uvarint(source.payload, position)
        if encoding not in (INT16_LENGTH, INT32_LENGTH):
            raise ValueError(f"unknown length encoding {encoding!r}")
        return self._wild_fixed(
            source.payload, position, _I16 if encoding == INT16_LENGTH else _I32
        )

    def _wild_uvarint(self, payload: bytes, position: int) -> bytes:
        width = _uvarint_width(payload, position)
        past_end = _uvarint(len(payload) - position - width + 2)  # compact: N + 1
        return _replace(payload, position, width, self._random.choice((*_WILD_UVARINT, past_end)))

    def _wild_fixed(self, payload: bytes, position: int, fixed: struct.Struct) -> bytes:
        wild, limit = (_WILD_INT16, 0x7FFF) if fixed is _I16 else (_WILD_INT32, 0x7FFFFFFF)
        past_end = min(len(payload) - position - fixed.size + 1, limit)
        value = self._random.choice((*wild, past_end))
        return _replace(payload, position, fixed.size, fixed.pack(value))

    def _batch(self, source: CorpusFrame) -> bytes:
        """Mutate inside one record batch, then fix its CRC so the broker parses what is in it:
        compression attributes, record count, batch length, or any bytes after the CRC."""
        start, end = self._random.choice(source.batches)
        batch = bytearray(source.payload[start:end])
        choice = self._random.randrange(4)
        if choice == 0:  # the codec bits: decode with another decompressor, or an unknown one
            batch[BATCH_ATTRIBUTES_OFFSET + 1] ^= 1 << self._random.randrange(3)
        elif choice == 1:
            count = self._random.choice((*_WILD_INT32, 2, 1000))
            _I32.pack_into(batch, BATCH_RECORD_COUNT_OFFSET, count)
        elif choice == 2:  # not covered by the CRC
            length = self._random.choice((*_WILD_INT32, len(batch) - 12 + 1, 49))
            _I32.pack_into(batch, BATCH_LENGTH_OFFSET, length)
        else:
            for _ in range(self._random.choice((1, 1, 2, 4))):
                index = self._random.randrange(BATCH_ATTRIBUTES_OFFSET, len(batch))
                batch[index] ^= 1 << self._random.randrange(8)
        crc = crc32c.crc32c(bytes(batch[BATCH_ATTRIBUTES_OFFSET:]))
        _U32.pack_into(batch, BATCH_CRC_OFFSET, crc)
        return source.payload[:start] + bytes(batch) + source.payload[end:]

    def _relabel_version(self, source: CorpusFrame) -> bytes:
        low, high = self._versions.get(source.api_key, (0, source.api_version + 1))
        others = [v for v in range(low, high + 1) if v != source.api_version]
        version = self._random.choice(others) if others else high + 1
        return _replace(source.payload, API_VERSION_POSITION, 2, _I16.pack(version))

    def _splice(self, source: CorpusFrame) -> bytes:
        other = self._random.choice(self._by_api[source.api_key]).payload
        return source.payload[: self._position(source.payload)] + other[self._position(other) :]

    def _replay(self, source: CorpusFrame) -> bytes:
        return source.payload

    def _random_frame(self) -> Mutant:
        """A header with plausible api key/version and a random body."""
        keys = list(self._versions) or self._api_keys
        api_key = self._random.choice(keys) if self._random.random() < 0.9 else self._random_i16()
        low, high = self._versions.get(api_key, (0, 3))
        version = self._random.randint(low, high + 1)
        client_id = self._random.randbytes(self._random.randrange(8))
        header = struct.pack(
            ">hhih", api_key, version, self._random.randrange(2**31), len(client_id)
        )
        body = self._random.randbytes(self._random.choice((0, 1, 4, 16, 64, 256)))
        payload = header + client_id + body
        return Mutant(self._size_prefix(len(payload), len(payload)) + payload, None, "random")

    def _random_i16(self) -> int:
        return self._random.randrange(-0x8000, 0x8000)
