"""DeleteGroups: v0-v2. Only an Empty group can go (NON_EMPTY_GROUP otherwise); its metadata
and committed offsets are removed with tombstones in `__consumer_offsets`."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    coordinator = context.services.group_coordinator
    names = list(request.groups_names)
    outcomes = coordinator.membership.delete_groups(names)
    results = []
    for group_id in names:
        error = outcomes.get(group_id, ErrorCode.group_id_not_found)
        known_by_offsets = coordinator.offsets.has_offsets(group_id)
        if error == ErrorCode.group_id_not_found and known_by_offsets:
            error = ErrorCode.none
        if error == ErrorCode.none:
            error = await coordinator.offsets.delete_group(group_id)
        results.append({"group_id": group_id, "error_code": error})
    cls = response_class(ApiKey.DELETE_GROUPS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "results": results})
