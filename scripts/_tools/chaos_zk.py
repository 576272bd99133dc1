"""What ZooKeeper says about the cluster: registered brokers, the controller, and each
partition's assignment, leader and ISR (Kafka's znodes, DESIGN.md).

A synchronous kazoo client: the checker is a plain threaded program, and every read may fail
while a ZooKeeper server is down, so each snapshot is all-or-nothing (None on failure) and
callers simply poll again.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

CONNECT_TIMEOUT_S = 30.0
# Reconnect for ever, quickly: a ZooKeeper fault must not leave the checker blind afterwards.
CONNECTION_RETRY = {"max_tries": -1, "delay": 0.1, "max_delay": 1.0}
POLL_INTERVAL_S = 0.25
READ_FAILURES = (KazooException, KazooTimeoutError, ValueError, KeyError, TypeError)


@dataclass(frozen=True, slots=True)
class PartitionState:
    replicas: list[int]  # assignment order; the first is the preferred leader
    leader: int  # -1: none
    isr: list[int]


@dataclass(frozen=True, slots=True)
class ClusterView:
    registered: set[int]
    controller: int | None
    partitions: dict[int, PartitionState]

    def leaders_alive(self) -> bool:
        return bool(self.partitions) and all(
            state.leader in self.registered for state in self.partitions.values()
        )

    def isr_full(self) -> bool:
        return all(set(state.isr) == set(state.replicas) for state in self.partitions.values())

    def describe(self) -> str:
        partitions = ", ".join(
            f"{p}: leader {s.leader} isr {s.isr}" for p, s in sorted(self.partitions.items())
        )
        return f"registered {sorted(self.registered)}, controller {self.controller}; {partitions}"


class ZooKeeperView:
    """Snapshots of one topic's state; open with `connect`, release with `close`."""

    def __init__(self, connect: str, topic: str) -> None:
        logging.getLogger("kazoo").setLevel(logging.CRITICAL)  # it logs every reconnect try
        self.topic = topic
        self._client: Any = KazooClient(
            hosts=connect, timeout=10.0, connection_retry=dict(CONNECTION_RETRY)
        )

    def connect(self) -> None:
        self._client.start(timeout=CONNECT_TIMEOUT_S)

    def close(self) -> None:
        self._client.stop()
        self._client.close()

    def _json(self, path: str) -> Any:
        data, _stat = self._client.get(path)
        return json.loads(data)

    def _registered(self) -> set[int]:
        children: list[str] = self._client.get_children("/brokers/ids")
        return {int(child) for child in children if child.isdigit()}

    def _controller(self) -> int | None:
        try:
            return int(self._json("/controller")["brokerid"])
        except NoNodeError:
            return None

    def _partitions(self) -> dict[int, PartitionState]:
        base = f"/brokers/topics/{self.topic}"
        assignment = self._json(base)["partitions"]
        states: dict[int, PartitionState] = {}
        for partition_text, replicas in assignment.items():
            partition = int(partition_text)
            try:
                state = self._json(f"{base}/partitions/{partition}/state")
            except NoNodeError:  # the controller has not elected a first leader yet
                state = {"leader": -1, "isr": []}
            states[partition] = PartitionState(
                [int(r) for r in replicas], int(state["leader"]), [int(r) for r in state["isr"]]
            )
        return states

    def snapshot(self) -> ClusterView | None:
        """The current view, or None while ZooKeeper cannot answer (or the topic is absent)."""
        try:
            return ClusterView(self._registered(), self._controller(), self._partitions())
        except READ_FAILURES:
            return None

    def wait_for(
        self, condition: Callable[[ClusterView], bool], timeout_s: float
    ) -> tuple[bool, ClusterView | None]:
        """Poll until `condition` holds; (True, view) then, (False, last view) at the deadline."""
        deadline = time.monotonic() + timeout_s
        last: ClusterView | None = None
        while True:
            view = self.snapshot()
            if view is not None:
                last = view
                if condition(view):
                    return True, view
            if time.monotonic() >= deadline:
                return False, last
            time.sleep(POLL_INTERVAL_S)


def healthy(broker_ids: list[int]) -> Callable[[ClusterView], bool]:
    """Every broker registered, a controller elected and a live leader for every partition."""

    def check(view: ClusterView) -> bool:
        return (
            set(broker_ids) <= view.registered
            and view.controller is not None
            and view.leaders_alive()
        )

    return check


def healthy_with_full_isr(broker_ids: list[int]) -> Callable[[ClusterView], bool]:
    base = healthy(broker_ids)
    return lambda view: base(view) and view.isr_full()
