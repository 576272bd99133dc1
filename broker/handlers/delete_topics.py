"""DeleteTopics: v0-v6 (v0 derived in `protocol/legacy.py`). Answered only by the controller.

v6 names each topic by name or by id (KIP-516), as Kafka 3.9 does in ZooKeeper mode: an id is
looked up in the metadata, an unknown one answered UNKNOWN_TOPIC_ID, and a topic named both
ways makes the whole request INVALID_REQUEST. The controller marks each topic under
/admin/delete_topics; we wait (up to the timeout) until the topics disappear from this
broker's metadata, or until their deletion started and waits for a broker that is down (it
completes when that broker is back). Kafka's controller broker answers once its own
UpdateMetadata took the topic out of its metadata cache, when the deletion started.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

BOTH_NAMED = "Topic name and topic ID can not both be specified."

# A topic as the request names it: (name, id), one of them None.
_Named = tuple[str | None, uuid.UUID | None]


async def handle(context: RequestContext, request: Any) -> Any:
    entries = _entries(context.api_version, request)
    if any(name is not None and topic_id is not None for name, topic_id in entries):
        return _respond(
            context, [_result(n, i, ErrorCode.invalid_request, BOTH_NAMED) for n, i in entries]
        )
    cache = context.services.metadata_cache
    resolved = [
        (name if topic_id is None else cache.topic_name(topic_id), topic_id)
        for name, topic_id in entries
    ]
    errors = await _delete(context, request, [name for name, _ in resolved if name is not None])
    return _respond(
        context,
        [
            _result(name, topic_id, ErrorCode.unknown_topic_id if name is None else errors[name])
            for name, topic_id in resolved
        ],
    )


def _entries(api_version: int, request: Any) -> list[_Named]:
    if api_version < 6:
        return [(str(name), None) for name in request.topic_names]
    return [(topic.name, _topic_id(topic)) for topic in request.topics]


def _topic_id(topic: Any) -> uuid.UUID | None:
    topic_id = topic.topic_id
    return None if topic_id is None or topic_id.int == 0 else topic_id


async def _delete(context: RequestContext, request: Any, names: list[str]) -> dict[str, ErrorCode]:
    """The controller's answer per topic; a topic still in the metadata when the request's
    timeout passes, its deletion not waiting for a broker, is REQUEST_TIMED_OUT."""
    services = context.services
    results = await services.controller.delete_topics(names)
    accepted = [name for name in names if results[name] == 0]

    def started(name: str) -> bool:
        return not services.metadata_cache.has_topic(
            name
        ) or services.controller.topic_deletion_halted(name)

    if accepted:
        timeout_s = adapter.millis(request.timeout) / 1000
        await services.metadata_changes.wait_for(
            lambda: all(started(n) for n in accepted), timeout_s
        )
    errors = {}
    for name in names:
        error = ErrorCode(results[name])
        if error == ErrorCode.none and not started(name):
            error = ErrorCode.request_timed_out
        errors[name] = error
    return errors


def _result(
    name: str | None, topic_id: uuid.UUID | None, error: ErrorCode, message: str | None = None
) -> dict[str, Any]:
    return {"name": name, "topic_id": topic_id, "error_code": error, "error_message": message}


def _respond(context: RequestContext, responses: list[dict[str, Any]]) -> Any:
    cls = response_class(ApiKey.DELETE_TOPICS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "responses": responses})
