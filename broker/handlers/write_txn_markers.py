"""WriteTxnMarkers: advertised v0-v1, implemented v1 (inter-broker): the transaction coordinator
asks each partition leader to end a producer's transaction with a commit or abort marker
(KIP-98).

As in Kafka, a marker is appended like an acks=all write: the partition must be led here and
have at least `min.insync.replicas` in its ISR, and the answer waits until the marker is below
the high watermark (or the request timeout, `request.timeout.ms`, passes). A marker older than
what the partition has seen gets INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED.
v0 (brokers before 2.8) closes the connection: it is advertised but not decoded.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.group.offsets import OFFSETS_TOPIC
from broker.log.control_records import ControlType, EndTxnMarker
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    markers = [
        {"producer_id": marker.producer_id, "topics": await _write_marker(context, marker)}
        for marker in request.markers
    ]
    cls = response_class(ApiKey.WRITE_TXN_MARKERS, context.api_version)
    return adapter.build(cls, {"markers": markers})


async def _write_marker(context: RequestContext, marker: Any) -> list[dict[str, Any]]:
    control_type = ControlType.COMMIT if marker.transaction_result else ControlType.ABORT
    end_marker = EndTxnMarker(control_type, int(marker.coordinator_epoch))
    topics = []
    for topic in marker.topics:
        outcomes = [
            _append(context, topic.name, int(index), marker, end_marker)
            for index in topic.partition_indexes
        ]
        errors = await asyncio.gather(
            *(
                _replicated(context, topic.name, index, outcome, marker)
                for index, outcome in outcomes
            )
        )
        topics.append(
            {
                "name": topic.name,
                "partitions": [
                    {"partition_index": index, "error_code": error}
                    for (index, _), error in zip(outcomes, errors, strict=True)
                ],
            }
        )
    return topics


def _append(
    context: RequestContext, topic: str, index: int, marker: Any, end_marker: EndTxnMarker
) -> tuple[int, tuple[ErrorCode, int | None]]:
    outcome = context.services.replica_manager.append_marker(
        topic, index, int(marker.producer_id), int(marker.producer_epoch), end_marker
    )
    return index, outcome


async def _replicated(
    context: RequestContext,
    topic: str,
    index: int,
    outcome: tuple[ErrorCode, int | None],
    marker: Any,
) -> ErrorCode:
    error, required_offset = outcome
    if error != ErrorCode.none or required_offset is None:
        return error
    min_isr = context.services.topic_settings.min_insync_replicas(topic)
    timeout_s = context.services.config["request.timeout.ms"] / 1000
    error = await context.services.replica_manager.wait_for_replication(
        topic, index, required_offset, min_isr, timeout_s
    )
    if error == ErrorCode.none and topic == OFFSETS_TOPIC:
        # The group coordinator resolves the offsets TxnOffsetCommit wrote there.
        context.services.group_coordinator.offsets.complete_transaction(
            index, int(marker.producer_id), bool(marker.transaction_result)
        )
    return error
