"""IncrementalAlterConfigs: v0-v1, topics only (SET, DELETE, APPEND, SUBTRACT)."""

from __future__ import annotations

from typing import Any

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.registry import response_class
from broker.topic_config_admin import alter_resources, apply_operations

INCREMENTAL_ALTER_CONFIGS_KEY = 44


async def handle(context: RequestContext, request: Any) -> Any:
    responses = await alter_resources(
        context.server, request.resources, apply_operations, request.validate_only
    )
    cls = response_class(INCREMENTAL_ALTER_CONFIGS_KEY, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "responses": responses})
