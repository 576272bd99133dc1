"""Clients for quota tests: a producer and a consumer running flat out for a while, counting
what was delivered in time and the throttle times the brokers reported."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

PAYLOAD = b"q" * 10_000


@dataclass
class Run:
    delivered_bytes: int = 0
    throttle_times_ms: list[int] = field(default_factory=list)
    # When each delivery and each throttle was reported (time.monotonic()).
    delivered_at: list[float] = field(default_factory=list)
    throttled_at: list[float] = field(default_factory=list)
    end: float = 0.0

    def rate_after_first_throttle(self) -> float:
        """Bytes per second delivered from the first throttle to the end."""
        start = self.throttled_at[0]
        delivered = sum(len(PAYLOAD) for at in self.delivered_at if at > start)
        return delivered / (self.end - start)


def produce(bootstrap: str, topic: str, client_id: str, seconds: float, run: Run) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "acks": 1,
            "linger.ms": 5,
            "batch.size": 65536,  # requests small against the quota
            "queue.buffering.max.kbytes": 1024,
            "throttle_cb": lambda event: throttled(run, event.throttle_time),
        }
    )

    end = run.end = time.monotonic() + seconds

    def delivered(error: object, message: object) -> None:
        # Only what was acknowledged in time counts: the rest waits out throttles.
        now = time.monotonic()
        if error is None and now <= end:
            run.delivered_bytes += len(PAYLOAD)
            run.delivered_at.append(now)

    while time.monotonic() < end:
        try:
            producer.produce(topic, PAYLOAD, partition=0, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.purge(in_queue=True)
    producer.flush(5)


def throttled(run: Run, throttle_time_s: float) -> None:
    if throttle_time_s > 0:
        run.throttle_times_ms.append(round(throttle_time_s * 1000))
        run.throttled_at.append(time.monotonic())


def consume(bootstrap: str, topic: str, client_id: str, seconds: float, run: Run) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "group.id": f"{client_id}-group",
            "enable.auto.commit": False,
            "throttle_cb": lambda event: throttled(run, event.throttle_time),
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    end = run.end = time.monotonic() + seconds
    try:
        while (now := time.monotonic()) < end:
            message = consumer.poll(min(0.2, end - now))
            if message is not None and message.error() is None:
                run.delivered_bytes += len(message.value() or b"")
                run.delivered_at.append(time.monotonic())
    finally:
        consumer.close()
