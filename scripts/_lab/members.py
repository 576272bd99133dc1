"""Consumer group members the lab runs itself (start and stop from the page): each a
confluent-kafka consumer on its own thread that subscribes, polls and commits every second,
so the page shows a real group rebalancing, its assignments and its lag going to zero."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _cluster.layout import ClusterSpec
from confluent_kafka import Consumer

from .kafka_reader import QUIET_LOG_LEVEL, librdkafka_config
from .snapshot import JsonObject

POLL_TIMEOUT_S = 0.5
STOP_TIMEOUT_S = 30.0
MAX_MEMBERS = 16
SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 1_000
AUTO_COMMIT_INTERVAL_MS = 1_000


@dataclass
class Member:
    number: int
    group: str
    topic: str
    consumed: int = 0
    state: str = "starting"  # starting, running, stopping, stopped, failed: <why>
    stop_requested: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    @property
    def client_id(self) -> str:
        return f"kafka-lab-member-{self.number}"

    def as_json(self) -> JsonObject:
        return {
            "id": self.number,
            "client_id": self.client_id,
            "group": self.group,
            "topic": self.topic,
            "consumed": self.consumed,
            "state": self.state,
        }


class MemberPool:
    def __init__(self, directory: Path, spec: ClusterSpec) -> None:
        self._directory = directory
        self._spec = spec
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self.members: dict[int, Member] = {}

    def start(self, group: str, topic: str) -> Member | str:
        with self._lock:
            running = [m for m in self.members.values() if m.state in ("starting", "running")]
            if len(running) >= MAX_MEMBERS:
                return f"at most {MAX_MEMBERS} members at once"
            member = Member(next(self._numbers), group, topic)
            self.members[member.number] = member
        member.thread = threading.Thread(
            target=self._consume, args=(member,), name=member.client_id, daemon=True
        )
        member.thread.start()
        return member

    def stop(self, number: int) -> Member | None:
        member = self.members.get(number)
        if member is None or member.state not in ("starting", "running"):
            return None
        member.state = "stopping"
        member.stop_requested.set()
        return member

    def stop_all(self) -> None:
        for number in list(self.members):
            self.stop(number)
        for member in list(self.members.values()):
            if member.thread is not None:
                member.thread.join(STOP_TIMEOUT_S)

    def as_json(self) -> list[JsonObject]:
        return [m.as_json() for m in self.members.values() if m.state != "stopped"]

    def _config(self, member: Member) -> Any:
        return librdkafka_config(
            self._directory,
            self._spec,
            {
                "group.id": member.group,
                "client.id": member.client_id,
                "log_level": QUIET_LOG_LEVEL,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": AUTO_COMMIT_INTERVAL_MS,
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            },
        )

    def _consume(self, member: Member) -> None:
        try:
            consumer = Consumer(self._config(member))
        except Exception as error:
            member.state = f"failed: {error}"
            return
        try:
            consumer.subscribe([member.topic])
            if member.state == "starting":
                member.state = "running"
            while not member.stop_requested.is_set():
                message = consumer.poll(POLL_TIMEOUT_S)
                if message is not None and message.error() is None:
                    member.consumed += 1
        except Exception as error:
            member.state = f"failed: {error}"
        finally:
            try:
                consumer.close()  # commits what it consumed and leaves the group at once
            except Exception as error:
                member.state = f"failed: {error}"
            if member.state == "stopping":
                member.state = "stopped"
