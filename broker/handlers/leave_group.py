"""LeaveGroup: v0-v5 (v3+ removes several members at once, KIP-345; v5 gives each leaving
member's reason, KIP-800, which only goes into the coordinator's log lines)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    if hasattr(request, "members"):
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
        reasons = [getattr(m, "reason", None) for m in request.members]
    else:
        leaving, reasons = [(request.member_id, None)], [None]
    membership = context.services.group_coordinator.membership
    result = membership.leave_group(request.group_id, leaving, reasons)
    error = result.error
    if not hasattr(request, "members") and result.members and error == ErrorCode.none:
        error = result.members[0].error  # v0-v2 have one member and one error
    members = [
        {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "error_code": m.error}
        for m in result.members
    ]
    cls = response_class(ApiKey.LEAVE_GROUP, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "error_code": error, "members": members})
