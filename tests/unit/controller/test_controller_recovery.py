"""How the controller recovers from failures: failed failovers and resignations, event
handlers whose ZooKeeper writes failed part-way, and writes cut short by fencing."""

from __future__ import annotations

import asyncio

import pytest

from controller import partition_state_machine
from controller.config import ControllerConfig
from controller.context import ControllerContext
from controller.controller import (
    FAILED_FAILOVER_BACKOFF_S,
    RECONCILE_RETRY_BACKOFF_S,
    RESIGN_RETRY_DELAY_S,
)
from controller.partition_state_machine import PartitionStateMachine
from tests.unit.controller.fake_zk import CONTROLLER, DELETE_TOPICS, FakeKafkaZk, FakeZkStore
from tests.unit.controller.harness import (
    ManualSleeps,
    add_topic,
    new_controller,
    settle,
    start_cluster,
    state,
    wait_until,
)
from zk.errors import ConnectionLossError, ControllerMovedError, ZkError
from zk.znodes import PartitionState, TopicAssignment, ZnodeDecodeError

# ------------------------------------------------------------------ failed failover


def test_failed_failover_holds_controller_during_backoff_so_elections_do_not_storm() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        # Every broker's failover fails the same way (say, a znode nobody can decode).
        store.failing["get_all_topics"] = ZnodeDecodeError("bad topic list")
        sleeps = ManualSleeps()
        cluster = [new_controller(store, broker_id, sleep=sleeps) for broker_id in (1, 2, 3)]
        for broker_id, (_, kafka_zk) in zip((1, 2, 3), cluster, strict=True):
            store.register_broker(broker_id, kafka_zk.session_id)
        controllers = [controller for controller, _ in cluster]
        for controller in controllers:
            await controller.start()
        await wait_until(lambda: sleeps.waiting(FAILED_FAILOVER_BACKOFF_S) == 1, "backoff")
        assert store.controller is not None
        failed_id = store.controller[0]
        # The failed broker keeps /controller while it backs off: the others, having handled
        # every event, do not elect.
        await settle(*[c for c in controllers if c.broker_id != failed_id])
        assert store.controller_epoch == 1
        assert not any(c.is_active for c in controllers)

        del store.failing["get_all_topics"]
        sleeps.wake(FAILED_FAILOVER_BACKOFF_S)
        await wait_until(lambda: any(c.is_active for c in controllers), "re-election")
        await settle(*controllers)
        assert store.controller is not None
        assert store.controller_epoch == 2
        assert sleeps.requested == [FAILED_FAILOVER_BACKOFF_S]
        for controller in controllers:
            await controller.stop()

    asyncio.run(scenario())


def test_resignation_after_failed_failover_is_retried_on_connection_loss() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        sleeps = ManualSleeps()
        controller, kafka_zk = new_controller(store, 1, sleep=sleeps)
        store.register_broker(1, kafka_zk.session_id)
        kafka_zk.fail_next("get_all_topics", ZkError("failover fails once"))
        kafka_zk.fail_next("resign_controller", ConnectionLossError(), ConnectionLossError())
        await controller.start()
        await wait_until(lambda: sleeps.waiting(FAILED_FAILOVER_BACKOFF_S) == 1, "backoff")
        sleeps.wake(FAILED_FAILOVER_BACKOFF_S)
        for attempt in (1, 2):
            await wait_until(
                lambda: sleeps.waiting(RESIGN_RETRY_DELAY_S) == 1, f"resign retry {attempt}"
            )
            assert store.controller == (1, kafka_zk.session_id)  # not deleted yet
            sleeps.wake(RESIGN_RETRY_DELAY_S)
        # The third attempt deletes /controller; the deletion triggers a new election.
        await wait_until(lambda: controller.is_active, "re-election after resigning")
        assert controller.epoch == 2
        await controller.stop()

    asyncio.run(scenario())


