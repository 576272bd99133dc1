"""Produce-then-read round trips with each real client library.

Each `roundtrip_*` function creates a 6-partition topic (through the client's own admin API,
or by auto-creation for kcat), produces keyed records with headers under one compression codec,
reads every partition back by assignment (no consumer group) and returns what it saw, so the
test can compare sent and received record by record.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from dataclasses import dataclass

import pytest

PARTITIONS = 6
REPLICATION_FACTOR = 3
DEADLINE_S = 60.0


@dataclass(frozen=True)
class Sent:
    key: bytes
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int


@dataclass(frozen=True)
class Received:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int


def make_records(count: int, tag: str) -> list[Sent]:
    base_ms = int(time.time() * 1000) - 60_000
    return [
        Sent(
            key=f"{tag}-key-{i % 97}".encode(),
            value=(f"{tag}-value-{i}-" + "x" * (i % 50)).encode(),
            headers=(("seq", str(i).encode()), ("client", tag.encode())),
            timestamp_ms=base_ms + i,
        )
        for i in range(count)
    ]


def _until(deadline: float, what: str) -> None:
    if time.monotonic() > deadline:
        raise TimeoutError(f"timed out: {what}")


# -- kafka-python ------------------------------------------------------------------------


def roundtrip_kafka_python(
    bootstrap: str, topic: str, codec: str, records: list[Sent]
) -> tuple[dict[int, tuple[int, int]], list[Received]]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, PARTITIONS, REPLICATION_FACTOR)], timeout_ms=30000)
    admin.close()
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, compression_type=codec, acks=1, linger_ms=5
    )
    futures = [
        producer.send(
            topic,
            key=r.key,
            value=r.value,
            headers=list(r.headers),
            timestamp_ms=r.timestamp_ms,
        )
        for r in records
    ]
    producer.flush(timeout=DEADLINE_S)
    acked = {}
    for index, future in enumerate(futures):
        metadata = future.get(timeout=DEADLINE_S)
        acked[index] = (metadata.partition, metadata.offset)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    received: list[Received] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(received) < len(records):
        _until(deadline, f"kafka-python read {len(received)}/{len(records)}")
        for batch in consumer.poll(timeout_ms=500).values():
            received.extend(
                Received(
                    m.partition,
                    m.offset,
                    m.key,
                    m.value,
                    tuple((k, v) for k, v in m.headers),
                    m.timestamp,
                )
                for m in batch
            )
    consumer.close()
    return acked, received


# -- aiokafka ----------------------------------------------------------------------------


def roundtrip_aiokafka(
    bootstrap: str, topic: str, codec: str, records: list[Sent]
) -> tuple[dict[int, tuple[int, int]], list[Received]]:
    return asyncio.run(_aiokafka(bootstrap, topic, codec, records))


async def _aiokafka(
    bootstrap: str, topic: str, codec: str, records: list[Sent]
) -> tuple[dict[int, tuple[int, int]], list[Received]]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(topic, PARTITIONS, REPLICATION_FACTOR)])
    await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, acks=1)
    await producer.start()
    futures = [
        await producer.send(
            topic,
            key=r.key,
            value=r.value,
            headers=list(r.headers),
            timestamp_ms=r.timestamp_ms,
        )
        for r in records
    ]
    acked = {}
    for index, future in enumerate(futures):
        metadata = await asyncio.wait_for(future, DEADLINE_S)
        acked[index] = (metadata.partition, metadata.offset)
    await producer.stop()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    await consumer.seek_to_beginning()
    received: list[Received] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(received) < len(records):
        _until(deadline, f"aiokafka read {len(received)}/{len(records)}")
        batches = await consumer.getmany(timeout_ms=500)
        for batch in batches.values():
            received.extend(
                Received(
                    m.partition,
                    m.offset,
                    m.key,
                    m.value,
                    tuple((k, bytes(v)) for k, v in m.headers),
                    m.timestamp,
                )
                for m in batch
            )
    await consumer.stop()
    return acked, received


# -- confluent-kafka (librdkafka) --------------------------------------------------------


def roundtrip_confluent(
    bootstrap: str, topic: str, codec: str, records: list[Sent]
) -> tuple[dict[int, tuple[int, int]], list[Received]]:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, PARTITIONS, REPLICATION_FACTOR)])
    futures[topic].result(timeout=DEADLINE_S)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "compression.type": codec, "acks": 1, "linger.ms": 5}
    )
    acked: dict[int, tuple[int, int]] = {}
    errors: list[str] = []

    def on_delivery(index: int):  # type: ignore[no-untyped-def]
        def report(error, message) -> None:  # type: ignore[no-untyped-def]
            if error is not None:
                errors.append(str(error))
            else:
                acked[index] = (message.partition(), message.offset())

        return report

    deadline = time.monotonic() + DEADLINE_S
    for index, r in enumerate(records):
        _until(deadline, "confluent produce")
        producer.produce(
            topic,
            key=r.key,
            value=r.value,
            headers=list(r.headers),
            timestamp=r.timestamp_ms,
            on_delivery=on_delivery(index),
        )
        producer.poll(0)
    remaining = producer.flush(DEADLINE_S)
    assert remaining == 0 and not errors, f"undelivered {remaining}, errors {errors[:3]}"
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"unused-{topic}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    received: list[Received] = []
    while len(received) < len(records):
        _until(deadline + DEADLINE_S, f"confluent read {len(received)}/{len(records)}")
        for m in consumer.consume(num_messages=1000, timeout=0.5):
            if m.error() is not None:
                continue
            received.append(
                Received(
                    m.partition(),
                    m.offset(),
                    m.key(),
                    m.value(),
                    tuple((k, v) for k, v in (m.headers() or [])),
                    m.timestamp()[1],
                )
            )
    consumer.close()
    return acked, received


# -- kcat --------------------------------------------------------------------------------


def kcat_command() -> str:
    """kcat's path; a test that needs it fails saying so when it is not installed."""
    found = shutil.which("kcat")
    if found is None:
        pytest.fail("kcat is not installed: apt-get install kcat (.ci/run installs it)")
    return found


