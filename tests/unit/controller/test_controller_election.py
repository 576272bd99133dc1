"""Controller election, failover, fencing and broker changes against the fake ZooKeeper."""

from __future__ import annotations

import asyncio

from controller.config import ControllerConfig
from tests.unit.controller.fake_zk import FakeZkStore
from tests.unit.controller.harness import (
    add_topic,
    new_controller,
    start_cluster,
    state,
    wait_until,
)


def test_one_broker_wins_the_election_and_the_others_lose() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2, 3])
        winner = cluster.active()
        assert store.controller is not None
        assert store.controller[0] == winner.broker_id
        assert winner.epoch == 1
        assert [c.epoch for c in cluster.controllers if c is not winner] == [-1, -1]
        await cluster.stop()

    asyncio.run(scenario())


def test_winner_creates_states_for_partitions_without_state() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        store.controller_epoch, store.controller_epoch_zk_version = 4, 3
        add_topic(store, "orders", {0: [3, 1, 2], 1: [4, 2, 1]})
        cluster = await start_cluster(store, [1, 2, 3])
        created = {p: s for (t, p), (s, _) in store.partition_states.items() if t == "orders"}
        # Broker 4 is not registered: it is neither leader nor in the ISR.
        assert created == {
            0: state(leader=3, isr=[3, 1, 2], leader_epoch=0, controller_epoch=5),
            1: state(leader=2, isr=[2, 1], leader_epoch=0, controller_epoch=5),
        }
        await cluster.stop()

    asyncio.run(scenario())


def test_winner_elects_leaders_for_partitions_whose_leader_is_dead() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [5, 2, 1]}, {0: state(leader=5, isr=[5, 1], leader_epoch=3)})
        cluster = await start_cluster(store, [1, 2])
        assert store.partition_states[("t", 0)] == (
            state(leader=1, isr=[1], leader_epoch=4, controller_epoch=1),
            1,
        )
        await cluster.stop()

    asyncio.run(scenario())


def test_new_controller_is_elected_when_the_controller_broker_crashes() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2, 3])
        first = cluster.active()
        crashed = cluster.sessions[first.broker_id]
        crashed.closed = True  # every later call of the crashed broker fails
        store.expire_session(crashed.session_id)
        others = [c for c in cluster.controllers if c is not first]
        await wait_until(lambda: any(c.is_active for c in others), "re-election")
        await cluster.settle()
        second = cluster.active()
        assert second.epoch == 2
        assert not first.is_active
        await cluster.stop()

    asyncio.run(scenario())


def test_stop_resigns_so_another_broker_takes_over() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2])
        first, second = cluster.controller(1), cluster.controller(2)
        assert first.is_active
        await first.stop()
        await wait_until(lambda: second.is_active, "the other broker is elected")
        assert store.controller is not None
        assert store.controller[0] == 2
        assert second.epoch == 2
        await second.stop()
        assert store.controller is None

    asyncio.run(scenario())


def test_leader_moves_and_epoch_bumps_when_leader_broker_dies() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(
            store,
            "t",
            {0: [3, 1, 2], 1: [1, 2, 3]},
            {0: state(3, [3, 1, 2], leader_epoch=7), 1: state(1, [1, 2, 3], leader_epoch=2)},
        )
        cluster = await start_cluster(store, [1, 2, 3])
        assert cluster.active().broker_id == 1
        store.kill_broker(3)
        await cluster.settle()
        leader_died, _ = store.partition_states[("t", 0)]
        follower_died, _ = store.partition_states[("t", 1)]
        assert (leader_died.leader, leader_died.isr, leader_died.leader_epoch) == (1, [1, 2], 8)
        assert (follower_died.leader, follower_died.isr, follower_died.leader_epoch) == (
            1,
            [1, 2],
            3,
        )
        assert leader_died.controller_epoch == 1
        await cluster.stop()

    asyncio.run(scenario())


def test_partition_goes_offline_with_last_isr_kept_then_recovers_when_broker_returns() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [2, 3]}, {0: state(2, [2])})
        cluster = await start_cluster(store, [1, 2, 3])
        assert cluster.active().broker_id == 1
        store.kill_broker(2)
        await cluster.settle()
        assert store.partition_states[("t", 0)][0] == state(-1, [2], leader_epoch=1)
        store.register_broker(2)
        await cluster.settle()
        assert store.partition_states[("t", 0)][0] == state(2, [2], leader_epoch=2)
        await cluster.stop()

    asyncio.run(scenario())


def test_offline_leader_when_last_isr_dead_and_topic_enables_unclean_election() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(
            store,
            "t",
            {0: [2, 3]},
            {0: state(2, [2])},
            configs={"unclean.leader.election.enable": "true"},
        )
        cluster = await start_cluster(store, [1, 2, 3])
        store.kill_broker(2)
        await cluster.settle()
        assert store.partition_states[("t", 0)][0] == state(3, [3], leader_epoch=1)
        await cluster.stop()

    asyncio.run(scenario())


