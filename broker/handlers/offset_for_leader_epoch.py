"""OffsetForLeaderEpoch: v0-v4 (v0-v1 derived in `protocol/legacy.py`).

For each partition: the largest epoch this leader knows that is <= the requested one, and the
offset where the next epoch starts (the log end for the latest epoch); UNDEFINED (-1, -1) when
the requested epoch is older than anything in the log. Followers call it before fetching to
find where their log diverges; clients call it after a leader change (KIP-320). Only the
leader answers; a `current_leader_epoch` is checked first (FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

UNDEFINED = -1


async def handle(context: RequestContext, request: Any) -> Any:
    topics = [
        {
            "topic": topic.topic,
            "partitions": [_end_offset(context, topic.topic, p) for p in topic.partitions],
        }
        for topic in request.topics
    ]
    cls = response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "topics": topics})


def _end_offset(context: RequestContext, topic: str, request: Any) -> dict[str, Any]:
    current, error = context.server.replica_manager.leader_partition(
        topic, request.partition, getattr(request, "current_leader_epoch", -1)
    )
    if current is None:
        return _result(request.partition, error, UNDEFINED, UNDEFINED)
    replica_log = current.log
    epoch, end_offset = replica_log.leader_epoch_cache.end_offset_for(
        request.leader_epoch, replica_log.log_end_offset
    )
    return _result(request.partition, ErrorCode.none, epoch, end_offset)


def _result(partition: int, error: ErrorCode, epoch: int, end_offset: int) -> dict[str, Any]:
    return {
        "error_code": error,
        "partition": partition,
        "leader_epoch": epoch,
        "end_offset": end_offset,
    }
