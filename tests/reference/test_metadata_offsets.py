"""Differential: after the same workload, Metadata, ListOffsets (earliest, latest, by
timestamp, max timestamp), OffsetFetch and DescribeGroups answer the same on Apache Kafka 3.9
and on our brokers, modulo ids, hosts and ports.

The workload, on a one-broker cluster of each kind: a topic of two partitions, batches with
known timestamps (out of order within a batch), and a group whose assign-only consumer
commits offsets and closes.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import list_offsets_request, topic_spec
from tests.integration.wire import (
    LATEST,
    WireClient,
    create_topics,
    first_broker,
    list_offsets,
    metadata,
    produce,
)
from tests.reference.conftest import OneBroker

WAIT_S = 60.0
TOPIC, GROUP = "data", "differential-group"
LIST_OFFSETS, OFFSET_FETCH, FIND_COORDINATOR, DESCRIBE_GROUPS = 2, 9, 10, 15
EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -2, -3, -4, -5
# partition -> record timestamps (ms) of its one batch
TIMESTAMPS = {0: [1000, 3000, 2000], 1: [5000]}
LOOKUPS = (EARLIEST, LATEST, MAX_TIMESTAMP, 0, 1500, 2500, 3000, 4000, 10**13)
COMMITTED = {0: 2, 1: 1}
# (ListOffsets version, timestamp): the special timestamps at the versions that add them (-4
# at v8, -5 at v9), below them (UNSUPPORTED_VERSION), and one no version knows.
SPECIAL_LOOKUPS = (
    (9, LATEST),
    (9, EARLIEST),
    (9, MAX_TIMESTAMP),
    (9, EARLIEST_LOCAL),
    (9, LATEST_TIERED),
    (8, EARLIEST_LOCAL),
    (8, LATEST_TIERED),
    (7, EARLIEST_LOCAL),
    (6, MAX_TIMESTAMP),
    (9, -6),
)
UNSUPPORTED_VERSION = 35


def _prepare(cluster: ClusterHandle) -> str:
    address = first_broker(cluster)
    with WireClient.to(address) as client:
        created = create_topics(client, [topic_spec(TOPIC, partitions=2)])
    assert int(created.topics[0].error_code) == 0

    def led() -> bool:
        with WireClient.to(address) as client:
            return all(
                int(list_offsets(client, TOPIC, p, LATEST).error_code) == 0 for p in TIMESTAMPS
            )

    wait_until(led, WAIT_S, f"{TOPIC} led on {address}")
    with WireClient.to(address) as client:
        for partition, stamps in TIMESTAMPS.items():
            records = [SimpleRecord(b"k%d" % i, b"v", timestamp_ms=t) for i, t in enumerate(stamps)]
            assert int(produce(client, TOPIC, partition, build_batch(records)).error_code) == 0
    _commit(cluster)
    return address


def _commit(cluster: ClusterHandle) -> None:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP})
    try:
        offsets = [TopicPartition(TOPIC, p, o) for p, o in COMMITTED.items()]
        consumer.assign(offsets)
        consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()


def _metadata(client: WireClient) -> Any:
    (topic,) = metadata(client, [TOPIC]).topics
    return (
        int(topic.error_code),
        bool(topic.is_internal),
        sorted(
            (int(p.partition_index), int(p.error_code), len(p.replica_nodes), len(p.isr_nodes))
            for p in topic.partitions
        ),
    )


def _list_offsets(client: WireClient) -> Any:
    found = {}
    for partition in TIMESTAMPS:
        for timestamp in LOOKUPS:
            request = list_offsets_request(TOPIC, partition, timestamp)
            answer = client.request(LIST_OFFSETS, 7, request).topics[0].partitions[0]
            found[(partition, timestamp)] = (
                int(answer.error_code),
                int(answer.offset),
                int(answer.timestamp),
            )
    return found


def _special_timestamps(client: WireClient) -> Any:
    found = {}
    for version, timestamp in SPECIAL_LOOKUPS:
        request = list_offsets_request(TOPIC, 0, timestamp)
        answer = client.request(LIST_OFFSETS, version, request).topics[0].partitions[0]
        found[(version, timestamp)] = (
            int(answer.error_code),
            int(answer.offset),
            int(answer.timestamp),
            int(getattr(answer, "leader_epoch", -1)),
        )
    return found


def _coordinator(address: str) -> str:
    found: dict[str, str] = {}

    def answered() -> bool:
        with WireClient.to(address) as client:
            response = client.request(FIND_COORDINATOR, 3, {"key": GROUP, "key_type": 0})
        found["address"] = f"{response.host}:{response.port}"
        return int(response.error_code) == 0

    wait_until(answered, WAIT_S, f"a coordinator for {GROUP}")
    return found["address"]


def _group(address: str) -> Any:
    with WireClient.to(_coordinator(address)) as client:
        fetched = client.request(
            OFFSET_FETCH,
            7,
            {
                "group_id": GROUP,
                "topics": [{"name": TOPIC, "partition_indexes": sorted(COMMITTED)}],
                "require_stable": False,
            },
        )
        described = client.request(
            DESCRIBE_GROUPS, 5, {"groups": [GROUP], "include_authorized_operations": False}
        )
    (group,) = described.groups
    return {
        "offset fetch": (
            int(fetched.error_code),
            [
                (int(p.partition_index), int(p.committed_offset), int(p.error_code))
                for t in fetched.topics
                for p in t.partitions
            ],
        ),
        "describe groups": (
            int(group.error_code),
            group.group_state,
            group.protocol_type,
            group.protocol_data,
            len(group.members),
        ),
    }


@pytest.fixture(scope="module")
def answers(one_broker: OneBroker) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for impl in ("kafka", "ours"):
        address = _prepare(one_broker(impl))
        with WireClient.to(address) as client:
            found[impl] = {
                "metadata": _metadata(client),
                "list offsets": _list_offsets(client),
                "special timestamps": _special_timestamps(client),
            }
        found[impl].update(_group(address))
    return found


@pytest.mark.parametrize(
    "what",
    ["metadata", "list offsets", "special timestamps", "offset fetch", "describe groups"],
)
def test_answers_match_kafka(answers: dict[str, dict[str, Any]], what: str) -> None:
    assert answers["ours"][what] == answers["kafka"][what]


def test_the_workload_left_what_it_should_on_kafka(answers: dict[str, dict[str, Any]]) -> None:
    """The compared answers carry the workload's facts, so equal answers mean something."""
    kafka = answers["kafka"]
    assert kafka["list offsets"][(0, MAX_TIMESTAMP)] == (0, 1, 3000)
    assert kafka["list offsets"][(0, 2500)] == (0, 1, 3000)
    assert kafka["list offsets"][(0, LATEST)][:2] == (0, 3)
    special = kafka["special timestamps"]
    assert special[(9, EARLIEST_LOCAL)] == special[(9, EARLIEST)] == (0, 0, -1, 0)
    assert special[(9, LATEST_TIERED)] == (0, -1, -1, -1)
    assert special[(7, EARLIEST_LOCAL)][0] == special[(8, LATEST_TIERED)][0] == UNSUPPORTED_VERSION
    assert kafka["offset fetch"] == (0, [(p, o, 0) for p, o in sorted(COMMITTED.items())])
    assert kafka["describe groups"][:2] == (0, "Empty")
