"""ConsumerGroupDescribe: v0 (KIP-848), advertised as Kafka 3.9 does in ZooKeeper mode.

Without KIP-848's group coordinator (ZooKeeper mode has only the classic one) Kafka 3.9 answers
each requested group UNSUPPORTED_VERSION; classic groups are described by DescribeGroups.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers.authorized_operations import OMITTED
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    return adapter.build(
        response_class(ApiKey.CONSUMER_GROUP_DESCRIBE, context.api_version),
        {
            "throttle_time": 0,
            "groups": [
                {
                    "error_code": ErrorCode.unsupported_version,
                    "error_message": None,
                    "group_id": group_id,
                    "group_state": "",
                    "group_epoch": 0,
                    "assignment_epoch": 0,
                    "assignor_name": "",
                    "members": [],
                    "authorized_operations": OMITTED,
                }
                for group_id in request.group_ids
            ],
        },
    )
