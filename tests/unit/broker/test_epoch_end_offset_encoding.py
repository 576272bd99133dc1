"""OffsetForLeaderEpoch responses encoded entry by entry are byte for byte what kio encodes
for the whole response, in every version."""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.epoch_end_offset_encoding import encode_response, encode_topic, entry_writer
from broker.protocol.registry import response_class

ANSWERS = {
    "t": [
        (ErrorCode.none, 0, 7, 1_234_567_890_123),
        (ErrorCode.fenced_leader_epoch, 1, -1, -1),
        (ErrorCode.none, 2, 0, 0),
    ],
    "another-topic": [(ErrorCode.not_leader_or_follower, 5, -1, -1)],
    "empty": [],
}


def _kio_bytes(version: int) -> bytes:
    cls = response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH, version)
    topics: list[dict[str, Any]] = [
        {
            "topic": topic,
            "partitions": [
                {"error_code": e, "partition": p, "leader_epoch": le, "end_offset": o}
                for e, p, le, o in answers
            ],
        }
        for topic, answers in ANSWERS.items()
    ]
    return adapter.encode(adapter.build(cls, {"throttle_time": 0, "topics": topics}))


@pytest.mark.parametrize("version", range(0, 5))
def test_each_version_encodes_as_kio_does(version: int) -> None:
    cls = response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH, version)
    topic_cls = adapter.nested_class(cls, "topics")
    write = entry_writer(adapter.nested_class(topic_cls, "partitions"))
    topics = [
        encode_topic(topic_cls, topic, [write(*answer) for answer in answers])
        for topic, answers in ANSWERS.items()
    ]
    assert b"".join(encode_response(cls, topics).parts) == _kio_bytes(version)
