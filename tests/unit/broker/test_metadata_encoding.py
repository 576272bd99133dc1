"""Metadata responses built from reused per-partition encodings are byte for byte what kio
encodes for the whole response, in every version, and a partition's entry is encoded again
exactly when its state, its replicas or the live brokers change."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.metadata_encoding import PartitionEncodings
from broker.protocol.registry import response_class
from zk.znodes import PartitionState

VERSIONS = range(0, 13)


def partition_entry(
    partition: int, replicas: list[int], state: PartitionState, live: frozenset[int]
) -> dict[str, Any]:
    """The entry kio encodes for comparison: a leader that is not alive is answered as
    LEADER_NOT_AVAILABLE with no leader, as Kafka does."""
    available = state.leader >= 0 and state.leader in live
    return {
        "error_code": ErrorCode.none if available else ErrorCode.leader_not_available,
        "partition_index": partition,
        "leader_id": state.leader if available else -1,
        "leader_epoch": state.leader_epoch,
        "replica_nodes": list(replicas),
        "isr_nodes": list(state.isr),
        "offline_replicas": [r for r in replicas if r not in live],
    }


def _rows(
    rng: random.Random, count: int
) -> list[tuple[int, list[int], tuple[PartitionState, int]]]:
    rows = []
    for partition in range(count):
        replicas = rng.sample([1, 2, 3, 4], 3)
        isr = replicas[: rng.randint(1, 3)]
        leader = rng.choice([*isr, -1])
        rows.append((partition, replicas, (PartitionState(leader, rng.randint(0, 9), isr, 3), 1)))
    return rows


def _topic_values(name: str | None, error: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": error,
        "name": name,
        "topic_id": uuid.uuid4() if name else None,
        "is_internal": name == "__consumer_offsets",
        "topic_authorized_operations": -2147483648,
    }


def _response_values() -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None}],
        "cluster_id": "abc",
        "controller_id": 2,
        "cluster_authorized_operations": -2147483648,
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_spliced_response_equals_kio_encoding_of_the_whole(version: int) -> None:
    rng = random.Random(version)
    live = frozenset({1, 2, 3})
    cls = response_class(ApiKey.METADATA, version)
    topic_cls = adapter.nested_class(cls, "topics")
    partition_cls = adapter.nested_class(topic_cls, "partitions")
    encodings = PartitionEncodings()
    topics = [
        ("__consumer_offsets", ErrorCode.none, _rows(rng, 7)),
        ("t", ErrorCode.none, _rows(rng, 40)),
        ("missing", ErrorCode.unknown_topic_or_partition, []),
    ]
    whole_topics, spliced_topics = [], []
    for name, error, rows in topics:
        values = _topic_values(name, error)
        entries = [partition_entry(p, replicas, entry[0], live) for p, replicas, entry in rows]
        whole_topics.append({**values, "partitions": entries})
        encoded = encodings.encode(partition_cls, name, rows, live)
        spliced_topics.append(
            b"".join(adapter.encode_with_array(topic_cls, values, "partitions", encoded))
        )
    whole = adapter.encode(adapter.build(cls, {**_response_values(), "topics": whole_topics}))
    spliced = adapter.encode_with_array(cls, _response_values(), "topics", spliced_topics)
    assert b"".join(spliced) == whole


def test_an_entry_is_encoded_again_only_when_its_inputs_change() -> None:
    cls = adapter.nested_class(
        adapter.nested_class(response_class(ApiKey.METADATA, 12), "topics"), "partitions"
    )
    encodings = PartitionEncodings()
    live = frozenset({1, 2, 3})
    rows = _rows(random.Random(1), 3)
    first = encodings.encode(cls, "t", rows, live)
    again = encodings.encode(cls, "t", rows, frozenset({1, 2, 3}))
    assert all(a is b for a, b in zip(first, again, strict=True))

    moved = list(rows)
    moved[1] = (1, rows[1][1], (PartitionState(rows[1][1][0], 10, rows[1][1], 3), 2))
    after_move = encodings.encode(cls, "t", moved, live)
    assert after_move[0] is first[0] and after_move[2] is first[2]
    assert after_move[1] != first[1]

    after_death = encodings.encode(cls, "t", moved, frozenset({1, 2}))
    expected = [
        adapter.encode(adapter.build(cls, partition_entry(p, r, e[0], frozenset({1, 2}))))
        for p, r, e in moved
    ]
    assert after_death == expected


def test_a_dead_leader_is_answered_as_leader_not_available() -> None:
    cls = adapter.nested_class(
        adapter.nested_class(response_class(ApiKey.METADATA, 12), "topics"), "partitions"
    )
    rows = [(0, [1, 2, 3], (PartitionState(3, 4, [3, 1], 1), 0))]
    encoded = PartitionEncodings().encode(cls, "t", rows, frozenset({1, 2}))
    expected = {
        "error_code": ErrorCode.leader_not_available,
        "partition_index": 0,
        "leader_id": -1,
        "leader_epoch": 4,
        "replica_nodes": [1, 2, 3],
        "isr_nodes": [3, 1],
        "offline_replicas": [3],
    }
    assert encoded == [adapter.encode(adapter.build(cls, expected))]


def test_deleted_topics_are_forgotten() -> None:
    cls = adapter.nested_class(
        adapter.nested_class(response_class(ApiKey.METADATA, 12), "topics"), "partitions"
    )
    encodings = PartitionEncodings()
    rows = _rows(random.Random(2), 2)
    encodings.encode(cls, "kept", rows, frozenset({1}))
    encodings.encode(cls, "deleted", rows, frozenset({1}))
    encodings.forget_other_topics({"kept"})
    assert len(encodings) == 1
