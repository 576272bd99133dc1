"""Produce v0-v11 (v0-v2 message sets are converted to record batches v2 first).

acks=0 sends no response; acks=1 answers once the leader has appended; acks=-1 refuses with
NOT_ENOUGH_REPLICAS before appending when the ISR is smaller than min.insync.replicas, then
waits (up to the request's timeout) until the high watermark passes the batch: NONE,
NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below the minimum meanwhile,
REQUEST_TIMED_OUT, or NOT_LEADER_OR_FOLLOWER if leadership moved. Produce never auto-creates
topics, as in Kafka. From v10 a NOT_LEADER_OR_FOLLOWER partition names its current leader and
the response lists that leader's endpoint (KIP-951). v11 changes only how a transactional
producer's write to a partition outside its transaction is reported (KIP-890); the broker does
not run that verification (DEVIATIONS.md), so v11 answers as v10 does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import authorization, legacy_produce
from broker.handlers.current_leader import CurrentLeaders
from broker.handlers.metadata import INTERNAL_TOPICS
from broker.log.batch import check_compressed_records, has_transactional_records, is_compressed
from broker.log.errors import RecordError, RecordValidationError
from broker.log.record_validation import RecordChecks, check_records
from broker.network.context import RequestContext
from broker.network.errors import CloseConnectionError
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.quotas.throttle import produce_throttle_time_ms
from broker.replication.replica_manager import AppendResult
from zk.loop_slice import LoopSlice

VALID_ACKS = (-1, 0, 1)
CURRENT_LEADER_VERSION = 10  # KIP-951


@dataclass(frozen=True, slots=True)
class PartitionProduceResult:
    """One partition's outcome; becomes the response's partition entry only when the
    response is built, so nothing of ours travels inside the protocol object."""

    index: int
    error_code: ErrorCode
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    # (index in the batch, message) of each record a per-record check refused (KIP-467).
    record_errors: tuple[tuple[int, str], ...] = ()
    error_message: str | None = None
    # The offset after the appended batch: what the high watermark must reach for acks=all
    # (None when nothing was appended).
    next_offset: int | None = None

    def failed(self, error: ErrorCode) -> PartitionProduceResult:
        """This partition answered with `error` after all (acks=all did not complete)."""
        return _error(self.index, error)


# (topic name, its partitions' results), in the request's order.
TopicResults = list[tuple[str, list[PartitionProduceResult]]]


async def handle(context: RequestContext, request: Any) -> Any:
    acks = request.acks
    if getattr(request, "transactional_id", None) is None and has_transactional_records(request):
        # Kafka refuses batches that claim a transaction no id names, authorizer or not.
        return authorization.refused_whole(
            context, request, ErrorCode.transactional_id_authorization_failed
        )
    request, legacy_errors = await legacy_produce.convert_request(context, request)
    checked, compressed_errors = await _check_compressed_off_loop(context, request)
    for (topic_name, index), e in legacy_errors.items():
        compressed_errors[(topic_name, index)] = _error(index, ErrorCode(e.error_code), str(e))
    results = await _produce_all(context, request, acks, checked, compressed_errors)
    if acks == -1:
        results = await _wait_for_replication(context, request, results)
    throttle_time_ms = produce_throttle_time_ms(context)
    if acks == 0:
        # An acks=0 producer reads no responses; Kafka signals a failed append by closing the
        # connection, so the client refreshes its metadata (e.g. after a leader change).
        _close_on_error(results)
        return None
    return _response(context, results, throttle_time_ms)


async def _produce_all(
    context: RequestContext,
    request: Any,
    acks: int,
    checked: set[tuple[str, int]],
    errors: dict[tuple[str, int], PartitionProduceResult],
) -> TopicResults:
    """Append each partition's records, in the request's order. A producer's request may
    name thousands of partitions (a batch per partition led here): appended in slices of loop
    time. Requests of one connection are handled one at a time, so the order of a producer's
    batches to a partition holds."""
    results: TopicResults = []
    loop_slice = LoopSlice()
    for topic in request.topic_data:
        partitions: list[PartitionProduceResult] = []
        for data in topic.partition_data:
            await loop_slice.pause_if_spent()
            partitions.append(
                errors.get((topic.name, data.index))
                or _produce_partition(
                    context,
                    topic.name,
                    data.index,
                    data.records,
                    acks,
                    (topic.name, data.index) in checked,
                )
            )
        results.append((topic.name, partitions))
    return results


def _response(context: RequestContext, results: TopicResults, throttle_time_ms: int = 0) -> Any:
    """The response for the request's version; from v10 a partition refused for not being
    led here names its current leader, and the response lists those leaders' endpoints."""
    leaders = (
        CurrentLeaders(context.services.metadata_cache, context.listener_name)
        if context.api_version >= CURRENT_LEADER_VERSION
        else None
    )
    responses = [
        {
            "name": topic,
            "partition_responses": [
                _partition_response(topic, result, leaders) for result in partitions
            ],
        }
        for topic, partitions in results
    ]
    values: dict[str, Any] = {"responses": responses, "throttle_time": throttle_time_ms}
    if leaders is not None:
        values["node_endpoints"] = leaders.node_endpoints()
    return adapter.build(response_class(ApiKey.PRODUCE, context.api_version), values)


