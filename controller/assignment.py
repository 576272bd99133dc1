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
    UNKNOWN_SERVER_ERROR,
    ApiError,
)
from controller.topic_configs import validate_topic_configs

__all__ = [
    "MAX_TOPIC_NAME_LENGTH",
    "NOT_ALL_BROKERS_HAVE_RACKS",
    "NOT_ALL_BROKERS_HAVE_RACKS_ENFORCED",
    "assign_replicas_to_brokers",
    "colliding_topics",
    "enforced_broker_racks",
    "has_collision_chars",
    "rack_alternated_broker_list",
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


# Kafka's AdminOperationException messages: the first from the placement itself (CreateTopics,
# auto-creation), the second from the Enforced rack-aware mode (CreatePartitions, the tools).
NOT_ALL_BROKERS_HAVE_RACKS = (
    "Not all brokers have rack information for replica rack aware assignment."
)
NOT_ALL_BROKERS_HAVE_RACKS_ENFORCED = (
    "Not all brokers have rack information. Add --disable-rack-aware in command line to make "
    "replica assignment without rack information."
)


def enforced_broker_racks(racks: Mapping[int, str | None]) -> dict[int, str | None]:
    """Kafka's RackAwareMode.Enforced: some brokers with a rack and some without is an error
    (UNKNOWN_SERVER_ERROR on the wire, as Kafka's AdminOperationException)."""
    with_rack = sum(1 for rack in racks.values() if rack is not None)
    if 0 < with_rack < len(racks):
        raise ApiError(UNKNOWN_SERVER_ERROR, NOT_ALL_BROKERS_HAVE_RACKS_ENFORCED)
    return dict(racks)


def assign_replicas_to_brokers(
    broker_ids: Collection[int],
    num_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
    racks: Mapping[int, str | None] | None = None,
) -> dict[int, list[int]]:
    """Kafka's placement (AdminUtils.assignReplicasToBrokers).

    Rack-unaware (no broker of `broker_ids` has a rack in `racks`): brokers are sorted by id.
    The first replica of each partition goes round-robin from a random start index; followers
    are shifted from the first replica by `next_replica_shift`, which grows by one after every
    full round over the brokers so that the followers of the second round differ from the
    first. A non-negative `fixed_start_index` replaces both random choices (for tests and
    reproducible placement).

    Rack-aware (any broker has a rack; then all must, or UNKNOWN_SERVER_ERROR as Kafka's
    AdminOperationException): the same walk over the rack-alternated broker list, except that
    a follower candidate is passed over while its rack (or itself) already holds a replica
    and some rack (or broker) holds none yet.
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
    broker_racks = {broker: (racks or {}).get(broker) for broker in brokers}
    rack_aware = any(rack is not None for rack in broker_racks.values())
    if rack_aware:
        if any(rack is None for rack in broker_racks.values()):
            raise ApiError(UNKNOWN_SERVER_ERROR, NOT_ALL_BROKERS_HAVE_RACKS)
        brokers = rack_alternated_broker_list({b: r for b, r in broker_racks.items() if r})
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
        if rack_aware:
            replicas = _rack_aware_replicas(
                brokers, broker_racks, first_index, next_replica_shift, replication_factor
            )
        else:
            replicas = [brokers[first_index]]
            for follower in range(replication_factor - 1):
                index = _follower_index(first_index, next_replica_shift, follower, broker_count)
                replicas.append(brokers[index])
        assignment[partition_id] = replicas
        partition_id += 1
    return assignment


def rack_alternated_broker_list(racks: Mapping[int, str]) -> list[int]:
    """Brokers taken one per rack in turn (racks by name, brokers by id within a rack):
    rack1: 0, 1, 2 / rack2: 3, 4, 5 gives 0, 3, 1, 4, 2, 5."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    queues = [by_rack[rack] for rack in sorted(by_rack)]
    result: list[int] = []
    for depth in range(max(len(queue) for queue in queues)):
        result.extend(queue[depth] for queue in queues if depth < len(queue))
    return result


def _rack_aware_replicas(
    brokers: Sequence[int],
    broker_racks: Mapping[int, str | None],
    first_index: int,
    next_replica_shift: int,
    replication_factor: int,
) -> list[int]:
    rack_count = len(set(broker_racks.values()))
    broker_count = len(brokers)
    leader = brokers[first_index]
    replicas = [leader]
    racks_with_replicas = {broker_racks[leader]}
    # The candidate walk continues across followers: each follower starts where the previous
    # one's search stopped, as in Kafka.
    step = 0
    for _ in range(replication_factor - 1):
        while True:
            shift = next_replica_shift * rack_count
            index = _follower_index(first_index, shift, step, broker_count)
            broker = brokers[index]
            rack = broker_racks[broker]
            step += 1
            rack_ok = rack not in racks_with_replicas or len(racks_with_replicas) == rack_count
            broker_ok = broker not in replicas or len(replicas) == broker_count
            if rack_ok and broker_ok:
                replicas.append(broker)
                racks_with_replicas.add(rack)
                break
    return replicas


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
