"""Produce v0-v11 (v0-v2 message sets are converted to record batches v2 first).

acks=0 sends no response; acks=1 answers once the leader has appended; acks=-1 refuses with
NOT_ENOUGH_REPLICAS before appending when the ISR is smaller than min.insync.replicas, then
waits (up to the request's timeout) until the high watermark passes the batch: NONE,
NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below the minimum meanwhile,
REQUEST_TIMED_OUT, or NOT_LEADER_OR_FOLLOWER if leadership moved. Produce never auto-creates
topics, as in Kafka. From v10 a NOT_LEADER_OR_FOLLOWER partition names its current leader and
the response lists that leader's endpoint (KIP-951). v11 changes only how a transactional
producer's missing partition is reported (KIP-890), and there are no transactions here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import legacy_produce
from broker.handlers.current_leader import CurrentLeaders
from broker.handlers.metadata import INTERNAL_TOPICS
from broker.log.batch import check_compressed_records, is_compressed
from broker.log.errors import RecordError, RecordValidationError
from broker.log.record_validation import RecordChecks, check_records
from broker.network.context import RequestContext
from broker.network.errors import CloseConnectionError
from broker.protocol import adapter
from broker.protocol.registry import response_class
from broker.replication.replica_manager import AppendResult

VALID_ACKS = (-1, 0, 1)
CURRENT_LEADER_VERSION = 10  # KIP-951


async def handle(context: RequestContext, request: Any) -> Any:
    acks = request.acks
    request, legacy_errors = await legacy_produce.convert_request(context, request)
    checked, compressed_errors = await _check_compressed_off_loop(context, request)
    for (topic_name, index), e in legacy_errors.items():
        compressed_errors[(topic_name, index)] = _error(index, ErrorCode(e.error_code), str(e))
    responses = [
        {
            "name": topic.name,
            "partition_responses": [
                compressed_errors.get((topic.name, data.index))
                or _produce_partition(
                    context,
                    topic.name,
                    data.index,
                    data.records,
                    acks,
                    (topic.name, data.index) in checked,
                )
                for data in topic.partition_data
            ],
        }
        for topic in request.topic_data
    ]
    if acks == -1:
        await _wait_for_replication(context, request, responses)
    if acks == 0:
        # An acks=0 producer reads no responses; Kafka signals a failed append by closing the
        # connection, so the client refreshes its metadata (e.g. after a leader change).
        _close_on_error(responses)
        return None
    values: dict[str, Any] = {"responses": responses, "throttle_time": 0}
    if context.api_version >= CURRENT_LEADER_VERSION:
        values["node_endpoints"] = _add_current_leaders(context, responses)
    return adapter.build(response_class(0, context.api_version), values)


def _add_current_leaders(
    context: RequestContext, responses: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Name the leader of each partition refused for not being led here; its endpoints."""
    leaders = CurrentLeaders(context.server.metadata_cache, context.listener_name)
    for topic in responses:
        for partition in topic["partition_responses"]:
            if partition["error_code"] == ErrorCode.not_leader_or_follower:
                partition["current_leader"] = leaders.leader(topic["name"], partition["index"])
    return leaders.node_endpoints()


def _produce_partition(
    context: RequestContext,
    topic: str,
    partition: int,
    records: bytes | None,
    acks: int,
    compressed_checked: bool,
) -> dict[str, Any]:
    if acks not in VALID_ACKS:
        return _error(partition, ErrorCode.invalid_required_acks)
    if topic in INTERNAL_TOPICS:
        return _error(
            partition, ErrorCode.invalid_topic_exception, "cannot append to an internal topic"
        )
    if not records:
        return _error(partition, ErrorCode.invalid_record, "no record batches in the request")
    if acks == -1:
        error = _check_min_isr(context, topic, partition)
        if error is not None:
            return _error(partition, error)
    result: AppendResult = context.server.replica_manager.append(
        topic, partition, records, compressed_checked=compressed_checked
    )
    if result.info is None:
        return _error(partition, result.error_code, result.error_message, result.record_errors)
    return {
        "index": partition,
        "error_code": ErrorCode.none,
        # Where the high watermark must reach for acks=all (dropped before building).
        "_next_offset": result.info.last_offset + 1,
        "base_offset": result.info.first_offset,
        "log_append_time": result.info.log_append_time_ms,
        "log_start_offset": result.info.log_start_offset,
        "record_errors": [],
        "error_message": None,
    }


