"""ListOffsets v0: up to `max_num_offsets` offsets before a time, from segment boundaries
(Kafka's `legacyFetchOffsetsBefore`).

The candidates are each segment's base offset (raised to the log start offset) with the
segment file's modification time, then the log end offset with the current time when the
active segment holds data. -1 (latest) starts from the last candidate, -2 (earliest) from the
first, any other time from the last candidate modified at or before it; offsets are answered
newest first. A consumer (replica id -1) never sees one past the high watermark: those are
replaced by the high watermark. Other negative times are UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import os
import time
from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.replication.partition import Partition

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
CONSUMER_REPLICA_ID = -1


async def handle(context: RequestContext, request: Any) -> Any:
    from_consumer = int(request.replica_id) == CONSUMER_REPLICA_ID
    topics = [
        {
            "name": topic.name,
            "partitions": [
                _list_partition(context, topic.name, partition, from_consumer)
                for partition in topic.partitions
            ],
        }
        for topic in request.topics
    ]
    return adapter.build(response_class(ApiKey.LIST_OFFSETS, 0), {"topics": topics})


def _list_partition(
    context: RequestContext, topic: str, request: Any, from_consumer: bool
) -> dict[str, Any]:
    index = request.partition_index
    if request.timestamp < EARLIEST_TIMESTAMP:
        return _result(index, ErrorCode.unsupported_version, [])
    current, error = context.services.replica_manager.leader_partition(topic, index)
    if current is None:
        return _result(index, error, [])
    offsets = offsets_before(current, request.timestamp, request.max_num_offsets)
    if from_consumer and any(offset > current.high_watermark for offset in offsets):
        kept = [offset for offset in offsets if offset <= current.high_watermark]
        offsets = [current.high_watermark, *kept]
    return _result(index, ErrorCode.none, offsets)


def offsets_before(current: Partition, timestamp: int, max_num_offsets: int) -> list[int]:
    log = current.log
    segments = log.segments
    candidates = [
        (max(segment.base_offset, log.log_start_offset), _modified_ms(segment.log_path))
        for segment in segments
    ]
    if segments[-1].size_bytes > 0:
        candidates.append((log.log_end_offset, time.time_ns() // 1_000_000))
    if timestamp == LATEST_TIMESTAMP:
        start = len(candidates) - 1
    elif timestamp == EARLIEST_TIMESTAMP:
        start = 0
    else:
        start = len(candidates) - 1
        while start >= 0 and candidates[start][1] > timestamp:
            start -= 1
    count = max(min(max_num_offsets, start + 1), 0)
    chosen = [candidates[start - j][0] for j in range(count)]
    return sorted(chosen, reverse=True)


def _modified_ms(path: os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_mtime_ns // 1_000_000
    except OSError:  # deleted by retention meanwhile: as old as can be
        return 0


def _result(partition: int, error: ErrorCode, offsets: list[int]) -> dict[str, Any]:
    return {"partition_index": partition, "error_code": error, "old_style_offsets": offsets}
