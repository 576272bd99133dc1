"""FindCoordinator: v0-v6 (v4 batches keys, KIP-699; v5 only allows TRANSACTION_ABORTABLE,
KIP-890, which nothing here returns; v6 allows share-group keys, KIP-932).

Group keys (key type 0) are answered with the leader of the group's `__consumer_offsets`
partition, transaction keys (type 1) with the leader of the transactional id's
`__transaction_state` partition, each topic created on first use; COORDINATOR_NOT_AVAILABLE
(retriable) while the topic or its leader is not there yet. Share keys (type 2) get
INVALID_REQUEST below v6 and COORDINATOR_NOT_AVAILABLE from v6, as Kafka 3.9 answers them (it
has no share coordinator).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.internal_topics import CoordinatorAddress
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2
FIRST_VERSION_WITH_SHARE_KEYS = 6


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.FIND_COORDINATOR, context.api_version)
    key_type = int(getattr(request, "key_type", GROUP_KEY_TYPE))
    if hasattr(request, "coordinator_keys"):
        coordinators = [
            {"key": key, **_fields(await _find(context, key_type, key))}
            for key in request.coordinator_keys
        ]
        return adapter.build(cls, {"throttle_time": 0, "coordinators": coordinators})
    found = await _find(context, key_type, request.key)
    return adapter.build(cls, {"throttle_time": 0, **_fields(found)})


async def _find(context: RequestContext, key_type: int, key: str) -> CoordinatorAddress:
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return CoordinatorAddress(_other_key_type_error(key_type, context.api_version))
    if not key:
        return CoordinatorAddress(ErrorCode.invalid_request)
    if key_type == TRANSACTION_KEY_TYPE:
        return await context.services.transaction_coordinator.find(key, context.listener_name)
    return await context.services.group_coordinator.find(key, context.listener_name)


def _other_key_type_error(key_type: int, version: int) -> ErrorCode:
    if key_type == SHARE_KEY_TYPE and version >= FIRST_VERSION_WITH_SHARE_KEYS:
        # Kafka 3.9 knows the key type but has no share coordinator to name.
        return ErrorCode.coordinator_not_available
    return ErrorCode.invalid_request


def _fields(found: CoordinatorAddress) -> dict[str, Any]:
    message = None if found.error == ErrorCode.none else found.error.name
    return {
        "error_code": found.error,
        "error_message": message,
        "node_id": found.node_id,
        "host": found.host,
        "port": found.port,
    }
