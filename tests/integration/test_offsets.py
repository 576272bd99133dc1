"""Committed offsets in __consumer_offsets, driven by real clients that assign partitions."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from broker.coordinator.group.records import partition_for
from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterHandle, wait_until, zk_session
from tests.integration.wire import WireClient, first_broker, metadata, produce

OFFSETS_PARTITIONS = 6
CLIENT_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def offsets_cluster(make_cluster_module: Callable[..., ClusterHandle]) -> ClusterHandle:
    return make_cluster_module(
        overrides={
            "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
            "zookeeper.session.timeout.ms": "6000",
        }
    )


def _fill(bootstrap: str, topic: str, count: int) -> None:
    """A replicated topic (it must outlive the coordinator's broker) with `count` records."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(timeout=CLIENT_TIMEOUT_S)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for index in range(count):
        producer.produce(topic, value=b"v%d" % index, partition=0)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0


def _kafka_python_consumer(bootstrap: str, group: str) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)


def _coordinator_id(cluster: ClusterHandle, group: str) -> int:
    offsets_partition = partition_for(group, OFFSETS_PARTITIONS)
    path = f"/brokers/topics/__consumer_offsets/partitions/{offsets_partition}/state"
    with zk_session(cluster) as zk:
        leader = json.loads(zk.get(path)[0])["leader"]
    assert isinstance(leader, int)
    return leader


def test_commit_survives_the_coordinator_killed_and_a_restarted_consumer_resumes_there(
    offsets_cluster: ClusterHandle,
) -> None:
    topic, group = f"offsets-{uuid.uuid4().hex[:8]}", f"group-{uuid.uuid4().hex[:8]}"
    _fill(offsets_cluster.bootstrap, topic, 10)
    partition = TopicPartition(topic, 0)
    consumer = _kafka_python_consumer(offsets_cluster.bootstrap, group)
    consumer.assign([partition])
    consumer.commit({partition: OffsetAndMetadata(7, "checkpoint", -1)})
    assert consumer.committed(partition) == 7
    consumer.close()
    coordinator = _coordinator_id(offsets_cluster, group)
    offsets_cluster.kill(coordinator, "KILL")
    try:
        wait_until(
            lambda: _coordinator_id(offsets_cluster, group) != coordinator,
            60,
            "a new leader of the group's offsets partition",
        )
        resumed = _kafka_python_consumer(offsets_cluster.bootstrap, group)
        resumed.assign([partition])
        assert resumed.committed(partition) == 7
        assert resumed.position(partition) == 7  # a restarted consumer resumes at its commit
        records = resumed.poll(timeout_ms=10_000, max_records=10).get(partition, [])
        assert [r.value for r in records] == [b"v7", b"v8", b"v9"]
        resumed.close()
    finally:
        offsets_cluster.start(coordinator)


def test_confluent_commit_and_committed_round_trip(offsets_cluster: ClusterHandle) -> None:
    topic, group = f"offsets-{uuid.uuid4().hex[:8]}", f"group-{uuid.uuid4().hex[:8]}"
    _fill(offsets_cluster.bootstrap, topic, 3)
    consumer = Consumer({"bootstrap.servers": offsets_cluster.bootstrap, "group.id": group})
    try:
        consumer.assign([ConfluentPartition(topic, 0, 0)])
        consumer.commit(offsets=[ConfluentPartition(topic, 0, 2)], asynchronous=False)
        committed = consumer.committed([ConfluentPartition(topic, 0)], timeout=CLIENT_TIMEOUT_S)
        assert [(c.partition, c.offset, c.error) for c in committed] == [(0, 2, None)]
    finally:
        consumer.close()


def test_offsets_topic_is_internal_and_refuses_client_produce(
    offsets_cluster: ClusterHandle,
) -> None:
    wait_until(lambda: _has_offsets_topic(offsets_cluster), 60, "__consumer_offsets in metadata")
    with WireClient.to(first_broker(offsets_cluster)) as client:
        topic = metadata(client, ["__consumer_offsets"]).topics[0]
        assert topic.is_internal and len(topic.partitions) == OFFSETS_PARTITIONS
        leader_port = _leader_port(offsets_cluster, topic)
    with WireClient.to(f"127.0.0.1:{leader_port}") as leader:
        batch = build_batch([SimpleRecord(b"k", b"forged", (), 1000)])
        response: Any = produce(leader, "__consumer_offsets", 0, batch)
        assert response.error_code == 17  # INVALID_TOPIC_EXCEPTION


