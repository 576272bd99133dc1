"""CreatePartitions on a live cluster through confluent-kafka's AdminClient: the new partitions
appear in metadata and in the topic znode (same topic id, Kafka's placement), they get leaders
and take records; and Kafka's error codes for bad requests."""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kazoo.client import KazooClient

from tests.integration.conftest import ClusterHandle, wait_until

TIMEOUT_S = 60


def _admin(cluster: ClusterHandle) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def _topic_znode(zk: KazooClient, topic: str) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{topic}")
    return dict(json.loads(data))


def _error_code(admin: AdminClient, request: NewPartitions, validate_only: bool = False) -> int:
    future = admin.create_partitions([request], validate_only=validate_only)[request.topic]
    try:
        future.result(timeout=TIMEOUT_S)
    except KafkaException as error:
        return int(error.args[0].code())
    return int(KafkaError.NO_ERROR)


def test_added_partitions_show_in_metadata_and_znodes_and_take_records(
    cluster: ClusterHandle, zk: KazooClient
) -> None:
    admin = _admin(cluster)
    topic = "grow"
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[1, 2]])])[topic].result(TIMEOUT_S)
    before = _topic_znode(zk, topic)
    assert _error_code(admin, NewPartitions(topic, 3), validate_only=True) == KafkaError.NO_ERROR
    assert _topic_znode(zk, topic) == before  # validate_only changes nothing

    assert _error_code(admin, NewPartitions(topic, 3)) == KafkaError.NO_ERROR
    metadata = admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
    assert sorted(metadata.partitions) == [0, 1, 2]
    assert all(p.leader in p.replicas for p in metadata.partitions.values())
    znode = _topic_znode(zk, topic)
    assert znode["topic_id"] == before["topic_id"]
    # Kafka's placement continues the round-robin from partition 0's first replica (broker 1).
    assert znode["partitions"] == {"0": [1, 2], "1": [2, 3], "2": [3, 1]}
    for partition in (1, 2):
        wait_until(
            lambda p=partition: (
                zk.exists(f"/brokers/topics/{topic}/partitions/{p}/state") is not None
            ),
            TIMEOUT_S,
            f"partition {partition}'s state znode",
        )

    delivered: list[tuple[int, int]] = []

    def on_delivery(error: KafkaError | None, message: Any) -> None:
        assert error is None, error
        delivered.append((message.partition(), message.offset()))

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    producer.produce(topic, value=b"to the new partition", partition=2, on_delivery=on_delivery)
    assert producer.flush(TIMEOUT_S) == 0
    assert delivered == [(2, 0)]

    # An explicit assignment of the partitions to add.
    request = NewPartitions(topic, 4, replica_assignment=[[2, 1]])
    assert _error_code(admin, request) == KafkaError.NO_ERROR
    assert _topic_znode(zk, topic)["partitions"]["3"] == [2, 1]


def test_bad_requests_get_kafkas_error_codes(cluster: ClusterHandle) -> None:
    admin = _admin(cluster)
    topic = "fixed"
    admin.create_topics([NewTopic(topic, 2, 2)])[topic].result(TIMEOUT_S)
    assert _error_code(admin, NewPartitions(topic, 2)) == KafkaError.INVALID_PARTITIONS
    assert _error_code(admin, NewPartitions(topic, 1)) == KafkaError.INVALID_PARTITIONS
    assert _error_code(admin, NewPartitions("no-such-topic", 3)) == (
        KafkaError.UNKNOWN_TOPIC_OR_PART
    )
    unknown_broker = NewPartitions(topic, 3, replica_assignment=[[1, 9]])
    assert _error_code(admin, unknown_broker) == KafkaError.INVALID_REPLICA_ASSIGNMENT
    wrong_count = NewPartitions(topic, 4, replica_assignment=[[1, 2]])
    assert _error_code(admin, wrong_count) == KafkaError.INVALID_REPLICA_ASSIGNMENT
    metadata = admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
    assert sorted(metadata.partitions) == [0, 1]
