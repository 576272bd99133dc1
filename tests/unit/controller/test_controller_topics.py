"""CreateTopics and DeleteTopics through the controller, with every error path."""

from __future__ import annotations

import asyncio

import pytest

from controller.config import ControllerConfig
from controller.errors import (
    INVALID_CONFIG,
    INVALID_PARTITIONS,
    INVALID_REPLICA_ASSIGNMENT,
    INVALID_REPLICATION_FACTOR,
    INVALID_REQUEST,
    INVALID_TOPIC_EXCEPTION,
    NONE,
    NOT_CONTROLLER,
    TOPIC_ALREADY_EXISTS,
    TOPIC_DELETION_DISABLED,
    UNKNOWN_TOPIC_OR_PARTITION,
    TopicError,
)
from controller.topic_creation import NewTopic
from tests.unit.controller.fake_zk import FakeZkStore
from tests.unit.controller.harness import (
    ManualSleeps,
    add_topic,
    new_controller,
    start_cluster,
    state,
    wait_until,
)


def test_created_topic_gets_kafka_placement_and_partition_states() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2, 3])
        controller = cluster.active()
        results = await controller.create_topics(
            [NewTopic("orders", 6, 3, configs={"retention.ms": "1000"})], validate_only=False
        )
        assert results == {"orders": TopicError(NONE)}
        assignment = store.topics["orders"]
        assert assignment.topic_id is not None
        assert len(assignment.topic_id) == 22
        assert store.topic_configs["orders"] == {"retention.ms": "1000"}
        replicas = assignment.partitions
        assert sorted(replicas) == [0, 1, 2, 3, 4, 5]
        # Leaders go round-robin, so each broker leads two of the six partitions.
        assert sorted(r[0] for r in replicas.values()) == [1, 1, 2, 2, 3, 3]
        assert all(sorted(r) == [1, 2, 3] for r in replicas.values())
        await wait_until(
            lambda: all(("orders", p) in store.partition_states for p in range(6)),
            "partition states are created by the topic watch",
        )
        for partition, partition_replicas in replicas.items():
            created, version = store.partition_states[("orders", partition)]
            assert created == state(partition_replicas[0], partition_replicas, 0, 1)
            assert version == 0
        await cluster.stop()

    asyncio.run(scenario())


def test_defaults_apply_when_partitions_and_replication_factor_are_minus_one() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        config = ControllerConfig(default_replication_factor=2, num_partitions=4)
        cluster = await start_cluster(store, [1, 2, 3], config)
        results = await cluster.active().create_topics([NewTopic("d")], validate_only=False)
        assert results["d"].error_code == NONE
        partitions = store.topics["d"].partitions
        assert len(partitions) == 4
        assert all(len(replicas) == 2 for replicas in partitions.values())
        await cluster.stop()

    asyncio.run(scenario())


def test_explicit_assignment_is_written_as_given() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2, 3])
        assignment = {0: [3, 1], 1: [2, 3]}
        results = await cluster.active().create_topics(
            [NewTopic("e", assignments=assignment)], validate_only=False
        )
        assert results["e"].error_code == NONE
        assert store.topics["e"].partitions == assignment
        await cluster.stop()

    asyncio.run(scenario())


def test_validate_only_checks_but_writes_nothing() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2, 3])
        controller = cluster.active()
        good = await controller.create_topics([NewTopic("v", 3, 2)], validate_only=True)
        bad = await controller.create_topics([NewTopic("w", 3, 5)], validate_only=True)
        assert good == {"v": TopicError(NONE)}
        assert bad["w"].error_code == INVALID_REPLICATION_FACTOR
        assert store.topics == {}
        await cluster.stop()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("new_topic", "error_code", "message"),
    [
        (NewTopic("t", 0, 1), INVALID_PARTITIONS, "Number of partitions must be larger than 0."),
        (NewTopic("t", -5, 1), INVALID_PARTITIONS, "Number of partitions must be larger than 0."),
        (
            NewTopic("t", 1, 4),
            INVALID_REPLICATION_FACTOR,
            "Replication factor: 4 larger than available brokers: 3.",
        ),
        (
            NewTopic("t", 1, 0),
            INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0.",
        ),
        (NewTopic("bad name", 1, 1), INVALID_TOPIC_EXCEPTION, "is illegal"),
        (NewTopic("t", 1, 1, configs={"segment.ms": "0"}), INVALID_CONFIG, "at least 1"),
        (NewTopic("t", 1, 1, configs={"no.such": "1"}), INVALID_CONFIG, "Unknown topic config"),
        (NewTopic("t", 1, 1, configs={"retention.ms": None}), INVALID_REQUEST, "Null value"),
        (
            NewTopic("t", 2, -1, assignments={0: [1]}),
            INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set",
        ),
        (
            NewTopic("t", assignments={0: [1, 2], 1: [3]}),
            INVALID_REPLICA_ASSIGNMENT,
            "same number of replicas",
        ),
    ],
)
def test_create_topic_errors(new_topic: NewTopic, error_code: int, message: str) -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2, 3])
        results = await cluster.active().create_topics([new_topic], validate_only=False)
        assert results[new_topic.name].error_code == error_code
        assert message in (results[new_topic.name].message or "")
        assert new_topic.name not in store.topics
        await cluster.stop()

    asyncio.run(scenario())


