"""Metadata: v0-v12. Live brokers, controller id, topics with ids and partition leaders.

v12 may name topics by id: when any requested entry has an id, the ids alone decide which
topics are answered (as in Kafka); an unknown id answers UNKNOWN_TOPIC_ID with a null name.
A missing topic is created when `auto.create.topics.enable` and the request allow it (v4+);
the answer for it is LEADER_NOT_AVAILABLE until its leaders are elected, as in Kafka. A topic
(or added partition) counts as present once this broker has read its partition state.
v8+ answers the operations the principal may perform on each topic and (to v10) the cluster
when asked (broker.handlers.authorized_operations).
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from broker.cluster.metadata_cache import MetadataCache
from broker.cluster.topic_auto_creation import auto_create_topic
from broker.handlers.authorization import may_create_topic, may_describe_topic
from broker.handlers.authorized_operations import (
    OMITTED,
    authorized_operations,
    cluster_authorized_operations,
)
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.security.acl import ResourceType
from controller.assignment import validate_topic_name
from controller.errors import ApiError


async def handle(context: RequestContext, request: Any) -> Any:
    cache = context.services.metadata_cache
    names, unknown_ids = _requested(context, cache, request)
    allow_auto_create = getattr(request, "allow_auto_topic_creation", True)
    cls = response_class(ApiKey.METADATA, context.api_version)
    topic_cls = adapter.nested_class(cls, "topics")
    topics = [
        _encode_topic(topic_cls, _unknown_topic_id_entry(topic_id), []) for topic_id in unknown_ids
    ]
    listing = _requested_topics(context, request) is None
    for name in names:
        if not may_describe_topic(context, name):
            # With an authorizer: a listing hides the topic; a request naming it is refused.
            if not listing:
                entry = _topic_entry(name, ErrorCode.topic_authorization_failed, None)
                topics.append(_encode_topic(topic_cls, entry, []))
            continue
        entry, partitions = await _topic(context, cache, name, allow_auto_create, topic_cls)
        if _asks(context, request, "include_topic_authorized_operations") and (
            entry["error_code"] != ErrorCode.topic_authorization_failed
        ):
            entry["topic_authorized_operations"] = authorized_operations(
                context, ResourceType.TOPIC, name
            )
        topics.append(_encode_topic(topic_cls, entry, partitions))
    cluster_operations = OMITTED
    if context.api_version <= LAST_CLUSTER_OPERATIONS_VERSION and _asks(
        context, request, "include_cluster_authorized_operations"
    ):
        cluster_operations = cluster_authorized_operations(context)
    values = {
        "throttle_time": 0,
        "brokers": live_brokers_on(cache, context.listener_name),
        "cluster_id": context.services.cluster_id,
        "controller_id": cache.controller_id,
        "cluster_authorized_operations": cluster_operations,
    }
    return adapter.Encoded(adapter.encode_with_array(cls, values, "topics", topics))


def _asks(context: RequestContext, request: Any, flag: str) -> bool:
    """Metadata v8+ asks for authorized operations with these flags (Kafka ignores them
    before v8)."""
    return context.api_version >= AUTHORIZED_OPERATIONS_VERSION and bool(
        getattr(request, flag, False)
    )


def _encode_topic(topic_cls: type, entry: dict[str, Any], partitions: list[bytes]) -> bytes:
    return b"".join(adapter.encode_with_array(topic_cls, entry, "partitions", partitions))


def live_brokers_on(cache: MetadataCache, listener_name: str) -> list[dict[str, Any]]:
    """Live brokers' endpoints on the listener this request came in on (others are omitted)."""
    brokers = []
    for broker in sorted(cache.live_brokers().values(), key=lambda b: b.broker_id):
        endpoint = broker.endpoint_for(listener_name)
        if endpoint is not None:
            host, port = endpoint
            brokers.append(
                {"node_id": broker.broker_id, "host": host, "port": port, "rack": broker.rack}
            )
    return brokers


