"""LeaderAndIsr: v0-v7 (Kafka 3.9, ZooKeeper mode). A ZooKeeper-mode controller (an Apache
Kafka broker; ours does not send it) tells this broker which replicas to lead or follow.

Fenced as Kafka's broker fences it: a broker epoch older than this broker's registration gets
STALE_BROKER_EPOCH, a controller epoch older than the newest seen STALE_CONTROLLER_EPOCH, each
for the whole request. Each partition state is then applied through the path the partition
state znodes take, only if it is newer, in (leader epoch, znode version), than the one the
replica holds; which source delivers a state first does not matter
(broker/replication/control_requests.py has the rule, DEVIATIONS.md "Controller and
ZooKeeper" the differences from Kafka). A partition whose log is not open here yet is answered
NONE and left to the znode watch. An authorizer requires ClusterAction on the cluster.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.replication.control_requests import RequestedState, admit_logged
from broker.replication.replica_control import become_leader_or_follower
from zk.znodes import kafka_string_to_uuid, uuid_to_kafka_string

FIRST_TOPIC_ID_VERSION = 5


async def handle(context: RequestContext, request: Any) -> Any:
    replica_manager = context.services.replica_manager
    states = requested_states(request)
    error = admit_logged(
        replica_manager.controller_fence,
        request,
        "LeaderAndIsr",
        len(states),
        context.services.broker_id,
        context.header.correlation_id,
    )
    if error != ErrorCode.none:
        return error_response(context.api_version, request, error)
    errors = await become_leader_or_follower(replica_manager, int(request.controller_id), states)
    return response(context.api_version, states, errors)


def requested_states(request: Any) -> list[RequestedState]:
    """The request's partition states, whatever its version's layout."""
    return [
        _state(topic_name, topic_id, partition)
        for topic_name, topic_id, partition in _partitions(request)
    ]


def _partitions(request: Any) -> list[tuple[str, str | None, Any]]:
    ungrouped = getattr(request, "ungrouped_partition_states", None)
    if ungrouped is not None:
        return [(str(p.topic_name), None, p) for p in ungrouped]
    return [
        (str(topic.topic_name), _topic_id(getattr(topic, "topic_id", None)), partition)
        for topic in request.topic_states
        for partition in topic.partition_states
    ]


def _topic_id(value: uuid.UUID | None) -> str | None:
    if value is None or value.int == 0:
        return None
    return uuid_to_kafka_string(value)


def _state(topic: str, topic_id: str | None, partition: Any) -> RequestedState:
    return RequestedState(
        topic=topic,
        topic_id=topic_id,
        partition=int(partition.partition_index),
        leader=int(partition.leader),
        leader_epoch=int(partition.leader_epoch),
        isr=tuple(int(broker) for broker in partition.isr),
        controller_epoch=int(partition.controller_epoch),
        zk_version=int(partition.partition_epoch),
        replicas=tuple(int(broker) for broker in partition.replicas),
        removing=tuple(int(broker) for broker in getattr(partition, "removing_replicas", ())),
    )


def response(
    version: int,
    states: list[RequestedState],
    errors: dict[tuple[str, int], ErrorCode],
    error: ErrorCode = ErrorCode.none,
) -> Any:
    """Each partition with its error: listed with its topic name up to v4, grouped under its
    topic's id from v5 on."""
    cls = response_class(ApiKey.LEADER_AND_ISR, version)
    if version < FIRST_TOPIC_ID_VERSION:
        partition_errors = [
            {
                "topic_name": state.topic,
                "partition_index": state.partition,
                "error_code": errors[state.key],
            }
            for state in states
        ]
        return adapter.build(cls, {"error_code": error, "partition_errors": partition_errors})
    topics: dict[str, dict[str, Any]] = {}
    for state in states:
        topic = topics.setdefault(
            state.topic, {"topic_id": _uuid(state.topic_id), "partition_errors": []}
        )
        topic["partition_errors"].append(
            {"partition_index": state.partition, "error_code": errors[state.key]}
        )
    return adapter.build(cls, {"error_code": error, "topics": list(topics.values())})


def error_response(version: int, request: Any, error: ErrorCode) -> Any:
    """The whole request refused (Kafka's getErrorResponse): every partition with `error`."""
    states = requested_states(request)
    return response(version, states, dict.fromkeys((state.key for state in states), error), error)


def _uuid(topic_id: str | None) -> uuid.UUID | None:
    return kafka_string_to_uuid(topic_id) if topic_id else None
