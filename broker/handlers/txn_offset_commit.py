"""TxnOffsetCommit v0-v4: a transactional producer commits a consumer group's offsets as part
of its transaction (sent to the group's coordinator, after AddOffsetsToTxn). The commits are
written to `__consumer_offsets` in the producer's transaction and become visible only when
its commit marker arrives (dropped on abort). From v3 the request may name the group's
generation and member, which must match (KIP-447); without them any group is accepted, and
an unknown one is created Empty, as in Kafka."""

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
    services = context.services
    cache = services.metadata_cache
    requested = [(t.name, p) for t in request.topics for p in t.partitions]
    errors: dict[tuple[str, int], ErrorCode] = {
        (name, int(p.partition_index)): ErrorCode.unknown_topic_or_partition
        for name, p in requested
        if not cache.has_partition(name, p.partition_index)
    }
    known = [(name, p) for name, p in requested if (name, int(p.partition_index)) not in errors]
    error = _group_error(context, request)
    if error != ErrorCode.none:
        errors.update({(name, int(p.partition_index)): error for name, p in known})
    elif known:
        now_ms = time.time_ns() // 1_000_000
        offsets = {
            (name, int(p.partition_index)): OffsetValue(
                offset=int(p.committed_offset),
                leader_epoch=int(getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH)),
                metadata=p.committed_metadata or "",
                commit_timestamp_ms=now_ms,
            )
            for name, p in known
        }
        errors.update(
            await services.group_coordinator.offsets.commit_transactional(
                request.group_id, int(request.producer_id), int(request.producer_epoch), offsets
            )
        )
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for name, p in requested:
        index = int(p.partition_index)
        by_topic.setdefault(name, []).append(
            {"partition_index": index, "error_code": errors[(name, index)]}
        )
    cls = response_class(ApiKey.TXN_OFFSET_COMMIT, context.api_version)
    topics = [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()]
    return adapter.build(cls, {"throttle_time": 0, "topics": topics})


def _group_error(context: RequestContext, request: Any) -> ErrorCode:
    if not request.group_id:
        return ErrorCode.invalid_group_id
    coordinator = context.services.group_coordinator
    error = coordinator.offsets.coordinator_error(request.group_id)
    if error != ErrorCode.none:
        return error
    return coordinator.membership.validate_txn_offset_commit(
        request.group_id,
        getattr(request, "member_id", ""),
        getattr(request, "group_instance_id", None),
        int(getattr(request, "generation_id", NO_GENERATION)),
    )
