"""UpdateMetadata: v0-v8 (Kafka 3.9, ZooKeeper mode). A ZooKeeper-mode controller (an Apache
Kafka broker; ours does not send it) tells every broker the live brokers and each partition's
leader and ISR.

Our metadata cache stays driven by ZooKeeper: it is the view of `/brokers/ids`,
`/brokers/topics`, the partition state znodes and `/controller` that every broker watches,
which the controller writes before it sends this request, so the request adds nothing the
cache would not show a moment later and its contents are not applied. It is fenced as Kafka's
broker fences it (a broker epoch older than this broker's registration gets
STALE_BROKER_EPOCH, a controller epoch older than the newest seen STALE_CONTROLLER_EPOCH),
and its controller epoch, when accepted, fences later LeaderAndIsr and StopReplica requests
as in Kafka. An authorizer requires ClusterAction on the cluster.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.replication.control_requests import state_change_log


async def handle(context: RequestContext, request: Any) -> Any:
    fence = context.services.replica_manager.controller_fence
    error = fence.admit(request)
    if error != ErrorCode.none:
        state_change_log.warning(
            "[Broker id=%d] Refused UpdateMetadata request correlationId %d from controller %d"
            " epoch %d with %s (latest known controller epoch %d)",
            context.services.broker_id,
            context.header.correlation_id,
            int(request.controller_id),
            int(request.controller_epoch),
            error.name.upper(),
            fence.controller_epoch,
        )
    return error_response(context.api_version, request, error)


def error_response(version: int, request: Any, error: ErrorCode) -> Any:
    """The answer: only an error code (NONE when served)."""
    return adapter.build(response_class(ApiKey.UPDATE_METADATA, version), {"error_code": error})
