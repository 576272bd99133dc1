"""AddPartitionsToTxn v0-v5: a transactional producer adds the partitions it is about to write
to its open transaction (v0-v3, from clients); v4+ batch several transactions and may only
verify (KIP-890, from brokers).

As in Kafka, a partition of a topic that does not exist fails with UNKNOWN_TOPIC_OR_PARTITION
and the others of the request then with OPERATION_NOT_ATTEMPTED; otherwise every partition
gets the coordinator's answer for the whole request. PRODUCER_FENCED goes to clients below v2
as INVALID_PRODUCER_EPOCH (they do not know the newer code).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

BATCHED_VERSION = 4
PRODUCER_FENCED_VERSION = 2


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.ADD_PARTITIONS_TO_TXN, context.api_version)
    if context.api_version < BATCHED_VERSION:
        topics = await _add(
            context,
            request.v3_and_below_transactional_id,
            int(request.v3_and_below_producer_id),
            int(request.v3_and_below_producer_epoch),
            request.v3_and_below_topics,
            verify_only=False,
        )
        return adapter.build(cls, {"throttle_time": 0, "results_by_topic_v3_and_below": topics})
    results = [
        {
            "transactional_id": txn.transactional_id,
            "topic_results": await _add(
                context,
                txn.transactional_id,
                int(txn.producer_id),
                int(txn.producer_epoch),
                txn.topics,
                bool(txn.verify_only),
            ),
        }
        for txn in request.transactions
    ]
    return adapter.build(
        cls, {"throttle_time": 0, "error_code": ErrorCode.none, "results_by_transaction": results}
    )


async def _add(
    context: RequestContext,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    topics: Any,
    verify_only: bool,
) -> list[dict[str, Any]]:
    requested = [(topic.name, [int(p) for p in topic.partitions]) for topic in topics]
    cache = context.services.metadata_cache
    unknown = {name for name, _ in requested if cache.partitions(name) is None}
    if unknown:
        errors = {
            name: ErrorCode.unknown_topic_or_partition
            if name in unknown
            else ErrorCode.operation_not_attempted
            for name, _ in requested
        }
        return [_topic(name, partitions, errors[name]) for name, partitions in requested]
    coordinator = context.services.transaction_coordinator
    partitions = [(name, p) for name, indexes in requested for p in indexes]
    if verify_only:
        error = coordinator.verify_partitions(
            transactional_id, producer_id, producer_epoch, partitions
        )
    else:
        error = await coordinator.add_partitions(
            transactional_id, producer_id, producer_epoch, partitions
        )
    if error == ErrorCode.producer_fenced and context.api_version < PRODUCER_FENCED_VERSION:
        error = ErrorCode.invalid_producer_epoch
    return [_topic(name, indexes, error) for name, indexes in requested]


def _topic(name: str, partitions: list[int], error: ErrorCode) -> dict[str, Any]:
    return {
        "name": name,
        "results_by_partition": [
            {"partition_index": p, "partition_error_code": error} for p in partitions
        ],
    }
