"""AllocateProducerIds: v0 (Kafka 3.9). Answered by the controller; another broker answers
NOT_CONTROLLER, as Kafka's does.

A Kafka broker's transaction coordinator (inter.broker.protocol.version 3.0+) asks the
controller for its next block of producer ids (see controller/producer_ids.py); without an
answer it answers InitProducerId with COORDINATOR_LOAD_IN_PROGRESS.
"""

from __future__ import annotations

from typing import Any

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    block = await context.services.controller.allocate_producer_ids(
        int(request.broker_id), int(request.broker_epoch)
    )
    return adapter.build(
        response_class(ApiKey.ALLOCATE_PRODUCER_IDS, context.api_version),
        {
            "throttle_time": 0,
            "error_code": block.error_code,
            "producer_id_start": block.producer_id_start,
            "producer_id_len": block.producer_id_len,
        },
    )
