"""DescribeGroups: v0-v5. Member metadata and assignments are filled only for a Stable group,
as in Kafka; an unknown group is described as Dead with no error. v3+ answers the operations
the principal may perform on each group when asked."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers.authorized_operations import OMITTED, authorized_operations
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.security.acl import ResourceType

AUTHORIZED_OPERATIONS_VERSION = 3


async def handle(context: RequestContext, request: Any) -> Any:
    membership = context.services.group_coordinator.membership
    groups = [_described(membership.describe_group(group_id)) for group_id in request.groups]
    if context.api_version >= AUTHORIZED_OPERATIONS_VERSION and getattr(
        request, "include_authorized_operations", False
    ):
        for group in groups:
            if group["error_code"] == ErrorCode.none:
                group["authorized_operations"] = authorized_operations(
                    context, ResourceType.GROUP, group["group_id"]
                )
    cls = response_class(ApiKey.DESCRIBE_GROUPS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "groups": groups})


def _described(description: Any) -> dict[str, Any]:
    return {
        "error_code": description.error,
        "group_id": description.group_id,
        "group_state": description.state,
        "protocol_type": description.protocol_type,
        "protocol_data": description.protocol_name,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": m.metadata,
                "member_assignment": m.assignment,
            }
            for m in description.members
        ],
        "authorized_operations": OMITTED,
    }
