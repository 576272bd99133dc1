"""Partition writes that keep losing races to leaders' ISR writes (beyond MAX_WRITE_ATTEMPTS)
are decided again on the controller's retry timer, not left for some later ZooKeeper change."""

from __future__ import annotations

import asyncio

from controller.config import ControllerConfig
from controller.partition_state_machine import MAX_WRITE_ATTEMPTS
from controller.unsettled_retry import FIRST_RETRY_BACKOFF_S, MAX_RETRY_BACKOFF_S
from tests.unit.controller.fake_zk import FakeZkStore
from tests.unit.controller.harness import (
    ManualSleeps,
    add_topic,
    start_cluster,
    state,
    wait_until,
)
from zk.znodes import PreferredReplicaElectionZNode

TP = ("t", 0)


class _RacingLeader:
    """Before each of the next `races` controller writes, the partition's leader rewrites its
    state (same content, new zkVersion), so the controller's conditional write fails."""

    def __init__(self, store: FakeZkStore, races: int) -> None:
        self.store = store
        self.races = races

    def __call__(self) -> None:
        if self.races > 0:
            self.races -= 1
            current, version = self.store.partition_states[TP]
            self.store.partition_states[TP] = (current, version + 1)


def test_partition_that_keeps_changing_is_elected_on_the_retry_timer_once_racing_stops() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [3, 1, 2]}, {0: state(3, [3, 1, 2])})
        store.register_broker(3)  # the leader, without a controller of its own
        sleeps = ManualSleeps()
        cluster = await start_cluster(store, [1, 2], sleep=sleeps)
        racing = _RacingLeader(store, races=2 * MAX_WRITE_ATTEMPTS)
        cluster.sessions[cluster.active().broker_id].before_fenced_write = racing
        store.kill_broker(3)
        # The broker change loses every attempt: a retry waits, and nothing was written.
        await wait_until(lambda: sleeps.waiting(FIRST_RETRY_BACKOFF_S) == 1, "first retry")
        await cluster.settle()
        assert store.partition_states[TP][0].leader == 3
        # The first retry loses its races too: the next one waits twice as long.
        sleeps.wake(FIRST_RETRY_BACKOFF_S)
        await wait_until(lambda: sleeps.waiting(2 * FIRST_RETRY_BACKOFF_S) == 1, "second retry")
        assert racing.races == 0
        assert store.partition_states[TP][0].leader == 3
        # The racing stopped; no ZooKeeper change follows, the timer alone elects.
        sleeps.wake(2 * FIRST_RETRY_BACKOFF_S)
        await wait_until(lambda: store.partition_states[TP][0].leader == 1, "new leader")
        await cluster.settle()
        assert store.partition_states[TP][0] == state(1, [1, 2], leader_epoch=1)
        assert not sleeps.pending  # settled: no further retry
        await cluster.stop()

    asyncio.run(scenario())


def test_retry_back_off_doubles_up_to_its_bound_and_starts_over_once_settled() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [3, 1, 2]}, {0: state(3, [3, 1, 2])})
        store.register_broker(3)  # the leader, without a controller of its own
        sleeps = ManualSleeps()
        cluster = await start_cluster(store, [1, 2], sleep=sleeps)
        racing = _RacingLeader(store, races=10_000)
        cluster.sessions[cluster.active().broker_id].before_fenced_write = racing
        store.kill_broker(3)
        delays = []
        delay_s = FIRST_RETRY_BACKOFF_S
        while delay_s < MAX_RETRY_BACKOFF_S:
            delays.append(delay_s)
            delay_s = min(2 * delay_s, MAX_RETRY_BACKOFF_S)
        delays += [MAX_RETRY_BACKOFF_S, MAX_RETRY_BACKOFF_S]
        for delay_s in delays:
            await wait_until(lambda d=delay_s: sleeps.waiting(d) == 1, f"retry after {delay_s}")
            sleeps.wake(delay_s)
        racing.races = 0
        await wait_until(lambda: store.partition_states[TP][0].leader == 1, "new leader")
        await cluster.settle()
        assert not sleeps.pending
        # A later race starts again from the first back-off.
        racing.races = MAX_WRITE_ATTEMPTS
        store.kill_broker(1)
        await wait_until(lambda: sleeps.waiting(FIRST_RETRY_BACKOFF_S) == 1, "retry after reset")
        sleeps.wake(FIRST_RETRY_BACKOFF_S)
        await wait_until(lambda: store.partition_states[TP][0].leader == 2, "leader 2")
        await cluster.stop()

    asyncio.run(scenario())


