"""Fetch v0-v12, with incremental fetch sessions (KIP-227); v0-v3 answer old message formats.

Consumers read up to the high watermark; followers (`replica_id` >= 0) read up to the log end,
and their fetch offset is how the leader learns how far they have come. The response holds
whole batches; the first batch is returned even if larger than the limits (KIP-74); the
broker's `fetch.max.bytes` caps the request's `max_bytes`. Long polling: if fewer than
`min_bytes` are available the request waits until enough arrive or `max_wait_ms` passes (woken
by a high-watermark move for consumers, an append for followers). Which partitions are read and
answered follows the request's session fields (see `broker.replication.fetch_context`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import legacy_fetch
from broker.network.context import RequestContext
from broker.protocol import adapter, fetch_encoding
from broker.protocol.registry import response_class
from broker.replication.fetch_context import new_context
from broker.replication.fetch_session import INVALID_SESSION_ID, FetchPosition, TopicPartition
from broker.replication.replica_manager import ReadResult

Results = list[tuple[TopicPartition, ReadResult]]


async def handle(context: RequestContext, request: Any) -> Any:
    sessions = context.server.fetch_sessions
    fetch_context = new_context(sessions, request, _now_ms())
    if fetch_context.error_code != ErrorCode.none:
        return _response(context.api_version, fetch_context.error_code, INVALID_SESSION_ID, [])
    positions = fetch_context.positions
    replica_id = _replica_id(request)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + adapter.millis(request.max_wait) / 1000
    while True:
        results, total_bytes, any_error = _read_all(context, request, positions)
        remaining_s = deadline - loop.time()
        if total_bytes >= request.min_bytes or any_error or remaining_s <= 0:
            break
        await context.server.replica_manager.wait_for_data(
            [key for key, _ in positions], remaining_s, follower=replica_id >= 0
        )
    session_id, answered = fetch_context.respond(sessions, results, replica_id >= 0, _now_ms())
    if legacy_fetch.needs_conversion(context.api_version):
        offsets = {key: position.fetch_offset for key, position in positions}
        answered = await legacy_fetch.convert(context, answered, offsets)
    return _response(context.api_version, ErrorCode.none, session_id, _by_topic(answered))


def _response(
    version: int, error_code: ErrorCode, session_id: int, responses: list[dict[str, Any]]
) -> Any:
    values = {
        "throttle_time": 0,
        "error_code": error_code,
        "session_id": session_id,
        "responses": responses,
    }
    # Encoded here rather than built as kio entities: record sets stay uncopied, and building
    # entities cost more than the encoding for the small fetches of a follower keeping up.
    if fetch_encoding.can_encode(version):
        return adapter.Encoded(fetch_encoding.encode_parts(version, values))
    return adapter.build(response_class(1, version), values)


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def _replica_id(request: Any) -> int:
    return int(getattr(request, "replica_id", -1))


def _read_all(
    context: RequestContext, request: Any, positions: list[tuple[TopicPartition, FetchPosition]]
) -> tuple[Results, int, bool]:
    replica_manager = context.server.replica_manager
    replica_id = _replica_id(request)
    # fetch.max.bytes caps what one response may hold, whatever the client asks (KIP-541).
    budget_bytes = min(
        getattr(request, "max_bytes", 0x7FFFFFFF), context.server.config["fetch.max.bytes"]
    )
    total_bytes = 0
    any_error = False
    results = []
    for (topic, partition), position in positions:
        result = replica_manager.read(
            topic,
            partition,
            position.fetch_offset,
            min(position.partition_max_bytes, max(budget_bytes - total_bytes, 0)),
            min_one_batch=total_bytes == 0,
            current_leader_epoch=position.current_leader_epoch,
            replica_id=replica_id,
            follower_log_start_offset=position.log_start_offset,
        )
        total_bytes += len(result.records)
        any_error = any_error or result.error_code != ErrorCode.none
        results.append(((topic, partition), result))
    return results, total_bytes, any_error


def _by_topic(results: Results) -> list[dict[str, Any]]:
    """Consecutive partitions of one topic share an entry, as in Kafka's responses."""
    responses: list[dict[str, Any]] = []
    for (topic, partition), result in results:
        if not responses or responses[-1]["topic"] != topic:
            responses.append({"topic": topic, "partitions": []})
        responses[-1]["partitions"].append(_partition_data(partition, result))
    return responses


def _partition_data(partition: int, result: ReadResult) -> dict[str, Any]:
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