def test_existing_topic_is_topic_already_exists() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1]}, {0: state(1, [1])})
        cluster = await start_cluster(store, [1, 2, 3])
        results = await cluster.active().create_topics([NewTopic("t", 1, 1)], validate_only=False)
        assert results == {"t": TopicError(TOPIC_ALREADY_EXISTS, "Topic 't' already exists.")}
        await cluster.stop()

    asyncio.run(scenario())


def test_topic_created_concurrently_elsewhere_is_topic_already_exists() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2, 3])
        # In ZooKeeper, but the controller has not seen the watch yet.
        add_topic(store, "race", {0: [1]})
        results = await cluster.active().create_topics([NewTopic("race", 1, 1)], False)
        assert results["race"] == TopicError(TOPIC_ALREADY_EXISTS, "Topic 'race' already exists.")
        await cluster.stop()

    asyncio.run(scenario())


def test_colliding_name_is_invalid_topic_exception() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "a_b", {0: [1]}, {0: state(1, [1])})
        cluster = await start_cluster(store, [1, 2, 3])
        results = await cluster.active().create_topics([NewTopic("a.b", 1, 1)], False)
        assert results["a.b"] == TopicError(
            INVALID_TOPIC_EXCEPTION, "Topic 'a.b' collides with existing topics: a_b"
        )
        await cluster.stop()

    asyncio.run(scenario())


def test_duplicate_names_in_one_request_are_invalid_request() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2, 3])
        results = await cluster.active().create_topics(
            [NewTopic("dup", 1, 1), NewTopic("dup", 1, 1), NewTopic("ok", 1, 1)], False
        )
        assert results["dup"].error_code == INVALID_REQUEST
        assert results["ok"].error_code == NONE
        assert "dup" not in store.topics
        await cluster.stop()

    asyncio.run(scenario())


def test_non_controller_answers_not_controller() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2])
        follower = cluster.controller(2)
        assert not follower.is_active
        created = await follower.create_topics([NewTopic("a", 1, 1), NewTopic("b", 1, 1)], False)
        deleted = await follower.delete_topics(["a"])
        assert created == {"a": TopicError(NOT_CONTROLLER), "b": TopicError(NOT_CONTROLLER)}
        assert deleted == {"a": NOT_CONTROLLER}
        assert store.topics == {}
        await cluster.stop()

    asyncio.run(scenario())


LOOP_TURNS = 50


async def _turns(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


def test_requests_during_the_context_load_wait_for_it_instead_of_not_controller() -> None:
    """A broker that has won /controller is what clients see as controller, while its context
    may still be loading (seconds with thousands of partitions): CreateTopics and friends sent
    then are served once the load ends, as Kafka serves them from its election on."""

    async def scenario() -> None:
        store = FakeZkStore()
        store.register_broker(1)
        controller, kafka_zk = new_controller(store, 1)
        load_gate = asyncio.Event()
        read_topics = kafka_zk.get_all_topics

        async def slow_get_all_topics() -> list[str]:
            await load_gate.wait()
            return await read_topics()

        kafka_zk.get_all_topics = slow_get_all_topics  # type: ignore[method-assign]
        await controller.start()
        await wait_until(lambda: store.controller is not None, "/controller won")
        assert not controller.is_active
        created = asyncio.create_task(controller.create_topics([NewTopic("a", 1, 1)], False))
        deleted = asyncio.create_task(controller.delete_topics(["missing"]))
        await _turns(LOOP_TURNS)  # the fake answers at once: a request that did not wait is done
        assert not created.done() and not deleted.done()
        load_gate.set()
        assert await created == {"a": TopicError(NONE)}
        assert await deleted == {"missing": UNKNOWN_TOPIC_OR_PARTITION}
        assert "a" in store.topics
        await controller.stop()

    asyncio.run(scenario())


def test_requests_waiting_for_a_load_that_fails_answer_not_controller() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        store.register_broker(1)
        controller, kafka_zk = new_controller(store, 1, sleep=ManualSleeps())
        load_gate = asyncio.Event()

        async def failing_get_all_topics() -> list[str]:
            await load_gate.wait()
            raise RuntimeError("injected load failure")

        kafka_zk.get_all_topics = failing_get_all_topics  # type: ignore[method-assign]
        await controller.start()
        await wait_until(lambda: store.controller is not None, "/controller won")
        created = asyncio.create_task(controller.create_topics([NewTopic("a", 1, 1)], False))
        await _turns(LOOP_TURNS)
        assert not created.done()
        load_gate.set()
        assert await created == {"a": TopicError(NOT_CONTROLLER)}
        assert "a" not in store.topics
        await controller.stop()

    asyncio.run(scenario())


def test_deleted_topic_goes_leaderless_then_its_znodes_vanish() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "gone", {0: [1, 2], 1: [2, 1]}, {0: state(1, [1, 2]), 1: state(2, [2, 1])})
        add_topic(store, "kept", {0: [1]}, {0: state(1, [1])})
        cluster = await start_cluster(store, [1, 2])
        controller = cluster.active()
        assert await controller.delete_topics(["gone", "missing"]) == {
            "gone": NONE,
            "missing": UNKNOWN_TOPIC_OR_PARTITION,
        }
        await wait_until(lambda: "gone" not in store.topics, "topic znodes deleted")
        await cluster.settle()
        offline_writes = [(t, p, s) for t, p, s in store.state_writes if t == "gone"]
        assert sorted((p, s.leader, s.leader_epoch) for _, p, s in offline_writes) == [
            (0, -1, 1),
            (1, -1, 1),
        ]
        assert store.delete_markers == set()
        assert not any(t == "gone" for t, _ in store.partition_states)
        assert "kept" in store.topics
        context = controller.context
        assert context is not None
        assert "gone" not in context.assignments
        await cluster.stop()

    asyncio.run(scenario())


