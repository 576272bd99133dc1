"""SyncGroup: v0-v5 (v5 echoes protocol type and name, KIP-559). The leader's request carries
the assignment, opaque bytes per member; every member gets its own once it is persisted."""

from __future__ import annotations

from typing import Any

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    result = await context.services.group_coordinator.membership.sync_group(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
        assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
    )
    cls = response_class(ApiKey.SYNC_GROUP, context.api_version)
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": result.error,
            "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name,
            "assignment": result.assignment,
        },
    )
