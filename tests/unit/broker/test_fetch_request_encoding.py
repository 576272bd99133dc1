"""The replica fetcher's Fetch v12 requests, packed field by field, are byte for byte what
kio encodes for the same request."""

from __future__ import annotations

import io

from kio.serial import entity_writer

from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.fetch_request_encoding import VERSION, FetchPartitionRequest, encode_fetch
from broker.protocol.registry import request_class

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
    cls = request_class(ApiKey.FETCH, VERSION)
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
