"""ListOffsets v0-v7 (v0, with its own semantics, in `list_offsets_v0`).

Timestamp -1 = latest (high watermark), -2 = earliest (log start), -3 = max timestamp (v7,
KIP-734); any other value = first offset whose batch timestamp is >= it, via the time index.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import list_offsets_v0
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.registry import response_class
from broker.replication.partition import Partition

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


async def handle(context: RequestContext, request: Any) -> Any:
    if context.api_version == 0:
        return await list_offsets_v0.handle(context, request)
    topics = [
        {
            "name": topic.name,
            "partitions": [_list_partition(context, topic.name, p) for p in topic.partitions],
        }
        for topic in request.topics
    ]
    cls = response_class(2, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "topics": topics})


def _list_partition(context: RequestContext, topic: str, request: Any) -> dict[str, Any]:
    current, error = context.server.replica_manager.leader_partition(
        topic, request.partition_index, getattr(request, "current_leader_epoch", -1)
    )
    if current is None:
        return _result(request.partition_index, error, -1, -1, -1)
    found = _lookup(current, request.timestamp)
    if found is None:
        return _result(request.partition_index, ErrorCode.none, -1, -1, -1)
    offset, timestamp = found
    # The epoch of the leader that wrote that offset (KIP-320 clients validate with it).
    if request.timestamp == LATEST_TIMESTAMP:
        epoch = current.log.leader_epoch_cache.latest_epoch
    else:
        epoch = current.log.leader_epoch_cache.epoch_for_offset(offset)
    return _result(request.partition_index, ErrorCode.none, offset, timestamp, epoch)


def _lookup(current: Partition, timestamp: int) -> tuple[int, int] | None:
    if timestamp == LATEST_TIMESTAMP:
        return current.high_watermark, -1
    if timestamp == EARLIEST_TIMESTAMP:
        return current.log.log_start_offset, -1
    if timestamp == MAX_TIMESTAMP:
        return current.log.max_timestamp_and_offset()
    return current.log.offset_for_timestamp(timestamp)


def _result(
    partition: int, error: ErrorCode, offset: int, timestamp: int, leader_epoch: int
) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "error_code": error,
        "timestamp": timestamp,
        "offset": offset,
        "leader_epoch": leader_epoch,
    }
