"""OffsetDelete: v0 (KIP-496). Deletes committed offsets of a group that is Empty, or of topics
its consumer members do not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC for the others); a
non-empty group of another protocol type gets NON_EMPTY_GROUP."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.group.state import GroupState
from broker.coordinator.group.subscriptions import CONSUMER_PROTOCOL_TYPE, is_subscribed_to
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.OFFSET_DELETE, context.api_version)
    requested = [(t.name, int(p.partition_index)) for t in request.topics for p in t.partitions]
    error, per_partition = _decide(context, request.group_id, requested)
    deletable = [tp for tp, e in per_partition.items() if e == ErrorCode.none]
    if error == ErrorCode.none and deletable:
        offsets = context.services.group_coordinator.offsets
        written = await offsets.delete_offsets(request.group_id, deletable)
        per_partition.update(dict.fromkeys(deletable, written))
    return adapter.build(
        cls, {"error_code": error, "throttle_time": 0, "topics": _topics(per_partition)}
    )


def _decide(
    context: RequestContext, group_id: str, requested: list[tuple[str, int]]
) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
    coordinator = context.services.group_coordinator
    none = dict.fromkeys(requested, ErrorCode.none)
    status = coordinator.offsets.coordinator_error(group_id) if group_id else None
    if status is None:
        return ErrorCode.invalid_group_id, {}
    if status != ErrorCode.none:
        return status, {}
    group = coordinator.membership.get_group(group_id)
    if group is None or group.state is GroupState.EMPTY:
        if group is None and not coordinator.offsets.has_offsets(group_id):
            return ErrorCode.group_id_not_found, {}
        return ErrorCode.none, none
    if group.state is GroupState.DEAD:
        return ErrorCode.group_id_not_found, {}
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return ErrorCode.non_empty_group, {}
    return ErrorCode.none, {
        (topic, partition): ErrorCode.group_subscribed_to_topic
        if is_subscribed_to(group, topic)
        else ErrorCode.none
        for topic, partition in requested
    }


def _topics(per_partition: dict[tuple[str, int], ErrorCode]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), error in per_partition.items():
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
    return [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()]