def test_resigning_drops_the_waiting_retry() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [3, 1, 2]}, {0: state(3, [3, 1, 2])})
        store.register_broker(3)  # the leader, without a controller of its own
        store.register_broker(4)
        sleeps = ManualSleeps()
        cluster = await start_cluster(store, [1, 2], sleep=sleeps)
        active = cluster.active()
        racing = _RacingLeader(store, races=MAX_WRITE_ATTEMPTS)
        cluster.sessions[active.broker_id].before_fenced_write = racing
        store.kill_broker(3)
        await wait_until(lambda: sleeps.waiting(FIRST_RETRY_BACKOFF_S) == 1, "retry")
        # Another controller took over meanwhile: the next write of this one is fenced.
        store.bump_controller_epoch()
        store.kill_broker(4)
        # The resignation cancels the retry (the next controller reconciles everything).
        await wait_until(lambda: sleeps.waiting(FIRST_RETRY_BACKOFF_S) == 0, "retry dropped")
        await cluster.stop()

    asyncio.run(scenario())


def test_controlled_shutdown_isr_removal_that_kept_changing_is_retried_on_the_timer() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2, 3]}, {0: state(1, [1, 2, 3])})
        store.register_broker(3)  # the follower shutting down, without a controller of its own
        sleeps = ManualSleeps()
        cluster = await start_cluster(store, [1, 2], sleep=sleeps)
        racing = _RacingLeader(store, races=MAX_WRITE_ATTEMPTS)
        cluster.sessions[cluster.active().broker_id].before_fenced_write = racing
        result = await cluster.active().controlled_shutdown(3, store.broker_epochs[3])
        assert result.remaining_partitions == []  # it leads nothing
        assert store.partition_states[TP][0].isr == [1, 2, 3]
        await wait_until(lambda: sleeps.waiting(FIRST_RETRY_BACKOFF_S) == 1, "retry")
        sleeps.wake(FIRST_RETRY_BACKOFF_S)
        await wait_until(lambda: store.partition_states[TP][0].isr == [1, 2], "ISR without 3")
        assert store.partition_states[TP][0].leader == 1
        await cluster.stop()

    asyncio.run(scenario())


def test_znode_preferred_election_that_kept_changing_is_retried_on_the_timer() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2]}, {0: state(2, [2, 1])})
        sleeps = ManualSleeps()
        config = ControllerConfig(auto_leader_rebalance_enable=False)
        cluster = await start_cluster(store, [1, 2], config, sleep=sleeps)
        racing = _RacingLeader(store, races=MAX_WRITE_ATTEMPTS)
        cluster.sessions[cluster.active().broker_id].before_fenced_write = racing
        store.request_preferred_replica_election(PreferredReplicaElectionZNode.encode([TP]))
        await wait_until(lambda: sleeps.waiting(FIRST_RETRY_BACKOFF_S) == 1, "retry")
        assert store.preferred_replica_election is None  # deleted whatever the outcome
        assert store.partition_states[TP][0].leader == 2
        sleeps.wake(FIRST_RETRY_BACKOFF_S)
        await wait_until(lambda: store.partition_states[TP][0].leader == 1, "preferred leader")
        await cluster.stop()

    asyncio.run(scenario())
