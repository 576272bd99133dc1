"""Racks (issue 41): a 6-broker cluster in 3 racks (`up --racks 3`) places every replica set
across the racks, as Kafka's rack-aware assignment does, and a consumer with `client.rack`
reads from the follower in its rack (KIP-392, `replica.selector.class` set to Kafka's
RackAwareReplicaSelector): the leader answers its fetch with the preferred read replica, and
the broker metrics show which broker sent the records."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.replication.replica_selector import RACK_AWARE_REPLICA_SELECTOR
from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.metrics_scrape import scrape, value

TIMEOUT_S = 30
RACK_COUNT = 6 // 2
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"


@pytest.fixture(scope="module")
def cluster(make_cluster_module: Any) -> ClusterHandle:
    handle: ClusterHandle = make_cluster_module(
        brokers=6,
        racks=RACK_COUNT,
        overrides={"replica.selector.class": RACK_AWARE_REPLICA_SELECTOR},
    )
    return handle


def _rack(broker_id: int) -> str:
    return f"rack-{(broker_id - 1) % RACK_COUNT}"  # what `up --racks` gives


def _create(cluster: ClusterHandle, topic: NewTopic) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([topic])[topic.topic].result(timeout=TIMEOUT_S)


def _partitions(cluster: ClusterHandle, topic: str, count: int) -> dict[int, Any]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    found: dict[int, Any] = {}

    def all_led() -> bool:
        metadata = admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
        found.clear()
        found.update(metadata.partitions)
        return len(found) == count and all(p.leader >= 0 for p in found.values())

    wait_until(all_led, TIMEOUT_S, f"leaders for every partition of {topic}")
    return found


def test_brokers_register_their_racks(cluster: ClusterHandle) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    brokers = admin.describe_cluster().result(timeout=TIMEOUT_S).nodes
    assert {node.id: node.rack for node in brokers} == {b: _rack(b) for b in cluster.broker_ids}


def test_a_12_partition_rf3_topic_has_every_replica_set_across_the_racks(
    cluster: ClusterHandle,
) -> None:
    topic = f"spread-{uuid.uuid4().hex[:8]}"
    _create(cluster, NewTopic(topic, num_partitions=12, replication_factor=3))
    partitions = _partitions(cluster, topic, 12)
    for partition in partitions.values():
        assert len({_rack(b) for b in partition.replicas}) == RACK_COUNT, partition.replicas
    # Leaders spread: Kafka's walk gives each of the 6 brokers 2 of the 12 first replicas.
    assert Counter(p.replicas[0] for p in partitions.values()) == dict.fromkeys(
        cluster.broker_ids, 2
    )


def test_a_consumer_reads_from_the_follower_in_its_rack(cluster: ClusterHandle) -> None:
    topic = f"nearby-{uuid.uuid4().hex[:8]}"
    # Leader 1 in rack-0; followers 2 (rack-1) and 3 (rack-2).
    _create(cluster, NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2, 3]]))
    _partitions(cluster, topic, 1)
    values = [f"value-{index}".encode() for index in range(20)]
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for payload in values:
        producer.produce(topic, payload, partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"g-{topic}",
            "client.rack": _rack(2),
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    received: list[bytes] = []

    def consumed_all() -> bool:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            received.append(message.value())
        return len(received) >= len(values)

    try:
        wait_until(consumed_all, TIMEOUT_S, "the consumer to read every record")
    finally:
        consumer.close()
    assert received == values
    sent = {b: value(scrape(cluster, b), BYTES_OUT, topic=topic) for b in (1, 2, 3)}
    # The records came from broker 2; the leader only named it (no records).
    assert sent[2] > 0 and sent[1] == 0 and sent[3] == 0, sent
