"""A broker's log dir failed: it wrote its offline replicas and a log dir event notification;
the active controller elects new leaders for the partitions those replicas led, drops them
from ISRs, never elects them, and deletes the notification (Kafka's onBrokerLogDirFailure)."""

from __future__ import annotations

import asyncio

from tests.unit.controller.fake_zk import FakeZkStore
from tests.unit.controller.harness import Cluster, add_topic, start_cluster, state


async def cluster_with_topic(store: FakeZkStore) -> Cluster:
    # Broker 2 leads t-0 and t-1, follows t-2; broker 3 holds nothing of u.
    add_topic(
        store,
        "t",
        {0: [2, 1, 3], 1: [2, 3, 1], 2: [1, 2, 3]},
        {0: state(2, [2, 1, 3]), 1: state(2, [2, 3, 1]), 2: state(1, [1, 2, 3])},
    )
    add_topic(store, "u", {0: [1, 2]}, {0: state(1, [1, 2])})
    cluster = await start_cluster(store, [1, 2, 3])
    assert cluster.active().broker_id == 1
    return cluster


def stored(store: FakeZkStore, topic: str, partition: int) -> tuple[int, list[int], int]:
    current, _ = store.partition_states[(topic, partition)]
    return current.leader, list(current.isr), current.leader_epoch


def test_partitions_led_by_offline_replicas_get_new_leaders() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await cluster_with_topic(store)
        store.fail_log_dir(2, [("t", 0), ("t", 2)])
        await cluster.settle()
        # t-0's replica on 2 is offline: the next ISR member leads, 2 leaves the ISR.
        assert stored(store, "t", 0) == (1, [1, 3], 1)
        # t-1's replica on 2 is online: 2 keeps leading, nothing changes.
        assert stored(store, "t", 1) == (2, [2, 3, 1], 0)
        # t-2 is led by 1; the offline follower on 2 leaves the ISR.
        assert stored(store, "t", 2) == (1, [1, 3], 1)
        assert stored(store, "u", 0) == (1, [1, 2], 0)
        assert store.log_dir_events == {}
        await cluster.stop()

    asyncio.run(scenario())


def test_offline_replica_is_never_elected_while_its_broker_lives() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await cluster_with_topic(store)
        store.fail_log_dir(3, [("t", 0)])
        await cluster.settle()
        assert stored(store, "t", 0) == (2, [2, 1], 1)
        store.kill_broker(2)
        store.kill_broker(1)
        await cluster.settle()
        # Broker 3 lives, but its replica of t-0 is offline: no leader (and the last ISR
        # member stays, for a clean election when it returns).
        leader, isr, _ = stored(store, "t", 0)
        assert leader == -1 and isr == [1]
        await cluster.stop()

    asyncio.run(scenario())


def test_restarted_broker_without_failed_dirs_is_electable_again() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await cluster_with_topic(store)
        store.fail_log_dir(2, [("t", 0), ("t", 1)])
        await cluster.settle()
        assert stored(store, "t", 1)[0] == 3
        store.kill_broker(2)  # its offline list goes with its session
        await cluster.settle()
        store.register_broker(2, session_id=cluster.sessions[2].session_id)
        await cluster.settle()
        context = cluster.active().context
        assert context is not None and 2 not in context.offline_replicas
        assert context.live_replicas(("t", 1)) == {1, 2, 3}
        await cluster.stop()

    asyncio.run(scenario())


def test_new_controller_learns_offline_replicas_at_failover() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await cluster_with_topic(store)
        store.fail_log_dir(3, [("t", 1)])
        await cluster.settle()
        store.expire_session(cluster.sessions[1].session_id)  # the controller dies
        await cluster.settle()
        # Whoever won (broker 1 too may win again, with its new session), its context was
        # loaded at this failover: epoch 2.
        context = cluster.active().context
        assert context is not None and context.epoch == 2
        assert context.offline_replicas == {3: frozenset({("t", 1)})}
        store.kill_broker(2)
        await cluster.settle()
        # t-1's other replicas are dead and 3's is offline: it stays without a leader.
        assert stored(store, "t", 1)[0] == -1
        await cluster.stop()

    asyncio.run(scenario())
