"""ControlledShutdown: advertised v0-v3 (Kafka 3.0), implemented v1-v3. Answered by the
controller only; other brokers answer NOT_CONTROLLER.

A broker about to stop asks the controller to move leadership off it and take it out of ISRs
(see controller/controlled_shutdown.py). The answer names the partitions it still leads; the
broker retries while any remain. v0 is advertised as Kafka 3.0 does, but its request header
carries no client id, which we do not parse: it closes the connection (DEVIATIONS.md). v0-v1
carry no broker epoch, so the epoch check is skipped for them, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.protocol.zk_broker_apis import UNKNOWN_BROKER_EPOCH


async def handle(context: RequestContext, request: Any) -> Any:
    broker_epoch = int(getattr(request, "broker_epoch", UNKNOWN_BROKER_EPOCH))
    result = await context.services.controller.controlled_shutdown(
        int(request.broker_id), broker_epoch
    )
    remaining = [
        {"topic_name": topic, "partition_index": partition}
        for topic, partition in result.remaining_partitions
    ]
    cls = response_class(ApiKey.CONTROLLED_SHUTDOWN, context.api_version)
    return adapter.build(cls, {"error_code": result.error_code, "remaining_partitions": remaining})
