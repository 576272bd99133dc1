"""`kafka-topics --describe`: Kafka 3.0's TopicDescription and PartitionDescription lines.

    Topic: t<TAB>TopicId: <id><TAB>PartitionCount: 3<TAB>ReplicationFactor: 2<TAB>Configs: k=v
    <TAB>Topic: t<TAB>Partition: 0<TAB>Leader: 1<TAB>Replicas: 1,2<TAB>Isr: 1,2

`Configs:` lists only the entries DescribeConfigs reports as not default. The partition
report flags (`--under-replicated-partitions` ...) print only matching partition lines and no
topic line; `--topics-with-overrides` prints only the topic lines of topics with overrides.
"""

from __future__ import annotations

import argparse
import base64
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TopicCollection, Uuid
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource

from kafka_cli._client import result_of

MIN_ISR_CONFIG = "min.insync.replicas"


@dataclass(frozen=True)
class PartitionView:
    partition: int
    leader: int | None
    replicas: list[int]
    isr: list[int]


def kafka_uuid(uuid: Uuid | None) -> str | None:
    """Kafka's Uuid.toString (URL-safe base64, no padding); None for a missing/zero id."""
    if uuid is None:
        return None
    bits: Any = uuid  # the type stubs leave out the accessors
    most = bits.get_most_significant_bits() & (2**64 - 1)
    least = bits.get_least_significant_bits() & (2**64 - 1)
    if most == 0 and least == 0:
        return None
    raw = most.to_bytes(8, "big") + least.to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _node_id(node: object) -> int | None:
    node_id = getattr(node, "id", None)
    return node_id if isinstance(node_id, int) and node_id >= 0 else None


def _partition_view(info: object) -> PartitionView:
    replicas = [_node_id(node) for node in getattr(info, "replicas", [])]
    isr = [_node_id(node) for node in getattr(info, "isr", [])]
    return PartitionView(
        partition=int(getattr(info, "id", -1)),
        leader=_node_id(getattr(info, "leader", None)),
        replicas=[node for node in replicas if node is not None],
        isr=[node for node in isr if node is not None],
    )


def _min_isr(configs: dict[str, str | None]) -> int | None:
    value = configs.get(MIN_ISR_CONFIG)
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


def wanted(
    view: PartitionView, options: argparse.Namespace, live: set[int], min_isr: int | None
) -> bool:
    """Kafka's DescribeOptions.shouldPrintTopicPartition for one partition."""
    if options.under_replicated_partitions:
        return len(view.replicas) - len(view.isr) > 0
    if options.unavailable_partitions:
        return view.leader is None or view.leader not in live
    if options.under_min_isr_partitions:
        return view.leader is None or (min_isr is not None and len(view.isr) < min_isr)
    if options.at_min_isr_partitions:
        return min_isr is not None and len(view.isr) == min_isr
    return True


def _reports_partitions_only(options: argparse.Namespace) -> bool:
    return bool(
        options.under_replicated_partitions
        or options.unavailable_partitions
        or options.under_min_isr_partitions
        or options.at_min_isr_partitions
    )


def topic_line(
    topic: str, topic_id: str | None, partitions: list[PartitionView], configs: dict[str, str]
) -> str:
    fields = [f"Topic: {topic}"]
    if topic_id is not None:
        fields.append(f"TopicId: {topic_id}")
    replication_factor = len(partitions[0].replicas) if partitions else 0
    fields.append(f"PartitionCount: {len(partitions)}")
    fields.append(f"ReplicationFactor: {replication_factor}")
    fields.append("Configs: " + ",".join(f"{name}={value}" for name, value in configs.items()))
    return "\t".join(fields)


def partition_line(topic: str, view: PartitionView) -> str:
    leader = "none" if view.leader is None else str(view.leader)
    return (
        f"\tTopic: {topic}\tPartition: {view.partition}\tLeader: {leader}"
        f"\tReplicas: {','.join(map(str, view.replicas))}\tIsr: {','.join(map(str, view.isr))}"
    )


@dataclass(frozen=True)
class TopicConfigs:
    values: dict[str, str | None]  # every config the broker reports
    overrides: dict[str, str]  # the non-default ones, as `Configs:` shows them


def _topic_configs(admin: AdminClient, topics: list[str]) -> dict[str, TopicConfigs]:
    resources = [ConfigResource(ConfigResource.Type.TOPIC, topic) for topic in topics]
    configs: dict[str, TopicConfigs] = {}
    for resource, future in admin.describe_configs(resources).items():
        entries = result_of(future)
        configs[resource.name] = TopicConfigs(
            values={name: entry.value for name, entry in entries.items()},
            # A sensitive value comes back as null, which Java prints as "null".
            overrides={
                name: "null" if entry.value is None else entry.value
                for name, entry in entries.items()
                if not entry.is_default
            },
        )
    return configs


def describe_topics(admin: AdminClient, topics: list[str], options: argparse.Namespace) -> None:
    if not topics:
        return
    all_configs = _topic_configs(admin, topics)
    live = {node.id for node in result_of(admin.describe_cluster()).nodes}
    descriptions = admin.describe_topics(TopicCollection(topics))
    for topic in topics:
        description = result_of(descriptions[topic])
        views = sorted(
            (_partition_view(info) for info in description.partitions),
            key=lambda view: view.partition,
        )
        configs = all_configs.get(topic, TopicConfigs({}, {}))
        if not _reports_partitions_only(options) and (
            not options.topics_with_overrides or configs.overrides
        ):
            print(topic_line(topic, kafka_uuid(description.topic_id), views, configs.overrides))
        if options.topics_with_overrides:
            continue
        min_isr = _min_isr(configs.values)
        for view in views:
            if wanted(view, options, live, min_isr):
                print(partition_line(topic, view))
