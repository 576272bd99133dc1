"""Helpers for controller tests: a small cluster of controllers on one fake ZooKeeper."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass

from controller.config import ControllerConfig
from controller.controller import Controller, Sleep
from tests.unit.controller.fake_zk import FakeKafkaZk, FakeZkStore
from zk.znodes import PartitionState, TopicAssignment

WAIT_BOUND_S = 2.0


async def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll `condition` on the loop until it holds, failing after WAIT_BOUND_S."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_BOUND_S
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.001)


async def settle(*controllers: Controller) -> None:
    """Let every queued event run: wait until the event queues stay empty for a few turns."""
    quiet_turns = 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_BOUND_S
    while quiet_turns < 20:
        if loop.time() > deadline:
            raise AssertionError("controller events did not settle")
        quiet_turns = quiet_turns + 1 if all(c.idle() for c in controllers) else 0
        await asyncio.sleep(0)


def add_topic(
    store: FakeZkStore,
    topic: str,
    assignment: dict[int, list[int]],
    states: dict[int, PartitionState] | None = None,
    configs: dict[str, str] | None = None,
) -> None:
    """A topic as ZooKeeper holds it before the controller looks (no watch fired)."""
    store.topics[topic] = TopicAssignment(topic_id="AAAAAAAAAAAAAAAAAAAAAA", partitions=assignment)
    store.topic_configs[topic] = dict(configs or {})
    for partition, state in (states or {}).items():
        store.partition_states[(topic, partition)] = (state, 0)


def state(
    leader: int, isr: list[int], leader_epoch: int = 0, controller_epoch: int = 1
) -> PartitionState:
    return PartitionState(
        leader=leader, leader_epoch=leader_epoch, isr=isr, controller_epoch=controller_epoch
    )


class ManualSleeps:
    """A stand-in for asyncio.sleep whose sleeps end only when the test says so, so that
    back-offs are tested without waiting for (or racing against) the clock."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, asyncio.Future[None]]] = []
        self.requested: list[float] = []

    async def __call__(self, delay_s: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.requested.append(delay_s)
        self.pending.append((delay_s, future))
        await future

    def waiting(self, delay_s: float) -> int:
        """How many sleeps of `delay_s` are in progress."""
        return sum(1 for delay, future in self.pending if delay == delay_s and not future.done())

    def wake(self, delay_s: float) -> None:
        """End every sleep of `delay_s` in progress."""
        for delay, future in self.pending:
            if delay == delay_s and not future.done():
                future.set_result(None)
        self.pending = [(d, f) for d, f in self.pending if not f.done()]


async def no_sleep(delay_s: float) -> None:
    """Back-offs that end at once (only yields to the loop)."""
    await asyncio.sleep(0)


def new_controller(
    store: FakeZkStore,
    broker_id: int,
    config: ControllerConfig | None = None,
    sleep: Sleep = no_sleep,
) -> tuple[Controller, FakeKafkaZk]:
    kafka_zk = FakeKafkaZk(store)
    controller = Controller(
        kafka_zk,
        broker_id,
        config or ControllerConfig(),
        rng=random.Random(broker_id),
        sleep=sleep,
    )
    return controller, kafka_zk


@dataclass
class Cluster:
    store: FakeZkStore
    controllers: list[Controller]
    sessions: dict[int, FakeKafkaZk]  # broker id -> its ZooKeeper session

    def controller(self, broker_id: int) -> Controller:
        return next(c for c in self.controllers if c.broker_id == broker_id)

    def active(self) -> Controller:
        winners = [c for c in self.controllers if c.is_active]
        assert len(winners) == 1, f"expected one active controller, got {len(winners)}"
        return winners[0]

    async def settle(self) -> None:
        await settle(*self.controllers)

    async def stop(self) -> None:
        for controller in self.controllers:
            await controller.stop()


async def start_cluster(
    store: FakeZkStore,
    broker_ids: list[int],
    config: ControllerConfig | None = None,
    sleep: Sleep = no_sleep,
) -> Cluster:
    """Register the brokers, start one controller each (in order, so the first broker wins),
    and return once the election is over and its consequences handled."""
    cluster = Cluster(store, [], {})
    for broker_id in broker_ids:
        controller, kafka_zk = new_controller(store, broker_id, config, sleep)
        store.register_broker(broker_id, kafka_zk.session_id)
        cluster.controllers.append(controller)
        cluster.sessions[broker_id] = kafka_zk
    for controller in cluster.controllers:
        await controller.start()
    await wait_until(lambda: any(c.is_active for c in cluster.controllers), "an election")
    await cluster.settle()
    return cluster
