"""PartitionStateMachine.decide_and_write: the one decide / conditional write / re-decide loop
that reconciliation, elections, controlled shutdown and reassignment share."""

from __future__ import annotations

import asyncio

import pytest

from controller.context import ControllerContext, TopicPartition
from controller.election import LeaderAndIsr
from controller.partition_state_machine import (
    MAX_STATES_PER_WRITE,
    MAX_WRITE_ATTEMPTS,
    MAX_WRITES_IN_FLIGHT,
    PartitionStateMachine,
    bounded_gather,
)
from controller.state_change_log import ChangeReason
from tests.unit.controller.fake_zk import FakeKafkaZk, FakeZkStore
from tests.unit.controller.harness import state
from zk.errors import ConnectionLossError
from zk.znodes import PartitionState, TopicAssignment

TP: TopicPartition = ("t", 0)


class _LeaderAlwaysWritesFirstZk(FakeKafkaZk):
    """The partition leader rewrites the ISR just before every controller write."""

    async def update_partition_state(
        self,
        epoch_zk_version: int,
        topic: str,
        partition: int,
        state: PartitionState,
        expected_zk_version: int,
    ) -> int:
        current, version = self.store.partition_states[(topic, partition)]
        self.store.partition_states[(topic, partition)] = (current, version + 1)
        return await super().update_partition_state(
            epoch_zk_version, topic, partition, state, expected_zk_version
        )


def _machine(
    kafka_zk: FakeKafkaZk, known: PartitionState
) -> tuple[PartitionStateMachine, ControllerContext]:
    """A state machine whose context knows `known` at zkVersion 0."""
    epoch_zk_version = kafka_zk.store.controller_epoch_zk_version
    context = ControllerContext(epoch=1, epoch_zk_version=epoch_zk_version, live_brokers={1, 2, 3})
    context.add_topic(
        "t", TopicAssignment(topic_id=None, partitions={0: [1, 2, 3]}), {0: (known, 0)}
    )
    return PartitionStateMachine(kafka_zk, context, unclean_default=False), context


def test_a_lost_race_is_decided_again_on_the_state_the_leader_wrote() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        # The leader shrank the ISR (zkVersion 1); the controller still knows version 0.
        store.partition_states[TP] = (state(1, [1, 2]), 1)
        machine, context = _machine(FakeKafkaZk(store), state(1, [1, 2, 3]))
        seen: list[list[int]] = []

        async def decide(tp: TopicPartition) -> LeaderAndIsr | None:
            isr = list(context.partition_states[tp][0].isr)
            seen.append(isr)
            return LeaderAndIsr(2, isr)

        outcome = await machine.decide_and_write([TP], decide, ChangeReason.PREFERRED_ELECTION)
        assert seen == [[1, 2, 3], [1, 2]]
        assert outcome.written == {TP: LeaderAndIsr(2, [1, 2])}
        assert outcome.unsettled == []
        written, version = store.partition_states[TP]
        assert (written.leader, written.isr, version) == (2, [1, 2], 2)

    asyncio.run(scenario())


def test_a_partition_that_keeps_changing_is_left_unsettled_after_the_last_attempt() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        store.partition_states[TP] = (state(1, [1, 2, 3]), 0)
        machine, _ = _machine(_LeaderAlwaysWritesFirstZk(store), state(1, [1, 2, 3]))
        attempts = 0

        async def decide(_tp: TopicPartition) -> LeaderAndIsr | None:
            nonlocal attempts
            attempts += 1
            return LeaderAndIsr(2, [1, 2, 3])

        outcome = await machine.decide_and_write([TP], decide, ChangeReason.REASSIGNMENT)
        assert attempts == MAX_WRITE_ATTEMPTS
        assert outcome.written == {}
        assert outcome.unsettled == [TP]
        assert store.partition_states[TP][0].leader == 1

    asyncio.run(scenario())


def test_no_decision_means_no_write() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        store.partition_states[TP] = (state(1, [1, 2, 3]), 0)
        machine, _ = _machine(FakeKafkaZk(store), state(1, [1, 2, 3]))

        async def decide(_tp: TopicPartition) -> LeaderAndIsr | None:
            return None

        outcome = await machine.decide_and_write([TP], decide, ChangeReason.REASSIGNMENT)
        assert (outcome.written, outcome.unsettled) == ({}, [])
        assert store.state_writes == []

    asyncio.run(scenario())


