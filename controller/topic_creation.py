"""CreateTopics validation and placement as one pure function.

The checks run in Kafka's order (ZkAdminManager.createTopics then
AdminZkClient.validateTopicCreate), so a request with several problems gets the same error
code as from Kafka.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from controller.assignment import (
    assign_replicas_to_brokers,
    colliding_topics,
    validate_replica_assignment,
    validate_topic_name,
)
from controller.config import ControllerConfig
from controller.errors import (
    INVALID_REQUEST,
    INVALID_TOPIC_EXCEPTION,
    TOPIC_ALREADY_EXISTS,
    ApiError,
)
from controller.topic_configs import reject_null_values, validate_topic_configs

# CreateTopics' "use the broker default" value for num_partitions and replication_factor.
USE_DEFAULT = -1


@dataclass(frozen=True, slots=True)
class NewTopic:
    name: str
    num_partitions: int = USE_DEFAULT
    replication_factor: int = USE_DEFAULT
    assignments: dict[int, list[int]] | None = None
    configs: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicPlan:
    """A validated topic: what `KafkaZk.create_topic` writes."""

    assignment: dict[int, list[int]]
    configs: dict[str, str]


def topic_exists_message(topic: str) -> str:
    return f"Topic '{topic}' already exists."


def plan_new_topic(
    new_topic: NewTopic,
    existing_topics: Collection[str],
    topics_queued_for_deletion: Collection[str],
    live_brokers: Collection[int],
    config: ControllerConfig,
    rng: random.Random | None = None,
    broker_racks: Mapping[int, str | None] | None = None,
) -> TopicPlan:
    """Validate `new_topic` and place its replicas (rack-aware when the live brokers have
    racks, `broker_racks`); raise ApiError with Kafka's code."""
    name = new_topic.name
    if name in existing_topics:
        raise ApiError(TOPIC_ALREADY_EXISTS, topic_exists_message(name))
    configs = reject_null_values(new_topic.configs)
    assignment = _resolve_assignment(new_topic, live_brokers, config, rng, broker_racks)
    validate_topic_name(name)
    if name in topics_queued_for_deletion:
        raise ApiError(TOPIC_ALREADY_EXISTS, f'Topic "{name}" is queued for deletion.')
    collisions = colliding_topics(name, existing_topics)
    if collisions:
        raise ApiError(
            INVALID_TOPIC_EXCEPTION,
            f"Topic '{name}' collides with existing topics: {', '.join(collisions)}",
        )
    validate_replica_assignment(assignment)
    validate_topic_configs(configs)
    return TopicPlan(assignment=assignment, configs=configs)


def _resolve_assignment(
    new_topic: NewTopic,
    live_brokers: Collection[int],
    config: ControllerConfig,
    rng: random.Random | None,
    broker_racks: Mapping[int, str | None] | None,
) -> dict[int, list[int]]:
    if new_topic.assignments:
        if new_topic.num_partitions != USE_DEFAULT or new_topic.replication_factor != USE_DEFAULT:
            raise ApiError(
                INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time.",
            )
        return {partition: list(replicas) for partition, replicas in new_topic.assignments.items()}
    num_partitions = new_topic.num_partitions
    if num_partitions == USE_DEFAULT:
        num_partitions = config.num_partitions
    replication_factor = new_topic.replication_factor
    if replication_factor == USE_DEFAULT:
        replication_factor = config.default_replication_factor
    # Kafka's CreateTopics takes the alive brokers with their racks as they are (no Enforced
    # check): the placement itself refuses a mix of brokers with and without a rack.
    return assign_replicas_to_brokers(
        live_brokers, num_partitions, replication_factor, rng=rng, racks=broker_racks
    )
