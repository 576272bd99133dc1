"""The gathered Fetch response encoding must be byte-identical to kio's for v4-v17."""

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from broker.protocol import adapter, fetch_encoding
from broker.protocol.registry import response_class

VERSIONS = range(fetch_encoding.LOWEST_ENCODED_VERSION, fetch_encoding.HIGHEST_ENCODED_VERSION + 1)
ERRORS = [ErrorCode.none, ErrorCode.offset_out_of_range, ErrorCode.not_leader_or_follower]

partition_values = st.fixed_dictionaries(
    {
        "partition_index": st.integers(0, 2**31 - 1),
        "error_code": st.sampled_from(ERRORS),
        "high_watermark": st.integers(-1, 2**63 - 1),
        "last_stable_offset": st.integers(-1, 2**40),
        "log_start_offset": st.integers(-1, 2**40),
        "aborted_transactions": st.none()
        | st.lists(
            st.fixed_dictionaries(
                {"producer_id": st.integers(0, 2**40), "first_offset": st.integers(0, 2**40)}
            ),
            max_size=2,
        ),
        "preferred_read_replica": st.integers(-1, 5),
        # Both sides of SEPARATE_RECORDS_MIN_BYTES, and a null record set.
        "records": st.none() | st.binary(max_size=64) | st.binary(min_size=4096, max_size=9000),
    }
)
topic_values = st.fixed_dictionaries(
    {
        # Long names too, so a compact length takes two varint bytes.
        "topic": st.text(min_size=1, max_size=20) | st.text(min_size=130, max_size=200),
        # v13+ name topics by id (the zero id too: an unknown topic id can be anything).
        "topic_id": st.uuids() | st.just(uuid.UUID(int=0)),
        "partitions": st.lists(partition_values, max_size=3),
    }
)


def _values(topics: list[dict[str, Any]], error: ErrorCode = ErrorCode.none) -> dict[str, Any]:
    return {"throttle_time": 7, "error_code": error, "session_id": 0, "responses": topics}


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, deadline=None)
@given(topics=st.lists(topic_values, max_size=3), error=st.sampled_from(ERRORS))
def test_parts_join_to_kio_encoding(
    version: int, topics: list[dict[str, Any]], error: ErrorCode
) -> None:
    values = _values(topics, error)
    expected = adapter.encode(adapter.build(response_class(1, version), values))
    assert b"".join(fetch_encoding.encode_parts(version, values)) == expected


def test_large_record_sets_are_handed_on_uncopied() -> None:
    records = bytes(range(256)) * 64
    parts = fetch_encoding.encode_parts(
        12, _values([{"topic": "t", "partitions": [_partition(records)]}])
    )
    assert any(part is records for part in parts)


def test_versions_outside_the_layout_are_refused() -> None:
    assert not fetch_encoding.can_encode(3)
    assert not fetch_encoding.can_encode(18)
    with pytest.raises(ValueError, match="v18"):
        fetch_encoding.encode_parts(18, _values([]))


def test_kio_entities_are_one_buffer_and_encoded_bodies_pass_through() -> None:
    response = adapter.build(
        response_class(18, 3), {"error_code": 0, "api_keys": [], "throttle_time": 0}
    )
    assert adapter.encode_parts(response) == [adapter.encode(response)]
    parts = [b"a", b"b"]
    assert adapter.encode_parts(adapter.Encoded(parts)) is parts


def _partition(records: bytes) -> dict[str, Any]:
    return {
        "partition_index": 0,
        "error_code": ErrorCode.none,
        "high_watermark": 10,
        "last_stable_offset": 10,
        "log_start_offset": 0,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": records,
    }
