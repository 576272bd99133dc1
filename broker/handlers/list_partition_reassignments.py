"""ListPartitionReassignments: v0 (Kafka 3.0's range, KIP-455). Answered only by the
controller (NOT_CONTROLLER as the top-level error otherwise).

Lists the partitions (all, or those named) with a reassignment in flight: their current
replicas and the replicas being added and removed. Partitions that do not exist or are not
being reassigned are left out, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.LIST_PARTITION_REASSIGNMENTS, context.api_version)
    partitions = None
    if request.topics is not None:
        partitions = [(t.name, int(p)) for t in request.topics for p in t.partition_indexes]
    outcome = context.services.controller.list_partition_reassignments(partitions)
    if isinstance(outcome, int):
        return adapter.build(
            cls,
            {
                "throttle_time": 0,
                "error_code": ErrorCode(outcome),
                "error_message": None,
                "topics": [],
            },
        )
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), assignment in sorted(outcome.items()):
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "replicas": list(assignment.replicas),
                "adding_replicas": list(assignment.adding),
                "removing_replicas": list(assignment.removing),
            }
        )
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
        },
    )
