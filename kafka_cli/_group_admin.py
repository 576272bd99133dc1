"""Admin-client reads the consumer-groups tool needs, in plain data (no printing)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec

from kafka_cli._client import result_of
from kafka_cli.common import ToolError

# Kafka's ConsumerGroupState.toString for librdkafka's enum.
STATE_NAMES = {
    ConsumerGroupState.UNKNOWN: "Unknown",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.EMPTY: "Empty",
}
STATES_BY_LOWER_NAME = {name.lower(): state for state, name in STATE_NAMES.items()}

Partition = tuple[str, int]


@dataclass(frozen=True)
class Member:
    consumer_id: str
    group_instance_id: str
    client_id: str
    host: str
    assignment: list[Partition]


@dataclass(frozen=True)
class GroupDescription:
    group: str
    state: str
    assignor: str
    coordinator: str  # Kafka's `host:port (id)`
    members: list[Member]


def parse_states(text: str) -> set[ConsumerGroupState]:
    states: set[ConsumerGroupState] = set()
    for name in text.split(","):
        state = STATES_BY_LOWER_NAME.get(name.strip().lower())
        if state is None or state == ConsumerGroupState.UNKNOWN:
            valid = ", ".join(n for s, n in STATE_NAMES.items() if s != ConsumerGroupState.UNKNOWN)
            raise ToolError(f"Invalid state list '{text}'. Valid states are: {valid}")
        states.add(state)
    return states


def list_groups(
    admin: AdminClient, states: set[ConsumerGroupState] | None = None
) -> list[tuple[str, str]]:
    """(group, state name) of every group, optionally only those in `states`."""
    if states:
        result = result_of(admin.list_consumer_groups(states=states))
    else:
        result = result_of(admin.list_consumer_groups())
    if result.errors:
        raise ToolError(str(result.errors[0]))
    return [
        (listing.group_id, STATE_NAMES.get(listing.state, "Unknown")) for listing in result.valid
    ]


def describe_groups(admin: AdminClient, groups: list[str]) -> dict[str, GroupDescription]:
    descriptions: dict[str, GroupDescription] = {}
    for group, future in admin.describe_consumer_groups(groups).items():
        raw = result_of(future)
        node = raw.coordinator
        members = [
            Member(
                consumer_id=member.member_id,
                group_instance_id=member.group_instance_id or "",
                client_id=member.client_id,
                host=member.host,
                assignment=[
                    (tp.topic, tp.partition)
                    for tp in (member.assignment.topic_partitions if member.assignment else [])
                ],
            )
            for member in raw.members
        ]
        descriptions[group] = GroupDescription(
            group=group,
            state=STATE_NAMES.get(raw.state, "Unknown"),
            assignor=raw.partition_assignor or "",
            coordinator=f"{node.host}:{node.port} ({node.id})" if node else "",
            members=members,
        )
    return descriptions


def committed_offsets(admin: AdminClient, group: str) -> dict[Partition, int]:
    """The group's committed offsets; partitions without a commit are left out."""
    futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    committed: dict[Partition, int] = {}
    for future in futures.values():
        for tp in result_of(future).topic_partitions or []:
            if tp.offset >= 0:
                committed[(tp.topic, tp.partition)] = tp.offset
    return committed


EARLIEST = "earliest"
LATEST = "latest"


def _offset_spec(which: str | int) -> OffsetSpec:
    specs: Any = OffsetSpec  # its factory methods are untyped
    if which == EARLIEST:
        return cast(OffsetSpec, specs.earliest())
    if which == LATEST:
        return cast(OffsetSpec, specs.latest())
    return cast(OffsetSpec, specs.for_timestamp(which))


def log_offsets(
    admin: AdminClient, partitions: Iterable[Partition], which: str | int
) -> dict[Partition, int]:
    """ListOffsets for each partition: EARLIEST, LATEST or a timestamp (ms); -1 when none."""
    spec = _offset_spec(which)
    requests = {TopicPartition(topic, partition): spec for topic, partition in partitions}
    if not requests:
        return {}
    offsets: dict[Partition, int] = {}
    for tp, future in admin.list_offsets(requests).items():
        offsets[(tp.topic, tp.partition)] = result_of(future).offset
    return offsets


def topic_partitions(admin: AdminClient, topics: list[str]) -> list[Partition]:
    """Every partition of each topic; an unknown topic is an error."""
    if not topics:
        return []
    metadata = admin.list_topics(timeout=60)
    partitions: list[Partition] = []
    for topic in topics:
        described = metadata.topics.get(topic)
        if described is None or described.error is not None:
            raise ToolError(f"Topic '{topic}' does not exist")
        partitions.extend((topic, partition) for partition in sorted(described.partitions))
    return partitions