def _has_offsets_topic(cluster: ClusterHandle) -> bool:
    with WireClient.to(first_broker(cluster)) as client:
        found = metadata(client, ["__consumer_offsets"]).topics[0]
        return int(found.error_code) == 0


def _leader_port(cluster: ClusterHandle, topic: Any) -> int:
    leader = next(p.leader_id for p in topic.partitions if p.partition_index == 0)
    return cluster.broker_port(int(leader))


def test_offset_delete_removes_the_commits_of_an_empty_group(
    offsets_cluster: ClusterHandle,
) -> None:
    topic, group = f"offsets-{uuid.uuid4().hex[:8]}", f"group-{uuid.uuid4().hex[:8]}"
    _fill(offsets_cluster.bootstrap, topic, 3)
    partition = TopicPartition(topic, 0)
    consumer = _kafka_python_consumer(offsets_cluster.bootstrap, group)
    consumer.assign([partition])
    consumer.commit({partition: OffsetAndMetadata(2, "", -1)})
    consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=offsets_cluster.bootstrap)
    try:
        assert partition in admin.list_group_offsets(group)[group]
        admin.delete_group_offsets(group, [partition])
        assert admin.list_group_offsets(group)[group] == {}
    finally:
        admin.close()


def test_offset_fetch_v8_answers_several_groups_in_one_request(
    offsets_cluster: ClusterHandle,
) -> None:
    topic = f"offsets-{uuid.uuid4().hex[:8]}"
    groups = [f"group-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    _fill(offsets_cluster.bootstrap, topic, 5)
    partition = TopicPartition(topic, 0)
    for committed, group in enumerate(groups, start=1):
        consumer = _kafka_python_consumer(offsets_cluster.bootstrap, group)
        consumer.assign([partition])
        consumer.commit({partition: OffsetAndMetadata(committed, "", -1)})
        consumer.close()
    # Both groups may live on different coordinators: ask each group's coordinator for both.
    for group in groups:
        coordinator = offsets_cluster.broker_port(_coordinator_id(offsets_cluster, group))
        with WireClient.to(f"127.0.0.1:{coordinator}") as client:
            response = client.request(
                9,
                8,
                {
                    "groups": [
                        {"group_id": g, "topics": [{"name": topic, "partition_indexes": [0]}]}
                        for g in groups
                    ],
                    "require_stable": False,
                },
            )
        answers = {g.group_id: g for g in response.groups}
        mine = answers[group].topics[0].partitions[0]
        assert (int(answers[group].error_code), int(mine.committed_offset)) == (
            0,
            groups.index(group) + 1,
        )


def test_commit_to_an_unknown_topic_or_partition_is_refused_per_partition(
    offsets_cluster: ClusterHandle,
) -> None:
    """Kafka 3.x answers UNKNOWN_TOPIC_OR_PARTITION for partitions its metadata lacks and
    commits the others of the same request (librdkafka's 0030_offset_commit)."""
    topic, group = f"offsets-{uuid.uuid4().hex[:8]}", f"group-{uuid.uuid4().hex[:8]}"
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    _fill(offsets_cluster.bootstrap, topic, 3)
    consumer = Consumer(
        {
            "bootstrap.servers": offsets_cluster.bootstrap,
            "group.id": group,
            "allow.auto.create.topics": False,
        }
    )
    requested = [
        ConfluentPartition(topic, 0, 2),
        ConfluentPartition(missing, 0, 5),
        ConfluentPartition(topic, 7, 1),
    ]
    try:
        with pytest.raises(KafkaException) as raised:
            consumer.commit(offsets=requested, asynchronous=False)
        assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        committed = consumer.committed([ConfluentPartition(topic, 0)], timeout=CLIENT_TIMEOUT_S)
        assert [(c.partition, c.offset, c.error) for c in committed] == [(0, 2, None)]
    finally:
        consumer.close()
