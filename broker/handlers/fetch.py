"""Fetch: advertised v0-v12, implemented v4-v12, sessionless (KIP-227 sessions not kept).

Consumers read up to the high watermark; followers (`replica_id` >= 0) read up to the log end,
and their fetch offset is how the leader learns how far they have come. The response holds
whole batches; the first batch is returned even if larger than the limits (KIP-74); the
broker's `fetch.max.bytes` caps the request's `max_bytes`. Long polling: if fewer than
`min_bytes` are available the request waits until enough arrive or `max_wait_ms` passes (woken
by a high-watermark move for consumers, an append for followers). We always answer with
session id 0, which tells clients to send full fetch requests (DEVIATIONS.md).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter, fetch_encoding
from broker.protocol.registry import response_class

INITIAL_SESSION_EPOCH = 0
SESSIONLESS_EPOCH = -1


async def handle(context: RequestContext, request: Any) -> Any:
    session_epoch = getattr(request, "session_epoch", SESSIONLESS_EPOCH)
    if session_epoch not in (INITIAL_SESSION_EPOCH, SESSIONLESS_EPOCH):
        return _response(
            context.api_version,
            {
                "throttle_time": 0,
                "error_code": ErrorCode.fetch_session_id_not_found,
                "session_id": 0,
                "responses": [],
            },
        )
    deadline = asyncio.get_running_loop().time() + adapter.millis(request.max_wait) / 1000
    while True:
        responses, total_bytes, any_error = _read_all(context, request)
        remaining_s = deadline - asyncio.get_running_loop().time()
        if total_bytes >= request.min_bytes or any_error or remaining_s <= 0:
            break
        keys = [(t.topic, p.partition) for t in request.topics for p in t.partitions]
        await context.server.replica_manager.wait_for_data(
            keys, remaining_s, follower=_replica_id(request) >= 0
        )
    return _response(
        context.api_version,
        {"throttle_time": 0, "error_code": ErrorCode.none, "session_id": 0, "responses": responses},
    )


def _response(version: int, values: dict[str, Any]) -> Any:
    # Encoded here rather than built as kio entities: record sets stay uncopied, and building
    # entities cost more than the encoding for the small fetches of a follower keeping up.
    if fetch_encoding.can_encode(version):
        return adapter.Encoded(fetch_encoding.encode_parts(version, values))
    return adapter.build(response_class(1, version), values)


def _replica_id(request: Any) -> int:
    return int(getattr(request, "replica_id", -1))


def _read_all(context: RequestContext, request: Any) -> tuple[list[dict[str, Any]], int, bool]:
    replica_manager = context.server.replica_manager
    replica_id = _replica_id(request)
    # fetch.max.bytes caps what one response may hold, whatever the client asks (KIP-541).
    budget_bytes = min(
        getattr(request, "max_bytes", 0x7FFFFFFF), context.server.config["fetch.max.bytes"]
    )
    total_bytes = 0
    any_error = False
    responses = []
    for topic in request.topics:
        partitions = []
        for fetch in topic.partitions:
            result = replica_manager.read(
                topic.topic,
                fetch.partition,
                fetch.fetch_offset,
                min(fetch.partition_max_bytes, max(budget_bytes - total_bytes, 0)),
                min_one_batch=total_bytes == 0,
                current_leader_epoch=getattr(fetch, "current_leader_epoch", -1),
                replica_id=replica_id,
                follower_log_start_offset=getattr(fetch, "log_start_offset", -1),
            )
            total_bytes += len(result.records)
            any_error = any_error or result.error_code != ErrorCode.none
            partitions.append(_partition_data(fetch.partition, result))
        responses.append({"topic": topic.topic, "partitions": partitions})
    return responses, total_bytes, any_error


def _partition_data(partition: int, result: Any) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "error_code": result.error_code,
        "high_watermark": result.high_watermark,
        "last_stable_offset": result.high_watermark,
        "log_start_offset": result.log_start_offset,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": result.records,
    }
