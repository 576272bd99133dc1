"""InitProducerId: v0-v5.

Without a transactional id (idempotent producers) any broker answers with a fresh producer id
and epoch 0, as Kafka does (a retry or KIP-360 bump simply gets a new id). With one, the
transaction coordinator of the id answers (NOT_COORDINATOR elsewhere): the id's producer id
with the next epoch, after aborting a transaction the previous instance left open
(CONCURRENT_TRANSACTIONS until that is done; the producer retries). From v3 a producer may name
its current id and epoch (KIP-360). PRODUCER_FENCED goes to clients below v4 as
INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from zk.errors import ZkError

PRODUCER_FENCED_VERSION = 4
NO_PRODUCER_ID = -1


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.INIT_PRODUCER_ID, context.api_version)
    if request.transactional_id is not None:
        return await _transactional(context, cls, request)
    try:
        producer_id = await context.services.producer_ids.generate_producer_id()
    except ZkError:
        return _response(cls, ErrorCode.coordinator_load_in_progress, -1, -1)
    return _response(cls, ErrorCode.none, producer_id, 0)


async def _transactional(context: RequestContext, cls: type, request: Any) -> Any:
    if not request.transactional_id:
        return _response(cls, ErrorCode.invalid_request, -1, -1)
    expected_id = int(getattr(request, "producer_id", NO_PRODUCER_ID))
    expected = None
    if expected_id != NO_PRODUCER_ID:
        expected = (expected_id, int(request.producer_epoch))
    try:
        result = await context.services.transaction_coordinator.init_producer_id(
            request.transactional_id, adapter.millis(request.transaction_timeout), expected
        )
    except ZkError:
        return _response(cls, ErrorCode.coordinator_not_available, -1, -1)
    error = result.error
    if error == ErrorCode.producer_fenced and context.api_version < PRODUCER_FENCED_VERSION:
        error = ErrorCode.invalid_producer_epoch
    return _response(cls, error, result.producer_id, result.producer_epoch)


def _response(cls: type, error: ErrorCode, producer_id: int, epoch: int) -> Any:
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": error,
            "producer_id": producer_id,
            "producer_epoch": epoch,
        },
    )
