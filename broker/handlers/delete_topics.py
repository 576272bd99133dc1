"""DeleteTopics: advertised v0-v6, implemented v1-v6 (by name). Answered only by the controller.

The controller marks each topic under /admin/delete_topics; we wait (up to the timeout) until
the topics disappear from this broker's metadata.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    services = context.services
    names = (
        [t.name for t in request.topics] if context.api_version >= 6 else list(request.topic_names)
    )
    unknown_ids = context.api_version >= 6 and any(t.name is None for t in request.topics)
    valid = [n for n in names if n is not None]
    results = await services.controller.delete_topics(valid)
    accepted = [n for n in valid if results[n] == 0]
    if accepted:
        timeout_s = adapter.millis(request.timeout) / 1000
        await services.wait_for_metadata(
            lambda: not any(services.metadata_cache.has_topic(n) for n in accepted), timeout_s
        )
    responses = []
    for name in valid:
        error = ErrorCode(results[name])
        if error == ErrorCode.none and services.metadata_cache.has_topic(name):
            error = ErrorCode.request_timed_out
        responses.append(
            {"name": name, "topic_id": None, "error_code": error, "error_message": None}
        )
    if unknown_ids:
        responses.append(
            {
                "name": None,
                "topic_id": None,
                "error_code": ErrorCode.unsupported_version,
                "error_message": "deleting topics by id is not supported",
            }
        )
    cls = response_class(ApiKey.DELETE_TOPICS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "responses": responses})
