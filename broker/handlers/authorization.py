"""Which resource and operation each API needs: the one table the dispatcher checks before a
handler runs (only when an authorizer is configured; without one nothing here is called).

A rule looks at the decoded request and answers one of:

- `None`: allowed, the handler runs as is;
- `Refused(error)`: the whole request is answered with `error` (every required field of the
  response zero-filled, every `error_code` the error);
- `Answered(response)`: the response, built by the rule (a refused consumer Fetch);
- `Filtered(request, merge)`: the handler runs on the allowed part, and `merge` adds the
  refused part's entries (TOPIC_AUTHORIZATION_FAILED per partition) to its response.

APIs not in RULES need nothing (ApiVersions, the SASL ones) or are checked by hand where the
check needs the handler's data: Metadata (`may_describe_topic`, `may_create_topic`).
Kafka's resources and operations per API are those of its KafkaApis (ZooKeeper mode, 3.9).
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.security.acl import CLUSTER_NAME, Operation, ResourceType
from broker.security.authorizer import AclAuthorizer

TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
CLUSTER = ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID


@dataclass(frozen=True, slots=True)
class Refused:
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class Filtered:
    request: Any
    merge: Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class Answered:
    """The request is answered with `response`, built here, and the handler does not run."""

    response: Any


Decision = Refused | Filtered | Answered | None


@dataclass(frozen=True, slots=True)
class Access:
    """One request's principal and host before the authorizer."""

    authorizer: AclAuthorizer
    principal: str
    host: str
    context: RequestContext

    def allowed(self, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        return self.authorizer.authorize(self.principal, self.host, operation, resource_type, name)

    def cluster(self, operation: Operation) -> bool:
        return self.allowed(operation, CLUSTER, CLUSTER_NAME)


def access_of(context: RequestContext) -> Access | None:
    # getattr: unit tests hand in servers faked without one.
    authorizer: AclAuthorizer | None = getattr(context.server, "authorizer", None)
    if authorizer is None:
        return None
    return Access(authorizer, context.principal, context.client_host, context)


def may_describe_topic(context: RequestContext, topic: str) -> bool:
    access = access_of(context)
    return access is None or access.allowed(Operation.DESCRIBE, TOPIC, topic)


def may_create_topic(context: RequestContext, topic: str) -> bool:
    access = access_of(context)
    return (
        access is None
        or access.cluster(Operation.CREATE)
        or access.allowed(Operation.CREATE, TOPIC, topic)
    )


def check(context: RequestContext, api_key: int, request: Any) -> Decision:
    access = access_of(context)
    rule = RULES.get(api_key)
    if access is None or rule is None:
        return None
    return rule(access, request)


def refusal_response(context: RequestContext, error: ErrorCode) -> Any:
    cls = response_class(context.header.api_key, context.api_version)
    return _filled(cls, {}, error)


# -- rules ------------------------------------------------------------------------------


def _on_cluster(operation: Operation) -> Callable[[Access, Any], Decision]:
    def rule(access: Access, request: Any) -> Decision:
        if access.cluster(operation):
            return None
        return Refused(ErrorCode.cluster_authorization_failed)

    return rule


def _on_group(operation: Operation) -> Callable[[Access, Any], Decision]:
    def rule(access: Access, request: Any) -> Decision:
        if access.allowed(operation, GROUP, request.group_id):
            return None
        return Refused(ErrorCode.group_authorization_failed)

    return rule


def _on_transactional_id(operation: Operation) -> Callable[[Access, Any], Decision]:
    def rule(access: Access, request: Any) -> Decision:
        if access.allowed(operation, TRANSACTIONAL_ID, request.transactional_id):
            return None
        return Refused(ErrorCode.transactional_id_authorization_failed)

    return rule


def _add_partitions_to_txn(access: Access, request: Any) -> Decision:
    """v0-v3 (producers): Write on the transactional id and on each topic; v4+ (brokers
    verifying a transaction, KIP-890): ClusterAction."""
    transactional_id = getattr(request, "v3_and_below_transactional_id", None)
    if transactional_id is None:
        return _on_cluster(Operation.CLUSTER_ACTION)(access, request)
    if not access.allowed(Operation.WRITE, TRANSACTIONAL_ID, transactional_id):
        return Refused(ErrorCode.transactional_id_authorization_failed)
    topics = request.v3_and_below_topics
    if all(access.allowed(Operation.WRITE, TOPIC, t.name) for t in topics):
        return None
    return Refused(ErrorCode.topic_authorization_failed)


def _txn_offsets(with_topics: bool) -> Callable[[Access, Any], Decision]:
    """AddOffsetsToTxn and TxnOffsetCommit: Write on the transactional id, Read on the group
    (and, for TxnOffsetCommit, Read on its topics: all or nothing)."""

    def rule(access: Access, request: Any) -> Decision:
        refused = _on_transactional_id(Operation.WRITE)(access, request)
        if refused is not None:
            return refused
        if not access.allowed(Operation.READ, GROUP, request.group_id):
            return Refused(ErrorCode.group_authorization_failed)
        topics = request.topics if with_topics else ()
        if all(access.allowed(Operation.READ, TOPIC, t.name) for t in topics):
            return None
        return Refused(ErrorCode.topic_authorization_failed)

    return rule


def _init_producer_id(access: Access, request: Any) -> Decision:
    if request.transactional_id is not None:
        return _on_transactional_id(Operation.WRITE)(access, request)
    # An idempotent producer: IdempotentWrite on the cluster, or Write on some topic (KIP-679).
    if access.cluster(Operation.IDEMPOTENT_WRITE) or access.authorizer.authorize_any(
        access.principal, access.host, Operation.WRITE, TOPIC
    ):
        return None
    return Refused(ErrorCode.cluster_authorization_failed)


def _find_coordinator(access: Access, request: Any) -> Decision:
    keys = getattr(request, "coordinator_keys", None) or (getattr(request, "key", None),)
    transactional = getattr(request, "key_type", 0) == 1
    resource = TRANSACTIONAL_ID if transactional else GROUP
    if all(k is None or access.allowed(Operation.DESCRIBE, resource, k) for k in keys):
        return None
    if transactional:
        return Refused(ErrorCode.transactional_id_authorization_failed)
    return Refused(ErrorCode.group_authorization_failed)


def _produce(access: Access, request: Any) -> Decision:
    transactional_id = getattr(request, "transactional_id", None)
    if transactional_id is not None and not access.allowed(
        Operation.WRITE, TRANSACTIONAL_ID, transactional_id
    ):
        return Refused(ErrorCode.transactional_id_authorization_failed)
    refused = [t for t in request.topic_data if not access.allowed(Operation.WRITE, TOPIC, t.name)]
    if not refused:
        return None
    allowed = tuple(t for t in request.topic_data if t not in refused)
    entries = [
        {
            "name": t.name,
            "partition_responses": [
                {"index": p.index, "error_code": ErrorCode.topic_authorization_failed}
                for p in t.partition_data
            ],
        }
        for t in refused
    ]

    def merge(response: Any) -> Any:
        if response is None:  # acks=0
            return None
        cls = type(response)
        topic_cls = adapter.nested_class(cls, "responses")
        added = tuple(
            _filled(
                topic_cls,
                {
                    "name": e["name"],
                    "partition_responses": tuple(
                        _filled(
                            adapter.nested_class(topic_cls, "partition_responses"),
                            p,
                            ErrorCode.topic_authorization_failed,
                        )
                        for p in e["partition_responses"]
                    ),
                },
                ErrorCode.topic_authorization_failed,
            )
            for e in entries
        )
        return dataclasses.replace(response, responses=(*response.responses, *added))

    return Filtered(dataclasses.replace(request, topic_data=allowed), merge)


def _fetch(access: Access, request: Any) -> Decision:
    replica_id = getattr(request, "replica_id", -1)
    replica_state = getattr(request, "replica_state", None)
    if replica_state is not None and getattr(replica_state, "replica_id", -1) >= 0:
        replica_id = replica_state.replica_id
    if replica_id >= 0:
        return _on_cluster(Operation.CLUSTER_ACTION)(access, request)
    cache = access.context.server.metadata_cache
    refused = []
    for topic in request.topics:
        name = getattr(topic, "topic", None)
        topic_id = getattr(topic, "topic_id", None)
        if not name and topic_id is not None:
            name = cache.topic_name(topic_id) or ""
        if not access.allowed(Operation.READ, TOPIC, name or ""):
            refused.append((topic, name))
    if not refused:
        return None
    # All or nothing (DEVIATIONS.md): only the refused partitions are answered, each with
    # TOPIC_AUTHORIZATION_FAILED; no fetch session is kept.
    context = access.context
    cls = response_class(ApiKey.FETCH, context.api_version)
    topic_cls = adapter.nested_class(cls, "responses")
    partition_cls = adapter.nested_class(topic_cls, "partitions")
    error = ErrorCode.topic_authorization_failed
    responses = tuple(
        _filled(
            topic_cls,
            {
                "topic": name or "",
                "topic_id": getattr(topic, "topic_id", None),
                "partitions": tuple(
                    _filled(partition_cls, {"partition_index": p.partition, "records": b""}, error)
                    for p in topic.partitions
                ),
            },
            error,
        )
        for topic, name in refused
    )
    values = {"responses": responses, "session_id": 0, "error_code": ErrorCode.none}
    return Answered(_filled(cls, values, error))


def _offset_commit(access: Access, request: Any) -> Decision:
    if not access.allowed(Operation.READ, GROUP, request.group_id):
        return Refused(ErrorCode.group_authorization_failed)
    refused = [t for t in request.topics if not access.allowed(Operation.READ, TOPIC, t.name)]
    if not refused:
        return None
    allowed = tuple(t for t in request.topics if all(t is not r for r in refused))
    error = ErrorCode.topic_authorization_failed

    def merge(response: Any) -> Any:
        topic_cls = adapter.nested_class(type(response), "topics")
        partition_cls = adapter.nested_class(topic_cls, "partitions")
        added = tuple(
            _filled(
                topic_cls,
                {
                    "name": t.name,
                    "partitions": tuple(
                        _filled(partition_cls, {"partition_index": p.partition_index}, error)
                        for p in t.partitions
                    ),
                },
                error,
            )
            for t in refused
        )
        return dataclasses.replace(response, topics=(*response.topics, *added))

    return Filtered(dataclasses.replace(request, topics=allowed), merge)


def _offset_fetch(access: Access, request: Any) -> Decision:
    groups = [g.group_id for g in getattr(request, "groups", None) or ()]
    group_id = getattr(request, "group_id", None)
    if group_id is not None:
        groups.append(group_id)
    if all(access.allowed(Operation.DESCRIBE, GROUP, g) for g in groups):
        return None
    return Refused(ErrorCode.group_authorization_failed)


def _topics_by_name(
    operation: Operation, field: str, name_of: Callable[[Any], str | None]
) -> Callable[[Access, Any], Decision]:
    """Per-topic APIs answered all-or-nothing (see DEVIATIONS.md): refused if any is."""

    def rule(access: Access, request: Any) -> Decision:
        names = [name_of(item) for item in getattr(request, field, None) or ()]
        if all(n is None or access.allowed(operation, TOPIC, n) for n in names):
            return None
        return Refused(ErrorCode.topic_authorization_failed)

    return rule


def _per_name(
    resource_type: ResourceType,
    operation: Operation,
    request_field: str,
    response_field: str,
    key_field: str,
    error: ErrorCode,
    name_of: Callable[[Any], str] = str,
    extra: dict[str, Any] | None = None,
) -> Callable[[Access, Any], Decision]:
    """APIs answering one entry per named resource: the handler gets the allowed names, and
    each refused one is answered with `error` (after the allowed ones), as Kafka answers."""

    def rule(access: Access, request: Any) -> Decision:
        items = tuple(getattr(request, request_field, None) or ())
        refused = [i for i in items if not access.allowed(operation, resource_type, name_of(i))]
        if not refused:
            return None
        allowed = tuple(i for i in items if i not in refused)

        def merge(response: Any) -> Any:
            entry_cls = adapter.nested_class(type(response), response_field)
            added = tuple(
                _filled(entry_cls, {key_field: name_of(i), **(extra or {})}, error) for i in refused
            )
            entries = (*getattr(response, response_field), *added)
            return dataclasses.replace(response, **{response_field: entries})

        return Filtered(dataclasses.replace(request, **{request_field: allowed}), merge)

    return rule


def _listed_only(
    resource_type: ResourceType, response_field: str, key_field: str
) -> Callable[[Access, Any], Decision]:
    """Listing APIs: only the resources the principal may describe are listed (all of them
    with Describe on the cluster, for ListGroups as in Kafka)."""

    def rule(access: Access, request: Any) -> Decision:
        if resource_type == GROUP and access.cluster(Operation.DESCRIBE):
            return None

        def merge(response: Any) -> Any:
            entries = tuple(
                e
                for e in getattr(response, response_field)
                if access.allowed(Operation.DESCRIBE, resource_type, getattr(e, key_field))
            )
            return dataclasses.replace(response, **{response_field: entries})

        return Filtered(request, merge)

    return rule


TOPIC_CONFIG_RESOURCE = 2  # ConfigResource.Type.TOPIC; brokers and broker loggers are the cluster's


def _config_resources(
    operation: Operation, response_field: str
) -> Callable[[Access, Any], Decision]:
    """DescribeConfigs, AlterConfigs, IncrementalAlterConfigs: a topic's configs need the
    operation on the topic (TOPIC_AUTHORIZATION_FAILED), a broker's on the cluster
    (CLUSTER_AUTHORIZATION_FAILED); each refused resource is answered apart."""

    def refusal(access: Access, item: Any) -> ErrorCode | None:
        if int(item.resource_type) == TOPIC_CONFIG_RESOURCE:
            if access.allowed(operation, TOPIC, item.resource_name):
                return None
            return ErrorCode.topic_authorization_failed
        return None if access.cluster(operation) else ErrorCode.cluster_authorization_failed

    def rule(access: Access, request: Any) -> Decision:
        items = tuple(request.resources)
        refused = [(i, e) for i in items if (e := refusal(access, i)) is not None]
        if not refused:
            return None
        allowed = tuple(i for i in items if all(i is not r for r, _ in refused))

        def merge(response: Any) -> Any:
            entry_cls = adapter.nested_class(type(response), response_field)
            added = tuple(
                _filled(
                    entry_cls,
                    {
                        "resource_type": item.resource_type,
                        "resource_name": item.resource_name,
                        "error_message": None,
                        "configs": (),
                    },
                    error,
                )
                for item, error in refused
            )
            entries = (*getattr(response, response_field), *added)
            return dataclasses.replace(response, **{response_field: entries})

        return Filtered(dataclasses.replace(request, resources=allowed), merge)

    return rule


_create_topic_each = _per_name(
    TOPIC,
    Operation.CREATE,
    "topics",
    "topics",
    "name",
    ErrorCode.topic_authorization_failed,
    name_of=lambda t: str(t.name),
    extra={"topic_config_error_code": ErrorCode.none, "error_message": None},
)


def _create_topics(access: Access, request: Any) -> Decision:
    if access.cluster(Operation.CREATE):
        return None
    return _create_topic_each(access, request)


_delete_topic_names = _per_name(
    TOPIC,
    Operation.DELETE,
    "topic_names",
    "responses",
    "name",
    ErrorCode.topic_authorization_failed,
    extra={"error_message": None},
)


def _delete_topics(access: Access, request: Any) -> Decision:
    """v0-v5 name topics in `topic_names` (answered per topic); v6 in `topics`, by name or
    by id (all or nothing)."""
    if getattr(request, "topic_names", None) is not None:
        return _delete_topic_names(access, request)
    cache = access.context.server.metadata_cache
    names = list(getattr(request, "topic_names", None) or ())
    for topic in getattr(request, "topics", None) or ():
        name = topic.name
        if name is None and topic.topic_id is not None:
            name = cache.topic_name(topic.topic_id)
        names.append(name or "")
    if all(access.allowed(Operation.DELETE, TOPIC, n) for n in names):
        return None
    return Refused(ErrorCode.topic_authorization_failed)


RULES: dict[int, Callable[[Access, Any], Decision]] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _topics_by_name(Operation.DESCRIBE, "topics", lambda t: t.name),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _topics_by_name(
        Operation.DESCRIBE, "topics", lambda t: t.topic
    ),
    ApiKey.CONTROLLED_SHUTDOWN: _on_cluster(Operation.CLUSTER_ACTION),
    ApiKey.WRITE_TXN_MARKERS: _on_cluster(Operation.CLUSTER_ACTION),
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.JOIN_GROUP: _on_group(Operation.READ),
    ApiKey.HEARTBEAT: _on_group(Operation.READ),
    ApiKey.LEAVE_GROUP: _on_group(Operation.READ),
    ApiKey.SYNC_GROUP: _on_group(Operation.READ),
    ApiKey.OFFSET_DELETE: _on_group(Operation.DELETE),
    ApiKey.DESCRIBE_GROUPS: _per_name(
        GROUP,
        Operation.DESCRIBE,
        "groups",
        "groups",
        "group_id",
        ErrorCode.group_authorization_failed,
    ),
    ApiKey.DELETE_GROUPS: _per_name(
        GROUP,
        Operation.DELETE,
        "groups_names",
        "results",
        "group_id",
        ErrorCode.group_authorization_failed,
    ),
    ApiKey.LIST_GROUPS: _listed_only(GROUP, "groups", "group_id"),
    ApiKey.DESCRIBE_TRANSACTIONS: _per_name(
        TRANSACTIONAL_ID,
        Operation.DESCRIBE,
        "transactional_ids",
        "transaction_states",
        "transactional_id",
        ErrorCode.transactional_id_authorization_failed,
    ),
    ApiKey.LIST_TRANSACTIONS: _listed_only(
        TRANSACTIONAL_ID, "transaction_states", "transactional_id"
    ),
    ApiKey.DESCRIBE_PRODUCERS: _topics_by_name(Operation.READ, "topics", lambda t: t.name),
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.DELETE_RECORDS: _topics_by_name(Operation.DELETE, "topics", lambda t: t.name),
    ApiKey.CREATE_PARTITIONS: _topics_by_name(Operation.ALTER, "topics", lambda t: t.name),
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: _txn_offsets(with_topics=False),
    ApiKey.END_TXN: _on_transactional_id(Operation.WRITE),
    ApiKey.TXN_OFFSET_COMMIT: _txn_offsets(with_topics=True),
    ApiKey.ALTER_CONFIGS: _config_resources(Operation.ALTER_CONFIGS, "responses"),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _config_resources(Operation.ALTER_CONFIGS, "responses"),
    ApiKey.DESCRIBE_CONFIGS: _config_resources(Operation.DESCRIBE_CONFIGS, "results"),
    ApiKey.ALTER_REPLICA_LOG_DIRS: _on_cluster(Operation.ALTER),
    ApiKey.DESCRIBE_LOG_DIRS: _on_cluster(Operation.DESCRIBE),
    ApiKey.ELECT_LEADERS: _on_cluster(Operation.ALTER),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _on_cluster(Operation.ALTER),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _on_cluster(Operation.DESCRIBE),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _on_cluster(Operation.ALTER),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _on_cluster(Operation.DESCRIBE),
    ApiKey.CREATE_ACLS: _on_cluster(Operation.ALTER),
    ApiKey.DELETE_ACLS: _on_cluster(Operation.ALTER),
    ApiKey.DESCRIBE_ACLS: _on_cluster(Operation.DESCRIBE),
}


# -- zero-filled responses --------------------------------------------------------------


def _filled(cls: type, values: dict[str, Any], error: ErrorCode) -> Any:
    """`cls` built from `values`, every other required field given an empty value and every
    error code `error`."""
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name in values:
            kwargs[field.name] = values[field.name]
        elif field.metadata.get("kafka_type") == "error_code":
            kwargs[field.name] = error
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            kwargs[field.name] = _empty(hints[field.name], field.metadata.get("kafka_type"))
    return cls(**kwargs)


def _empty(hint: Any, kafka_type: str | None) -> Any:
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(hint)
    ):
        return None
    if typing.get_origin(hint) is tuple:
        return ()
    if kafka_type and kafka_type.startswith("timedelta"):
        return datetime.timedelta(0)
    if kafka_type == "string":
        return ""
    if kafka_type == "bool":
        return False
    if kafka_type == "bytes":
        return b""
    if kafka_type == "uuid":
        return None  # the zero uuid
    if kafka_type == "datetime_i64":
        return datetime.datetime.fromtimestamp(0, tz=datetime.UTC)
    return hint(-1) if isinstance(hint, type) and issubclass(hint, int) else hint()
