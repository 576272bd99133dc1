"""IncrementalAlterConfigs: v0-v1, topics only (SET, DELETE, APPEND, SUBTRACT)."""

from __future__ import annotations

from typing import Any

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.registry import response_class
from broker.topic_config_admin import alter_resource, apply_operations

INCREMENTAL_ALTER_CONFIGS_KEY = 44


async def handle(context: RequestContext, request: Any) -> Any:
    responses = []
    for resource in request.resources:
        result = await alter_resource(
            context.server, resource, apply_operations(resource.configs), request.validate_only
        )
        responses.append(result.response(resource))
    cls = response_class(INCREMENTAL_ALTER_CONFIGS_KEY, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "responses": responses})
