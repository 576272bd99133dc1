"""One consumer-group member, run as its own process by tests/integration/test_groups.py.

    python group_member.py --client confluent --assignor range --bootstrap H:P --group G
        --topic T --state-file PATH [--session-timeout-ms 3000]

It subscribes to one topic, polls, and rewrites a JSON state file after every change (written
to a temporary file and renamed, so a reader never sees half of one):

    {"pid": 123, "assignment_version": 2, "subscribed_at": 1.0, "assignment_changed_at": 2.0,
     "assigned": [0, 1], "consumed": {"0": 41}, "consumed_count": 80, "closing": false}

`consumed` maps a partition to the last offset this member consumed from it; times are
`time.time()` seconds, comparable across processes. Ownership is published conservatively,
so two members listing one partition at one instant really did own it at the same time:

- a partition leaves `assigned` inside the revocation (or lost) callback, which the client
  runs before it rejoins the group, and before `close()` sends LeaveGroup;
- a partition enters `assigned` only after the client was given it (assignment callback).

SIGTERM stops polling, publishes an empty assignment, closes the client (which commits and
leaves the group) and exits 0. Offsets are auto-committed every AUTO_COMMIT_INTERVAL_MS.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

AUTO_COMMIT_INTERVAL_MS = 500
HEARTBEAT_DIVISOR = 6  # heartbeat interval = session timeout / this (Kafka suggests < 1/3)
POLL_TIMEOUT_S = 0.1


class StateFile:
    """The member's published state; `write` replaces the file atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.assigned: set[int] = set()
        self.assignment_version = 0
        self.subscribed_at = 0.0
        self.assignment_changed_at = 0.0
        self.consumed: dict[int, int] = {}
        self.consumed_count = 0
        self.closing = False

    def change_assignment(self, assigned: set[int]) -> None:
        self.assigned = assigned
        self.assignment_version += 1
        self.assignment_changed_at = time.time()
        self.write()

    def record(self, partition: int, offset: int) -> None:
        self.consumed[partition] = max(offset, self.consumed.get(partition, -1))
        self.consumed_count += 1

    def write(self) -> None:
        state: dict[str, Any] = {
            "pid": os.getpid(),
            "assignment_version": self.assignment_version,
            "subscribed_at": self.subscribed_at,
            "assignment_changed_at": self.assignment_changed_at,
            "assigned": sorted(self.assigned),
            "consumed": {str(p): offset for p, offset in sorted(self.consumed.items())},
            "consumed_count": self.consumed_count,
            "closing": self.closing,
        }
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(state))
        os.replace(temporary, self.path)


def run_confluent(arguments: argparse.Namespace, state: StateFile, stop: list[bool]) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": arguments.bootstrap,
            "group.id": arguments.group,
            "partition.assignment.strategy": arguments.assignor,
            "session.timeout.ms": arguments.session_timeout_ms,
            "heartbeat.interval.ms": arguments.session_timeout_ms // HEARTBEAT_DIVISOR,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": AUTO_COMMIT_INTERVAL_MS,
        }
    )

    # Eager protocols pass the whole assignment to both callbacks, cooperative ones only the
    # increment; adding and removing handles both. confluent-kafka applies the (incremental)
    # assign or unassign itself after these return.
    def on_assign(_: Any, partitions: list[Any]) -> None:
        state.change_assignment(state.assigned | {p.partition for p in partitions})

    def on_revoke(_: Any, partitions: list[Any]) -> None:
        state.change_assignment(state.assigned - {p.partition for p in partitions})

    state.subscribed_at = time.time()
    consumer.subscribe(
        [arguments.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke
    )
    state.write()
    while not stop[0]:
        messages = consumer.consume(num_messages=500, timeout=POLL_TIMEOUT_S)
        for message in messages:
            partition, offset = message.partition(), message.offset()
            if message.error() is None and partition is not None and offset is not None:
                state.record(partition, offset)
        if messages:
            state.write()
    state.closing = True
    state.change_assignment(set())
    consumer.close()


def run_kafka_python(arguments: argparse.Namespace, state: StateFile, stop: list[bool]) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            state.change_assignment(state.assigned - {p.partition for p in revoked})

        def on_partitions_assigned(self, assigned: Any) -> None:
            state.change_assignment(state.assigned | {p.partition for p in assigned})

        def on_partitions_lost(self, lost: Any) -> None:
            self.on_partitions_revoked(lost)

    if arguments.assignor != "range":
        raise SystemExit(f"kafka-python member supports only range, not {arguments.assignor}")
    consumer = KafkaConsumer(
        bootstrap_servers=arguments.bootstrap,
        group_id=arguments.group,
        partition_assignment_strategy=[RangePartitionAssignor],
        session_timeout_ms=arguments.session_timeout_ms,
        heartbeat_interval_ms=arguments.session_timeout_ms // HEARTBEAT_DIVISOR,
        auto_offset_reset="earliest",
        enable_auto_commit=True,
        auto_commit_interval_ms=AUTO_COMMIT_INTERVAL_MS,
    )
    state.subscribed_at = time.time()
    consumer.subscribe([arguments.topic], listener=Listener())
    state.write()
    while not stop[0]:
        batches = consumer.poll(timeout_ms=int(POLL_TIMEOUT_S * 1000))
        for records in batches.values():
            for record in records:
                state.record(record.partition, record.offset)
        if batches:
            state.write()
    state.closing = True
    state.change_assignment(set())
    consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--client", choices=["confluent", "kafka-python"], required=True)
    parser.add_argument("--assignor", choices=["range", "cooperative-sticky"], required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--state-file", type=Path, required=True)
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    arguments = parser.parse_args()
    stop = [False]

    def request_stop(signal_number: int, frame: Any) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, request_stop)
    state = StateFile(arguments.state_file)
    run = run_confluent if arguments.client == "confluent" else run_kafka_python
    run(arguments, state, stop)
    print(f"member {os.getpid()} left the group", file=sys.stderr)


if __name__ == "__main__":
    main()
