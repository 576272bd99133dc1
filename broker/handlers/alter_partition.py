"""AlterPartition: v0-v3 (Kafka 3.9; kio ships v2-v3, v0-v1 name topics instead of topic ids
and are derived in broker/protocol/legacy.py: Kafka 3.9 brokers send them only for a topic
without an id). Answered by the controller; another broker answers NOT_CONTROLLER, as Kafka's
does.

A partition leader asks the controller to change the ISR (Kafka brokers at
inter.broker.protocol.version 2.7+; see controller/alter_partition.py). v3 names each new ISR
member with its broker epoch (-1 from a ZooKeeper-mode Kafka broker: not checked).
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from controller.alter_partition import (
    FIRST_VERSION_WITH_TOPIC_IDS,
    AlterPartitionRequest,
    IsrMember,
    PartitionChange,
    PartitionResult,
    TopicChanges,
    TopicResult,
)
from zk.znodes import kafka_string_to_uuid, uuid_to_kafka_string

FIRST_VERSION_WITH_BROKER_EPOCHS = 3


async def handle(context: RequestContext, request: Any) -> Any:
    version = context.api_version
    result = await context.services.controller.alter_partition(_request(request, version))
    cls = response_class(ApiKey.ALTER_PARTITION, version)
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": result.error_code,
            "topics": [_topic(topic, version) for topic in result.topics],
        },
    )


def _request(request: Any, version: int) -> AlterPartitionRequest:
    return AlterPartitionRequest(
        broker_id=int(request.broker_id),
        broker_epoch=int(request.broker_epoch),
        version=version,
        topics=tuple(_topic_changes(topic, version) for topic in request.topics),
    )


def _topic_changes(topic: Any, version: int) -> TopicChanges:
    by_id = version >= FIRST_VERSION_WITH_TOPIC_IDS
    topic_id: uuid.UUID | None = topic.topic_id if by_id else None
    return TopicChanges(
        name=None if by_id else str(topic.topic_name),
        topic_id=uuid_to_kafka_string(topic_id or uuid.UUID(int=0)) if by_id else None,
        partitions=tuple(_partition_change(p, version) for p in topic.partitions),
    )


def _partition_change(partition: Any, version: int) -> PartitionChange:
    if version >= FIRST_VERSION_WITH_BROKER_EPOCHS:
        isr = tuple(
            IsrMember(int(member.broker_id), int(member.broker_epoch))
            for member in partition.new_isr_with_epochs
        )
    else:
        isr = tuple(IsrMember(int(member)) for member in partition.new_isr)
    return PartitionChange(
        partition=int(partition.partition_index),
        leader_epoch=int(partition.leader_epoch),
        new_isr=isr,
        partition_epoch=int(partition.partition_epoch),
        leader_recovery_state=int(getattr(partition, "leader_recovery_state", 0)),
    )


def _topic(topic: TopicResult, version: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"partitions": [_partition(p) for p in topic.partitions]}
    if version >= FIRST_VERSION_WITH_TOPIC_IDS:
        topic_id = topic.topic_id
        entry["topic_id"] = uuid.UUID(int=0) if topic_id is None else kafka_string_to_uuid(topic_id)
    else:
        entry["topic_name"] = topic.name or ""
    return entry


def _partition(result: PartitionResult) -> dict[str, Any]:
    return {
        "partition_index": result.partition,
        "error_code": result.error_code,
        "leader_id": result.leader,
        "leader_epoch": result.leader_epoch,
        "isr": list(result.isr),
        "leader_recovery_state": result.leader_recovery_state,
        "partition_epoch": result.partition_epoch,
    }
