"""The replica fetcher's requests (Fetch v12, OffsetForLeaderEpoch v4), packed field by
field, are byte for byte what kio encodes for the same requests."""

from __future__ import annotations

import io
from typing import Any

from kio.serial import entity_writer

from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import request_class
from broker.protocol.replica_request_encoding import (
    FETCH_VERSION,
    OFFSET_FOR_LEADER_EPOCH_VERSION,
    FetchPartitionRequest,
    encode_fetch,
    encode_offset_for_leader_epoch,
)

TOPICS = [
    ("t", [FetchPartitionRequest(0, 3, 1_234_567_890_123, 17, 1_048_576)]),
    ("tópico-ü", [FetchPartitionRequest(p, p % 4, 100 * p, 0, 65_536) for p in range(40)]),
    ("empty", []),
]
FORGOTTEN = [("gone", [0, 5, 9]), ("also-gone", [])]


def _kio_bytes() -> bytes:
    values = {
        "replica_id": 2,
        "max_wait": 500,
        "min_bytes": 1,
        "max_bytes": 10_485_760,
        "isolation_level": 0,
        "session_id": 12345,
        "session_epoch": 7,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": p.partition,
                        "current_leader_epoch": p.current_leader_epoch,
                        "fetch_offset": p.fetch_offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": p.log_start_offset,
                        "partition_max_bytes": p.partition_max_bytes,
                    }
                    for p in partitions
                ],
            }
            for topic, partitions in TOPICS
        ],
        "forgotten_topics_data": [
            {"topic": topic, "partitions": partitions} for topic, partitions in FORGOTTEN
        ],
        "rack_id": "",
    }
    return _kio_encoding(ApiKey.FETCH, FETCH_VERSION, values)


def _kio_encoding(api_key: ApiKey, version: int, values: dict[str, Any]) -> bytes:
    cls = request_class(api_key, version)
    buffer = io.BytesIO()
    entity_writer(cls)(buffer, adapter.build(cls, values))
    return buffer.getvalue()


def test_a_fetch_request_encodes_as_kio_does() -> None:
    encoded = encode_fetch(
        replica_id=2,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=10_485_760,
        session_id=12345,
        session_epoch=7,
        topics=TOPICS,
        forgotten=FORGOTTEN,
    )
    assert (encoded.api_key, encoded.version, encoded.flexible) == (int(ApiKey.FETCH), 12, True)
    assert encoded.body == _kio_bytes()


def test_an_offset_for_leader_epoch_request_encodes_as_kio_does() -> None:
    topics = [("t", [(0, 5, 4), (3, 5, 5)]), ("ü-topic", [(7, 0, 0)]), ("empty", [])]
    encoded = encode_offset_for_leader_epoch(3, topics)
    expected = _kio_encoding(
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        OFFSET_FOR_LEADER_EPOCH_VERSION,
        {
            "replica_id": 3,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": p, "current_leader_epoch": c, "leader_epoch": e}
                        for p, c, e in partitions
                    ],
                }
                for topic, partitions in topics
            ],
        },
    )
    assert encoded.version == OFFSET_FOR_LEADER_EPOCH_VERSION and encoded.flexible
    assert encoded.body == expected