def test_controller_znode_left_by_failed_resignation_is_removed_on_next_controller_change() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        controller, kafka_zk = new_controller(store, 1)
        store.register_broker(1, kafka_zk.session_id)
        kafka_zk.fail_next("get_all_topics", ZkError("failover fails once"))
        # Not a connection loss, so not retried: the resignation after the failover fails,
        # and so does the one for the ControllerChange our own election queued.
        kafka_zk.fail_next("resign_controller", ZkError("resign fails"), ZkError("again"))
        await controller.start()
        await settle(controller)
        # /controller names the inactive broker 1: nobody would elect while it stays.
        assert store.controller == (1, kafka_zk.session_id)
        assert not controller.is_active
        store.fire("data", CONTROLLER)  # any later notification, e.g. after a reconnection
        await wait_until(lambda: controller.is_active, "resign, then win the new election")
        assert controller.epoch == 2
        await controller.stop()

    asyncio.run(scenario())


def test_controller_znode_of_previous_session_is_left_to_expire() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        old_session = 999
        store.controller = (1, old_session)  # broker 1 restarted before its session expired
        store.controller_epoch, store.controller_epoch_zk_version = 3, 3
        controller, kafka_zk = new_controller(store, 1)
        store.register_broker(1, kafka_zk.session_id)
        await controller.start()
        await settle(controller)
        assert store.controller == (1, old_session)
        assert not controller.is_active
        store.expire_session(old_session)
        await wait_until(lambda: controller.is_active, "election once the old znode expired")
        assert controller.epoch == 4
        await controller.stop()

    asyncio.run(scenario())


# ------------------------------------------------------------------ failed event handlers


def test_broker_death_whose_writes_failed_is_handled_by_the_retried_reconcile() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [3, 1, 2]}, {0: state(3, [3, 1, 2])})
        sleeps = ManualSleeps()
        cluster = await start_cluster(store, [1, 2, 3], sleep=sleeps)
        active = cluster.active()
        cluster.sessions[active.broker_id].fail_next(
            "update_partition_state", ConnectionLossError()
        )
        store.kill_broker(3)
        await wait_until(lambda: sleeps.waiting(RECONCILE_RETRY_BACKOFF_S) == 1, "retry")
        await cluster.settle()
        assert store.partition_states[("t", 0)][0].leader == 3  # the write was lost
        sleeps.wake(RECONCILE_RETRY_BACKOFF_S)  # no further ZooKeeper change is needed
        await wait_until(lambda: store.partition_states[("t", 0)][0].leader == 1, "new leader")
        assert store.partition_states[("t", 0)][0] == state(1, [1, 2], leader_epoch=1)
        await cluster.stop()

    asyncio.run(scenario())


def test_new_topic_whose_partition_states_failed_gets_leaders_from_the_retried_reconcile() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        sleeps = ManualSleeps()
        cluster = await start_cluster(store, [1, 2], sleep=sleeps)
        session = cluster.sessions[cluster.active().broker_id]
        session.fail_next("create_partition_states", ConnectionLossError())
        await session.create_topic("t", {0: [2, 1], 1: [1, 2]}, {}, "AAAAAAAAAAAAAAAAAAAAAA")
        await wait_until(lambda: sleeps.waiting(RECONCILE_RETRY_BACKOFF_S) == 1, "retry")
        await cluster.settle()
        assert not any(topic == "t" for topic, _ in store.partition_states)
        sleeps.wake(RECONCILE_RETRY_BACKOFF_S)
        await wait_until(lambda: ("t", 1) in store.partition_states, "states created")
        assert store.partition_states[("t", 0)][0] == state(2, [2, 1])
        assert store.partition_states[("t", 1)][0] == state(1, [1, 2])
        await cluster.stop()

    asyncio.run(scenario())


def test_pending_reconcile_runs_with_the_next_event_before_the_backoff_ends() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "other", {0: [1]}, {0: state(1, [1])})
        sleeps = ManualSleeps()
        cluster = await start_cluster(store, [1, 2], sleep=sleeps)
        session = cluster.sessions[cluster.active().broker_id]
        session.fail_next("create_partition_states", ConnectionLossError())
        await session.create_topic("t", {0: [2, 1]}, {}, "AAAAAAAAAAAAAAAAAAAAAA")
        await wait_until(lambda: sleeps.waiting(RECONCILE_RETRY_BACKOFF_S) == 1, "retry")
        # An event that by itself has nothing to do with topic t.
        await session.mark_topic_for_deletion("other")
        await wait_until(lambda: ("t", 0) in store.partition_states, "states created")
        assert "other" not in store.topics
        assert store.partition_states[("t", 0)][0] == state(2, [2, 1])
        await cluster.stop()

    asyncio.run(scenario())


