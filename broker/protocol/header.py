"""Request header parsing and response header encoding (header versions 1/2 and 0/1)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

_FIXED = struct.Struct(">hhih")
_CORRELATION = struct.Struct(">i")


class MalformedRequestError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def read_fixed_header(frame: bytes) -> tuple[RequestHeader, int]:
    """Parse the v1 part of the header (shared by v1 and v2); return it and the next offset."""
    if len(frame) < _FIXED.size:
        raise MalformedRequestError(f"frame of {len(frame)} bytes is shorter than a header")
    api_key, api_version, correlation_id, client_id_length = _FIXED.unpack_from(frame, 0)
    offset = _FIXED.size
    client_id: str | None = None
    if client_id_length >= 0:
        end = offset + client_id_length
        if end > len(frame):
            raise MalformedRequestError("client_id runs past the end of the frame")
        try:
            client_id = frame[offset:end].decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedRequestError("client_id is not valid UTF-8") from None
        offset = end
    elif client_id_length != -1:
        raise MalformedRequestError(f"invalid client_id length {client_id_length}")
    return RequestHeader(api_key, api_version, correlation_id, client_id), offset


def read_uvarint(data: bytes, offset: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if offset >= len(data):
            raise MalformedRequestError("unsigned varint runs past the end of the frame")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7
        if shift > 28:
            raise MalformedRequestError("unsigned varint longer than 5 bytes")


def skip_tagged_fields(data: bytes, offset: int) -> int:
    count, offset = read_uvarint(data, offset)
    for _ in range(count):
        _tag, offset = read_uvarint(data, offset)
        size, offset = read_uvarint(data, offset)
        offset += size
        if offset > len(data):
            raise MalformedRequestError("tagged field runs past the end of the frame")
    return offset


def encode_response_header(correlation_id: int, flexible: bool) -> bytes:
    # Response header v1 adds an empty tagged-field section; ApiVersions always uses v0.
    return _CORRELATION.pack(correlation_id) + (b"\x00" if flexible else b"")
