"""Idempotent acks=all producers writing numbered records at a steady rate, recording every
acknowledgement (partition, offset, payload, when).

Payloads are `<run>:<producer>.<incarnation>:<sequence>`: unique, so duplicates show, and
ordered per producer, so reordering within a partition shows. Partitions are chosen round-robin
by sequence, which keeps every partition busy; a partition that stops acknowledging is an
unavailable partition, whatever the client's internal retries hide.

A producer that hits a fatal error (librdkafka gives up on idempotence guarantees, e.g. after
OUT_OF_ORDER_SEQUENCE_NUMBER) is replaced by a new incarnation, and the error is reported.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, Message, Producer

DELIVERY_TIMEOUT_MS = 300_000
# Kafka's producer defaults wait long after a leader vanishes (30 s request timeout, up to 10 s
# reconnect back-off); shorter ones make the measured unavailability the cluster's, not the
# client's.
REQUEST_TIMEOUT_MS = 10_000
RECONNECT_BACKOFF_MAX_MS = 1000
LINGER_MS = 5
TICK_S = 0.005
BURST_LIMIT = 1000  # records per tick at most, so polling keeps up after a stall
FATAL_DRAIN_S = 5.0
NO_OFFSET = -1


@dataclass(frozen=True, slots=True)
class Ack:
    at: float  # time.monotonic() when the acknowledgement arrived
    partition: int
    offset: int  # NO_OFFSET when the client acknowledged without one
    payload: bytes


@dataclass(slots=True)
class FleetResult:
    acks: list[Ack]
    # Delivery reports with an error, by error name: not acknowledged, yet possibly stored.
    failed: dict[str, int]
    unresolved: int  # neither acknowledged nor failed when the flush bound ran out
    fatal_errors: list[str]
    produced: int


@dataclass(slots=True)
class _Shared:
    acks: list[Ack] = field(default_factory=list)
    failed: Counter[str] = field(default_factory=Counter)
    unresolved: int = 0
    produced: int = 0
    fatal_errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def parse_payload(payload: bytes) -> tuple[str, str, int] | None:
    """(run, producer label, sequence) of one of our payloads, None for anything else."""
    parts = payload.split(b":")
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    return parts[0].decode(errors="replace"), parts[1].decode(errors="replace"), int(parts[2])


class ProducerFleet:
    def __init__(
        self, bootstrap: str, topic: str, partitions: int, count: int, rate_per_s: float, run: str
    ) -> None:
        self.bootstrap, self.topic, self.partitions, self.run = bootstrap, topic, partitions, run
        self.rate_per_producer_s = rate_per_s / count
        self._shared = _Shared()
        self._stopping = threading.Event()
        self._flush_timeout_s = 0.0
        self._threads = [
            threading.Thread(
                target=self._run, args=(index,), name=f"chaos-producer-{index}", daemon=True
            )
            for index in range(count)
        ]

    @property
    def acks(self) -> list[Ack]:
        return self._shared.acks

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self, flush_timeout_s: float) -> FleetResult:
        self._flush_timeout_s = flush_timeout_s
        self._stopping.set()
        for thread in self._threads:
            thread.join()
        shared = self._shared
        return FleetResult(
            sorted(shared.acks, key=lambda ack: ack.at),
            dict(shared.failed),
            shared.unresolved,
            list(shared.fatal_errors),
            shared.produced,
        )

    def _new_producer(self, fatal: threading.Event) -> Producer:
        def on_error(error: KafkaError) -> None:
            if error.fatal():
                with self._shared.lock:
                    self._shared.fatal_errors.append(str(error))
                fatal.set()

        return Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "message.timeout.ms": DELIVERY_TIMEOUT_MS,
                "request.timeout.ms": REQUEST_TIMEOUT_MS,
                "reconnect.backoff.max.ms": RECONNECT_BACKOFF_MAX_MS,
                "linger.ms": LINGER_MS,
                "log_level": 0,  # connection failures are expected; error_cb sees what matters
                "error_cb": on_error,
            }
        )

    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        partition, offset = message.partition(), message.offset()
        if error is not None or partition is None:
            with self._shared.lock:
                self._shared.failed[error.name() if error is not None else "NO_PARTITION"] += 1
            return
        # librdkafka acknowledges some records without an offset (-1): when a request's own
        # response was lost (a timeout) but a later batch's acknowledgement proves it was
        # written ("implicit ack"), or after DUPLICATE_SEQUENCE_NUMBER. Stored, place unknown.
        offset = offset if offset is not None and offset >= 0 else NO_OFFSET
        ack = Ack(time.monotonic(), partition, offset, message.value() or b"")
        self._shared.acks.append(ack)  # list.append is atomic; no lock on the hot path

    def _run(self, index: int) -> None:
        incarnation = 0
        while not self._stopping.is_set():
            fatal = threading.Event()
            producer = self._new_producer(fatal)
            self._produce(producer, f"{index}.{incarnation}", fatal)
            # After a fatal error flushing only fails what is queued (through _on_delivery).
            producer.flush(FATAL_DRAIN_S if fatal.is_set() else self._flush_timeout_s)
            with self._shared.lock:
                self._shared.unresolved += len(producer)
            incarnation += 1

    def _produce(self, producer: Producer, label: str, fatal: threading.Event) -> None:
        started, sent = time.monotonic(), 0
        while not (self._stopping.is_set() or fatal.is_set()):
            due = int((time.monotonic() - started) * self.rate_per_producer_s) - sent
            for _ in range(min(due, BURST_LIMIT)):
                payload = f"{self.run}:{label}:{sent}".encode()
                try:
                    producer.produce(
                        self.topic,
                        payload,
                        partition=sent % self.partitions,
                        on_delivery=self._on_delivery,
                    )
                except BufferError:
                    break  # the local queue is full: the cluster is stalled; retry next tick
                sent += 1
            producer.poll(TICK_S)
        with self._shared.lock:
            self._shared.produced += sent
