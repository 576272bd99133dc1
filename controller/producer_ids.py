"""AllocateProducerIds, the controller's side (Kafka's KafkaController.processAllocateProducerIds).

From inter.broker.protocol.version 3.0 on, a Kafka broker's transaction coordinator gets its
producer ids in blocks from the controller instead of claiming them in ZooKeeper itself. The
controller claims the next block from /latest_producer_id_block exactly as a broker does (the
ZooKeeper layer's `allocate_producer_id_block`: a write conditional on the znode's version, the
znode naming the block and the broker it went to, as Kafka's ZkProducerIdManager writes it), so
blocks stay contiguous and unique whichever controller or broker claims them.

The request runs on the controller's event task (an `AllocateProducerIdsRequested` event);
the sender must be registered (BROKER_ID_NOT_REGISTERED) with the broker epoch it sends
(STALE_BROKER_EPOCH), as Kafka checks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from controller.context import ControllerContext
from controller.errors import BROKER_ID_NOT_REGISTERED, NONE, STALE_BROKER_EPOCH
from controller.request_queue import RequestQueue
from controller.zk_api import ControllerZk

log = logging.getLogger(__name__)

# Requests waiting for the controller's event task (each broker has one in flight at most).
MAX_PENDING_PRODUCER_ID_REQUESTS = 10_000


@dataclass(frozen=True, slots=True)
class ProducerIdsRequest:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class ProducerIdsBlock:
    """The answer: an error, or the first id of the block and how many it holds."""

    error_code: ErrorCode
    producer_id_start: int = 0
    producer_id_len: int = 0


def producer_ids_requests() -> RequestQueue[ProducerIdsRequest, ProducerIdsBlock]:
    return RequestQueue(MAX_PENDING_PRODUCER_ID_REQUESTS, _error_result)


def _error_result(
    _request: ProducerIdsRequest, error_code: ErrorCode, _message: str | None
) -> ProducerIdsBlock:
    return ProducerIdsBlock(error_code)


async def allocate_producer_ids(
    kafka_zk: ControllerZk, context: ControllerContext, request: ProducerIdsRequest
) -> ProducerIdsBlock:
    known = context.broker_epochs.get(request.broker_id)
    if request.broker_id not in context.live_brokers or known is None:
        log.warning("AllocateProducerIds from unregistered broker %d refused", request.broker_id)
        return ProducerIdsBlock(BROKER_ID_NOT_REGISTERED)
    if request.broker_epoch != known:
        log.warning(
            "AllocateProducerIds from broker %d refused: broker epoch %d, registered %d",
            request.broker_id,
            request.broker_epoch,
            known,
        )
        return ProducerIdsBlock(STALE_BROKER_EPOCH)
    start, end = await kafka_zk.allocate_producer_id_block(request.broker_id)
    log.info("producer ids %d-%d allocated to broker %d", start, end, request.broker_id)
    return ProducerIdsBlock(NONE, start, end - start + 1)
