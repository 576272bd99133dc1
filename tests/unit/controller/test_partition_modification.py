"""CreatePartitions: Kafka's placement continuing from the existing assignment, its error codes,
and the controller creating state znodes for partitions a topic znode gained."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from controller.context import ControllerContext
from controller.errors import (
    INVALID_PARTITIONS,
    INVALID_REPLICA_ASSIGNMENT,
    INVALID_REPLICATION_FACTOR,
    INVALID_REQUEST,
    INVALID_TOPIC_EXCEPTION,
    NONE,
    NOT_CONTROLLER,
    REASSIGNMENT_IN_PROGRESS,
    UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_OR_PARTITION,
    ApiError,
    TopicError,
)
from controller.partition_modification import (
    NewPartitions,
    create_partitions,
    plan_new_partitions,
)
from tests.unit.controller.fake_zk import FakeZkStore
from tests.unit.controller.harness import add_topic, start_cluster, state, wait_until
from zk.znodes import BrokerRegistration, TopicAssignment


def _existing(partitions: dict[int, list[int]], **extra: dict[int, list[int]]) -> TopicAssignment:
    return TopicAssignment(topic_id=None, partitions=partitions, **extra)


def test_new_partitions_continue_kafkas_round_robin_from_partition_zeros_leader() -> None:
    # Kafka: startIndex = index of the first broker >= partition 0's first replica (2 -> 1),
    # start partition id = the current count.
    existing = _existing({0: [2, 3], 1: [3, 1]})
    added = plan_new_partitions(NewPartitions("t", 4), existing, [1, 2, 3])
    assert added == {2: [1, 3], 3: [2, 3]}


def test_explicit_assignment_of_new_partitions_is_used_as_given() -> None:
    existing = _existing({0: [1, 2]})
    added = plan_new_partitions(NewPartitions("t", 3, [[3, 1], [2, 3]]), existing, [1, 2, 3])
    assert added == {1: [3, 1], 2: [2, 3]}


@pytest.mark.parametrize(
    ("request_", "code", "message"),
    [
        (NewPartitions("t", 2), INVALID_PARTITIONS, "Topic already has 2 partitions."),
        (NewPartitions("t", 1), INVALID_PARTITIONS, "which is higher than the requested 1"),
        (NewPartitions("t", 3, [[4, 1]]), INVALID_REPLICA_ASSIGNMENT, "Unknown broker(s)"),
        (NewPartitions("t", 4, [[3, 1]]), INVALID_REPLICA_ASSIGNMENT, "but 1 assignments"),
        (NewPartitions("t", 3, [[1, 1]]), INVALID_REPLICA_ASSIGNMENT, "Duplicate brokers"),
        (NewPartitions("t", 3, [[1]]), INVALID_REPLICA_ASSIGNMENT, "Inconsistent replication"),
    ],
)
def test_invalid_requests_get_kafkas_error(
    request_: NewPartitions, code: int, message: str
) -> None:
    with pytest.raises(ApiError) as raised:
        plan_new_partitions(request_, _existing({0: [1, 2], 1: [2, 3]}), [1, 2, 3])
    assert raised.value.error_code == code
    assert message in raised.value.message


def test_not_enough_brokers_and_a_reassignment_in_progress_are_refused() -> None:
    with pytest.raises(ApiError) as raised:
        plan_new_partitions(NewPartitions("t", 2), _existing({0: [1, 2, 3]}), [1, 2])
    assert raised.value.error_code == INVALID_REPLICATION_FACTOR
    moving = _existing({0: [2, 1]}, adding_replicas={0: [2]}, removing_replicas={0: [1]})
    with pytest.raises(ApiError) as raised:
        plan_new_partitions(NewPartitions("t", 2), moving, [1, 2])
    assert raised.value.error_code == REASSIGNMENT_IN_PROGRESS


def test_create_partitions_writes_the_topic_znode_and_new_partitions_get_states() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2]}, {0: state(1, [1, 2])})
        cluster = await start_cluster(store, [1, 2, 3])
        controller = cluster.active()
        topic_id = store.topics["t"].topic_id
        validated = await controller.create_partitions([NewPartitions("t", 3)], True)
        assert validated["t"].error_code == NONE
        assert len(store.topics["t"].partitions) == 1  # validate_only writes nothing
        results = await controller.create_partitions(
            [
                NewPartitions("t", 3),
                NewPartitions("missing", 2),
                NewPartitions("dup", 2),
                NewPartitions("dup", 3),
            ],
            False,
        )
        assert results["t"].error_code == NONE
        assert results["missing"].error_code == UNKNOWN_TOPIC_OR_PARTITION
        assert results["dup"].error_code == INVALID_REQUEST
        assert store.topics["t"].topic_id == topic_id
        assert store.topics["t"].partitions == {0: [1, 2], 1: [2, 3], 2: [3, 1]}
        await wait_until(
            lambda: ("t", 2) in store.partition_states, "the new partitions get state znodes"
        )
        assert store.partition_states[("t", 1)][0] == state(2, [2, 3], controller_epoch=1)
        assert store.partition_states[("t", 2)][0] == state(3, [3, 1], controller_epoch=1)
        assert controller.context is not None
        assert controller.context.assignments["t"].partitions == store.topics["t"].partitions
        follower = cluster.controller(2)
        assert (await follower.create_partitions([NewPartitions("t", 4)], False))[
            "t"
        ].error_code == NOT_CONTROLLER
        await cluster.stop()

    asyncio.run(scenario())


def test_topic_queued_for_deletion_is_refused() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2]}, {0: state(1, [1, 2])})
        cluster = await start_cluster(store, [1, 2, 3])
        controller = cluster.active()
        assert controller.context is not None
        controller.context.topics_queued_for_deletion.add("t")
        results = await controller.create_partitions([NewPartitions("t", 2)], False)
        assert results["t"].error_code == INVALID_TOPIC_EXCEPTION
        await cluster.stop()

    asyncio.run(scenario())


_KAFKA_DOC_RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_new_partitions_continue_kafkas_rack_aware_round_robin() -> None:
    # Kafka's documented rack-aware walk over 0, 3, 1, 5, 4, 2: partition 0 is [0, 3, 1], so
    # the added partitions continue with [3, 1, 5] and [1, 5, 4].
    existing = _existing({0: [0, 3, 1]})
    added = plan_new_partitions(NewPartitions("t", 3), existing, range(6), _KAFKA_DOC_RACKS)
    assert added == {1: [3, 1, 5], 2: [1, 5, 4]}


def test_brokers_partly_with_racks_fail_the_whole_create_partitions_request() -> None:
    context = ControllerContext(epoch=1, epoch_zk_version=0, live_brokers={1, 2})
    context.broker_registrations = {
        1: BrokerRegistration.create(1, ["PLAINTEXT://h:1"], {}, 0, rack="a"),
        2: BrokerRegistration.create(2, ["PLAINTEXT://h:2"], {}, 0),
    }
    requests = [NewPartitions("t", 3), NewPartitions("u", 2, [[1]])]
    # Kafka reads the brokers (Enforced mode) before any topic, so ZooKeeper is never asked.
    results = asyncio.run(create_partitions(cast(Any, None), context, requests, False, 100))
    assert results == {"t": TopicError(UNKNOWN_SERVER_ERROR), "u": TopicError(UNKNOWN_SERVER_ERROR)}
