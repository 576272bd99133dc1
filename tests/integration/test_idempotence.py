"""Idempotent producers: InitProducerId, sequence checks and retried batches, real clients
with idempotence on (kafka-python 3's default producer, librdkafka, aiokafka)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from kazoo.client import KazooClient

from broker.log.batch import read_batch_header
from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterHandle
from tests.integration.wire import WireClient

PRODUCE, FETCH, METADATA, CREATE_TOPICS, INIT_PRODUCER_ID = 0, 1, 3, 19, 22
OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH = 45, 47
COUNT = 2000


def _metadata(client: WireClient, topics: list[str] | None) -> Any:
    return client.request(
        METADATA,
        9,
        {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
    )


def _create(cluster: ClusterHandle, topic: str, partitions: int) -> str:
    """Create `topic` (RF 1) and return the address of partition 0's leader."""
    first = cluster.bootstrap.split(",")[0]
    with WireClient.to(first) as client:
        controller_id = _metadata(client, []).controller_id
    with WireClient("127.0.0.1", cluster.broker_port(controller_id)) as client:
        topic_spec = {
            "name": topic,
            "num_partitions": partitions,
            "replication_factor": 1,
            "assignments": [],
            "configs": [],
        }
        response = client.request(
            CREATE_TOPICS, 5, {"topics": [topic_spec], "timeout": 30000, "validate_only": False}
        )
        assert int(response.topics[0].error_code) == 0
        leader = _metadata(client, [topic]).topics[0].partitions[0].leader_id
    return f"127.0.0.1:{cluster.broker_port(leader)}"


def _init_producer_id(address: str) -> int:
    with WireClient.to(address) as client:
        response = client.request(
            INIT_PRODUCER_ID,
            4,
            {
                "transactional_id": None,
                "transaction_timeout": 60000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
    assert int(response.error_code) == 0 and response.producer_epoch == 0
    return int(response.producer_id)


def _produce(client: WireClient, topic: str, batch: bytes) -> Any:
    response = client.request(
        PRODUCE,
        8,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        },
    )
    return response.responses[0].partition_responses[0]


def _batch(producer_id: int, epoch: int, sequence: int) -> bytes:
    records = [SimpleRecord(None, f"s{sequence + i}".encode(), (), 1000) for i in range(3)]
    return build_batch(
        records, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence
    )


def test_producer_ids_are_unique_across_brokers(cluster: ClusterHandle) -> None:
    ids = [_init_producer_id(address) for address in cluster.bootstrap.split(",") * 2]
    assert len(set(ids)) == len(ids)
    client = KazooClient(hosts=cluster.zk_connect)
    client.start(timeout=30)
    try:
        block = json.loads(client.get("/latest_producer_id_block")[0])
    finally:
        client.stop()
    assert set(block) == {"version", "broker", "block_start", "block_end"}
    assert block["version"] == 1 and block["broker"] in cluster.broker_ids
    assert int(block["block_end"]) - int(block["block_start"]) == 999


def test_retries_are_deduplicated_and_gaps_refused(cluster: ClusterHandle) -> None:
    leader = _create(cluster, "idempotent-wire", 1)
    producer_id = _init_producer_id(leader)
    with WireClient.to(leader) as client:
        first = _produce(client, "idempotent-wire", _batch(producer_id, 0, 0))
        assert (int(first.error_code), first.base_offset) == (0, 0)
        retry = _produce(client, "idempotent-wire", _batch(producer_id, 0, 0))
        assert (int(retry.error_code), retry.base_offset) == (0, 0)
        gap = _produce(client, "idempotent-wire", _batch(producer_id, 0, 7))
        assert int(gap.error_code) == OUT_OF_ORDER_SEQUENCE_NUMBER
        second = _produce(client, "idempotent-wire", _batch(producer_id, 0, 3))
        assert (int(second.error_code), second.base_offset) == (0, 3)
        third = _produce(client, "idempotent-wire", _batch(producer_id, 0, 6))
        assert (int(third.error_code), third.base_offset) == (0, 6)
        bumped = _produce(client, "idempotent-wire", _batch(producer_id, 1, 0))
        assert int(bumped.error_code) == 0
        stale = _produce(client, "idempotent-wire", _batch(producer_id, 0, 9))
        assert int(stale.error_code) == INVALID_PRODUCER_EPOCH
        fetched = client.request(
            FETCH,
            11,
            {
                "replica_id": -1,
                "max_wait": 0,
                "min_bytes": 0,
                "max_bytes": 1 << 20,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": "idempotent-wire",
                        "partitions": [
                            {
                                "partition": 0,
                                "current_leader_epoch": -1,
                                "fetch_offset": 0,
                                "log_start_offset": -1,
                                "partition_max_bytes": 1 << 20,
                            }
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )
    data = fetched.responses[0].partitions[0]
    assert data.high_watermark == 12  # 4 batches of 3: the retry was not written again
    header = read_batch_header(data.records, 0)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (producer_id, 0, 0)


def _read_values(bootstrap: str, topic: str, partitions: int, count: int) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, consumer_timeout_ms=5000)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    consumer.seek_to_beginning()
    values = [message.value for message in consumer]
    consumer.close()
    assert len(values) >= count, f"read {len(values)} of {count}"
    return values


def test_kafka_python_default_producer_is_idempotent(cluster: ClusterHandle) -> None:
    from kafka import KafkaProducer

    _create(cluster, "idem-kafka-python", 3)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap)  # acks=all, idempotent
    futures = [producer.send("idem-kafka-python", f"{i}".encode()) for i in range(COUNT)]
    producer.flush(60)
    assert all(f.get(timeout=60) is not None for f in futures)
    producer.close()
    values = _read_values(cluster.bootstrap, "idem-kafka-python", 3, COUNT)
    assert sorted(values) == sorted(f"{i}".encode() for i in range(COUNT))


def test_librdkafka_idempotent_producer(cluster: ClusterHandle) -> None:
    from confluent_kafka import Producer

    _create(cluster, "idem-librdkafka", 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True})
    errors: list[str] = []

    def report(error: Any, _message: Any) -> None:
        if error is not None:
            errors.append(str(error))

    for i in range(COUNT):
        producer.produce("idem-librdkafka", f"{i}".encode(), on_delivery=report)
        producer.poll(0)
    assert producer.flush(60) == 0 and not errors, errors[:3]
    values = _read_values(cluster.bootstrap, "idem-librdkafka", 3, COUNT)
    assert sorted(values) == sorted(f"{i}".encode() for i in range(COUNT))


def test_aiokafka_idempotent_producer(cluster: ClusterHandle) -> None:
    from aiokafka import AIOKafkaProducer

    topic = "idem-aiokafka"
    _create(cluster, topic, 3)

    async def produce() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, enable_idempotence=True)
        await producer.start()
        try:
            for i in range(COUNT):
                await producer.send(topic, f"{i}".encode())
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(produce())
    values = _read_values(cluster.bootstrap, topic, 3, COUNT)
    assert sorted(values) == sorted(f"{i}".encode() for i in range(COUNT))
