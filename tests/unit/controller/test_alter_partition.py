"""AlterPartition on the controller, against the fake ZooKeeper: ISR shrinks and expands written
fenced and conditional, the context and answer carrying the new partition epoch, and each of
Kafka's refusals (whole request, and per partition)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from kio.schema.errors import ErrorCode

from controller.alter_partition import (
    RECOVERING,
    AlterPartitionRequest,
    AlterPartitionResult,
    IsrMember,
    PartitionChange,
    TopicChanges,
)
from controller.controller import Controller
from controller.errors import NONE, NOT_CONTROLLER
from tests.unit.controller.fake_zk import FakeZkStore
from tests.unit.controller.harness import Cluster, add_topic, start_cluster, state

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # what harness.add_topic gives every topic


def _store() -> FakeZkStore:
    """t-0 led by 1 with ISR [1, 2, 3]; t-1 led by 2 with ISR [2, 1]."""
    store = FakeZkStore()
    add_topic(
        store,
        "t",
        {0: [1, 2, 3], 1: [2, 1, 3]},
        {0: state(leader=1, isr=[1, 2, 3], leader_epoch=4), 1: state(leader=2, isr=[2, 1])},
    )
    return store


def _change(
    isr: list[int],
    partition: int = 0,
    leader_epoch: int = 4,
    partition_epoch: int = 0,
    epochs: dict[int, int] | None = None,
    recovery: int = 0,
) -> PartitionChange:
    members = tuple(IsrMember(b, (epochs or {}).get(b, -1)) for b in isr)
    return PartitionChange(partition, leader_epoch, members, partition_epoch, recovery)


def _request(
    store: FakeZkStore,
    *changes: PartitionChange,
    broker: int = 1,
    version: int = 3,
    topic_id: str | None = TOPIC_ID,
    broker_epoch: int | None = None,
) -> AlterPartitionRequest:
    epoch = store.broker_epochs[broker] if broker_epoch is None else broker_epoch
    name = None if version >= 2 else "t"
    topic = TopicChanges(name, topic_id if version >= 2 else None, changes)
    return AlterPartitionRequest(broker, epoch, version, (topic,))


def _errors(result: AlterPartitionResult) -> dict[int, ErrorCode]:
    return {p.partition: p.error_code for topic in result.topics for p in topic.partitions}


Scenario = Callable[[FakeZkStore, Cluster, Controller], Awaitable[None]]


def _run(scenario: Scenario) -> None:
    async def main() -> None:
        store = _store()
        cluster = await start_cluster(store, [1, 2, 3])
        try:
            await scenario(store, cluster, cluster.active())
        finally:
            await cluster.stop()

    asyncio.run(main())


def test_isr_shrink_is_written_with_the_same_leader_epoch_and_answered_with_the_new_version() -> (
    None
):
    async def scenario(store: FakeZkStore, cluster: Cluster, active: Controller) -> None:
        result = await active.alter_partition(_request(store, _change([1, 3])))
        assert result.error_code == NONE
        [answer] = result.topics[0].partitions
        assert result.topics[0].topic_id == TOPIC_ID
        assert (answer.error_code, answer.leader, answer.leader_epoch) == (NONE, 1, 4)
        assert (answer.isr, answer.partition_epoch) == ((1, 3), 1)
        written, version = store.partition_states[("t", 0)]
        assert (written.leader, written.leader_epoch, written.isr, version) == (1, 4, [1, 3], 1)
        assert written.controller_epoch == active.epoch
        assert active.context is not None
        assert active.context.partition_states[("t", 0)] == (written, 1)

    _run(scenario)


def test_isr_expand_after_a_shrink_names_the_new_partition_epoch() -> None:
    async def scenario(store: FakeZkStore, cluster: Cluster, active: Controller) -> None:
        await active.alter_partition(_request(store, _change([1, 3])))
        result = await active.alter_partition(
            _request(store, _change([1, 3, 2], partition_epoch=1))
        )
        [answer] = result.topics[0].partitions
        assert (answer.error_code, answer.isr, answer.partition_epoch) == (NONE, (1, 3, 2), 2)
        assert store.partition_states[("t", 0)][0].isr == [1, 3, 2]

    _run(scenario)


def test_an_isr_already_as_asked_is_answered_with_the_current_state_without_a_write() -> None:
    async def scenario(store: FakeZkStore, cluster: Cluster, active: Controller) -> None:
        await active.alter_partition(_request(store, _change([1, 3])))
        writes = len(store.state_writes)
        # A retry of the same change, naming the partition epoch it saw before the write.
        result = await active.alter_partition(_request(store, _change([1, 3], partition_epoch=0)))
        [answer] = result.topics[0].partitions
        assert (answer.error_code, answer.isr, answer.partition_epoch) == (NONE, (1, 3), 1)
        assert len(store.state_writes) == writes

    _run(scenario)


def test_whole_request_refusals_stale_or_unknown_broker_and_not_controller() -> None:
    async def scenario(store: FakeZkStore, cluster: Cluster, active: Controller) -> None:
        stale = _request(store, _change([1, 3]), broker_epoch=store.broker_epochs[1] - 1)
        assert (await active.alter_partition(stale)).error_code == ErrorCode.stale_broker_epoch
        unknown = AlterPartitionRequest(9, 1, 3, ())
        assert (await active.alter_partition(unknown)).error_code == ErrorCode.stale_broker_epoch
        other = next(c for c in cluster.controllers if c is not active)
        result = await other.alter_partition(_request(store, _change([1, 3])))
        assert result == AlterPartitionResult(NOT_CONTROLLER)
        assert store.partition_states[("t", 0)][0].isr == [1, 2, 3]

    _run(scenario)


def test_per_partition_refusals_in_kafkas_terms() -> None:
    async def scenario(store: FakeZkStore, cluster: Cluster, active: Controller) -> None:
        async def error_of(change: PartitionChange, **kwargs: object) -> ErrorCode:
            result = await active.alter_partition(_request(store, change, **kwargs))  # type: ignore[arg-type]
            assert result.error_code == NONE
            return _errors(result)[change.partition]

        assert await error_of(_change([1], partition=7)) == ErrorCode.unknown_topic_or_partition
        assert await error_of(_change([1]), topic_id="AAAAAAAAAAAAAAAAAAAAAQ") == (
            ErrorCode.unknown_topic_id
        )
        assert await error_of(_change([1], leader_epoch=3)) == ErrorCode.fenced_leader_epoch
        # Epochs ahead of the controller's: its view is stale, so it is likely not controller.
        assert await error_of(_change([1], leader_epoch=5)) == ErrorCode.not_controller
        assert await error_of(_change([1], partition_epoch=3)) == ErrorCode.not_controller
        # t-1 is led by 2, not by the sender.
        assert await error_of(_change([1], partition=1, leader_epoch=0)) == (
            ErrorCode.not_leader_or_follower
        )
        assert await error_of(_change([1, 3], partition_epoch=0, recovery=RECOVERING)) == (
            ErrorCode.invalid_request
        )
        assert await error_of(_change([1], recovery=RECOVERING)) == ErrorCode.invalid_request
        # Broker 4 is not registered.
        assert await error_of(_change([1, 2, 3, 4])) == ErrorCode.ineligible_replica
        assert await error_of(_change([1, 2, 3, 4]), version=1, topic_id=None) == (
            ErrorCode.operation_not_attempted
        )
        # A member named with a broker epoch that is not its registration's.
        stale_member = {3: store.broker_epochs[3] + 1}
        assert await error_of(_change([1, 3], epochs=stale_member)) == (
            ErrorCode.ineligible_replica
        )
        assert store.partition_states[("t", 0)] == (state(1, [1, 2, 3], leader_epoch=4), 0)
        # A stale partition epoch, once the ISR has moved on.
        await active.alter_partition(_request(store, _change([1, 3])))
        assert await error_of(_change([1], partition_epoch=0)) == ErrorCode.invalid_update_version

    _run(scenario)


def test_a_broker_shutting_down_may_not_rejoin_an_isr() -> None:
    async def scenario(store: FakeZkStore, cluster: Cluster, active: Controller) -> None:
        shutdown = await active.controlled_shutdown(3, store.broker_epochs[3])
        assert shutdown.error_code == NONE
        # The controller took 3 out of the ISR, bumping the leader epoch as Kafka's does.
        shrunk, version = store.partition_states[("t", 0)]
        assert (shrunk.isr, shrunk.leader_epoch) == ([1, 2], 5)
        result = await active.alter_partition(
            _request(store, _change([1, 2, 3], leader_epoch=5, partition_epoch=version))
        )
        assert _errors(result) == {0: ErrorCode.ineligible_replica}
        # Named with its epoch, a live member is eligible.
        named = _change(
            [1], leader_epoch=5, partition_epoch=version, epochs={1: store.broker_epochs[1]}
        )
        assert _errors(await active.alter_partition(_request(store, named))) == {0: NONE}

    _run(scenario)


def test_topics_by_name_before_v2_and_a_lost_race_is_invalid_update_version() -> None:
    async def scenario(store: FakeZkStore, cluster: Cluster, active: Controller) -> None:
        result = await active.alter_partition(
            _request(store, _change([1, 2]), version=1, topic_id=None)
        )
        assert (result.topics[0].name, _errors(result)) == ("t", {0: NONE})
        # Another writer (one of our leaders, the old path) changes the state meanwhile.
        cluster.sessions[1].leader_changes_isr("t", 0, [1])
        raced = await active.alter_partition(_request(store, _change([1, 3], partition_epoch=1)))
        assert _errors(raced) == {0: ErrorCode.invalid_update_version}
        assert store.partition_states[("t", 0)][0].isr == [1]

    _run(scenario)


def test_a_write_fenced_by_a_newer_controller_answers_not_controller_and_resigns() -> None:
    async def scenario(store: FakeZkStore, cluster: Cluster, active: Controller) -> None:
        # Another broker won an election meanwhile: the fenced write finds out.
        store.bump_controller_epoch()
        result = await active.alter_partition(_request(store, _change([1, 3])))
        assert result == AlterPartitionResult(NOT_CONTROLLER)
        assert store.partition_states[("t", 0)][0].isr == [1, 2, 3]
        assert not active.is_active

    _run(scenario)
