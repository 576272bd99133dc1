"""Controlled shutdown on the controller: the election rules, and the request against the fake
ZooKeeper (leadership moves, ISR shrinks, refusals, exclusion from later elections)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from controller.controlled_shutdown import (
    BROKER_NOT_AVAILABLE,
    STALE_BROKER_EPOCH,
    UNKNOWN_BROKER_EPOCH,
    isr_without_follower,
    leader_for_controlled_shutdown,
)
from controller.election import LeaderAndIsr
from controller.errors import NONE, NOT_CONTROLLER
from controller.state_change_log import LOGGER_NAME
from tests.unit.controller.fake_zk import FakeZkStore
from tests.unit.controller.harness import add_topic, start_cluster, state
from tests.unit.controller.test_isr_change_notification import leader_changes_isr


def test_new_leader_is_first_assigned_live_isr_replica_not_shutting_down() -> None:
    decision = leader_for_controlled_shutdown(
        assignment=[1, 2, 3, 4], isr=[4, 3, 1, 2], live_brokers={1, 2, 3, 4}, shutting_down={1, 2}
    )
    assert decision == LeaderAndIsr(leader=3, isr=[4, 3])


def test_no_new_leader_when_every_other_isr_member_is_shutting_down_or_dead() -> None:
    assert leader_for_controlled_shutdown([1, 2, 3], [1, 2, 3], {1, 2}, {1, 2}) is None
    assert leader_for_controlled_shutdown([1, 2, 3], [1], {1, 2, 3}, {1}) is None


def test_follower_leaves_the_isr_but_never_empties_it() -> None:
    assert isr_without_follower(1, [1, 2, 3], 2) == LeaderAndIsr(1, [1, 3])
    assert isr_without_follower(1, [2], 2) is None
    assert isr_without_follower(1, [1, 3], 2) is None


def _store_with_topic() -> FakeZkStore:
    store = FakeZkStore()
    add_topic(
        store,
        "t",
        {0: [2, 1, 3], 1: [1, 2, 3], 2: [3, 2, 1], 3: [2]},
        {
            0: state(leader=2, isr=[2, 1, 3]),
            1: state(leader=1, isr=[1, 2, 3]),
            2: state(leader=3, isr=[3, 1]),
            3: state(leader=2, isr=[2]),
        },
    )
    return store


def test_controlled_shutdown_moves_leadership_and_shrinks_isrs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        store = _store_with_topic()
        cluster = await start_cluster(store, [1, 2, 3])
        active = cluster.active()
        epoch = store.broker_epochs[2]
        with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
            result = await active.controlled_shutdown(2, epoch)
        assert result.error_code == NONE
        assert result.remaining_partitions == []  # t-3 has one replica: nothing to move
        states = {p: s for (t, p), (s, _) in store.partition_states.items() if t == "t"}
        assert (states[0].leader, states[0].isr) == (1, [1, 3])
        assert (states[1].leader, states[1].isr) == (1, [1, 3])
        assert (states[2].leader, states[2].isr) == (3, [3, 1])  # 2 was not in the ISR
        assert (states[3].leader, states[3].isr) == (2, [2])
        assert states[0].leader_epoch == 1
        reasons = [r.getMessage() for r in caplog.records if r.name == LOGGER_NAME]
        assert any("t-0" in m and "reason: controlled shutdown" in m for m in reasons)
        assert active.context is not None
        assert active.context.shutting_down_brokers == {2}
        await cluster.stop()

    asyncio.run(scenario())


def test_partitions_without_another_isr_member_are_reported_remaining() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [2, 1]}, {0: state(leader=2, isr=[2])})
        cluster = await start_cluster(store, [1, 2])
        result = await cluster.active().controlled_shutdown(2, UNKNOWN_BROKER_EPOCH)
        assert result.error_code == NONE
        assert result.remaining_partitions == [("t", 0)]
        assert store.partition_states[("t", 0)][0].leader == 2
        await cluster.stop()

    asyncio.run(scenario())


def test_refusals_stale_epoch_unknown_broker_and_not_controller() -> None:
    async def scenario() -> None:
        store = _store_with_topic()
        cluster = await start_cluster(store, [1, 2, 3])
        active = cluster.active()
        stale = await active.controlled_shutdown(2, store.broker_epochs[2] - 1)
        assert stale.error_code == STALE_BROKER_EPOCH
        unknown = await active.controlled_shutdown(7, UNKNOWN_BROKER_EPOCH)
        assert unknown.error_code == BROKER_NOT_AVAILABLE
        other = next(c for c in cluster.controllers if c is not active)
        assert (await other.controlled_shutdown(2, UNKNOWN_BROKER_EPOCH)).error_code == (
            NOT_CONTROLLER
        )
        assert store.partition_states[("t", 0)][0].leader == 2  # nothing moved
        await cluster.stop()

    asyncio.run(scenario())


def test_broker_shutting_down_is_not_elected_until_it_deregisters() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [3, 2, 1]}, {0: state(leader=3, isr=[3, 2, 1])})
        cluster = await start_cluster(store, [1, 2, 3])
        active = cluster.active()  # broker 1
        # Broker 2 asks first; it follows t-0 and leaves its ISR.
        assert (await active.controlled_shutdown(2, UNKNOWN_BROKER_EPOCH)).error_code == NONE
        assert store.partition_states[("t", 0)][0].isr == [3, 1]
        # Its fetches were still in flight: the leader takes it back into the ISR.
        await leader_changes_isr(cluster.sessions[3], "t", 0, [3, 2, 1])
        await cluster.settle()
        # The leader dies: broker 2 is in the ISR but shutting down, so 1 is elected.
        store.kill_broker(3)
        await cluster.settle()
        leader_state = store.partition_states[("t", 0)][0]
        assert (leader_state.leader, leader_state.isr) == (1, [1])
        # Broker 2 deregisters and comes back: it is a candidate again.
        store.kill_broker(2)
        await cluster.settle()
        assert active.context is not None
        assert active.context.shutting_down_brokers == set()
        await cluster.stop()

    asyncio.run(scenario())
