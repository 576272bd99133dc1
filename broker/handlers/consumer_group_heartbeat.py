"""ConsumerGroupHeartbeat: v0 (KIP-848), advertised as Kafka 3.9 does in ZooKeeper mode.

A ZooKeeper-mode Kafka 3.9 broker runs only the classic group coordinator (the consumer
rebalance protocol needs KRaft), so it answers every heartbeat UNSUPPORTED_VERSION; a client
asking for `group.protocol=consumer` learns from it that the cluster does not support it.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    return adapter.build(
        response_class(ApiKey.CONSUMER_GROUP_HEARTBEAT, context.api_version),
        {
            "throttle_time": 0,
            "error_code": ErrorCode.unsupported_version,
            "error_message": None,
            "member_id": None,
            "member_epoch": 0,
            "heartbeat_interval": 0,
            "assignment": None,
        },
    )
