"""ListGroups: v0-v4 (v4 filters by state, KIP-518). Lists the groups this broker coordinates:
those with members and those known only by their committed offsets (state Empty)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.registry import response_class

API_KEY = 16
EMPTY_STATE = "Empty"


async def handle(context: RequestContext, request: Any) -> Any:
    coordinator = context.server.group_coordinator
    states = [str(s) for s in getattr(request, "states_filter", ())]
    listed = {
        g.group_id: {
            "group_id": g.group_id,
            "protocol_type": g.protocol_type,
            "group_state": g.state,
        }
        for g in coordinator.membership.list_groups(states)
    }
    if not states or EMPTY_STATE.lower() in (s.lower() for s in states):
        for group_id in coordinator.offsets.groups():
            listed.setdefault(
                group_id, {"group_id": group_id, "protocol_type": "", "group_state": EMPTY_STATE}
            )
    cls = response_class(API_KEY, context.api_version)
    return adapter.build(
        cls,
        {"throttle_time": 0, "error_code": ErrorCode.none, "groups": list(listed.values())},
    )
