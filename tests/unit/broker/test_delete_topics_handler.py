"""The DeleteTopics handler against fake broker services (broker/services.py): the per-topic
errors the controller gives, a timeout while a topic is still in the metadata, and topics named
only by id (v6), which we do not delete."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import delete_topics
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.header import RequestHeader
from broker.protocol.registry import request_class


class _Services:
    """A controller that marks the topics it knows, and metadata that forgets them unless
    `lingering` (a deletion that does not finish within the request's timeout)."""

    def __init__(self, existing: set[str], lingering: set[str] = frozenset()) -> None:
        self.topics = set(existing)
        self._lingering = set(lingering)
        self.asked: list[list[str]] = []
        self.controller = SimpleNamespace(delete_topics=self._delete_topics)
        self.metadata_cache = SimpleNamespace(has_topic=lambda name: name in self.topics)
        self.authorizer = None

    async def _delete_topics(self, names: list[str]) -> dict[str, int]:
        self.asked.append(names)
        return {
            n: 0 if n in self.topics else int(ErrorCode.unknown_topic_or_partition) for n in names
        }

    async def wait_for_metadata(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        self.topics &= self._lingering
        return condition()


def _handle(services: _Services, version: int, topics: list[dict[str, Any]]) -> Any:
    header = RequestHeader(
        api_key=ApiKey.DELETE_TOPICS, api_version=version, correlation_id=1, client_id=None
    )
    context = RequestContext(header, "127.0.0.1", "PLAINTEXT", services)  # type: ignore[arg-type]
    fields = {"topics": topics, "topic_names": [t["name"] for t in topics], "timeout": 5000}
    request = adapter.build(request_class(ApiKey.DELETE_TOPICS, version), fields)
    return asyncio.run(delete_topics.handle(context, request))


def _errors(response: Any) -> dict[str | None, ErrorCode]:
    return {r.name: r.error_code for r in response.responses}


def test_deleted_and_unknown_topics_get_their_own_errors() -> None:
    services = _Services({"a", "b"})
    topics = [{"name": n, "topic_id": None} for n in ("a", "missing", "b")]
    response = _handle(services, 6, topics)
    assert _errors(response) == {
        "a": ErrorCode.none,
        "missing": ErrorCode.unknown_topic_or_partition,
        "b": ErrorCode.none,
    }
    assert services.asked == [["a", "missing", "b"]]


def test_a_topic_still_in_the_metadata_after_the_timeout_is_request_timed_out() -> None:
    response = _handle(
        _Services({"a", "slow"}, lingering={"slow"}), 5, [{"name": "a"}, {"name": "slow"}]
    )
    assert _errors(response) == {"a": ErrorCode.none, "slow": ErrorCode.request_timed_out}


def test_topics_named_only_by_id_are_refused_and_the_named_ones_deleted() -> None:
    services = _Services({"a"})
    topic_id = uuid.UUID("7b2a8f6e-0c41-4b8e-9d55-1f0e3c2a9b10")
    response = _handle(
        services, 6, [{"name": "a", "topic_id": None}, {"name": None, "topic_id": topic_id}]
    )
    assert _errors(response) == {"a": ErrorCode.none, None: ErrorCode.unsupported_version}
    assert services.asked == [["a"]]
