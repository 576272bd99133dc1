"""AlterConfigs: v0-v2, topics only. The given configs replace all of a topic's overrides."""

from __future__ import annotations

from typing import Any

from broker.config.topic_admin import alter_resources, replace_all
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    responses = await alter_resources(
        context.services, request.resources, replace_all, request.validate_only
    )
    cls = response_class(ApiKey.ALTER_CONFIGS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "responses": responses})
