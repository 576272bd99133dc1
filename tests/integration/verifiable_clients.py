"""Kafka 3.9's system-test clients (`kafka-verifiable-producer`, `kafka-verifiable-consumer`
through `scripts/kafka-jvm`) as background processes whose JSON events a test can watch.

Each client prints one JSON object per line on stdout; a reader thread per process parses them
as they come, so a test can wait on what a client has reported so far (acknowledgements,
consumed offsets) while faults happen. Anything on stdout that is not JSON (a client may print
a plain warning line) is kept apart for failure messages. Both streams are also written to files
in the test's directory (`NAME.stdout`, `NAME.stderr`: log4j at WARN), to read after a failure.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.jvm_tools import FAST_START_JVM_OPTS, KAFKA_JVM, JvmProcess

# A long-running client needs far less than the 512 MB that Kafka's scripts give it, and
# the machine also runs three brokers and ZooKeeper.
CLIENT_HEAP_OPTS = "-Xmx256m"

Event = dict[str, Any]
# One of these per record: handed to `on_event` only, not kept in the client's own list.
BULK_EVENTS = frozenset({"record_data", "producer_send_success"})


class VerifiableClient(JvmProcess):
    """One verifiable producer or consumer JVM and the events it has printed so far. On
    SIGTERM (`terminate`, `stop`) both clients' shutdown hooks close the Kafka client cleanly
    and print shutdown_complete; the producer first waits for its outstanding sends."""

    def __init__(
        self,
        name: str,
        tool: str,
        args: list[str],
        log_dir: Path,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._other_lines: list[str] = []
        self._on_event = on_event
        env = dict(
            os.environ,
            KAFKA_JVM_PERFORMANCE_OPTS=FAST_START_JVM_OPTS,
            KAFKA_HEAP_OPTS=CLIENT_HEAP_OPTS,
        )
        env.pop("KAFKA_JVM_LOG_LEVEL", None)
        env.pop("KAFKA_LOG4J_OPTS", None)
        # scripts/kafka-jvm execs java, so this pid is the JVM's and a signal reaches its
        # shutdown hook directly.
        super().__init__([str(KAFKA_JVM), tool, *args], env, log_dir, name, self._parse)

    def _parse(self, line: str) -> None:
        text = line.strip()
        try:
            event = json.loads(text) if text.startswith("{") else None
        except ValueError:
            event = None
        with self._lock:
            if isinstance(event, dict):
                if event.get("name") not in BULK_EVENTS:
                    self._events.append(event)
                if self._on_event is not None:
                    self._on_event(event)
            elif text:
                self._other_lines.append(text)

    def events(self, name: str | None = None) -> list[Event]:
        """The events printed so far (BULK_EVENTS aside), or those called `name`."""
        with self._lock:
            return [e for e in self._events if name is None or e.get("name") == name]

    def locked(self) -> threading.Lock:
        """Held while an event is recorded, so a test can read `on_event`'s state safely."""
        return self._lock

    def has_event(self, name: str) -> bool:
        with self._lock:
            return any(e.get("name") == name for e in self._events)

    def diagnostics(self) -> str:
        with self._lock:
            other = self._other_lines[-20:]
            count = len(self._events)
        return (
            f"--- {self.name}: exit {self.process.poll()}, {count} events\n"
            f"non-JSON stdout: {other}\n"
            f"stderr (tail):\n{self.stderr_tail()}"
        )


@dataclass
class ProducerProgress:
    """What the producer has reported, kept up to date as its events arrive."""

    acked: dict[str, tuple[int, int]] = field(default_factory=dict)  # value -> (partition, offset)
    acked_per_partition: Counter[int] = field(default_factory=Counter)
    last_offset: dict[int, int] = field(default_factory=dict)  # partition -> highest acked
    errors: list[Event] = field(default_factory=list)

    def record(self, event: Event) -> None:
        if event.get("name") == "producer_send_success":
            partition, offset = int(event["partition"]), int(event["offset"])
            self.acked[str(event["value"])] = (partition, offset)
            self.acked_per_partition[partition] += 1
            self.last_offset[partition] = max(offset, self.last_offset.get(partition, -1))
        elif event.get("name") == "producer_send_error":
            self.errors.append(event)


@dataclass
class ConsumerProgress:
    """What one consumer has reported, kept up to date as its events arrive."""

    # (partition, offset) -> the values read there, once per delivery.
    records: dict[tuple[int, int], list[str]] = field(default_factory=lambda: defaultdict(list))
    max_offset: dict[int, int] = field(default_factory=dict)  # partition -> highest consumed
    assigned: set[int] = field(default_factory=set)
    # Partition -> the next offset due, while this consumer keeps owning it. The topic has no
    # transaction markers, so its offsets are contiguous: a poll that starts elsewhere skipped
    # records or went back (Kafka's verifiable_consumer.py checks the same).
    position: dict[int, int] = field(default_factory=dict)
    out_of_order: list[str] = field(default_factory=list)
    # Each successful commit: partition -> offset, in the order they were printed.
    commits: list[dict[int, int]] = field(default_factory=list)
    failed_commits: list[Event] = field(default_factory=list)

    def record(self, event: Event) -> None:
        name = event.get("name")
        if name == "record_data":
            partition, offset = int(event["partition"]), int(event["offset"])
            self.records[(partition, offset)].append(str(event["value"]))
        elif name == "records_consumed":
            for summary in event.get("partitions", []):
                self._consumed(
                    int(summary["partition"]), int(summary["minOffset"]), int(summary["maxOffset"])
                )
        elif name == "partitions_assigned":
            self.assigned |= _partitions(event)
        elif name == "partitions_revoked":
            self.assigned -= _partitions(event)
            for partition in _partitions(event):
                self.position.pop(partition, None)
        elif name == "offsets_committed":
            if event.get("success"):
                offsets = event.get("offsets", [])
                self.commits.append({int(o["partition"]): int(o["offset"]) for o in offsets})
            else:
                self.failed_commits.append(event)

    def _consumed(self, partition: int, first: int, last: int) -> None:
        if partition not in self.assigned:
            self.out_of_order.append(f"partition {partition} read at {first}..{last} unassigned")
        elif self.position.get(partition, first) != first:
            self.out_of_order.append(
                f"partition {partition} read from {first}, {self.position[partition]} was due"
            )
        self.position[partition] = last + 1
        self.max_offset[partition] = max(last, self.max_offset.get(partition, -1))


def _partitions(event: Event) -> set[int]:
    return {int(p["partition"]) for p in event.get("partitions", [])}


def commit_regressions(commits: Iterable[dict[int, int]]) -> list[str]:
    """Every successful commit whose offset for a partition is below an earlier successful
    commit of the same consumer for that partition."""
    highest: dict[int, int] = {}
    regressions = []
    for index, commit in enumerate(commits):
        for partition, offset in commit.items():
            if offset < highest.get(partition, -1):
                regressions.append(
                    f"commit #{index}: partition {partition} at {offset} after {highest[partition]}"
                )
            highest[partition] = max(offset, highest.get(partition, -1))
    return regressions
