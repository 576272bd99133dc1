"""AlterPartitionReassignments: v0 (Kafka 3.0's range, KIP-455). Answered only by the
controller (NOT_CONTROLLER as the top-level error otherwise).

A partition with a replica list is moved there; one with null replicas has its reassignment
cancelled (back to the original replicas). The answer comes once the controller has written
the first phase of each, as Kafka's does; completion is seen with ListPartitionReassignments.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from controller.errors import TopicError


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS, context.api_version)
    wanted: dict[tuple[str, int], list[int] | None] = {}
    for topic in request.topics:
        for partition in topic.partitions:
            replicas = partition.replicas
            target = None if replicas is None else [int(r) for r in replicas]
            wanted[(topic.name, int(partition.partition_index))] = target
    timeout_s = max(adapter.millis(request.timeout), 0) / 1000
    try:
        outcome = await asyncio.wait_for(
            context.services.controller.alter_partition_reassignments(wanted), timeout_s
        )
    except TimeoutError:
        return _top_level(cls, ErrorCode.request_timed_out)
    if isinstance(outcome, int):
        return _top_level(cls, ErrorCode(outcome))
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "responses": _by_topic(outcome),
        },
    )


def _by_topic(outcome: dict[tuple[str, int], TopicError]) -> list[dict[str, Any]]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), error in outcome.items():
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "error_code": error.error_code,
                "error_message": error.message,
            }
        )
    return [{"name": name, "partitions": partitions} for name, partitions in topics.items()]


def _top_level(cls: type, error: ErrorCode) -> Any:
    return adapter.build(
        cls, {"throttle_time": 0, "error_code": error, "error_message": None, "responses": []}
    )