def _requested(
    context: RequestContext, cache: MetadataCache, request: Any
) -> tuple[list[str], list[uuid.UUID]]:
    """The names of the topics to answer, and the requested topic ids that no topic has."""
    topic_ids = _requested_topic_ids(request) if context.api_version >= TOPIC_ID_VERSION else []
    if not topic_ids:
        requested = _requested_topics(context, request)
        return (_listed_topics(cache) if requested is None else requested), []
    found = {topic_id: cache.topic_name(topic_id) for topic_id in topic_ids}
    names = [name for name in found.values() if name is not None]
    return names, [topic_id for topic_id, name in found.items() if name is None]


def _requested_topic_ids(request: Any) -> list[uuid.UUID]:
    """The distinct topic ids a v12+ request names (kio reads the zero id as None)."""
    ids: dict[uuid.UUID, None] = {}
    for topic in request.topics or ():
        topic_id = getattr(topic, "topic_id", None)
        if topic_id is not None:
            ids[topic_id] = None
    return list(ids)


def _unknown_topic_id_entry(topic_id: uuid.UUID) -> dict[str, Any]:
    return _topic_entry(None, ErrorCode.unknown_topic_id, topic_id)


def _requested_topics(context: RequestContext, request: Any) -> list[str] | None:
    """None means every topic (a null list in v1+, an empty list in v0)."""
    if request.topics is None or (context.api_version == 0 and not request.topics):
        return None
    return [t.name for t in request.topics if t.name is not None]


TOPIC_ID_VERSION = 12
AUTHORIZED_OPERATIONS_VERSION = 8
LAST_CLUSTER_OPERATIONS_VERSION = 10  # v11+ leaves the cluster's to DescribeCluster
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


async def _topic(
    context: RequestContext,
    cache: MetadataCache,
    name: str,
    allow_auto_create: bool,
    topic_cls: type,
) -> tuple[dict[str, Any], list[bytes]]:
    """The topic's entry (without partitions) and its encoded partition entries."""
    partition_cls = adapter.nested_class(topic_cls, "partitions")
    partitions = await cache.encoded_partitions(partition_cls, name)
    if partitions is None:
        if not _is_legal_name(name):
            # As Kafka 3.9 answers: no such topic can exist, so none is looked up or created.
            return _topic_entry(name, ErrorCode.invalid_topic_exception, None), []
        error = ErrorCode.unknown_topic_or_partition
        if allow_auto_create and context.services.config["auto.create.topics.enable"]:
            if not may_create_topic(context, name):
                return _topic_entry(name, ErrorCode.topic_authorization_failed, None), []
            error = await auto_create_topic(context.services, name)
        return _topic_entry(name, error, None), []
    return _topic_entry(name, ErrorCode.none, cache.topic_id(name)), partitions


def _is_legal_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except ApiError:
        return False
    return True


def _listed_topics(cache: MetadataCache) -> list[str]:
    """Every topic whose partition states this broker has all read.

    Kafka's brokers learn a topic's partitions together with their leaders, all at once
    (UpdateMetadata), so a topic whose leaders are not elected yet is not in their cache. Ours
    see the topic znode first and the state znodes one by one: listing a partial set would
    tell a client that a new topic has fewer partitions than it has (librdkafka then fails a
    produce to an explicit partition at once), and listing a partition without its state
    would answer "no leader" (kafka-python's admin client then raises). So a topic stays
    unknown until all its states are read; for a topic growing by CreatePartitions that is a
    moment in which clients retry."""
    return [name for name in cache.topic_names() if cache.partition_rows(name)]


def _topic_entry(name: str | None, error: ErrorCode, topic_id: Any) -> dict[str, Any]:
    """A topic's entry but for its partitions, which are encoded apart (see _encode_topic)."""
    return {
        "error_code": error,
        "name": name,
        "topic_id": topic_id,
        "is_internal": name in INTERNAL_TOPICS,
        "topic_authorized_operations": OMITTED,
    }
