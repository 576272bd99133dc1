"""Topic name rules and Kafka's replica placement, rack-unaware and rack-aware."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from controller.assignment import (
    NOT_ALL_BROKERS_HAVE_RACKS,
    NOT_ALL_BROKERS_HAVE_RACKS_ENFORCED,
    assign_replicas_to_brokers,
    colliding_topics,
    enforced_broker_racks,
    rack_alternated_broker_list,
    validate_replica_assignment,
    validate_topic_name,
)
from controller.config import ControllerConfig
from controller.errors import (
    INVALID_PARTITIONS,
    INVALID_REPLICA_ASSIGNMENT,
    INVALID_REPLICATION_FACTOR,
    INVALID_TOPIC_EXCEPTION,
    UNKNOWN_SERVER_ERROR,
    ApiError,
    TopicError,
)
from controller.topic_creation import NewTopic, plan_new_topic


@pytest.mark.parametrize("name", ["a", "orders", "Orders.v2_final-1", "x" * 249, "..."])
def test_legal_topic_names_pass(name: str) -> None:
    validate_topic_name(name)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Topic name is illegal, it can't be empty"),
        (".", 'Topic name cannot be "." or ".."'),
        ("..", 'Topic name cannot be "." or ".."'),
        ("x" * 250, "can't be longer than 249 characters"),
        ("has space", "contains a character other than ASCII alphanumerics"),
        ("slash/topic", "contains a character other than ASCII alphanumerics"),
        ("caf\u00e9", "contains a character other than ASCII alphanumerics"),
    ],
)
def test_illegal_topic_names_are_invalid_topic_exception(name: str, message: str) -> None:
    with pytest.raises(ApiError) as raised:
        validate_topic_name(name)
    assert raised.value.error_code == INVALID_TOPIC_EXCEPTION
    assert message in raised.value.message


def test_period_and_underscore_names_collide() -> None:
    assert colliding_topics("a.b", ["a_b", "a-b", "a.b"]) == ["a_b"]
    assert colliding_topics("ab", ["ab"]) == []


def test_six_partitions_rf3_over_three_brokers_from_start_index_zero() -> None:
    # Second round (partitions 3-5) shifts followers by one more position.
    assert assign_replicas_to_brokers([3, 1, 2], 6, 3, fixed_start_index=0) == {
        0: [1, 2, 3],
        1: [2, 3, 1],
        2: [3, 1, 2],
        3: [1, 3, 2],
        4: [2, 1, 3],
        5: [3, 2, 1],
    }


def test_ten_partitions_rf3_over_five_brokers_matches_kafka_placement() -> None:
    assert assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, fixed_start_index=0) == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


def test_random_start_spreads_leaders_evenly_and_never_repeats_a_broker() -> None:
    assignment = assign_replicas_to_brokers([1, 2, 3], 30, 2, rng=random.Random(7))
    leaders = Counter(replicas[0] for replicas in assignment.values())
    assert leaders == {1: 10, 2: 10, 3: 10}
    assert all(len(set(replicas)) == 2 for replicas in assignment.values())


def test_zero_partitions_is_invalid_partitions() -> None:
    with pytest.raises(ApiError) as raised:
        assign_replicas_to_brokers([1], 0, 1)
    assert raised.value.error_code == INVALID_PARTITIONS
    assert raised.value.message == "Number of partitions must be larger than 0."


def test_replication_factor_above_broker_count_is_invalid_replication_factor() -> None:
    with pytest.raises(ApiError) as raised:
        assign_replicas_to_brokers([1, 2, 3], 1, 4)
    assert raised.value.error_code == INVALID_REPLICATION_FACTOR
    assert raised.value.message == "Replication factor: 4 larger than available brokers: 3."


def test_zero_replication_factor_is_invalid_replication_factor() -> None:
    with pytest.raises(ApiError) as raised:
        assign_replicas_to_brokers([1, 2, 3], 1, 0)
    assert raised.value.error_code == INVALID_REPLICATION_FACTOR


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ({0: [1, 2], 1: [1]}, "All partitions should have the same number of replicas"),
        ({0: [1, 1]}, "Duplicate replica assignment found"),
        ({0: [1], 2: [2]}, "consecutive 0-based integer sequence"),
        ({0: []}, "is empty"),
        ({}, "must not be empty"),
        ({0: [-1]}, "negative broker id"),
    ],
)
def test_bad_explicit_assignment_is_invalid_replica_assignment(
    assignment: dict[int, list[int]], message: str
) -> None:
    with pytest.raises(ApiError) as raised:
        validate_replica_assignment(assignment)
    assert raised.value.error_code == INVALID_REPLICA_ASSIGNMENT
    assert message in raised.value.message


def test_explicit_assignment_may_name_unregistered_brokers() -> None:
    validate_replica_assignment({0: [7, 8], 1: [8, 9]})


# ------------------------------------------------------------- rack-aware placement
# Expectations from Kafka 3.9's AdminRackAwareTest (AdminUtils.assignReplicasToBrokers).

_SIX_BROKERS_THREE_RACKS = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


def test_rack_alternated_broker_list_takes_one_broker_per_rack_in_turn() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    del racks[5]
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 4, 2]


def test_rack_aware_placement_matches_kafkas_documented_assignment() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    placed = assign_replicas_to_brokers(
        list(racks), 7, 3, fixed_start_index=0, start_partition_id=0, racks=racks
    )
    assert placed == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],  # the second round shifts the followers
    }


def _check_distribution(
    placed: dict[int, list[int]],
    racks: dict[int, str],
    replication_factor: int,
    even_leaders: bool = True,
    even_replicas: bool = True,
) -> None:
    rack_count = len(set(racks.values()))
    for replicas in placed.values():
        assert len(replicas) == replication_factor
        assert len(set(replicas)) == replication_factor
        assert len({racks[b] for b in replicas}) == min(replication_factor, rack_count)
    if even_leaders:
        leaders = Counter(replicas[0] for replicas in placed.values())
        assert len(set(leaders.values())) == 1 and set(leaders) == set(racks)
    if even_replicas:
        counts = Counter(b for replicas in placed.values() for b in replicas)
        assert len(set(counts.values())) == 1 and set(counts) == set(racks)


@pytest.mark.parametrize(
    ("racks", "partitions", "replication_factor", "start", "even_leaders", "even_replicas"),
    [
        (_SIX_BROKERS_THREE_RACKS, 6, 3, 2, True, True),
        (_SIX_BROKERS_THREE_RACKS, 6, 3, -1, True, True),
        (_SIX_BROKERS_THREE_RACKS, 13, 3, 0, False, False),
        ({0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}, 12, 3, -1,
         True, False),
        (_SIX_BROKERS_THREE_RACKS, 12, 2, -1, True, True),
        (_SIX_BROKERS_THREE_RACKS, 6, 2, -1, True, True),
        ({0: "rack1", 1: "rack2", 4: "rack3"}, 3, 2, -1, True, True),
        ({**_SIX_BROKERS_THREE_RACKS, 6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3",
          10: "rack1", 11: "rack3"}, 96, 3, -1, True, True),
    ],
)  # fmt: skip
def test_rack_aware_placement_spreads_racks_leaders_and_replicas(
    racks: dict[int, str],
    partitions: int,
    replication_factor: int,
    start: int,
    even_leaders: bool,
    even_replicas: bool,
) -> None:
    for seed in range(20):
        placed = assign_replicas_to_brokers(
            list(racks),
            partitions,
            replication_factor,
            fixed_start_index=start,
            rng=random.Random(seed),
            racks=racks,
        )
        assert sorted(placed) == list(range(partitions))
        _check_distribution(placed, racks, replication_factor, even_leaders, even_replicas)


def test_rack_aware_expansion_numbers_partitions_from_the_start_id() -> None:
    racks = {6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}
    placed = assign_replicas_to_brokers(list(racks), 12, 2, start_partition_id=12, racks=racks)
    assert sorted(placed) == list(range(12, 24))
    _check_distribution(placed, racks, 2)


@pytest.mark.parametrize(("replication_factor", "rack_count"), [(5, 3), (2, 2)])
def test_replicas_cover_as_many_racks_as_they_can(replication_factor: int, rack_count: int) -> None:
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    placed = assign_replicas_to_brokers(list(racks), 6, replication_factor, racks=racks)
    for replicas in placed.values():
        assert len(replicas) == replication_factor
        assert len({racks[b] for b in replicas}) == rack_count


def test_single_rack_places_like_one_rack_per_leader() -> None:
    racks = dict.fromkeys(range(6), "rack1")
    placed = assign_replicas_to_brokers(list(racks), 6, 3, racks=racks)
    assert Counter(replicas[0] for replicas in placed.values()) == Counter(range(6))


def test_a_broker_is_not_chosen_twice_when_racks_run_out() -> None:
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    placed = assign_replicas_to_brokers(list(racks), 6, 4, fixed_start_index=2, racks=racks)
    for replicas in placed.values():
        assert len(set(replicas)) == 4


def test_some_brokers_without_a_rack_is_kafkas_admin_operation_error() -> None:
    racks: dict[int, str | None] = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: None}
    with pytest.raises(ApiError) as raised:
        assign_replicas_to_brokers(list(racks), 10, 5, racks=racks)
    assert raised.value.error_code == UNKNOWN_SERVER_ERROR
    assert raised.value.message == NOT_ALL_BROKERS_HAVE_RACKS
    # The parameter checks come first, as in Kafka.
    with pytest.raises(ApiError) as raised:
        assign_replicas_to_brokers(list(racks), 10, 6, racks=racks)
    assert raised.value.error_code == INVALID_REPLICATION_FACTOR


def test_enforced_mode_refuses_partial_racks_and_passes_all_or_none() -> None:
    with pytest.raises(ApiError) as raised:
        enforced_broker_racks({1: "a", 2: None})
    assert raised.value.message == NOT_ALL_BROKERS_HAVE_RACKS_ENFORCED
    assert enforced_broker_racks({1: None, 2: None}) == {1: None, 2: None}
    assert enforced_broker_racks({1: "a", 2: "b"}) == {1: "a", 2: "b"}


def test_no_racks_places_as_before() -> None:
    plain = assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, fixed_start_index=0)
    no_racks = dict.fromkeys(range(5), None)
    assert assign_replicas_to_brokers(range(5), 10, 3, fixed_start_index=0, racks=no_racks) == plain


def test_create_topics_places_across_the_live_brokers_racks() -> None:
    racks = {b: f"rack-{b % 3}" for b in range(1, 7)}
    plan = plan_new_topic(
        NewTopic("t", num_partitions=12, replication_factor=3),
        (),
        (),
        list(racks),
        ControllerConfig(),
        rng=random.Random(3),
        broker_racks=racks,
    )
    assert all(len({racks[b] for b in replicas}) == 3 for replicas in plan.assignment.values())
    partial = {**racks, 7: None}
    with pytest.raises(ApiError) as raised:
        plan_new_topic(NewTopic("t", 3, 3), (), (), list(partial), ControllerConfig(),
                       broker_racks=partial)  # fmt: skip
    # As Kafka's ApiError.fromThrowable: UNKNOWN_SERVER_ERROR goes out without its message.
    assert raised.value.to_topic_error() == TopicError(UNKNOWN_SERVER_ERROR)
