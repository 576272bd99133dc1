"""ISR change propagation in ZooKeeper mode: a partition leader rewrites the ISR with a
conditional (unfenced) write of the state znode plus an /isr_change_notification child; the
active controller re-reads the partitions named, adopts their state and zkVersion, and deletes
the notification (Kafka's processIsrChangeNotification)."""

from __future__ import annotations

import asyncio

import pytest

from controller import isr_change_notification
from tests.unit.controller.fake_zk import ISR_CHANGE_NOTIFICATION, FakeKafkaZk, FakeZkStore
from tests.unit.controller.harness import Cluster, add_topic, start_cluster, state, wait_until
from zk.errors import ConnectionLossError
from zk.znodes import PartitionState


async def leader_changes_isr(
    leader_session: FakeKafkaZk, topic: str, partition: int, isr: list[int]
) -> int:
    """What a partition leader does: conditional write at the zkVersion it knows, keeping
    leader, leader epoch and controller epoch, then a notification. Returns the new zkVersion."""
    current, zk_version = leader_session.store.partition_states[(topic, partition)]
    changed = PartitionState(current.leader, current.leader_epoch, isr, current.controller_epoch)
    new_version = await leader_session.conditional_update_partition_state_as_leader(
        topic, partition, changed, zk_version
    )
    await leader_session.create_isr_change_notification([(topic, partition)])
    return new_version


async def three_broker_cluster_with_topic(store: FakeZkStore) -> Cluster:
    add_topic(store, "t", {0: [1, 2, 3], 1: [2, 3, 1]}, {0: state(1, [1, 2, 3])})
    store.partition_states[("t", 1)] = (state(2, [2, 3, 1]), 0)
    cluster = await start_cluster(store, [1, 2, 3])
    assert cluster.active().broker_id == 1
    return cluster


def context_state(cluster: Cluster, topic: str, partition: int) -> tuple[PartitionState, int]:
    context = cluster.active().context
    assert context is not None
    return context.partition_states[(topic, partition)]


def test_leader_isr_shrink_refreshes_controller_state_and_zk_version() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await three_broker_cluster_with_topic(store)
        assert context_state(cluster, "t", 0) == (state(1, [1, 2, 3]), 0)

        new_version = await leader_changes_isr(cluster.sessions[1], "t", 0, [1, 2])
        await cluster.settle()

        assert new_version == 1
        assert context_state(cluster, "t", 0) == (state(1, [1, 2]), 1)
        # The partition not named keeps what the controller had.
        assert context_state(cluster, "t", 1) == (state(2, [2, 3, 1]), 0)
        await cluster.stop()

    asyncio.run(scenario())


def test_processed_isr_change_notification_is_deleted() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await three_broker_cluster_with_topic(store)
        await leader_changes_isr(cluster.sessions[1], "t", 0, [1, 3])
        await leader_changes_isr(cluster.sessions[2], "t", 1, [2, 1])
        await cluster.settle()

        assert store.isr_change_notifications == {}
        assert context_state(cluster, "t", 0) == (state(1, [1, 3]), 1)
        assert context_state(cluster, "t", 1) == (state(2, [2, 1]), 1)
        await cluster.stop()

    asyncio.run(scenario())


def test_isr_change_notification_for_unknown_topic_is_ignored_and_deleted() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await three_broker_cluster_with_topic(store)
        # A state znode the controller has no topic for (say, of a topic deleted meanwhile),
        # and a partition number the known topic does not have.
        store.partition_states[("ghost", 0)] = (state(1, [1]), 3)
        await cluster.sessions[1].create_isr_change_notification([("ghost", 0), ("t", 7)])
        await cluster.settle()

        context = cluster.active().context
        assert context is not None
        assert ("ghost", 0) not in context.partition_states
        assert ("t", 7) not in context.partition_states
        assert "ghost" not in context.assignments
        assert store.isr_change_notifications == {}
        await cluster.stop()

    asyncio.run(scenario())


def test_leader_death_after_isr_shrink_elects_from_new_isr_at_new_zk_version() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await three_broker_cluster_with_topic(store)
        # Broker 2 leads t-1 (replicas [2, 3, 1]) and drops 3 from the ISR; then it dies.
        await leader_changes_isr(cluster.sessions[2], "t", 1, [2, 1])
        await cluster.settle()
        store.kill_broker(2)
        await cluster.settle()

        # With the stale ISR [2, 3, 1] the controller would pick 3, out of sync, and have its
        # write refused; with the leader's ISR it picks 1, at the leader's zkVersion.
        assert cluster.active().broker_id == 1
        final, zk_version = store.partition_states[("t", 1)]
        assert (final.leader, final.isr, final.leader_epoch, zk_version) == (1, [1], 1, 2)
        assert store.bad_version_writes == 0
        await cluster.stop()

    asyncio.run(scenario())


