"""DescribeTransactions v0: the state of transactional ids this broker coordinates
(`kafka-transactions describe`). An id coordinated elsewhere gets NOT_COORDINATOR, one of a
partition still loading COORDINATOR_LOAD_IN_PROGRESS, an unknown one TRANSACTIONAL_ID_NOT_FOUND.
A transaction never started has start time -1, an id with an error 0, as in Kafka."""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.transaction.metadata import TxnMetadata
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    coordinator = context.services.transaction_coordinator
    states = []
    for transactional_id in request.transactional_ids:
        error, metadata = coordinator.describe(transactional_id)
        states.append(_state(transactional_id, error, metadata))
    cls = response_class(ApiKey.DESCRIBE_TRANSACTIONS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "transaction_states": states})


def _state(transactional_id: str, error: ErrorCode, metadata: TxnMetadata | None) -> dict[str, Any]:
    if metadata is None:
        return {
            "error_code": error,
            "transactional_id": transactional_id,
            "transaction_state": "",
            "transaction_timeout": 0,
            "transaction_start_time": _epoch_ms(0),  # Kafka leaves the field at 0
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(metadata.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return {
        "error_code": ErrorCode.none,
        "transactional_id": transactional_id,
        "transaction_state": metadata.state.kafka_name,
        "transaction_timeout": metadata.transaction_timeout_ms,
        "transaction_start_time": _epoch_ms(metadata.start_timestamp_ms),
        "producer_id": metadata.producer_id,
        "producer_epoch": metadata.producer_epoch,
        "topics": [{"topic": t, "partitions": p} for t, p in by_topic.items()],
    }


def _epoch_ms(value: int) -> datetime.datetime:
    """A timestamp field that may hold -1 (kio's datetime fields take a datetime)."""
    return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)
