"""Partition reassignment through the controller on a fake ZooKeeper: phases, completion on an
ISR change, the /admin/reassign_partitions request, cancellation, errors and failover."""

from __future__ import annotations

import asyncio

from controller.errors import (
    INVALID_REPLICA_ASSIGNMENT,
    NO_REASSIGNMENT_IN_PROGRESS,
    NONE,
    NOT_CONTROLLER,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from controller.reassignment import ReplicaAssignment, completion_decision
from tests.unit.controller.fake_zk import FakeKafkaZk, FakeZkStore
from tests.unit.controller.harness import add_topic, start_cluster, state, wait_until
from zk.znodes import TopicAssignment, TopicPartitionStateZNode

TP = ("t", 0)


def _leader_adds_to_isr(store: FakeZkStore, session: FakeKafkaZk, isr: list[int]) -> None:
    """What the partition leader does once a new replica caught up: an unfenced ISR write,
    which fires the state znode's watch."""
    session.leader_changes_isr(*TP, isr)
    store.fire("data", TopicPartitionStateZNode.path(*TP))


def test_reassign_to_puts_targets_first_then_the_replicas_it_drops() -> None:
    moved = ReplicaAssignment((1, 2, 3)).reassign_to([3, 4, 2])
    assert moved == ReplicaAssignment((3, 4, 2, 1), adding=(4,), removing=(1,))
    assert moved.origin == (3, 2, 1)
    assert moved.target == (3, 4, 2)
    # Cancelling goes back to the original replicas (in the order they are now listed).
    assert moved.reassign_to(moved.origin) == ReplicaAssignment((3, 2, 1))


def test_completion_elects_a_target_replica_when_the_leader_is_being_removed() -> None:
    reassignment = ReplicaAssignment((2, 3, 1), adding=(3,), removing=(1,))
    decision = completion_decision(reassignment, state(1, [1, 2, 3]), live_brokers={1, 2, 3})
    assert decision is not None
    assert (decision.leader, decision.isr) == (2, [2, 3])
    # A dead target replica cannot lead; the next one alive and in the ISR does.
    decision = completion_decision(reassignment, state(1, [1, 2, 3]), live_brokers={1, 3})
    assert decision is not None
    assert (decision.leader, decision.isr) == (3, [2, 3])


def test_reassignment_from_1_2_to_2_3_goes_through_its_phases() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2]}, {0: state(1, [1, 2])})
        cluster = await start_cluster(store, [1, 2, 3])
        controller = cluster.active()
        results = await controller.alter_partition_reassignments({TP: [2, 3]})
        assert results == {TP: results[TP]} and results[TP].error_code == NONE
        # Phase U/A: RS = TRS + (ORS - TRS), AR, RR in the topic znode; the epoch is bumped.
        assert store.topics["t"].partitions == {0: [2, 3, 1]}
        assert store.topics["t"].adding_replicas == {0: [3]}
        assert store.topics["t"].removing_replicas == {0: [1]}
        assert store.partition_states[TP][0] == state(1, [1, 2], leader_epoch=1)
        ongoing = controller.list_partition_reassignments(None)
        assert ongoing == {TP: ReplicaAssignment((2, 3, 1), (3,), (1,))}
        # Broker 3 caught up and the leader took it into the ISR: phase B.
        _leader_adds_to_isr(store, cluster.sessions[1], [1, 2, 3])
        await wait_until(lambda: not store.topics["t"].adding_replicas, "the reassignment ends")
        assert store.topics["t"] == TopicAssignment(
            topic_id=store.topics["t"].topic_id, partitions={0: [2, 3]}
        )
        final, _version = store.partition_states[TP]
        assert (final.leader, final.isr, final.leader_epoch) == (2, [2, 3], 2)
        assert controller.list_partition_reassignments(None) == {}
        await cluster.stop()

    asyncio.run(scenario())


def test_admin_reassign_partitions_znode_starts_and_is_deleted_when_done() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2], 1: [2, 1]}, {0: state(1, [1, 2]), 1: state(2, [2, 1])})
        cluster = await start_cluster(store, [1, 2, 3])
        store.request_reassignment({TP: [2, 3], ("t", 1): [2, 1]})
        await wait_until(
            lambda: store.topics["t"].adding_replicas == {0: [3]}, "the request is started"
        )
        # ("t", 1) asked for its current replicas: done at once and dropped from the request.
        assert store.reassign_request is not None
        assert store.reassign_request[0] == {TP: [2, 3]}
        _leader_adds_to_isr(store, cluster.sessions[1], [1, 2, 3])
        await wait_until(lambda: store.reassign_request is None, "the request znode is deleted")
        assert store.topics["t"].partitions == {0: [2, 3], 1: [2, 1]}
        await cluster.stop()

    asyncio.run(scenario())


def test_cancelling_reverts_to_the_original_replicas() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2]}, {0: state(1, [1, 2])})
        cluster = await start_cluster(store, [1, 2, 3])
        controller = cluster.active()
        await controller.alter_partition_reassignments({TP: [2, 3]})
        results = await controller.alter_partition_reassignments({TP: None})
        assert results[TP].error_code == NONE
        assert store.topics["t"].partitions == {0: [2, 1]}
        assert not store.topics["t"].adding_replicas and not store.topics["t"].removing_replicas
        final, _version = store.partition_states[TP]
        assert (final.leader, final.isr) == (1, [1, 2])
        await cluster.stop()

    asyncio.run(scenario())


def test_errors_per_partition_as_kafka_answers_them() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2]}, {0: state(1, [1, 2])})
        cluster = await start_cluster(store, [1, 2, 3])
        results = await cluster.active().alter_partition_reassignments(
            {
                TP: None,  # nothing to cancel
                ("t", 1): [1, 2],  # no such partition
                ("t", 2): [1, 1],
                ("u", 0): [4],  # broker 4 is not alive
            }
        )
        assert results[TP].error_code == NO_REASSIGNMENT_IN_PROGRESS
        assert results[("t", 1)].error_code == UNKNOWN_TOPIC_OR_PARTITION
        assert results[("t", 2)].error_code == INVALID_REPLICA_ASSIGNMENT
        assert results[("u", 0)].error_code == INVALID_REPLICA_ASSIGNMENT
        follower = cluster.controller(2)
        assert await follower.alter_partition_reassignments({TP: [2, 3]}) == NOT_CONTROLLER
        assert follower.list_partition_reassignments(None) == NOT_CONTROLLER
        await cluster.stop()

    asyncio.run(scenario())


def test_new_controller_resumes_a_reassignment_left_in_the_topic_znode() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [2, 3, 1]}, {0: state(1, [1, 2, 3], leader_epoch=4)})
        store.topics["t"] = TopicAssignment(
            topic_id=store.topics["t"].topic_id,
            partitions={0: [2, 3, 1]},
            adding_replicas={0: [3]},
            removing_replicas={0: [1]},
        )
        cluster = await start_cluster(store, [1, 2, 3])
        # Every target replica is in the ISR already: the failover finishes the job.
        assert store.topics["t"].partitions == {0: [2, 3]}
        assert not store.topics["t"].removing_replicas
        final, _version = store.partition_states[TP]
        assert (final.leader, final.isr) == (2, [2, 3])
        await cluster.stop()

    asyncio.run(scenario())
