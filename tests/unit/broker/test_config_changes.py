import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from broker.cluster.change_notifications import NOTIFICATION_EXPIRY_MS
from broker.config.changes import ConfigChangeListener
from zk.errors import ConnectionLossError


@dataclass
class _Stat:
    ctime_ms: int


@dataclass
class _FakeZk:
    """The few ZkClient calls the listener makes, over a dict of znodes."""

    nodes: dict[str, tuple[bytes, _Stat]] = field(default_factory=dict)
    watcher: Any = None

    async def get_children(self, path: str) -> list[str]:
        prefix = path + "/"
        return sorted(p[len(prefix) :] for p in self.nodes if p.startswith(prefix))

    async def get(self, path: str) -> tuple[bytes, _Stat] | None:
        return self.nodes.get(path)

    async def get_many(self, paths: list[str]) -> list[tuple[bytes, _Stat] | None]:
        return [self.nodes.get(p) for p in paths]

    async def delete(self, path: str) -> None:
        del self.nodes[path]

    def watch_children(self, path: str, callback: Any) -> None:
        self.watcher = callback

    def add(self, sequence: int, entity_path: str, age_ms: int = 0) -> None:
        data = json.dumps({"version": 2, "entity_path": entity_path}).encode()
        ctime_ms = int(time.time() * 1000) - age_ms
        self.nodes[f"/config/changes/config_change_{sequence:010d}"] = (data, _Stat(ctime_ms))


def test_new_topic_notifications_are_handled_once_and_old_ones_purged() -> None:
    async def scenario() -> None:
        zk = _FakeZk()
        zk.add(0, "topics/before-start", age_ms=NOTIFICATION_EXPIRY_MS + 1000)
        changed: list[str] = []
        listener = ConfigChangeListener(zk, changed.append)  # type: ignore[arg-type]
        await listener.start()
        zk.add(1, "topics/orders")
        zk.add(2, "brokers/1")
        zk.add(3, "topics/payments")
        await listener.notifications.process_pending()
        await listener.notifications.process_pending()
        assert changed == ["orders", "payments"]
        assert "/config/changes/config_change_0000000000" not in zk.nodes
        assert len(zk.nodes) == 3

    asyncio.run(scenario())


def test_a_burst_of_watch_events_queues_one_pass_not_one_per_event() -> None:
    async def scenario() -> None:
        zk = _FakeZk()
        reads: list[str] = []
        real_get_children = zk.get_children

        async def counting_get_children(path: str) -> list[str]:
            reads.append(path)
            return await real_get_children(path)

        zk.get_children = counting_get_children  # type: ignore[method-assign]
        changed: list[str] = []
        listener = ConfigChangeListener(zk, changed.append)  # type: ignore[arg-type]
        await listener.start()
        for sequence in range(50):
            zk.add(sequence, f"topics/t{sequence}")
            zk.watcher()
        assert listener.notifications._pass_task is not None
        await listener.notifications._pass_task
        assert changed == [f"t{sequence}" for sequence in range(50)]
        assert len(reads) == 2  # start-up, then the single coalesced pass

    asyncio.run(scenario())


def test_a_pass_that_fails_on_zookeeper_is_retried_on_a_timer() -> None:
    async def scenario() -> None:
        zk = _FakeZk()
        real_get_children = zk.get_children
        failures: list[str] = []

        async def failing_once(path: str) -> list[str]:
            if not failures and zk.watcher is not None:
                failures.append(path)
                raise ConnectionLossError(path)
            return await real_get_children(path)

        zk.get_children = failing_once  # type: ignore[method-assign]
        changed: list[str] = []
        listener = ConfigChangeListener(zk, changed.append)  # type: ignore[arg-type]
        await listener.start()
        zk.add(1, "topics/orders")
        zk.watcher()  # the only watch event: the retry must come from the timer
        deadline = time.monotonic() + 10
        while changed != ["orders"] and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert failures and changed == ["orders"]
        await listener.notifications.stop()

    asyncio.run(scenario())
