"""ListOffsets v0-v9 (v0, with its own semantics, in `list_offsets_v0`).

Timestamp -1 = latest (high watermark), -2 = earliest (log start), -3 = max timestamp (v7,
KIP-734), -4 = earliest local (v8, KIP-405), -5 = latest tiered (v9); any other value = first
offset whose batch timestamp is >= it, via the time index. Without tiered storage every
record is local, so -4 answers as -2 does, and -5 answers offset -1 with leader epoch -1, as
Kafka 3.9 does. A negative timestamp the request's version does not know answers
UNSUPPORTED_VERSION for that partition. As in Kafka, what a consumer may not read yet is not
found by time either: lookups (and -3) answer only offsets below the high watermark, or the
last stable offset for read_committed; a replica or debugging tool (replica id != -1) sees
to the log end.

A new leader whose high watermark is still below the offset its leader epoch started at (its
followers have not fetched yet) answers a consumer OFFSET_NOT_AVAILABLE, a retriable error,
rather than an offset older than what the previous leader gave out (KIP-207, as Kafka does).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import list_offsets_v0
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.replication.partition import Partition

LATEST_TIMESTAMP = -1
READ_COMMITTED = 1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
CONSUMER_REPLICA_ID = -1
# The first version that knows each special timestamp (Kafka's KafkaApis table).
SPECIAL_TIMESTAMP_MIN_VERSION = {
    EARLIEST_TIMESTAMP: 1,
    LATEST_TIMESTAMP: 1,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL_TIMESTAMP: 8,
    LATEST_TIERED_TIMESTAMP: 9,
}
NO_LEADER_EPOCH = -1


async def handle(context: RequestContext, request: Any) -> Any:
    if context.api_version == 0:
        return await list_offsets_v0.handle(context, request)
    # v2+: a read_committed consumer's "latest" is the last stable offset.
    read_committed = int(getattr(request, "isolation_level", 0)) == READ_COMMITTED
    replica_id = int(request.replica_id)
    topics = [
        {
            "name": topic.name,
            "partitions": [
                _list_partition(context, topic.name, p, read_committed, replica_id)
                if _knows_timestamp(context.api_version, p.timestamp)
                else _result(p.partition_index, ErrorCode.unsupported_version, -1, -1, -1)
                for p in topic.partitions
            ],
        }
        for topic in request.topics
    ]
    cls = response_class(ApiKey.LIST_OFFSETS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "topics": topics})


def _knows_timestamp(version: int, timestamp: int) -> bool:
    if timestamp >= 0:
        return True
    min_version = SPECIAL_TIMESTAMP_MIN_VERSION.get(timestamp)
    return min_version is not None and version >= min_version


def _list_partition(
    context: RequestContext, topic: str, request: Any, read_committed: bool, replica_id: int
) -> dict[str, Any]:
    current, error = context.services.replica_manager.leader_partition(
        topic, request.partition_index, getattr(request, "current_leader_epoch", -1)
    )
    if current is None:
        return _result(request.partition_index, error, -1, -1, -1)
    if replica_id == CONSUMER_REPLICA_ID and current.leader_epoch_start_offset > (
        current.high_watermark
    ):
        return _result(request.partition_index, ErrorCode.offset_not_available, -1, -1, -1)
    fetchable = _last_fetchable_offset(current, read_committed, replica_id)
    found = _lookup(current, request.timestamp, fetchable)
    if found is None:
        return _result(request.partition_index, ErrorCode.none, -1, -1, -1)
    offset, timestamp = found
    # The epoch of the leader that wrote that offset (KIP-320 clients validate with it).
    if request.timestamp == LATEST_TIERED_TIMESTAMP:
        epoch = NO_LEADER_EPOCH  # nothing is tiered
    elif request.timestamp == LATEST_TIMESTAMP:
        epoch = current.log.leader_epoch_cache.latest_epoch
    else:
        epoch = current.log.leader_epoch_cache.epoch_for_offset(offset)
    return _result(request.partition_index, ErrorCode.none, offset, timestamp, epoch)


def _last_fetchable_offset(current: Partition, read_committed: bool, replica_id: int) -> int:
    """How far the asker may read, as Kafka bounds "latest" and lookups by time: a consumer
    to the high watermark (read_committed: the last stable offset), a replica or debugging
    tool to the log end."""
    if replica_id != CONSUMER_REPLICA_ID:
        return current.log.log_end_offset
    return current.log.last_stable_offset if read_committed else current.high_watermark


def _lookup(current: Partition, timestamp: int, fetchable: int) -> tuple[int, int] | None:
    if timestamp == LATEST_TIMESTAMP:
        return fetchable, -1
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        return current.log.log_start_offset, -1
    if timestamp == LATEST_TIERED_TIMESTAMP:
        return -1, -1
    if timestamp == MAX_TIMESTAMP:
        found = current.log.max_timestamp_and_offset()
    else:
        found = current.log.offset_for_timestamp(timestamp)
    return found if found is not None and found[0] < fetchable else None


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
