"""DescribeCluster: v0-v1 (KIP-700; Kafka 3.9's range in ZooKeeper mode). The Java
AdminClient's `describeCluster` asks it.

The answer is Kafka 3.9's broker endpoint: the cluster id, the controller id (-1 when the
controller is not among the live brokers listed), the live brokers with their endpoint on the
listener the request came in on and their racks, and, when asked, the operations the principal
may perform on the cluster (0 when it may not describe it). A request for another endpoint type
(KIP-919's controllers, or an unknown type) is refused with INVALID_REQUEST at v0 and
MISMATCHED_ENDPOINT_TYPE / UNSUPPORTED_ENDPOINT_TYPE from v1, as Kafka's brokers answer.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers.authorized_operations import OMITTED, cluster_authorized_operations
from broker.handlers.metadata import live_brokers_on
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

# Kafka's EndpointType ids (KIP-919).
BROKER_ENDPOINT = 1
CONTROLLER_ENDPOINT = 2
_ENDPOINT_NAMES = {BROKER_ENDPOINT: "BROKER", CONTROLLER_ENDPOINT: "CONTROLLER"}


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.DESCRIBE_CLUSTER, context.api_version)
    requested = int(getattr(request, "endpoint_type", BROKER_ENDPOINT))
    if requested != BROKER_ENDPOINT:
        return adapter.build(cls, _refusal(context.api_version, requested))
    operations = OMITTED
    if request.include_cluster_authorized_operations:
        operations = cluster_authorized_operations(context)
    cache = context.services.metadata_cache
    brokers = [
        {"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"]}
        for b in live_brokers_on(cache, context.listener_name)
    ]
    controller_id = cache.controller_id
    if all(b["broker_id"] != controller_id for b in brokers):
        controller_id = -1
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "endpoint_type": BROKER_ENDPOINT,
            "cluster_id": context.services.cluster_id,
            "controller_id": controller_id,
            "brokers": brokers,
            "cluster_authorized_operations": operations,
        },
    )


def _refusal(version: int, requested: int) -> dict[str, Any]:
    name = _ENDPOINT_NAMES.get(requested)
    if name is None:
        code = ErrorCode.unsupported_endpoint_type
        message = f"Unsupported endpoint type {requested}"
    else:
        code = ErrorCode.mismatched_endpoint_type
        message = (
            "The request was sent to an endpoint of type BROKER, but we wanted an endpoint"
            f" of type {name}"
        )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.invalid_request if version == 0 else code,
        "error_message": message,
        "endpoint_type": BROKER_ENDPOINT,
        "cluster_id": "",
        "controller_id": -1,
        "brokers": [],
        "cluster_authorized_operations": OMITTED,
    }
