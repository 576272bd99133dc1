"""ClusterWatch's refresh task against an in-memory stand-in for KafkaZk."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import cast

import pytest

from zk import cluster_watch
from zk.cluster_watch import ClusterChange, ClusterWatch
from zk.errors import ZkError
from zk.kafka_zk import KafkaZk, MalformedHandler
from zk.znodes import BrokerRegistration, PartitionState, TopicAssignment

WAIT_BOUND_S = 2.0


class _FakeClient:
    def __init__(self) -> None:
        self.watches: dict[tuple[str, str], list[Callable[[], None]]] = {}
        self.connected = True

    def watch_data(
        self, path: str, callback: Callable[[], None], armed_by_reads: bool = False
    ) -> None:
        self.watches.setdefault(("data", path), []).append(callback)

    def watch_children(self, path: str, callback: Callable[[], None]) -> None:
        self.watches.setdefault(("children", path), []).append(callback)

    def unwatch_data(self, path: str, callback: Callable[[], None]) -> None:
        self.watches.get(("data", path), []).remove(callback)

    def unwatch_children(self, path: str, callback: Callable[[], None]) -> None:
        self.watches.get(("children", path), []).remove(callback)

    def on_session_event(self, callback: Callable[[str], None]) -> None:
        pass

    def fire(self, kind: str, path: str) -> None:
        for callback in list(self.watches.get((kind, path), [])):
            callback()


class _FakeKafkaZk:
    def __init__(self) -> None:
        self.client = _FakeClient()
        self.topics: dict[str, TopicAssignment] = {}
        self.states: dict[tuple[str, int], tuple[PartitionState, int]] = {}
        # Errors the next get_all_topics calls raise, one each.
        self.topic_list_failures: list[Exception] = []

    async def get_brokers_with_epochs(
        self, on_malformed: MalformedHandler | None = None
    ) -> dict[int, tuple[BrokerRegistration, int]]:
        return {}

    async def get_controller_id(self) -> int | None:
        return None

    async def get_all_topics(self) -> list[str]:
        if self.topic_list_failures:
            raise self.topic_list_failures.pop(0)
        return sorted(self.topics)

    async def get_topic_assignments(
        self, topics: Sequence[str], on_malformed: MalformedHandler | None = None
    ) -> dict[str, TopicAssignment | None]:
        return {topic: self.topics.get(topic) for topic in topics}

    async def get_many_partition_states(
        self,
        partitions: Sequence[tuple[str, int]],
        on_malformed: MalformedHandler | None = None,
        arm: bool = False,
    ) -> dict[tuple[str, int], tuple[PartitionState, int] | None]:
        return {key: self.states.get(key) for key in partitions}


async def _wait_until(condition: Callable[[], bool], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_BOUND_S
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.001)


def test_refresh_that_fails_unexpectedly_keeps_its_work_and_is_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cluster_watch, "_RETRY_DELAY_S", 0.0)  # retry on the next loop turn

    async def scenario() -> None:
        kafka_zk = _FakeKafkaZk()
        changes: list[ClusterChange] = []
        watch = ClusterWatch(cast(KafkaZk, kafka_zk), changes.append)
        await watch.start()
        kafka_zk.topics["orders"] = TopicAssignment(None, {0: [1]})
        kafka_zk.topic_list_failures.append(RuntimeError("a bug, not ZooKeeper trouble"))
        kafka_zk.client.fire("children", "/brokers/topics")
        # The failed refresh's work (the topic list) was kept and read again.
        await _wait_until(lambda: "orders" in watch.view.topics, "the topic after the retry")
        assert [change.topics_added for change in changes] == [frozenset({"orders"})]
        # And the watch still follows later changes.
        kafka_zk.topics["payments"] = TopicAssignment(None, {0: [1]})
        kafka_zk.client.fire("children", "/brokers/topics")
        await _wait_until(lambda: "payments" in watch.view.topics, "a later topic")
        await watch.stop()

    asyncio.run(scenario())


def test_a_topics_version_changes_with_its_assignment_or_a_partition_state_only() -> None:
    async def scenario() -> None:
        kafka_zk = _FakeKafkaZk()
        kafka_zk.topics["t"] = TopicAssignment(None, {0: [1, 2]})
        kafka_zk.states[("t", 0)] = (PartitionState(1, 0, [1, 2], 1), 0)
        watch = ClusterWatch(cast(KafkaZk, kafka_zk), lambda change: None)
        await watch.start()
        loaded = watch.view.topic_versions["t"]
        state_path = "/brokers/topics/t/partitions/0/state"

        kafka_zk.client.fire("data", state_path)  # a watch, nothing new
        await _wait_until(
            lambda: watch._refresher is not None and watch._refresher.done(), "the refresh"
        )
        assert watch.view.topic_versions["t"] == loaded

        kafka_zk.states[("t", 0)] = (PartitionState(2, 1, [2], 1), 1)
        kafka_zk.client.fire("data", state_path)
        await _wait_until(lambda: watch.view.topic_versions["t"] != loaded, "a new version")
        after_state = watch.view.topic_versions["t"]

        kafka_zk.topics["t"] = TopicAssignment(None, {0: [1, 2], 1: [2, 1]})
        kafka_zk.client.fire("data", "/brokers/topics/t")
        await _wait_until(lambda: watch.view.topic_versions["t"] != after_state, "another")
        assert len({loaded, after_state, watch.view.topic_versions["t"]}) == 3
        await watch.stop()

    asyncio.run(scenario())


def test_a_refresh_cut_short_announces_what_it_read_with_the_next_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cluster_watch, "_STATES_PER_READ", 1)  # one state per read
    monkeypatch.setattr(cluster_watch, "_RETRY_DELAY_S", 0.0)

    async def scenario() -> None:
        kafka_zk = _FakeKafkaZk()
        kafka_zk.topics["t"] = TopicAssignment(None, {0: [1, 2], 1: [2, 1]})
        for p in (0, 1):
            kafka_zk.states[("t", p)] = (PartitionState(1, 0, [1, 2], 1), 0)
        changes: list[ClusterChange] = []
        watch = ClusterWatch(cast(KafkaZk, kafka_zk), changes.append)
        await watch.start()
        reads = 0
        read_states = kafka_zk.get_many_partition_states

        async def second_read_fails(
            partitions: Sequence[tuple[str, int]],
            on_malformed: MalformedHandler | None = None,
            arm: bool = False,
        ) -> dict[tuple[str, int], tuple[PartitionState, int] | None]:
            nonlocal reads
            reads += 1
            if reads == 2:
                raise ZkError("connection lost")
            return await read_states(partitions, on_malformed, arm)

        monkeypatch.setattr(kafka_zk, "get_many_partition_states", second_read_fails)
        for p in (0, 1):
            kafka_zk.states[("t", p)] = (PartitionState(2, 1, [2], 1), 1)
            kafka_zk.client.fire("data", f"/brokers/topics/t/partitions/{p}/state")
        # The first refresh read partition 0 into the view, then failed on partition 1; the
        # retry finds partition 0 unchanged but still announces it.
        await _wait_until(lambda: reads >= 4, "the retried refresh")
        await _wait_until(lambda: bool(changes), "an announcement")
        announced = set().union(*(change.partitions_changed for change in changes))
        assert announced == {("t", 0), ("t", 1)}
        assert watch.view.partition_states[("t", 0)][1] == 1
        await watch.stop()

    asyncio.run(scenario())
