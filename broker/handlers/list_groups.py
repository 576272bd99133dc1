"""ListGroups: v0-v5 (v4 filters by state, KIP-518; v5 by group type, KIP-848). Lists the
groups this broker coordinates: those with members and those known only by their committed
offsets (state Empty).

Every group here is a classic group, as with Kafka 3.9's ZooKeeper-mode coordinator: v5 names
each group's type `classic`, and a type filter (matched case-insensitively) that does not name
`classic` lists no group.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

EMPTY_STATE = "Empty"
CLASSIC_GROUP_TYPE = "classic"


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.LIST_GROUPS, context.api_version)
    types = [str(t).lower() for t in getattr(request, "types_filter", ())]
    if types and CLASSIC_GROUP_TYPE not in types:
        return adapter.build(cls, {"throttle_time": 0, "error_code": ErrorCode.none, "groups": []})
    coordinator = context.services.group_coordinator
    states = [str(s) for s in getattr(request, "states_filter", ())]
    listed = {
        g.group_id: _listed(g.group_id, g.protocol_type, g.state)
        for g in coordinator.membership.list_groups(states)
    }
    if not states or EMPTY_STATE.lower() in (s.lower() for s in states):
        for group_id in coordinator.offsets.groups():
            listed.setdefault(group_id, _listed(group_id, "", EMPTY_STATE))
    return adapter.build(
        cls,
        {"throttle_time": 0, "error_code": ErrorCode.none, "groups": list(listed.values())},
    )


def _listed(group_id: str, protocol_type: str, state: str) -> dict[str, Any]:
    return {
        "group_id": group_id,
        "protocol_type": protocol_type,
        "group_state": state,
        "group_type": CLASSIC_GROUP_TYPE,
    }
