import struct

import pytest

from broker.protocol.framing import (
    JOIN_MAX_BYTES,
    FrameTooLargeError,
    InvalidFrameSizeError,
    encode_frame,
    frame_parts,
    read_frame_size,
)
from broker.protocol.header import (
    MalformedRequestError,
    encode_response_header,
    read_fixed_header,
    skip_tagged_fields,
)


def test_frame_size_is_read_from_the_prefix() -> None:
    assert read_frame_size(encode_frame(b"x" * 42), max_frame_bytes=100) == 42


def test_oversize_frame_is_refused_from_its_prefix() -> None:
    with pytest.raises(FrameTooLargeError, match="101"):
        read_frame_size(struct.pack(">i", 101), max_frame_bytes=100)


def test_negative_frame_size_is_refused() -> None:
    with pytest.raises(InvalidFrameSizeError):
        read_frame_size(struct.pack(">i", -5), max_frame_bytes=100)


def test_header_parsing() -> None:
    frame = struct.pack(">hhih", 3, 9, 77, 4) + b"abcd" + b"\x00rest"
    header, offset = read_fixed_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id) == (3, 9, 77)
    assert header.client_id == "abcd"
    assert skip_tagged_fields(frame, offset) == offset + 1


def test_null_client_id() -> None:
    header, _ = read_fixed_header(struct.pack(">hhih", 18, 0, 1, -1))
    assert header.client_id is None


@pytest.mark.parametrize(
    "frame",
    [
        b"\x00\x03",
        struct.pack(">hhih", 3, 1, 1, 10) + b"abc",
        struct.pack(">hhih", 3, 1, 1, -7),
    ],
)
def test_malformed_headers_raise(frame: bytes) -> None:
    with pytest.raises(MalformedRequestError):
        read_fixed_header(frame)


def test_truncated_tagged_fields_raise() -> None:
    with pytest.raises(MalformedRequestError):
        skip_tagged_fields(b"\x01\x00\x05ab", 0)


def test_response_header_versions() -> None:
    assert encode_response_header(5, flexible=False) == b"\x00\x00\x00\x05"
    assert encode_response_header(5, flexible=True) == b"\x00\x00\x00\x05\x00"


def test_frame_parts_join_to_the_encoded_frame_and_keep_large_parts_apart() -> None:
    large = bytes(JOIN_MAX_BYTES + 1)
    for body in ([b"small"], [b"head", large, b"tail"], [large], []):
        parts = frame_parts(b"HDR", body)
        assert b"".join(parts) == encode_frame(b"HDR" + b"".join(body))
        assert all(part is large for part in parts if len(part) == len(large))