def test_broker_default_unclean_election_applies_when_topic_does_not_override() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [2, 3]}, {0: state(2, [2])})
        config = ControllerConfig(unclean_leader_election_enable=True)
        cluster = await start_cluster(store, [1, 2, 3], config)
        store.kill_broker(2)
        await cluster.settle()
        assert store.partition_states[("t", 0)][0] == state(3, [3], leader_epoch=1)
        await cluster.stop()

    asyncio.run(scenario())


def test_topic_config_disabling_unclean_election_overrides_broker_default() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(
            store,
            "t",
            {0: [2, 3]},
            {0: state(2, [2])},
            configs={"unclean.leader.election.enable": "false"},
        )
        config = ControllerConfig(unclean_leader_election_enable=True)
        cluster = await start_cluster(store, [1, 2, 3], config)
        store.kill_broker(2)
        await cluster.settle()
        assert store.partition_states[("t", 0)][0] == state(-1, [2], leader_epoch=1)
        await cluster.stop()

    asyncio.run(scenario())


def test_zombie_controller_is_fenced_and_resigns() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [2, 3]}, {0: state(2, [2, 3])})
        cluster = await start_cluster(store, [1, 2, 3])
        zombie = cluster.active()
        assert zombie.broker_id == 1
        # Another broker won an election the zombie did not hear about (e.g. it was paused).
        store.bump_controller_epoch()
        store.controller = (2, 99)
        before = store.partition_states[("t", 0)]
        store.kill_broker(2)
        await wait_until(lambda: not zombie.is_active, "the zombie resigns")
        await cluster.settle()
        assert store.fenced_writes == 1
        assert store.partition_states[("t", 0)] == before
        assert not any(c.is_active for c in cluster.controllers)
        await cluster.stop()

    asyncio.run(scenario())


def test_session_loss_makes_the_controller_resign_and_re_elect() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        controller, kafka_zk = new_controller(store, 1)
        store.register_broker(1, 999)  # registration owned by another session: it survives
        await controller.start()
        await wait_until(lambda: controller.is_active, "election")
        store.expire_session(kafka_zk.session_id)
        await wait_until(lambda: controller.epoch == 2, "re-election with a new epoch")
        for _ in range(20):  # the LOST notification must not depose the new election
            await asyncio.sleep(0)
        assert controller.is_active
        await controller.stop()

    asyncio.run(scenario())


def test_controller_rereads_partition_changed_by_leader_and_retries() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2, 3]}, {0: state(1, [1, 2, 3])})
        cluster = await start_cluster(store, [1, 2, 3])
        assert cluster.active().broker_id == 1
        changed: list[bool] = []

        def leader_shrinks_isr_first() -> None:
            if not changed:
                changed.append(True)
                cluster.sessions[1].leader_changes_isr("t", 0, [1, 2])

        cluster.sessions[1].before_fenced_write = leader_shrinks_isr_first
        store.kill_broker(2)
        await cluster.settle()
        final, version = store.partition_states[("t", 0)]
        assert changed
        assert (final.leader, final.isr, final.leader_epoch, version) == (1, [1], 1, 2)
        await cluster.stop()

    asyncio.run(scenario())


def test_restarted_broker_loses_leadership_and_isr_membership() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [2, 1]}, {0: state(2, [2, 1])})
        cluster = await start_cluster(store, [1, 2, 3])
        assert cluster.active().broker_id == 1
        store.bounce_broker(2)
        await cluster.settle()
        assert store.partition_states[("t", 0)][0] == state(1, [1], leader_epoch=1)
        await cluster.stop()

    asyncio.run(scenario())


def test_a_fenced_controller_stops_at_once_and_rechecks_controller_when_unfenced() -> None:
    """Self-fencing (broker.cluster.session_fence): the controller stops acting without waiting
    for its event queue, elects nothing while fenced, and, its session having survived, gives
    up the /controller it still holds once unfenced, so that the next election decides."""

    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2])
        fenced = cluster.active()
        old_epoch = fenced.epoch
        fenced.fence()
        assert not fenced.is_active
        await cluster.settle()
        assert store.controller is not None and store.controller[0] == fenced.broker_id
        assert not any(c.is_active for c in cluster.controllers), "nobody acts while fenced"
        fenced.unfence()
        await wait_until(
            lambda: any(c.is_active for c in cluster.controllers), "a controller elected again"
        )
        await cluster.settle()
        assert cluster.active().epoch > old_epoch
        await cluster.stop()

    asyncio.run(scenario())
