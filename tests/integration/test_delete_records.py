"""DeleteRecords through confluent-kafka's AdminClient (and the wire for error cases): the log
start offset moves on the leader and its followers, reads below it are out of range, the
segments below it go, and it survives a crash of the broker (log-start-offset-checkpoint)."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import topic_spec
from tests.integration.wire import (
    WireClient,
    controller_address,
    create_topics,
    fetch,
    leader_address,
    list_offsets,
)

# Leaders are killed and restarted here; a SIGKILLed broker's restart waits out its ZooKeeper
# session: 6 s, not 18.
pytestmark = pytest.mark.own_cluster(overrides={"zookeeper.session.timeout.ms": "6000"})

DELETE_RECORDS = 21
EARLIEST = -2
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
RECORD_COUNT = 30
# About three one-record batches per segment, so deleting records frees whole segments.
SMALL_SEGMENTS = {"segment.bytes": "1024"}
TIMEOUT_S = 60.0


def _create(cluster: ClusterHandle, name: str, replicas: list[int]) -> None:
    spec = topic_spec(name, configs=SMALL_SEGMENTS, assignments={0: replicas})
    spec["num_partitions"] = spec["replication_factor"] = -1
    with WireClient.to(controller_address(cluster)) as client:
        assert int(create_topics(client, [spec]).topics[0].error_code) == 0


def _produce(cluster: ClusterHandle, topic: str) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0})
    for index in range(RECORD_COUNT):
        producer.produce(topic, value=f"record-{index}-".encode() + b"x" * 200, partition=0)
        assert producer.flush(TIMEOUT_S) == 0  # one batch per record
    leader = leader_address(cluster, topic)
    with WireClient.to(leader) as client:
        wait_until(
            lambda: int(list_offsets(client, topic, 0, -1).offset) == RECORD_COUNT,
            TIMEOUT_S,
            "every record committed",
        )


def _delete(cluster: ClusterHandle, topic: str, offset: int) -> int:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.delete_records([TopicPartition(topic, 0, offset)], operation_timeout=30)
    (future,) = futures.values()
    return int(future.result(timeout=TIMEOUT_S).low_watermark)


def _earliest(address: str, topic: str) -> int:
    with WireClient.to(address) as client:
        return int(list_offsets(client, topic, 0, EARLIEST).offset)


def _leader_id(cluster: ClusterHandle, topic: str, via: str | None = None) -> int:
    address = leader_address(cluster, topic, via=via)
    return int(address.rsplit(":", 1)[1]) - cluster.port_base + 1


def _segment_bases(cluster: ClusterHandle, broker_id: int, topic: str) -> list[int]:
    directory = cluster.dir / f"broker-{broker_id}" / "data" / f"{topic}-0"
    return sorted(int(path.stem) for path in directory.glob("*.log"))


def _delete_request(topic: str, offset: int) -> dict[str, object]:
    return {
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": offset}]}],
        "timeout": 30000,
    }


def _wire_delete(address: str, topic: str, offset: int, version: int = 2) -> tuple[int, int]:
    with WireClient.to(address) as client:
        response = client.request(DELETE_RECORDS, version, _delete_request(topic, offset))
    result = response.topics[0].partitions[0]
    return int(result.error_code), int(result.low_watermark)


def test_delete_records_moves_log_start_on_every_replica(cluster: ClusterHandle) -> None:
    topic = "delete-records"
    _create(cluster, topic, [1, 2, 3])
    _produce(cluster, topic)

    assert _delete(cluster, topic, 10) == 10

    leader = leader_address(cluster, topic)
    assert _earliest(leader, topic) == 10
    with WireClient.to(leader) as client:
        assert int(fetch(client, topic, 0, 5).error_code) == OFFSET_OUT_OF_RANGE
        below_start = fetch(client, topic, 0, 10)
        assert int(below_start.error_code) == 0
        assert int(below_start.log_start_offset) == 10
    leader_id = _leader_id(cluster, topic)

    def segments_released() -> bool:
        bases = _segment_bases(cluster, leader_id, topic)
        return bases[0] > 0 and bases[0] <= 10 and (len(bases) == 1 or bases[1] > 10)

    wait_until(segments_released, TIMEOUT_S, "segments below offset 10 deleted on the leader")

    # Moving it back is not possible; -1 means the high watermark.
    assert _delete(cluster, topic, 5) == 10
    assert _delete(cluster, topic, -1) == RECORD_COUNT
    assert _earliest(leader, topic) == RECORD_COUNT

    # A follower's log start offset moved too: it starts there once it leads.
    cluster.kill(leader_id)
    try:
        survivor = f"127.0.0.1:{cluster.broker_port(1 if leader_id != 1 else 2)}"
        wait_until(
            lambda: _leader_id(cluster, topic, survivor) != leader_id, TIMEOUT_S, "a new leader"
        )
        assert _earliest(leader_address(cluster, topic, via=survivor), topic) == RECORD_COUNT
    finally:
        cluster.start(leader_id)


def test_delete_records_errors(cluster: ClusterHandle) -> None:
    topic = "delete-records-errors"
    _create(cluster, topic, [2, 3])
    _produce(cluster, topic)
    leader = leader_address(cluster, topic)
    follower_id = 3 if leader.endswith(f":{cluster.broker_port(2)}") else 2
    follower = f"127.0.0.1:{cluster.broker_port(follower_id)}"

    assert _wire_delete(leader, topic, RECORD_COUNT + 1) == (OFFSET_OUT_OF_RANGE, -1)
    assert _wire_delete(follower, topic, 1) == (NOT_LEADER_OR_FOLLOWER, -1)
    assert _wire_delete(leader, "no-such-topic", 1, version=0) == (UNKNOWN_TOPIC_OR_PARTITION, -1)
    assert _wire_delete(leader, topic, 3, version=1) == (0, 3)

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    (future,) = admin.delete_records([TopicPartition(topic, 0, RECORD_COUNT + 5)]).values()
    with pytest.raises(KafkaException, match="OFFSET_OUT_OF_RANGE"):
        future.result(timeout=TIMEOUT_S)


def test_log_start_offset_survives_a_broker_crash(cluster: ClusterHandle) -> None:
    topic = "delete-records-crash"
    _create(cluster, topic, [1])
    _produce(cluster, topic)
    bases = _segment_bases(cluster, 1, topic)
    # Inside a segment, so only the checkpoint (not a segment's base offset) can remember it.
    inside = next(offset for offset in range(12, RECORD_COUNT) if offset not in bases)
    assert _delete(cluster, topic, inside) == inside

    checkpoint = cluster.dir / "broker-1" / "data" / "log-start-offset-checkpoint"
    wait_until(
        lambda: f"{topic} 0 {inside}" in _read(checkpoint),
        TIMEOUT_S,
        "the new log start offset checkpointed",
    )
    cluster.kill(1, "KILL")
    cluster.start(1)
    leader = leader_address(cluster, topic)
    wait_until(lambda: _earliest(leader, topic) >= 0, TIMEOUT_S, "the partition served again")
    assert _earliest(leader, topic) == inside


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""