# ------------------------------------------------------------------ delete.topic.enable=false


def test_deletion_markers_are_removed_when_topic_deletion_is_disabled() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "kept", {0: [1]}, {0: state(1, [1])})
        store.delete_markers.add("kept")  # marked by a tool before the controller started
        config = ControllerConfig(delete_topic_enable=False)
        cluster = await start_cluster(store, [1], config)
        assert store.delete_markers == set()
        assert "kept" in store.topics
        store.delete_markers.add("kept")  # marked again while the controller runs
        store.fire("children", DELETE_TOPICS)
        await wait_until(lambda: not store.delete_markers, "marker removed")
        assert "kept" in store.topics
        assert store.partition_states[("kept", 0)][0] == state(1, [1])
        await cluster.stop()

    asyncio.run(scenario())


def test_deposed_controller_cannot_remove_deletion_markers() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        config = ControllerConfig(delete_topic_enable=False)
        cluster = await start_cluster(store, [1], config)
        store.bump_controller_epoch()  # another broker won an election we did not hear of
        store.controller = (2, 99)
        store.delete_markers.add("t")
        store.fire("children", DELETE_TOPICS)
        await wait_until(
            lambda: not any(c.is_active for c in cluster.controllers), "the zombie resigns"
        )
        assert store.delete_markers == {"t"}
        assert store.fenced_writes == 1
        await cluster.stop()

    asyncio.run(scenario())


# ------------------------------------------------------------------ fenced write batches


class _FirstWriteFencedZk(FakeKafkaZk):
    """Partition 0's write is fenced once partition 1's write is under way; partition 1's
    write waits for ever, and records that it was cancelled."""

    def __init__(self, store: FakeZkStore) -> None:
        super().__init__(store)
        self.second_write_started = asyncio.Event()
        self.second_write_cancelled = False

    async def update_partition_state(
        self,
        epoch_zk_version: int,
        topic: str,
        partition: int,
        state: PartitionState,
        expected_zk_version: int,
    ) -> int:
        if partition == 0:
            await self.second_write_started.wait()
            raise ControllerMovedError("fenced")
        self.second_write_started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.second_write_cancelled = True
            raise
        raise AssertionError("unreachable")


def test_fenced_write_cancels_the_writes_running_beside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # One state per request, so that the two writes run side by side.
    monkeypatch.setattr(partition_state_machine, "MAX_STATES_PER_WRITE", 1)

    async def scenario() -> None:
        kafka_zk = _FirstWriteFencedZk(FakeZkStore())
        context = ControllerContext(epoch=1, epoch_zk_version=0, live_brokers={1})
        context.add_topic(
            "t",
            TopicAssignment(topic_id=None, partitions={0: [2, 1], 1: [2, 1]}),
            {0: (state(2, [2, 1]), 0), 1: (state(2, [2, 1]), 0)},
        )
        machine = PartitionStateMachine(kafka_zk, context, unclean_default=False)
        # The controller catches ControllerMovedError itself, not an exception group.
        with pytest.raises(ControllerMovedError):
            await machine.reconcile(context.all_partitions())
        assert kafka_zk.second_write_cancelled

    asyncio.run(scenario())


def test_stop_during_failover_backoff_gives_up_the_controller_znode() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        sleeps = ManualSleeps()
        controller, kafka_zk = new_controller(store, 1, sleep=sleeps)
        store.register_broker(1, kafka_zk.session_id)
        kafka_zk.fail_next("get_all_topics", ZkError("failover fails"))
        await controller.start()
        await wait_until(lambda: sleeps.waiting(FAILED_FAILOVER_BACKOFF_S) == 1, "backoff")
        assert store.controller == (1, kafka_zk.session_id)
        await controller.stop()
        assert store.controller is None

    asyncio.run(scenario())
