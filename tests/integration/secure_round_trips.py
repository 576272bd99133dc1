"""Produce then read back a topic with each real client, given that client's security options:
what the TLS and SASL tests do with every client and mechanism."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from tests.integration.conftest import wait_until

TIMEOUT_S = 60


def confluent_round_trip(
    config: dict[str, Any], topic: str, values: list[bytes], partitions: int
) -> list[bytes]:
    """librdkafka: `config` holds bootstrap.servers and the security keys."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({**config, "acks": "all"})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(TIMEOUT_S) == 0
    consumer = Consumer({**config, "group.id": f"round-trip-{uuid.uuid4()}"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: list[bytes] = []

    def all_seen() -> bool:
        seen.extend(m.value() for m in consumer.consume(100, 0.5) if m.error() is None)
        return len(seen) >= len(values)

    try:
        wait_until(
            all_seen, TIMEOUT_S, lambda: f"{len(values)} records of {topic}, saw {len(seen)}"
        )
    finally:
        consumer.close()
    return seen


def kafka_python_round_trip(
    bootstrap: str, topic: str, values: list[bytes], options: dict[str, Any]
) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", **options)
    for value in values:
        producer.send(topic, value)
    producer.flush(TIMEOUT_S)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=TIMEOUT_S * 1000,
        **options,
    )
    seen = [message.value for _, message in zip(range(len(values)), consumer, strict=False)]
    consumer.close()
    return seen


def aiokafka_round_trip(
    bootstrap: str, topic: str, values: list[bytes], options: dict[str, Any]
) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def round_trip() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", **options)
        await producer.start()
        try:
            for value in values:
                await producer.send_and_wait(topic, value)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", **options
        )
        await consumer.start()
        seen: list[bytes] = []
        try:
            async with asyncio.timeout(TIMEOUT_S):
                async for message in consumer:
                    seen.append(message.value)
                    if len(seen) == len(values):
                        break
        finally:
            await consumer.stop()
        return seen

    return asyncio.run(round_trip())
