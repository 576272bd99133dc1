"""Produces JSON user-registration events to the `registrations` topic at a steady rate.

Each event has a unique `event_id` (`<run id>-<sequence>`), so the Parquet archive can be
checked for exactly-once content. Event times lag the wall clock by up to
`MAX_EVENT_LAG_S`, as events from mobile clients do, which is what the watermark is for.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta

from confluent_kafka import KafkaError, Message, Producer

COUNTRIES = ("BR", "DE", "FR", "IN", "JP", "NG", "US")
MAX_EVENT_LAG_S = 10.0
FLUSH_TIMEOUT_S = 60.0
TICK_S = 0.1


class RegistrationGenerator(threading.Thread):
    """Runs until `stop()`; `produced` counts acknowledged events per country."""

    def __init__(self, bootstrap: str, topic: str, events_per_second: int) -> None:
        super().__init__(name="registration-generator", daemon=True)
        self.topic = topic
        self.events_per_second = events_per_second
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        self.run_id = uuid.uuid4().hex[:8]
        self.produced: Counter[str] = Counter()
        self.failed = 0
        self._stop_requested = threading.Event()
        self._random = random.Random()

    def stop(self) -> None:
        self._stop_requested.set()
        self.join()

    @property
    def total(self) -> int:
        return sum(self.produced.values())

    def run(self) -> None:
        sequence = 0
        started = time.monotonic()
        while not self._stop_requested.is_set():
            due = int((time.monotonic() - started) * self.events_per_second)
            while sequence < due:
                self._produce(sequence)
                sequence += 1
            self.producer.poll(TICK_S)
        self.producer.flush(FLUSH_TIMEOUT_S)

    def _produce(self, sequence: int) -> None:
        country = self._random.choice(COUNTRIES)
        lag = timedelta(seconds=self._random.uniform(0, MAX_EVENT_LAG_S))
        event = {
            "event_id": f"{self.run_id}-{sequence}",
            "user_id": self._random.randrange(1, 10_000_000),
            "country": country,
            "event_time": (datetime.now(UTC) - lag).isoformat(timespec="milliseconds"),
        }

        def delivered(error: KafkaError | None, _message: Message) -> None:
            if error is None:
                self.produced[country] += 1
            else:
                self.failed += 1

        while True:
            try:
                self.producer.produce(
                    self.topic, json.dumps(event).encode(), country.encode(), on_delivery=delivered
                )
                return
            except BufferError:
                self.producer.poll(TICK_S)
