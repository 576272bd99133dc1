"""The gathered Fetch response encoding must be byte-identical to kio's for v4-v12."""

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
        "topic": st.text(min_size=1, max_size=20),
        "partitions": st.lists(partition_values, max_size=3),
    }
)


def _response(version: int, topics: list[dict[str, Any]]) -> Any:
    return adapter.build(
        response_class(1, version),
        {"throttle_time": 7, "error_code": ErrorCode.none, "session_id": 0, "responses": topics},
    )


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, deadline=None)
@given(topics=st.lists(topic_values, max_size=3))
def test_parts_join_to_kio_encoding(version: int, topics: list[dict[str, Any]]) -> None:
    response = _response(version, topics)
    assert fetch_encoding.can_encode(response)
    assert b"".join(adapter.encode_parts(response)) == adapter.encode(response)


def test_large_record_sets_are_handed_on_uncopied() -> None:
    records = bytes(range(256)) * 64
    topics = [{"topic": "t", "partitions": [_partition(records)]}]
    parts = adapter.encode_parts(_response(12, topics))
    assert any(part is records for part in parts)


def test_tagged_fields_are_left_to_kio() -> None:
    partition = {**_partition(b""), "current_leader": {"leader_id": 2, "leader_epoch": 3}}
    response = _response(12, [{"topic": "t", "partitions": [partition]}])
    assert not fetch_encoding.can_encode(response)
    assert adapter.encode_parts(response) == [adapter.encode(response)]


def test_other_responses_are_one_kio_buffer() -> None:
    response = adapter.build(
        response_class(18, 3), {"error_code": 0, "api_keys": [], "throttle_time": 0}
    )
    assert adapter.encode_parts(response) == [adapter.encode(response)]


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
