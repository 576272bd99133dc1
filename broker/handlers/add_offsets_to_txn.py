"""AddOffsetsToTxn v0-v4: a transactional producer will commit a consumer group's offsets in
its transaction (`send_offsets_to_transaction`): the group's `__consumer_offsets` partition
joins the transaction, so the markers reach the offsets TxnOffsetCommit writes there.
PRODUCER_FENCED goes to clients below v2 as INVALID_PRODUCER_EPOCH."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.group.offsets import OFFSETS_TOPIC
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

PRODUCER_FENCED_VERSION = 2


async def handle(context: RequestContext, request: Any) -> Any:
    services = context.services
    partition = services.group_coordinator.offsets.partition_of(request.group_id)
    error = await services.transaction_coordinator.add_partitions(
        request.transactional_id,
        int(request.producer_id),
        int(request.producer_epoch),
        [(OFFSETS_TOPIC, partition)],
    )
    if error == ErrorCode.producer_fenced and context.api_version < PRODUCER_FENCED_VERSION:
        error = ErrorCode.invalid_producer_epoch
    cls = response_class(ApiKey.ADD_OFFSETS_TO_TXN, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "error_code": error})
