"""Topic name rules and Kafka's rack-unaware replica placement."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from controller.assignment import (
    assign_replicas_to_brokers,
    colliding_topics,
    validate_replica_assignment,
    validate_topic_name,
)
from controller.errors import (
    INVALID_PARTITIONS,
    INVALID_REPLICA_ASSIGNMENT,
    INVALID_REPLICATION_FACTOR,
    INVALID_TOPIC_EXCEPTION,
    ApiError,
)


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