def roundtrip_kcat(
    bootstrap: str, topic: str, codec: str, records: list[Sent]
) -> tuple[dict[int, tuple[int, int]], list[Received]]:
    """kcat cannot set per-message timestamps or create topics: the topic is auto-created
    (the cluster runs with num.partitions=6) and timestamps are the producer's clock."""
    lines = "".join(f"{r.key.decode()}\t{r.value.decode()}\n" for r in records)
    produce = subprocess.run(
        [
            kcat_command(),
            "-P",
            "-b",
            bootstrap,
            "-t",
            topic,
            "-z",
            codec,
            "-K",
            "\t",
            "-H",
            "client=kcat",
            "-X",
            "topic.request.required.acks=1",
        ],
        input=lines.encode(),
        capture_output=True,
        timeout=DEADLINE_S,
    )
    assert produce.returncode == 0, produce.stderr.decode()
    received: list[Received] = []
    for partition in range(PARTITIONS):
        consume = subprocess.run(
            [
                kcat_command(),
                "-C",
                "-b",
                bootstrap,
                "-t",
                topic,
                "-p",
                str(partition),
                "-o",
                "beginning",
                "-e",
                "-J",
            ],
            capture_output=True,
            timeout=DEADLINE_S,
        )
        assert consume.returncode == 0, consume.stderr.decode()
        for line in consume.stdout.decode().splitlines():
            message = json.loads(line)
            headers = message.get("headers") or []
            received.append(
                Received(
                    message["partition"],
                    message["offset"],
                    None if message["key"] is None else message["key"].encode(),
                    None if message["payload"] is None else message["payload"].encode(),
                    tuple((headers[i], headers[i + 1].encode()) for i in range(0, len(headers), 2)),
                    message["ts"],
                )
            )
    return {}, received
