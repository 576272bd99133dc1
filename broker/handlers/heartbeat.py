"""Heartbeat: v0-v4. Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin."""

from __future__ import annotations

from typing import Any

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    error = context.services.group_coordinator.membership.heartbeat(
        request.group_id,
        request.member_id,
        getattr(request, "group_instance_id", None),
        request.generation_id,
    )
    cls = response_class(ApiKey.HEARTBEAT, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "error_code": error})