def test_follower_death_after_leader_isr_change_is_written_at_leaders_zk_version() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await three_broker_cluster_with_topic(store)
        await leader_changes_isr(cluster.sessions[1], "t", 0, [1, 2])
        await cluster.settle()
        # The same controller stays active: its next write must be conditional on the
        # zkVersion the leader produced, not on the one it wrote or read itself.
        store.kill_broker(2)
        await cluster.settle()

        assert cluster.active().broker_id == 1
        final, zk_version = store.partition_states[("t", 0)]
        assert (final.leader, final.isr, final.leader_epoch, zk_version) == (1, [1], 1, 2)
        assert store.bad_version_writes == 0
        assert context_state(cluster, "t", 0) == (final, 2)
        await cluster.stop()

    asyncio.run(scenario())


def test_without_notification_a_stale_write_is_refused_then_retried() -> None:
    """The contrast to the tests above: an ISR change the controller is not told about costs
    a refused write (and a re-read) before the controller's change gets through."""

    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await three_broker_cluster_with_topic(store)
        cluster.sessions[1].leader_changes_isr("t", 0, [1, 2])  # no notification
        store.kill_broker(2)
        await cluster.settle()

        final, zk_version = store.partition_states[("t", 0)]
        assert (final.leader, final.isr, zk_version) == (1, [1], 2)
        assert store.bad_version_writes == 1
        await cluster.stop()

    asyncio.run(scenario())


def test_notifications_present_at_failover_are_processed_and_deleted() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2, 3]}, {0: state(1, [1, 2, 3])})
        # Written while there was no controller: no watch will fire for it.
        store.partition_states[("t", 0)] = (state(1, [1, 2]), 1)
        store.add_isr_change_notification(
            b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
        )
        cluster = await start_cluster(store, [1, 2, 3])

        assert store.isr_change_notifications == {}
        assert context_state(cluster, "t", 0) == (state(1, [1, 2]), 1)
        await cluster.stop()

    asyncio.run(scenario())


def test_malformed_isr_change_notification_is_deleted_without_changing_state() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await three_broker_cluster_with_topic(store)
        store.add_isr_change_notification(b"not json")
        store.add_isr_change_notification(b'{"version":1}')
        await cluster.settle()

        assert store.isr_change_notifications == {}
        assert context_state(cluster, "t", 0) == (state(1, [1, 2, 3]), 0)
        assert cluster.active().is_active
        await cluster.stop()

    asyncio.run(scenario())


def test_notifications_beyond_the_per_event_bound_are_handled_by_a_follow_up_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(isr_change_notification, "MAX_ISR_CHANGE_NOTIFICATIONS_PER_EVENT", 2)

    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await three_broker_cluster_with_topic(store)
        # Queued before the controller runs: one watch event for all five.
        for isr in ([1, 2], [1], [1, 3], [1, 2, 3], [1, 3]):
            await leader_changes_isr(cluster.sessions[1], "t", 0, isr)
        await cluster.settle()

        assert store.isr_change_notifications == {}
        assert context_state(cluster, "t", 0) == (state(1, [1, 3]), 5)
        await cluster.stop()

    asyncio.run(scenario())


def test_isr_change_read_failure_is_retried_on_a_timer() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await three_broker_cluster_with_topic(store)
        cluster.sessions[1].fail_next("read_isr_change_notifications", ConnectionLossError())
        await leader_changes_isr(cluster.sessions[2], "t", 1, [2, 3])
        # Nothing else changes in ZooKeeper: the reconcile retry must pick the notification up.
        await wait_until(lambda: not store.isr_change_notifications, "notification consumed")
        await cluster.settle()

        assert context_state(cluster, "t", 1) == (state(2, [2, 3]), 1)
        await cluster.stop()

    asyncio.run(scenario())


def test_deposed_controller_cannot_delete_isr_change_notifications() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await three_broker_cluster_with_topic(store)
        zombie = cluster.active()
        # Another broker won an election the zombie did not hear about.
        store.bump_controller_epoch()
        store.controller = (2, 99)
        await leader_changes_isr(cluster.sessions[3], "t", 0, [1, 3])
        await wait_until(lambda: not zombie.is_active, "the zombie resigns")
        await cluster.settle()

        assert store.fenced_writes == 1
        assert len(store.isr_change_notifications) == 1  # left for the real controller
        await cluster.stop()

    asyncio.run(scenario())


def test_only_the_active_controller_watches_isr_change_notifications() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await three_broker_cluster_with_topic(store)

        def watchers(broker_id: int) -> int:
            watches = cluster.sessions[broker_id].client.watches
            return len(watches.get(("children", ISR_CHANGE_NOTIFICATION), []))

        assert [watchers(b) for b in (1, 2, 3)] == [1, 0, 0]
        await cluster.controller(1).stop()
        await wait_until(
            lambda: any(c.is_active for c in cluster.controllers), "another broker takes over"
        )
        await cluster.settle()
        successor = cluster.active().broker_id
        assert successor != 1
        assert [watchers(b) for b in (1, 2, 3)] == [int(b == successor) for b in (1, 2, 3)]
        await cluster.stop()

    asyncio.run(scenario())
