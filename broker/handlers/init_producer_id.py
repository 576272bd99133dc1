"""InitProducerId: v0-v5, for idempotent producers (no transactional id). v4 and v5 only
allow new errors (PRODUCER_FENCED, TRANSACTION_ABORTABLE) of transactional producers.

Any broker answers with a fresh producer id and epoch 0, as Kafka does for producers without
a transactional id (a retry or KIP-360 bump simply gets a new id). Transactional ids need the
transaction coordinator, which does not exist yet: they get COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from zk.errors import ZkError


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.INIT_PRODUCER_ID, context.api_version)
    if request.transactional_id is not None:
        return _response(cls, ErrorCode.coordinator_not_available, -1, -1)
    try:
        producer_id = await context.server.producer_ids.generate_producer_id()
    except ZkError:
        return _response(cls, ErrorCode.coordinator_load_in_progress, -1, -1)
    return _response(cls, ErrorCode.none, producer_id, 0)


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
