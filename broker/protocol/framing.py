"""Kafka's framing, without I/O: a frame is a 4-byte big-endian size followed by that many
bytes. The connection reads the prefix, has its size checked here before reading the body
(so an oversized frame is refused without buffering it), and writes responses as the
buffers `frame_parts` returns.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.protocol.adapter import BodyPart

_SIZE = struct.Struct(">i")


class FrameTooLargeError(Exception):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds socket.request.max.bytes={limit}")
        self.size = size


class InvalidFrameSizeError(Exception):
    pass


SIZE_PREFIX_BYTES = _SIZE.size
# Body buffers up to this size are copied behind the size prefix and header rather than
# written as a separate buffer: copying a few KB is cheaper than one more gather element.
JOIN_MAX_BYTES = 64 * 1024


def read_frame_size(prefix: bytes | bytearray, max_frame_bytes: int) -> int:
    """The size announced by a frame's 4-byte prefix, refused if negative or too large."""
    (size,) = _SIZE.unpack_from(prefix, 0)
    if size < 0:
        raise InvalidFrameSizeError(f"negative frame size {size}")
    if size > max_frame_bytes:
        raise FrameTooLargeError(size, max_frame_bytes)
    return int(size)


def encode_frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


def frame_parts(header: bytes, body_parts: Sequence[BodyPart]) -> list[BodyPart]:
    """A response frame as buffers to write in order, so a large body is never concatenated:
    the size prefix, the response header and a small leading body buffer travel together
    (one buffer is one cheap write for the many small responses), then the rest. A part may
    also be record batches in a file (FileRecords): it counts in the frame's size as its
    length."""
    size = len(header) + sum(len(part) for part in body_parts)
    prefix = _SIZE.pack(size) + header
    if body_parts:
        first = body_parts[0]
        if isinstance(first, bytes | bytearray) and len(first) <= JOIN_MAX_BYTES:
            return [prefix + first, *body_parts[1:]]
    return [prefix, *body_parts]
