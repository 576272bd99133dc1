"""The bounds pre-check that keeps kio's native parser from aborting the broker."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from broker.protocol.bounds import BoundsError, check_body, length_positions
from broker.protocol.header import read_fixed_header, skip_tagged_fields
from broker.protocol.registry import request_class
from tests.unit.broker.sample_requests import (
    decodable_request_classes,
    encode_entity,
    sample_entity,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
FIXED_WIDTH_TYPES = {"int8", "int16", "int32", "int64", "error_code", "bool"}
# The request from the issue: Metadata v9 whose topics array claims ~1.2e10 elements.
DEADLY_METADATA_V9 = bytes.fromhex("0003 0009 00000007 0002 6378 00 ffffffff2d")


def test_deadly_metadata_v9_request_is_refused_before_parsing() -> None:
    header, offset = read_fixed_header(DEADLY_METADATA_V9)
    offset = skip_tagged_fields(DEADLY_METADATA_V9, offset)
    cls = request_class(header.api_key, header.api_version)
    with pytest.raises(BoundsError, match="topics"):
        check_body(cls, DEADLY_METADATA_V9, offset)


@pytest.mark.parametrize("cls", decodable_request_classes(), ids=lambda c: c.__module__[11:])
def test_every_decodable_request_walks_to_its_end(cls: type) -> None:
    body = encode_entity(sample_entity(cls))
    assert check_body(cls, body, 0) == len(body)
    # Each body has a length or count prefix, if only its tagged fields' count, unless it has
    # no field (ApiVersions v0-v2) or only fixed-width ones (ControlledShutdown v1-v2).
    fixed_width = not cls.__flexible__ and all(  # type: ignore[attr-defined]
        f.metadata.get("kafka_type") in FIXED_WIDTH_TYPES for f in fields(cls)
    )
    assert bool(length_positions(cls, body, 0)) == (bool(body) and not fixed_width)


@pytest.mark.parametrize("cls", decodable_request_classes(), ids=lambda c: c.__module__[11:])
def test_every_truncation_is_refused(cls: type) -> None:
    body = encode_entity(sample_entity(cls))
    for cut in range(len(body)):
        with pytest.raises(BoundsError):
            check_body(cls, body[:cut], 0)


def test_legacy_array_count_past_the_bytes_left_is_refused() -> None:
    cls = request_class(3, 4)  # Metadata v4: int32 array count, non-flexible
    with pytest.raises(BoundsError, match="elements"):
        check_body(cls, bytes.fromhex("7fffffff 01"), 0)


def test_negative_string_length_is_refused() -> None:
    cls = request_class(3, 4)
    with pytest.raises(BoundsError, match="negative length"):
        check_body(cls, bytes.fromhex("00000001 fffe 01"), 0)


def test_null_in_non_nullable_array_is_refused() -> None:
    cls = request_class(1, 12)  # Fetch v12: topics is not nullable
    body = encode_entity(sample_entity(cls))
    marks = length_positions(cls, body, 0)
    topics_position = next(p for p, encoding in marks if encoding == "uvarint")
    with pytest.raises(BoundsError):
        check_body(cls, body[:topics_position] + b"\x00" + body[topics_position + 1 :], 0)


def test_varint_longer_than_five_bytes_is_refused() -> None:
    cls = request_class(3, 9)
    with pytest.raises(BoundsError, match="longer than 5"):
        check_body(cls, bytes.fromhex("ffffffffff01"), 0)


def test_tagged_field_that_does_not_fill_its_size_is_refused() -> None:
    cls = request_class(18, 3)  # ApiVersions v3: two compact strings, then tagged fields
    body = bytes.fromhex("03616204312e30") + bytes.fromhex("01 00 02 00 00")
    # One unknown tag (0) of size 2 is skipped, but the size must fit the frame.
    assert check_body(cls, body, 0) == len(body)
    with pytest.raises(BoundsError):
        check_body(cls, body[:-1], 0)


def test_kio_never_aborts_on_a_mutated_body_the_check_accepts() -> None:
    # In a child process: an abort there fails this test instead of killing pytest.
    result = subprocess.run(
        [sys.executable, "-m", "tests.unit.broker.kio_crosscheck", "20261123", "100000"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, (
        f"exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
