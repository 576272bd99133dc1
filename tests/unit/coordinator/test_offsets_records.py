"""__consumer_offsets keys and values in Kafka's schemas, and a group's partition."""

import struct

import pytest

from broker.cluster.java_hash import java_string_hash
from broker.coordinator.group.records import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
    partition_for,
)
from broker.coordinator.record_io import RecordFormatError


def test_offset_key_is_version_1_group_topic_partition() -> None:
    encoded = encode_offset_key(OffsetKey("g", "t", 3))
    assert encoded == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    assert decode_key(encoded) == OffsetKey("g", "t", 3)


def test_offset_value_round_trips_as_version_3() -> None:
    value = OffsetValue(offset=42, leader_epoch=7, metadata="m", commit_timestamp_ms=1000)
    encoded = encode_offset_value(value)
    assert encoded[:2] == b"\x00\x03"
    assert decode_offset_value(encoded) == value


def test_version_1_offset_value_written_by_old_brokers_is_read() -> None:
    encoded = struct.pack(">hq", 1, 5) + b"\x00\x00" + struct.pack(">qq", 10, 20)
    assert decode_offset_value(encoded) == OffsetValue(5, -1, "", 10, 20)


def test_group_value_round_trips_as_version_3_with_static_member() -> None:
    member = MemberValue("m-1", "instance-1", "client", "/127.0.0.1", 300000, 10000, b"s", b"a")
    value = GroupValue("consumer", 4, "range", "m-1", 1234, (member,))
    assert decode_key(encode_group_key(GroupKey("g"))) == GroupKey("g")
    assert decode_group_value(encode_group_value(value)) == value


def test_forged_member_count_is_refused_without_looping() -> None:
    value = encode_group_value(GroupValue("consumer", 1, None, None, 0, ()))
    forged = value[:-4] + struct.pack(">i", 2**31 - 1)
    with pytest.raises(RecordFormatError):
        decode_group_value(forged)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("g1", 3242), ("hello", 99162322), ("polygenelubricants", -(2**31))],
)
def test_java_string_hash_matches_java(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_group_partition_uses_kafkas_abs_where_min_int_maps_to_zero() -> None:
    assert partition_for("g1", 50) == 3242 % 50
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 7) == 99162322 % 7