def test_a_retry_cut_short_by_an_error_is_remembered_again() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        store.partition_states[TP] = (state(1, [1, 2, 3]), 0)
        kafka_zk = FakeKafkaZk(store)
        _, context = _machine(kafka_zk, state(1, [1, 2, 3]))
        scheduled: list[None] = []
        machine = PartitionStateMachine(
            kafka_zk, context, unclean_default=False, on_unsettled=lambda: scheduled.append(None)
        )

        async def decide(_tp: TopicPartition) -> LeaderAndIsr | None:
            return LeaderAndIsr(2, [1, 2, 3])

        machine.retry_later([TP], decide, ChangeReason.PREFERRED_ELECTION)
        assert machine.has_unsettled() and len(scheduled) == 1
        kafka_zk.fail_next("update_partition_state", ConnectionLossError())
        with pytest.raises(ConnectionLossError):
            await machine.retry_unsettled()
        assert machine.has_unsettled() and len(scheduled) == 2  # kept, and the timer re-armed
        await machine.retry_unsettled()
        assert not machine.has_unsettled()
        assert store.partition_states[TP][0].leader == 2

    asyncio.run(scenario())


class _RecordingZk(FakeKafkaZk):
    """Records the order of the controller's writes."""

    def __init__(self, store: FakeZkStore) -> None:
        super().__init__(store)
        self.order: list[int] = []

    async def update_partition_state(
        self,
        epoch_zk_version: int,
        topic: str,
        partition: int,
        state: PartitionState,
        expected_zk_version: int,
    ) -> int:
        self.order.append(partition)
        return await super().update_partition_state(
            epoch_zk_version, topic, partition, state, expected_zk_version
        )


def test_leader_moves_are_written_before_isr_only_changes() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        kafka_zk = _RecordingZk(store)
        context = ControllerContext(
            epoch=1, epoch_zk_version=store.controller_epoch_zk_version, live_brokers={1, 2}
        )
        # Broker 3 died: it led the odd partitions and is in every ISR.
        states = {p: (state(3 if p % 2 else 1, [1, 2, 3]), 0) for p in range(6)}
        store.partition_states.update({("t", p): versioned for p, versioned in states.items()})
        context.add_topic(
            "t", TopicAssignment(None, {p: [1, 2, 3] for p in range(6)}), dict(states)
        )
        machine = PartitionStateMachine(kafka_zk, context, unclean_default=False)
        await machine.reconcile([("t", p) for p in range(6)])
        assert kafka_zk.order == [1, 3, 5, 0, 2, 4]
        assert all(3 not in store.partition_states[("t", p)][0].isr for p in range(6))

    asyncio.run(scenario())


def test_writes_run_in_a_window_not_in_chunks() -> None:
    """With the window full, one write finishing starts the next at once, even while an
    earlier, slower write is still in flight."""

    async def scenario() -> None:
        slow_release = asyncio.Event()
        started: list[int] = []

        async def write(index: int) -> int:
            started.append(index)
            if index == 0:
                await slow_release.wait()
            return index

        count = MAX_WRITES_IN_FLIGHT + 5
        gathering = asyncio.create_task(bounded_gather([write(i) for i in range(count)]))
        for _ in range(100):
            await asyncio.sleep(0)
        # Write 0 is still in flight; all the others have run past it.
        assert sorted(started) == list(range(count))
        slow_release.set()
        assert await gathering == list(range(count))

    asyncio.run(scenario())


def _failed_broker_context(
    store: FakeZkStore, count: int, stale: frozenset[int] = frozenset()
) -> ControllerContext:
    """Broker 3 led every partition of `count` and died; the controller knows version 0, but
    the partitions in `stale` were rewritten meanwhile (version 1) by their leader."""
    context = ControllerContext(
        epoch=1, epoch_zk_version=store.controller_epoch_zk_version, live_brokers={1, 2}
    )
    known = {p: (state(3, [3, 1, 2]), 0) for p in range(count)}
    for p in range(count):
        store.partition_states[("t", p)] = (state(3, [3, 1, 2]), 1 if p in stale else 0)
    context.add_topic("t", TopicAssignment(None, {p: [3, 1, 2] for p in range(count)}), known)
    return context


def test_many_states_are_written_a_batch_to_a_request() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        count = 2 * MAX_STATES_PER_WRITE + 1
        context = _failed_broker_context(store, count)
        machine = PartitionStateMachine(FakeKafkaZk(store), context, unclean_default=False)
        await machine.reconcile([("t", p) for p in range(count)])
        assert store.batched_state_writes == 2  # the last state went on its own
        for p in range(count):
            assert store.partition_states[("t", p)] == (state(1, [1, 2], leader_epoch=1), 1)
            assert context.partition_states[("t", p)] == store.partition_states[("t", p)]

    asyncio.run(scenario())


def test_a_batch_with_one_stale_state_still_writes_every_other_state() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        count = MAX_STATES_PER_WRITE
        context = _failed_broker_context(store, count, stale=frozenset({7}))
        machine = PartitionStateMachine(FakeKafkaZk(store), context, unclean_default=False)
        await machine.reconcile([("t", p) for p in range(count)])
        assert store.batched_state_writes == 0  # the multi was refused as a whole
        assert store.bad_version_writes == 1  # only partition 7's own write was stale
        for p in range(count):
            written, version = store.partition_states[("t", p)]
            assert (written.leader, written.isr) == (1, [1, 2])
            assert version == (2 if p == 7 else 1)

    asyncio.run(scenario())
