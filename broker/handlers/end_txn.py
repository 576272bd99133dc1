"""EndTxn v0-v4: a transactional producer commits or aborts its open transaction. The answer
comes once PrepareCommit/PrepareAbort is written; the markers follow (see the transaction
coordinator). PRODUCER_FENCED goes to clients below v2 as INVALID_PRODUCER_EPOCH."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

PRODUCER_FENCED_VERSION = 2


async def handle(context: RequestContext, request: Any) -> Any:
    error = await context.services.transaction_coordinator.end_transaction(
        request.transactional_id,
        int(request.producer_id),
        int(request.producer_epoch),
        bool(request.committed),
    )
    if error == ErrorCode.producer_fenced and context.api_version < PRODUCER_FENCED_VERSION:
        error = ErrorCode.invalid_producer_epoch
    cls = response_class(ApiKey.END_TXN, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "error_code": error})
