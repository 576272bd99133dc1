"""PartitionStateMachine.decide_and_write: the one decide / conditional write / re-decide loop
that reconciliation, elections, controlled shutdown and reassignment share."""

from __future__ import annotations

import asyncio

import pytest

from controller.context import ControllerContext, TopicPartition
from controller.election import LeaderAndIsr
from controller.partition_state_machine import MAX_WRITE_ATTEMPTS, PartitionStateMachine
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
