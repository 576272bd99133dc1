"""OffsetCommit: v0-v9 (v0-v1 derived in `protocol/legacy.py`; sarama 1.x commits with v1).
v9 only lets the new consumer protocol (KIP-848) use it, which a ZooKeeper-mode Kafka 3.9 does
not run: as there, its generation-or-member-epoch field is checked as a classic generation.

Commits are appended to the group's `__consumer_offsets` partition (Kafka's OffsetCommitValue
v3) and acknowledged once the ISR has them. The group checks its generation and member first
(generation -1 with no member id: a consumer that assigns its partitions itself, allowed while
the group has no members). `retention_time` (v2-v4) is ignored: offsets.retention.minutes
applies. v0 commits (which Kafka kept in ZooKeeper) go to `__consumer_offsets` like the
others; a v1 commit timestamp is kept when given (DEVIATIONS.md).
"""

from __future__ import annotations

import time
from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.group.records import NO_LEADER_EPOCH, OffsetValue
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

NO_GENERATION = -1


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.OFFSET_COMMIT, context.api_version)
    # As Kafka: partitions the broker's metadata does not know get UNKNOWN_TOPIC_OR_PARTITION
    # whatever the group's state; the rest go to the group coordinator.
    cache = context.services.metadata_cache
    errors: dict[tuple[str, int], ErrorCode] = {}
    known = []
    for topic in request.topics:
        for p in topic.partitions:
            if cache.has_partition(topic.name, p.partition_index):
                known.append((topic.name, p))
            else:
                errors[(topic.name, p.partition_index)] = ErrorCode.unknown_topic_or_partition
    error = _group_error(context, request)
    if error != ErrorCode.none:
        errors.update({(name, p.partition_index): error for name, p in known})
        return _response(cls, _in_request_order(request, errors))
    now_ms = time.time_ns() // 1_000_000
    offsets = {
        (name, p.partition_index): OffsetValue(
            offset=int(p.committed_offset),
            leader_epoch=int(getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH)),
            metadata=p.committed_metadata or "",
            commit_timestamp_ms=_commit_timestamp_ms(p, now_ms),
        )
        for name, p in known
    }
    if offsets:
        errors.update(
            await context.services.group_coordinator.offsets.commit(request.group_id, offsets)
        )
    return _response(cls, _in_request_order(request, errors))


def _in_request_order(
    request: Any, errors: dict[tuple[str, int], ErrorCode]
) -> dict[tuple[str, int], ErrorCode]:
    keys = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    return {key: errors[key] for key in keys}


def _commit_timestamp_ms(partition: Any, now_ms: int) -> int:
    given = int(getattr(partition, "commit_timestamp", -1))  # v1 only
    return given if given >= 0 else now_ms


def _group_error(context: RequestContext, request: Any) -> ErrorCode:
    if not request.group_id:
        return ErrorCode.invalid_group_id
    error = context.services.group_coordinator.offsets.coordinator_error(request.group_id)
    if error != ErrorCode.none:
        return error
    return context.services.group_coordinator.membership.validate_offset_commit(
        request.group_id,
        getattr(request, "member_id", ""),
        getattr(request, "group_instance_id", None),
        getattr(request, "generation_id_or_member_epoch", NO_GENERATION),
    )


def _response(cls: type, errors: dict[tuple[str, int], ErrorCode]) -> Any:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
    topics = [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()]
    return adapter.build(cls, {"throttle_time": 0, "topics": topics})
