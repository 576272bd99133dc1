"""The DeleteTopics handler against fake broker services (broker/services.py): the per-topic
errors the controller gives, a timeout while a topic is still in the metadata, and topics named
by id (v6): deleted when the id is known, UNKNOWN_TOPIC_ID otherwise, and a topic named both
ways makes the whole request INVALID_REQUEST (Kafka 3.9's answers)."""

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
        self.controller = SimpleNamespace(
            delete_topics=self._delete_topics, topic_deletion_halted=lambda name: False
        )
        self.ids = {uuid.uuid5(uuid.NAMESPACE_OID, name): name for name in existing}
        self.metadata_cache = SimpleNamespace(
            has_topic=lambda name: name in self.topics,
            topic_name=lambda topic_id: (
                self.ids[topic_id] if self.ids.get(topic_id) in self.topics else None
            ),
        )
        self.authorizer = None
        self.metadata_changes = SimpleNamespace(wait_for=self._wait_for_metadata)

    async def _delete_topics(self, names: list[str]) -> dict[str, int]:
        self.asked.append(names)
        return {
            n: 0 if n in self.topics else int(ErrorCode.unknown_topic_or_partition) for n in names
        }

    async def _wait_for_metadata(self, condition: Callable[[], bool], timeout_s: float) -> bool:
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


def test_a_topic_whose_deletion_waits_for_a_broker_is_deleted_though_in_the_metadata() -> None:
    """A replica's broker is down: the topic stays until it is back, but the controller has
    started deleting it, which is when Kafka's controller broker answers."""
    services = _Services({"waiting"}, lingering={"waiting"})
    services.controller.topic_deletion_halted = lambda name: name == "waiting"
    response = _handle(services, 5, [{"name": "waiting"}])
    assert _errors(response) == {"waiting": ErrorCode.none}


def _results(response: Any) -> list[tuple[str | None, uuid.UUID | None, ErrorCode]]:
    return [(r.name, r.topic_id, r.error_code) for r in response.responses]


def test_topics_named_by_id_are_deleted_and_an_unknown_id_is_unknown_topic_id() -> None:
    services = _Services({"a", "b"})
    b_id = next(topic_id for topic_id, name in services.ids.items() if name == "b")
    unknown = uuid.UUID("7b2a8f6e-0c41-4b8e-9d55-1f0e3c2a9b10")
    response = _handle(
        services,
        6,
        [
            {"name": "a", "topic_id": None},
            {"name": None, "topic_id": b_id},
            {"name": None, "topic_id": unknown},
        ],
    )
    assert _results(response) == [
        ("a", None, ErrorCode.none),
        ("b", b_id, ErrorCode.none),
        (None, unknown, ErrorCode.unknown_topic_id),
    ]
    assert services.asked == [["a", "b"]]


def test_a_topic_named_both_ways_makes_the_request_invalid() -> None:
    services = _Services({"a", "b"})
    b_id = next(topic_id for topic_id, name in services.ids.items() if name == "b")
    response = _handle(
        services, 6, [{"name": "a", "topic_id": None}, {"name": "b", "topic_id": b_id}]
    )
    assert [error for _, _, error in _results(response)] == [ErrorCode.invalid_request] * 2
    assert services.asked == []
