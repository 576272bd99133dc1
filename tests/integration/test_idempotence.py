"""Idempotent producers: InitProducerId, sequence checks and retried batches, real clients
with idempotence on (kafka-python 3's default producer, librdkafka, aiokafka)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from broker.log.batch import read_batch_header
from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterHandle, zk_session
from tests.integration.requests import topic_spec
from tests.integration.txn_wire import new_producer_id
from tests.integration.wire import (
    WireClient,
    controller_address,
    create_topics,
    fetch,
    leader_address,
    produce,
)

OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH = 45, 47
COUNT = 2000


def _create(cluster: ClusterHandle, topic: str, partitions: int) -> str:
    """Create `topic` (RF 1) and return the address of partition 0's leader."""
    controller = controller_address(cluster)
    with WireClient.to(controller) as client:
        response = create_topics(client, [topic_spec(topic, partitions)], version=5)
        assert int(response.topics[0].error_code) == 0
    return leader_address(cluster, topic, via=controller)


def _init_producer_id(address: str) -> int:
    with WireClient.to(address) as client:
        return new_producer_id(client)


def _produce(client: WireClient, topic: str, batch: bytes) -> Any:
    return produce(client, topic, 0, batch, acks=-1, version=8)


def _batch(producer_id: int, epoch: int, sequence: int) -> bytes:
    records = [SimpleRecord(None, f"s{sequence + i}".encode(), (), 1000) for i in range(3)]
    return build_batch(
        records, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence
    )


def test_producer_ids_are_unique_across_brokers(cluster: ClusterHandle) -> None:
    ids = [_init_producer_id(address) for address in cluster.bootstrap.split(",") * 2]
    assert len(set(ids)) == len(ids)
    with zk_session(cluster) as zk:
        block = json.loads(zk.get("/latest_producer_id_block")[0])
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
        data = fetch(client, "idempotent-wire", 0, 0, version=11)
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
