"""CreateTopics: v0-v7 (v0-v1 derived in `protocol/legacy.py`). Answered only by the controller.

The controller validates and writes the topic znodes; we then wait (up to the request's
timeout) until this broker's metadata shows a leader for every new partition, as Kafka waits
for metadata propagation before answering, and then (at most a few seconds) until the other
live brokers show them too (see metadata_propagation.py).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.cluster.metadata_propagation import wait_for_peers
from broker.config.entries import entry_fields, topic_entries
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from controller.errors import TopicError
from controller.topic_creation import NewTopic


async def handle(context: RequestContext, request: Any) -> Any:
    services = context.services
    new_topics = [_new_topic(t) for t in request.topics]
    validate_only = bool(getattr(request, "validate_only", False))
    results = await services.controller.create_topics(new_topics, validate_only)
    created = [t.name for t in new_topics if results[t.name].error_code == ErrorCode.none]
    timed_out: set[str] = set()
    if created and not validate_only:
        timeout_s = adapter.millis(request.timeout) / 1000
        timed_out = await _wait_for_leaders(context, created, timeout_s)
        await _wait_for_peers(context, [t for t in created if t not in timed_out], timeout_s)
    topics = [_result(context, t, results[t.name], t.name in timed_out) for t in new_topics]
    cls = response_class(ApiKey.CREATE_TOPICS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "topics": topics})


def _new_topic(topic: Any) -> NewTopic:
    return NewTopic(
        name=topic.name,
        num_partitions=topic.num_partitions,
        replication_factor=topic.replication_factor,
        assignments={a.partition_index: list(a.broker_ids) for a in topic.assignments} or None,
        configs={c.name: c.value for c in topic.configs},
    )


async def _wait_for_leaders(
    context: RequestContext, topics: list[str], timeout_s: float
) -> set[str]:
    cache = context.services.metadata_cache

    def pending() -> set[str]:
        waiting = set()
        for topic in topics:
            partitions = cache.partitions(topic)
            if partitions is None or not all(cache.is_leader_available(p) for p in partitions):
                waiting.add(topic)
        return waiting

    await context.services.metadata_changes.wait_for(lambda: not pending(), timeout_s)
    return pending()


async def _wait_for_peers(context: RequestContext, topics: list[str], timeout_s: float) -> None:
    cache = context.services.metadata_cache
    counts = {topic: len(cache.partitions(topic) or ()) for topic in topics}
    await wait_for_peers(context.services.peers, counts, timeout_s)


def _result(
    context: RequestContext, topic: NewTopic, result: TopicError, timed_out: bool
) -> dict[str, Any]:
    error = result.error_code
    message = result.message
    if timed_out:
        error, message = ErrorCode.request_timed_out, "timed out waiting for partition leaders"
    if error != ErrorCode.none:
        # Kafka leaves the topic's details unset on errors (even TOPIC_ALREADY_EXISTS).
        return _details(topic.name, error, message, None, -1, -1)
    services = context.services
    cache = services.metadata_cache
    partitions = cache.partitions(topic.name) or []
    details = _details(
        topic.name,
        error,
        message,
        cache.topic_id(topic.name),
        len(partitions) if partitions else topic.num_partitions,
        len(partitions[0].replicas) if partitions else topic.replication_factor,
    )
    # v5+: the topic's configs as DescribeConfigs shows them (Kafka's Java admin client reads
    # them; `kafka-topics --create` fails on a null list).
    overrides = {name: value for name, value in topic.configs.items() if value is not None}
    entries = topic_entries(services.config, overrides, services.dynamic_config.overrides)
    details["configs"] = [entry_fields(entry) for entry in entries]
    return details


def _details(
    name: str,
    error: ErrorCode,
    message: str | None,
    topic_id: Any,
    num_partitions: int,
    replication_factor: int,
) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": topic_id,
        "error_code": error,
        "error_message": message,
        "topic_config_error_code": ErrorCode.none,
        "num_partitions": num_partitions,
        "replication_factor": replication_factor,
        "configs": None,
    }