def _partition_response(
    topic: str, result: PartitionProduceResult, leaders: CurrentLeaders | None
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "index": result.index,
        "error_code": result.error_code,
        "base_offset": result.base_offset,
        "log_append_time": result.log_append_time_ms,
        "log_start_offset": result.log_start_offset,
        "record_errors": [
            {"batch_index": index, "batch_index_error_message": text}
            for index, text in result.record_errors
        ],
        "error_message": result.error_message,
    }
    if leaders is not None and result.error_code == ErrorCode.not_leader_or_follower:
        response["current_leader"] = leaders.leader(topic, result.index)
    return response


def _produce_partition(
    context: RequestContext,
    topic: str,
    partition: int,
    records: bytes | None,
    acks: int,
    compressed_checked: bool,
) -> PartitionProduceResult:
    if acks not in VALID_ACKS:
        return _error(partition, ErrorCode.invalid_required_acks)
    if topic in INTERNAL_TOPICS:
        return _error(
            partition, ErrorCode.invalid_topic_exception, "cannot append to an internal topic"
        )
    if not records:
        return _error(partition, ErrorCode.invalid_record, "no record batches in the request")
    result: AppendResult = context.services.replica_manager.append_records(
        topic, partition, records, required_acks=acks, compressed_checked=compressed_checked
    )
    if result.info is None:
        return _error(partition, result.error_code, result.error_message, result.record_errors)
    appended = result.info.last_offset - result.info.first_offset + 1
    context.services.metrics.produced(topic, appended, len(records))
    return PartitionProduceResult(
        partition,
        ErrorCode.none,
        base_offset=result.info.first_offset,
        log_append_time_ms=result.info.log_append_time_ms,
        log_start_offset=result.info.log_start_offset,
        next_offset=result.info.last_offset + 1,
    )


async def _check_compressed_off_loop(
    context: RequestContext, request: Any
) -> tuple[set[tuple[str, int]], dict[tuple[str, int], PartitionProduceResult]]:
    """Decompress-and-count compressed batches on a worker thread: a batch may take up to
    message.max.decompressed.bytes of codec work, which must not stall the event loop.
    Only partitions led here are checked, so routing errors still come first, as in Kafka.
    Returns the partitions checked (a partition whose leadership arrives during the await was
    not, and the append checks it) and the errors found."""
    replica_manager = context.services.replica_manager
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
    limit_bytes = context.services.config["message.max.decompressed.bytes"]
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
    context: RequestContext, request: Any, results: TopicResults
) -> TopicResults:
    """Park every appended partition until its high watermark passes what was appended;
    the results with each partition's outcome of that wait."""
    replica_manager = context.services.replica_manager
    timeout_s = max(adapter.millis(request.timeout), 0) / 1000
    metrics = context.services.metrics

    async def settle(topic: str, result: PartitionProduceResult) -> PartitionProduceResult:
        if result.error_code != ErrorCode.none or result.next_offset is None:
            return result
        min_isr = context.services.topic_settings.min_insync_replicas(topic)
        error = await replica_manager.wait_for_replication(
            topic, result.index, result.next_offset, min_isr, timeout_s
        )
        return result if error == ErrorCode.none else result.failed(error)

    metrics.delayed_produces += 1  # parked, as in Kafka's produce purgatory
    try:
        settled = await asyncio.gather(
            *(
                asyncio.gather(*(settle(topic, result) for result in partitions))
                for topic, partitions in results
            )
        )
    finally:
        metrics.delayed_produces -= 1
    return [
        (topic, list(partitions)) for (topic, _), partitions in zip(results, settled, strict=True)
    ]


def _close_on_error(results: TopicResults) -> None:
    for topic, partitions in results:
        for result in partitions:
            if result.error_code != ErrorCode.none:
                raise CloseConnectionError(
                    f"acks=0 produce to {topic}-{result.index} failed:"
                    f" {ErrorCode(result.error_code).name}"
                )


def _error(
    partition: int,
    error: ErrorCode,
    message: str | None = None,
    record_errors: Sequence[tuple[int, str]] = (),
) -> PartitionProduceResult:
    return PartitionProduceResult(
        partition, error, record_errors=tuple(record_errors), error_message=message
    )


def _record_error(partition: int, error: RecordError) -> PartitionProduceResult:
    record_errors = error.record_errors if isinstance(error, RecordValidationError) else ()
    return _error(partition, ErrorCode(error.error_code), str(error), record_errors)
