"""Topic names and replica placement, as pure functions.

Used by the controller for CreateTopics and by the broker for topic auto-creation. Failures
raise `ApiError` carrying Kafka's error code; the messages follow Kafka's wording so clients
and people see what they would see against Kafka.
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Iterable, Mapping, Sequence

from controller.errors import (
    INVALID_PARTITIONS,
    INVALID_REPLICA_ASSIGNMENT,
    INVALID_REPLICATION_FACTOR,
    INVALID_TOPIC_EXCEPTION,
    ApiError,
)
from controller.topic_configs import validate_topic_configs

__all__ = [
    "MAX_TOPIC_NAME_LENGTH",
    "assign_replicas_to_brokers",
    "colliding_topics",
    "has_collision_chars",
    "validate_replica_assignment",
    "validate_topic_configs",
    "validate_topic_name",
]

# Kafka's limit: a partition directory is "<topic>-<partition>" and must fit in 255 bytes.
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(topic: str) -> None:
    """Raise INVALID_TOPIC_EXCEPTION unless `topic` is a legal Kafka topic name."""
    if not topic:
        raise ApiError(INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if topic in (".", ".."):
        raise ApiError(INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(topic) > MAX_TOPIC_NAME_LENGTH:
        raise ApiError(
            INVALID_TOPIC_EXCEPTION,
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
            f"characters, topic name: {topic}",
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(topic):
        raise ApiError(
            INVALID_TOPIC_EXCEPTION,
            f'Topic name "{topic}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'",
        )


def has_collision_chars(topic: str) -> bool:
    """'.' and '_' map to the same metric name, so such names may collide with others."""
    return "." in topic or "_" in topic


def colliding_topics(topic: str, existing_topics: Iterable[str]) -> list[str]:
    """Existing topics whose names equal `topic` once '.' is read as '_' (metric clash)."""
    if not has_collision_chars(topic):
        return []
    normalized = topic.replace(".", "_")
    return sorted(
        other
        for other in existing_topics
        if other != topic and other.replace(".", "_") == normalized
    )


def assign_replicas_to_brokers(
    broker_ids: Collection[int],
    num_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Kafka's rack-unaware placement (AdminUtils.assignReplicasToBrokers).

    Brokers are sorted by id. The first replica of each partition goes round-robin from a
    random start index; followers are shifted from the first replica by `next_replica_shift`,
    which grows by one after every full round over the brokers so that the followers of the
    second round differ from the first. A non-negative `fixed_start_index` replaces both
    random choices (for tests and reproducible placement).
    """
    if num_partitions <= 0:
        raise ApiError(INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise ApiError(INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    brokers = sorted(broker_ids)
    if replication_factor > len(brokers):
        raise ApiError(
            INVALID_REPLICATION_FACTOR,
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}.",
        )
    broker_count = len(brokers)
    chooser = rng or random.Random()
    if fixed_start_index >= 0:
        start_index = fixed_start_index
        next_replica_shift = fixed_start_index
    else:
        start_index = chooser.randrange(broker_count)
        next_replica_shift = chooser.randrange(broker_count)
    assignment: dict[int, list[int]] = {}
    partition_id = max(0, start_partition_id)
    for _ in range(num_partitions):
        if partition_id > 0 and partition_id % broker_count == 0:
            next_replica_shift += 1
        first_index = (partition_id + start_index) % broker_count
        replicas = [brokers[first_index]]
        for follower in range(replication_factor - 1):
            index = _follower_index(first_index, next_replica_shift, follower, broker_count)
            replicas.append(brokers[index])
        assignment[partition_id] = replicas
        partition_id += 1
    return assignment


def _follower_index(first_index: int, shift: int, follower: int, broker_count: int) -> int:
    # The offset is 1..broker_count-1 so a follower never lands on the first replica's broker.
    offset = 1 + (shift + follower) % (broker_count - 1)
    return (first_index + offset) % broker_count


def validate_replica_assignment(assignment: Mapping[int, Sequence[int]]) -> None:
    """Check an explicit CreateTopics assignment the way Kafka does.

    Kafka does not require the brokers to be alive (or even registered) here; a partition whose
    replicas are all absent simply stays offline until one of them registers.
    """
    if not assignment:
        raise ApiError(INVALID_REPLICA_ASSIGNMENT, "Replica assignment must not be empty.")
    for partition, replicas in assignment.items():
        if not replicas:
            raise ApiError(
                INVALID_REPLICA_ASSIGNMENT,
                f"Replica assignment for partition {partition} is empty.",
            )
        if any(replica < 0 for replica in replicas):
            raise ApiError(
                INVALID_REPLICA_ASSIGNMENT,
                f"Replica assignment for partition {partition} has a negative broker id: "
                f"{list(replicas)}.",
            )
    if len({len(replicas) for replicas in assignment.values()}) != 1:
        raise ApiError(
            INVALID_REPLICA_ASSIGNMENT, "All partitions should have the same number of replicas"
        )
    for replicas in assignment.values():
        if len(set(replicas)) != len(replicas):
            raise ApiError(
                INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate replica assignment found: {_format_assignment(assignment)}",
            )
    if sorted(assignment) != list(range(len(assignment))):
        raise ApiError(
            INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        )


def _format_assignment(assignment: Mapping[int, Sequence[int]]) -> str:
    parts = ", ".join(
        f"{partition} -> {list(replicas)}" for partition, replicas in sorted(assignment.items())
    )
    return "{" + parts + "}"