async def _check_compressed_off_loop(
    context: RequestContext, request: Any
) -> tuple[set[tuple[str, int]], dict[tuple[str, int], dict[str, Any]]]:
    """Decompress-and-count compressed batches on a worker thread: a batch may take up to
    message.max.decompressed.bytes of codec work, which must not stall the event loop.
    Only partitions led here are checked, so routing errors still come first, as in Kafka.
    Returns the partitions checked (a partition whose leadership arrives during the await was
    not, and the append checks it) and the errors found."""
    replica_manager = context.server.replica_manager
    now_ms = time.time_ns() // 1_000_000
    pending = [
        (topic.name, data.index, data.records, RecordChecks.for_log(current.log.config, now_ms))
        for topic in request.topic_data
        for data in topic.partition_data
        if data.records
        and is_compressed(data.records)
        and (current := replica_manager.get(topic.name, data.index)) is not None
        and current.is_leader
    ]
    if not pending:
        return set(), {}
    limit_bytes = context.server.config["message.max.decompressed.bytes"]
    failures = await asyncio.to_thread(_check_all, pending, limit_bytes)
    checked = {(topic, partition) for topic, partition, _, _ in pending}
    errors = {key: _record_error(key[1], e) for key, e in failures.items()}
    return checked, errors


def _check_all(
    pending: list[tuple[str, int, bytes, RecordChecks | None]], limit_bytes: int
) -> dict[tuple[str, int], RecordError]:
    failures: dict[tuple[str, int], RecordError] = {}
    for topic, partition, records, checks in pending:
        try:
            check_compressed_records(records, limit_bytes)
            if checks is not None:
                check_records(records, checks, limit_bytes, f"{topic}-{partition}")
        except RecordError as error:
            failures[(topic, partition)] = error
    return failures


async def _wait_for_replication(
    context: RequestContext, request: Any, responses: list[dict[str, Any]]
) -> None:
    """Park every appended partition until its high watermark passes what was appended."""
    replica_manager = context.server.replica_manager
    timeout_s = max(adapter.millis(request.timeout), 0) / 1000
    waits = []
    for topic in responses:
        for partition in topic["partition_responses"]:
            if partition["error_code"] != ErrorCode.none or partition.get("_next_offset") is None:
                continue
            min_isr = context.server.topic_config_int(topic["name"], "min.insync.replicas")
            waits.append(
                _settle(
                    partition,
                    replica_manager.wait_for_replication(
                        topic["name"],
                        partition["index"],
                        partition["_next_offset"],
                        min_isr,
                        timeout_s,
                    ),
                )
            )
    await asyncio.gather(*waits)
    for topic in responses:
        for partition in topic["partition_responses"]:
            partition.pop("_next_offset", None)


async def _settle(partition: dict[str, Any], outcome: Awaitable[ErrorCode]) -> None:
    error = await outcome
    if error != ErrorCode.none:
        partition.update(_error(partition["index"], error))


def _close_on_error(responses: list[dict[str, Any]]) -> None:
    for topic in responses:
        for partition in topic["partition_responses"]:
            if partition["error_code"] != ErrorCode.none:
                raise CloseConnectionError(
                    f"acks=0 produce to {topic['name']}-{partition['index']} failed:"
                    f" {ErrorCode(partition['error_code']).name}"
                )


def _check_min_isr(context: RequestContext, topic: str, partition: int) -> ErrorCode | None:
    current = context.server.replica_manager.get(topic, partition)
    if current is None or not current.is_leader:
        return None  # the append reports the routing error
    min_isr = context.server.topic_config_int(topic, "min.insync.replicas")
    if len(current.isr) < min_isr:
        return ErrorCode.not_enough_replicas
    return None


def _error(
    partition: int,
    error: ErrorCode,
    message: str | None = None,
    record_errors: Sequence[tuple[int, str]] = (),
) -> dict[str, Any]:
    return {
        "index": partition,
        "error_code": error,
        "base_offset": -1,
        "log_append_time": -1,
        "log_start_offset": -1,
        "record_errors": [
            {"batch_index": index, "batch_index_error_message": text}
            for index, text in record_errors
        ],
        "error_message": message,
    }


def _record_error(partition: int, error: RecordError) -> dict[str, Any]:
    record_errors = error.record_errors if isinstance(error, RecordValidationError) else ()
    return _error(partition, ErrorCode(error.error_code), str(error), record_errors)
