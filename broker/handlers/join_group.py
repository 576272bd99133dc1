"""JoinGroup: v0-v9, as Kafka 3.9. Membership logic lives in `coordinator/group/membership.py`.

v0 has one timeout (session = rebalance); v4+ makes an unknown member rejoin with the member id
it is given (MEMBER_ID_REQUIRED, KIP-394), v0-v3 join directly (sarama 1.x uses v1). v8 carries
the client's reason for joining (KIP-800), which only goes into the coordinator's log lines. v9
(KIP-814): a static leader that rejoins a Stable group with an unchanged protocol is told it is
the leader, with the members, but to skip the assignment; before v9 it is answered with the old
leader id so that it does not assign.
"""

from __future__ import annotations

from typing import Any

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

FIRST_VERSION_REQUIRING_MEMBER_ID = 4
FIRST_VERSION_WITH_SKIP_ASSIGNMENT = 9


async def handle(context: RequestContext, request: Any) -> Any:
    session_timeout_ms = adapter.millis(request.session_timeout)
    rebalance = getattr(request, "rebalance_timeout", None)
    rebalance_timeout_ms = session_timeout_ms if rebalance is None else adapter.millis(rebalance)
    result = await context.services.group_coordinator.membership.join_group(
        group_id=request.group_id,
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        client_id=context.header.client_id or "",
        client_host=f"/{context.client_host}",
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms,
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        require_known_member_id=context.api_version >= FIRST_VERSION_REQUIRING_MEMBER_ID,
        reason=getattr(request, "reason", None),
        supports_skip_assignment=context.api_version >= FIRST_VERSION_WITH_SKIP_ASSIGNMENT,
    )
    members = [
        {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata}
        for m in result.members
    ]
    cls = response_class(ApiKey.JOIN_GROUP, context.api_version)
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": result.error,
            "generation_id": result.generation_id,
            "protocol_type": result.protocol_type,
            # Before v7 the field is not nullable: an unknown protocol is the empty string.
            "protocol_name": result.protocol_name
            if context.api_version >= 7
            else result.protocol_name or "",
            "leader": result.leader_id,
            "skip_assignment": result.skip_assignment,
            "member_id": result.member_id,
            "members": members,
        },
    )