def test_topic_marked_for_deletion_is_deleted_at_failover() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "old", {0: [1]}, {0: state(1, [1])})
        store.delete_markers.add("old")
        cluster = await start_cluster(store, [1])
        assert "old" not in store.topics
        assert store.delete_markers == set()
        await cluster.stop()

    asyncio.run(scenario())


def test_topic_queued_for_deletion_cannot_be_recreated_yet() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "old", {0: [1]}, {0: state(1, [1])})
        store.delete_markers.add("old")
        config = ControllerConfig(delete_topic_enable=False)
        cluster = await start_cluster(store, [1], config)
        results = await cluster.active().create_topics([NewTopic("old", 1, 1)], False)
        assert results["old"].error_code == TOPIC_ALREADY_EXISTS
        assert "old" in store.topics  # deletion disabled: the marker is left alone
        await cluster.stop()

    asyncio.run(scenario())


def test_delete_topics_disabled_is_topic_deletion_disabled() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1]}, {0: state(1, [1])})
        cluster = await start_cluster(store, [1], ControllerConfig(delete_topic_enable=False))
        assert await cluster.active().delete_topics(["t"]) == {"t": TOPIC_DELETION_DISABLED}
        assert store.delete_markers == set()
        await cluster.stop()

    asyncio.run(scenario())


def test_recreating_a_deleted_topic_works_once_it_is_gone() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2])
        controller = cluster.active()
        assert (await controller.create_topics([NewTopic("r", 1, 2)], False))["r"].error_code == 0
        await wait_until(lambda: ("r", 0) in store.partition_states, "states created")
        assert await controller.delete_topics(["r"]) == {"r": NONE}
        await wait_until(lambda: "r" not in store.topics, "topic deleted")
        await cluster.settle()
        again = await controller.create_topics([NewTopic("r", 1, 2)], False)
        assert again["r"].error_code == NONE
        await wait_until(lambda: ("r", 0) in store.partition_states, "states created again")
        assert store.partition_states[("r", 0)][0].leader_epoch == 0
        await cluster.stop()

    asyncio.run(scenario())


def test_one_request_cannot_create_more_than_create_topics_max_partitions() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        config = ControllerConfig(create_topics_max_partitions=10)
        cluster = await start_cluster(store, [1], config)
        results = await cluster.active().create_topics(
            [NewTopic("a", 6, 1), NewTopic("b", 5, 1), NewTopic("c", 4, 1)],
            validate_only=False,
        )
        assert results["a"] == TopicError(NONE)
        assert results["b"].error_code == INVALID_PARTITIONS
        assert "create.topics.max.partitions" in (results["b"].message or "")
        assert results["c"] == TopicError(NONE), "the budget left (4) still fits c"
        assert "b" not in store.topics
        huge = await cluster.active().create_topics(
            [NewTopic("huge", 2**31 - 1, 1)], validate_only=False
        )
        assert huge["huge"].error_code == INVALID_PARTITIONS
        await cluster.stop()

    asyncio.run(scenario())
