"""FindCoordinator: v0-v3. There is no group or transaction coordinator yet, so every key is
answered with COORDINATOR_NOT_AVAILABLE (retriable). Advertised because librdkafka enables some
client features only when this API is present (DEVIATIONS.md).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(10, context.api_version)
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": ErrorCode.coordinator_not_available,
            "error_message": "the group coordinator is not implemented yet",
            "node_id": -1,
            "host": "",
            "port": -1,
        },
    )
