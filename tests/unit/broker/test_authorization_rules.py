"""The authorization table (broker/handlers/authorization.py): the rules pick Kafka's resources
and errors, and every refusal reaches the client as errors on the entries it named (Kafka's
getErrorResponse), for every version of every API in the table."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from broker.handlers import authorization, build_registry
from broker.handlers.error_responses import items_of
from broker.network.errors import CloseConnectionError
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import request_class, response_class
from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AuthorizerSettings,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
    allows_any,
)
from tests.unit.broker.acl_reference import authorize_by_scan

REGISTRY = build_registry()
ALL_VERSIONS = [
    (spec.api_key, version)
    for spec in REGISTRY.all()
    if spec.api_key in authorization.RULES
    for version in range(spec.min_decodable_version, spec.max_version + 1)
]
CLUSTER = (ResourceType.CLUSTER, "kafka-cluster")


class FakeAuthorizer:
    def __init__(self, acls: list[AclBinding]) -> None:
        self.acls = acls
        self.settings = AuthorizerSettings()

    def authorize(
        self, principal: str, host: str, operation: Operation, rtype: ResourceType, name: str
    ) -> bool:
        return authorize_by_scan(self.settings, self.acls, principal, host, operation, rtype, name)

    def authorize_any(
        self, principal: str, host: str, operation: Operation, rtype: ResourceType
    ) -> bool:
        return allows_any(self.settings, self.acls, principal, host, operation, rtype)


def _bindings(*acls: tuple[ResourceType, str, Operation]) -> list[AclBinding]:
    return [
        AclBinding(
            ResourcePattern(rtype, name, PatternType.LITERAL),
            AccessControlEntry("User:alice", "*", operation, Permission.ALLOW),
        )
        for rtype, name, operation in acls
    ]


def _context(api_key: ApiKey, version: int, *acls: tuple[ResourceType, str, Operation]) -> Any:
    header = SimpleNamespace(api_key=api_key, api_version=version)
    server = SimpleNamespace(
        authorizer=FakeAuthorizer(_bindings(*acls)),
        metadata_cache=SimpleNamespace(topic_name=lambda _topic_id: None),
    )
    return SimpleNamespace(
        header=header,
        api_version=version,
        services=server,
        principal="User:alice",
        client_host="127.0.0.1",
    )


def _access(*acls: tuple[ResourceType, str, Operation]) -> Any:
    return authorization.Access(
        FakeAuthorizer(_bindings(*acls)),  # type: ignore[arg-type]
        "User:alice",
        "127.0.0.1",
        None,  # type: ignore[arg-type]
    )


# -- requests naming one of everything ---------------------------------------------------

SAMPLES: dict[str | None, Any] = {
    "string": "x",
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uuid": uuid.UUID(int=1),
}


def _one_of_each(cls: type, **values: Any) -> Any:
    """`cls` with one entry in each of its lists (nested ones too) and a name in each
    string."""
    filled: dict[str, Any] = {}
    for spec in adapter._specs(cls):
        if spec.name in values:
            filled[spec.name] = values[spec.name]
        elif spec.nested is not None:
            entry = _one_of_each(spec.nested)
            filled[spec.name] = (entry,) if spec.empty == () or spec.empty is None else entry
        elif spec.empty == () and spec.kafka_type in SAMPLES:
            filled[spec.name] = (SAMPLES[spec.kafka_type],)
        elif spec.kafka_type == "string":
            filled[spec.name] = "x"
    return adapter.filled(cls, filled, ErrorCode.none)


def _error_codes(entity: Any) -> Iterator[ErrorCode]:
    for spec in adapter._specs(type(entity)):
        value = getattr(entity, spec.name)
        if spec.kafka_type == "error_code":
            yield value
        elif spec.nested is not None:
            for item in value if isinstance(value, tuple) else (value,):
                if item is not None:
                    yield from _error_codes(item)


def _round_trip(response: Any) -> Any:
    encoded = adapter.encode(response)
    decoded, size = entity_reader(type(response))(encoded, 0)
    assert size == len(encoded)
    return decoded


# DescribeLogDirs v0-v2 have no error code outside their log dirs: Kafka's getErrorResponse
# answers an empty list there too.
NO_ERROR_FIELD = {(ApiKey.DESCRIBE_LOG_DIRS, v) for v in range(3)}


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
def test_every_refusal_answers_each_named_entry_with_the_error(
    api_key: ApiKey, version: int
) -> None:
    request = _one_of_each(request_class(api_key, version))
    error = ErrorCode.cluster_authorization_failed
    rule = authorization.RULES[api_key]
    refused = authorization.Refused(error)
    response = _round_trip(
        authorization.refusal(_context(api_key, version), rule.echoes, request, refused)
    )
    errors = list(_error_codes(response))
    if (api_key, version) not in NO_ERROR_FIELD:
        assert errors, "the client would see no error"
    assert set(errors) <= {error}
    expected: dict[str, int] = {}
    for echo in rule.echoes:
        if adapter.has_field(type(response), echo.into):
            expected[echo.into] = expected.get(echo.into, 0) + len(items_of(request, echo.source))
    for into, count in expected.items():
        assert len(getattr(response, into)) == count, into
    if not any(expected.values()) and (api_key, version) not in NO_ERROR_FIELD:
        assert getattr(response, "error_code", None) == error


EVERYTHING = [
    (rtype, "*", Operation.ALL)
    for rtype in (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID)
] + [(*CLUSTER, Operation.ALL)]
# Listing APIs always filter their answer (without Describe on the cluster for ListGroups).
ALWAYS_FILTERED = {ApiKey.LIST_TRANSACTIONS}


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
def test_every_rule_reads_every_version_of_its_request(api_key: ApiKey, version: int) -> None:
    """Each rule reads every field it needs (a field some version lacks would close every such
    connection): refused with no ACL, allowed with All on everything."""
    request = _one_of_each(request_class(api_key, version))
    if api_key == ApiKey.PRODUCE:
        # v0-v2 have no transactional id: their batches may not claim one.
        request = _with_batches(request, transactional=version >= 3)
    denied = authorization.check(_context(api_key, version), api_key, request)
    assert isinstance(denied, authorization.Answered | authorization.Filtered)
    if isinstance(denied, authorization.Answered) and (api_key, version) not in NO_ERROR_FIELD:
        assert set(_error_codes(_round_trip(denied.response))) - {ErrorCode.none}
    allowed = authorization.check(_context(api_key, version, *EVERYTHING), api_key, request)
    if api_key in ALWAYS_FILTERED:
        assert isinstance(allowed, authorization.Filtered)
    else:
        assert allowed is None


def _with_batches(request: Any, transactional: bool) -> Any:
    topics = tuple(
        adapter.filled(
            type(t),
            {
                "name": t.name,
                "partition_data": tuple(
                    adapter.filled(
                        type(p),
                        {"index": p.index, "records": _batch(transactional)},
                        ErrorCode.none,
                    )
                    for p in t.partition_data
                ),
            },
            ErrorCode.none,
        )
        for t in request.topic_data
    )
    return adapter.filled(
        type(request),
        {
            f: getattr(request, f)
            for f in ("transactional_id", "acks", "timeout")
            if hasattr(request, f)
        }
        | {"topic_data": topics},
        ErrorCode.none,
    )


def _batch(transactional: bool) -> bytes:
    """A v2 batch header (enough for the attributes to be read)."""
    attributes = 0x10 if transactional else 0
    return struct.pack(">qiibIhiqqqhii", 0, 49, 0, 2, 0, attributes, 0, 0, 0, 7, 0, 0, 0)


# -- rules --------------------------------------------------------------------------------


def test_join_group_needs_read_on_the_group() -> None:
    rule = authorization.RULES[ApiKey.JOIN_GROUP].check
    request = SimpleNamespace(group_id="g")
    assert rule(_access(), request) == authorization.Refused(ErrorCode.group_authorization_failed)
    assert rule(_access((ResourceType.GROUP, "g", Operation.READ)), request) is None


def test_idempotent_init_producer_id_is_allowed_by_write_on_some_topic() -> None:
    rule = authorization.RULES[ApiKey.INIT_PRODUCER_ID].check
    request = SimpleNamespace(transactional_id=None)
    refused = authorization.Refused(ErrorCode.cluster_authorization_failed)
    assert rule(_access(), request) == refused
    assert rule(_access((ResourceType.TOPIC, "t", Operation.WRITE)), request) is None
    cluster = (*CLUSTER, Operation.IDEMPOTENT_WRITE)
    assert rule(_access(cluster), request) is None


def test_transactional_init_producer_id_needs_write_on_the_transactional_id() -> None:
    rule = authorization.RULES[ApiKey.INIT_PRODUCER_ID].check
    request = SimpleNamespace(transactional_id="tx")
    refused = authorization.Refused(ErrorCode.transactional_id_authorization_failed)
    assert rule(_access((ResourceType.TOPIC, "t", Operation.WRITE)), request) == refused
    assert rule(_access((ResourceType.TRANSACTIONAL_ID, "tx", Operation.WRITE)), request) is None


def test_acl_apis_need_alter_or_describe_on_the_cluster() -> None:
    describe = (*CLUSTER, Operation.DESCRIBE)
    refused = authorization.Refused(ErrorCode.cluster_authorization_failed)
    assert authorization.RULES[ApiKey.DESCRIBE_ACLS].check(_access(describe), None) is None
    assert authorization.RULES[ApiKey.CREATE_ACLS].check(_access(describe), None) == refused


PER_NAME_REQUESTS = {
    ApiKey.DESCRIBE_GROUPS: ("groups", "groups", ["g1", "g2"]),
    ApiKey.DELETE_GROUPS: ("groups_names", "results", ["g1", "g2"]),
    ApiKey.DESCRIBE_TRANSACTIONS: ("transactional_ids", "transaction_states", ["t1"]),
    ApiKey.DELETE_TOPICS: ("topic_names", "responses", ["a", "b"]),
    ApiKey.FIND_COORDINATOR: ("coordinator_keys", "coordinators", ["g1", "g2"]),
}


@pytest.mark.parametrize(
    ("api_key", "version"),
    [
        (api_key, version)
        for api_key, version in ALL_VERSIONS
        if api_key in PER_NAME_REQUESTS
        and adapter.has_field(request_class(api_key, version), PER_NAME_REQUESTS[api_key][0])
    ],
)
def test_refused_names_are_answered_each_with_the_error(api_key: ApiKey, version: int) -> None:
    field, into, names = PER_NAME_REQUESTS[api_key]
    request = adapter.filled(request_class(api_key, version), {field: tuple(names)}, ErrorCode.none)
    decision = authorization.check(_context(api_key, version), api_key, request)
    assert isinstance(decision, authorization.Answered), "nothing allowed: the handler does not run"
    entries = getattr(_round_trip(decision.response), into)
    assert len(entries) == len(names)
    assert all(e.error_code not in (ErrorCode.none, None) for e in entries)


CONFIG_APIS = {
    ApiKey.DESCRIBE_CONFIGS: "results",
    ApiKey.ALTER_CONFIGS: "responses",
    ApiKey.INCREMENTAL_ALTER_CONFIGS: "responses",
}


@pytest.mark.parametrize(
    ("api_key", "version"), [(k, v) for k, v in ALL_VERSIONS if k in CONFIG_APIS]
)
def test_config_resources_are_refused_each_against_topic_or_cluster(
    api_key: ApiKey, version: int
) -> None:
    request_cls = request_class(api_key, version)
    resource_cls = adapter.nested_class(request_cls, "resources")
    resources = tuple(
        adapter.filled(
            resource_cls, {"resource_type": rtype, "resource_name": name}, ErrorCode.none
        )
        for rtype, name in ((2, "mine"), (2, "other"), (4, "1"))
    )
    request = adapter.filled(request_cls, {"resources": resources}, ErrorCode.none)
    context = _context(api_key, version, (ResourceType.TOPIC, "mine", Operation.ALTER_CONFIGS))
    decision = authorization.check(context, api_key, request)
    assert isinstance(decision, authorization.Filtered)
    assert [r.resource_name for r in decision.request.resources] == ["mine"]
    handler_response = adapter.filled(response_class(api_key, version), {}, ErrorCode.none)
    merged = _round_trip(decision.merge(handler_response))
    answered = {e.resource_name: e.error_code for e in getattr(merged, CONFIG_APIS[api_key])}
    assert answered == {
        "other": ErrorCode.topic_authorization_failed,
        "1": ErrorCode.cluster_authorization_failed,
    }


# APIs whose topics are served or refused each apart (Kafka's partitionSeqByAuthorized).
PER_TOPIC = {
    ApiKey.PRODUCE: ("topic_data", "responses", Operation.WRITE),
    ApiKey.LIST_OFFSETS: ("topics", "topics", Operation.DESCRIBE),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ("topics", "topics", Operation.DESCRIBE),
    ApiKey.DELETE_RECORDS: ("topics", "topics", Operation.DELETE),
    ApiKey.CREATE_PARTITIONS: ("topics", "results", Operation.ALTER),
    ApiKey.DESCRIBE_PRODUCERS: ("topics", "topics", Operation.READ),
    ApiKey.OFFSET_COMMIT: ("topics", "topics", Operation.READ),
    ApiKey.TXN_OFFSET_COMMIT: ("topics", "topics", Operation.READ),
    ApiKey.OFFSET_FETCH: ("topics", "topics", Operation.DESCRIBE),
    ApiKey.OFFSET_DELETE: ("topics", "topics", Operation.READ),
}


def _topic_name(entry: Any) -> str:
    return str(getattr(entry, "name", None) or getattr(entry, "topic", None))


@pytest.mark.parametrize(
    ("api_key", "version"),
    [
        (k, v)
        for k, v in ALL_VERSIONS
        if k in PER_TOPIC and adapter.has_field(request_class(k, v), PER_TOPIC[k][0])
    ],
)
def test_refused_topics_are_answered_each_and_the_rest_served(
    api_key: ApiKey, version: int
) -> None:
    source, into, operation = PER_TOPIC[api_key]
    template = _one_of_each(request_class(api_key, version))
    topic = getattr(template, source)[0]
    name_field = "name" if hasattr(topic, "name") else "topic"
    topics = tuple(
        adapter.filled(type(topic), {**_fields(topic), name_field: n}, ErrorCode.none)
        for n in ("mine", "other")
    )
    request = adapter.filled(type(template), {**_fields(template), source: topics}, ErrorCode.none)
    acls = [
        (ResourceType.TOPIC, "mine", operation),
        (ResourceType.GROUP, "*", Operation.ALL),
        (ResourceType.TRANSACTIONAL_ID, "*", Operation.ALL),
    ]
    decision = authorization.check(_context(api_key, version, *acls), api_key, request)
    assert isinstance(decision, authorization.Filtered)
    assert [_topic_name(t) for t in getattr(decision.request, source)] == ["mine"]
    handler_response = adapter.filled(response_class(api_key, version), {}, ErrorCode.none)
    merged = _round_trip(decision.merge(handler_response))
    entries = getattr(merged, into)
    assert [_topic_name(e) for e in entries] == ["other"]
    errors = set(_error_codes(entries[0]))
    assert errors == {ErrorCode.topic_authorization_failed}


def _fields(entity: Any) -> dict[str, Any]:
    return {spec.name: getattr(entity, spec.name) for spec in adapter._specs(type(entity))}


def test_offset_for_leader_epoch_is_allowed_whole_by_cluster_action() -> None:
    """Followers truncate with it; Kafka's documented minimum for a broker is ClusterAction."""
    request = _one_of_each(request_class(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4))
    action = (*CLUSTER, Operation.CLUSTER_ACTION)
    context = _context(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, action)
    assert authorization.check(context, ApiKey.OFFSET_FOR_LEADER_EPOCH, request) is None


@pytest.mark.parametrize(
    ("operation", "allowed"),
    [(Operation.CLUSTER_ACTION, True), (Operation.ALTER, True), (Operation.DESCRIBE, False)],
)
def test_write_txn_markers_needs_cluster_action_or_alter(
    operation: Operation, allowed: bool
) -> None:
    request = _one_of_each(request_class(ApiKey.WRITE_TXN_MARKERS, 1))
    context = _context(ApiKey.WRITE_TXN_MARKERS, 1, (*CLUSTER, operation))
    decision = authorization.check(context, ApiKey.WRITE_TXN_MARKERS, request)
    assert (decision is None) == allowed


def test_offset_delete_needs_read_on_its_topics() -> None:
    request = _one_of_each(request_class(ApiKey.OFFSET_DELETE, 0), group_id="g")
    group = (ResourceType.GROUP, "g", Operation.DELETE)
    context = _context(ApiKey.OFFSET_DELETE, 0, group)
    decision = authorization.check(context, ApiKey.OFFSET_DELETE, request)
    assert isinstance(decision, authorization.Answered)
    (topic,) = decision.response.topics
    assert decision.response.error_code == ErrorCode.none
    assert [p.error_code for p in topic.partitions] == [ErrorCode.topic_authorization_failed]
    read = (ResourceType.TOPIC, "x", Operation.READ)
    assert (
        authorization.check(
            _context(ApiKey.OFFSET_DELETE, 0, group, read), ApiKey.OFFSET_DELETE, request
        )
        is None
    )


@pytest.mark.parametrize("version", [3, 9, 11])
def test_transactional_batches_need_write_on_a_transactional_id(version: int) -> None:
    """Kafka reads the batches' transactional flag, not the field: batches claiming a
    transaction without an id (or with one the principal may not write) are refused."""
    topic = (ResourceType.TOPIC, "x", Operation.WRITE)
    txn = (ResourceType.TRANSACTIONAL_ID, "tx", Operation.WRITE)
    plain = _one_of_each(request_class(ApiKey.PRODUCE, version), acks=-1, transactional_id=None)
    for transactional_id, acls, allowed in [
        (None, [topic, txn], False),
        ("tx", [topic], False),
        ("tx", [topic, txn], True),
    ]:
        request = _with_batches(
            adapter.filled(
                type(plain),
                {**_fields(plain), "transactional_id": transactional_id},
                ErrorCode.none,
            ),
            transactional=True,
        )
        decision = authorization.check(
            _context(ApiKey.PRODUCE, version, *acls), ApiKey.PRODUCE, request
        )
        if allowed:
            assert decision is None
            continue
        assert isinstance(decision, authorization.Answered)
        codes = {p.error_code for t in decision.response.responses for p in t.partition_responses}
        assert codes == {ErrorCode.transactional_id_authorization_failed}
    idempotent = _with_batches(plain, transactional=False)
    assert (
        authorization.check(_context(ApiKey.PRODUCE, version, topic), ApiKey.PRODUCE, idempotent)
        is None
    )


def test_a_refused_acks_0_produce_closes_the_connection() -> None:
    """The client reads no answer; Kafka closes the connection so that it notices."""
    request = _one_of_each(request_class(ApiKey.PRODUCE, 9), acks=0)
    with pytest.raises(CloseConnectionError):
        authorization.check(_context(ApiKey.PRODUCE, 9), ApiKey.PRODUCE, request)


@pytest.mark.parametrize("version", range(0, 4))
def test_add_partitions_to_txn_needs_write_on_the_id_and_the_topics(version: int) -> None:
    request_cls = request_class(ApiKey.ADD_PARTITIONS_TO_TXN, version)
    topic_cls = adapter.nested_class(request_cls, "v3_and_below_topics")
    topics = tuple(
        adapter.filled(topic_cls, {"name": name, "partitions": (0,)}, ErrorCode.none)
        for name in ("t", "__consumer_offsets")
    )
    request = adapter.filled(
        request_cls,
        {"v3_and_below_transactional_id": "tx", "v3_and_below_topics": topics},
        ErrorCode.none,
    )
    txn = (ResourceType.TRANSACTIONAL_ID, "tx", Operation.WRITE)
    every_topic = (ResourceType.TOPIC, "*", Operation.WRITE)

    def answered(*acls: tuple[ResourceType, str, Operation]) -> dict[str, ErrorCode]:
        context = _context(ApiKey.ADD_PARTITIONS_TO_TXN, version, *acls)
        decision = authorization.check(context, ApiKey.ADD_PARTITIONS_TO_TXN, request)
        assert isinstance(decision, authorization.Answered)
        results = _round_trip(decision.response).results_by_topic_v3_and_below
        return {t.name: t.results_by_partition[0].partition_error_code for t in results}

    assert answered(every_topic) == dict.fromkeys(
        ("t", "__consumer_offsets"), ErrorCode.transactional_id_authorization_failed
    )
    # Internal topics are never authorized, wildcard or not (Kafka filters them out).
    assert answered(txn, every_topic) == {
        "t": ErrorCode.operation_not_attempted,
        "__consumer_offsets": ErrorCode.topic_authorization_failed,
    }


def test_add_partitions_to_txn_from_a_broker_needs_cluster_action() -> None:
    request = adapter.filled(
        request_class(ApiKey.ADD_PARTITIONS_TO_TXN, 4), {"transactions": ()}, ErrorCode.none
    )
    rule = authorization.RULES[ApiKey.ADD_PARTITIONS_TO_TXN].check
    refused = authorization.Refused(ErrorCode.cluster_authorization_failed)
    assert rule(_access(), request) == refused
    assert rule(_access((*CLUSTER, Operation.CLUSTER_ACTION)), request) is None


def test_txn_offset_commit_needs_the_id_the_group_and_the_topics() -> None:
    request = _one_of_each(
        request_class(ApiKey.TXN_OFFSET_COMMIT, 3), transactional_id="tx", group_id="g"
    )
    rule = authorization.RULES[ApiKey.TXN_OFFSET_COMMIT].check
    txn = (ResourceType.TRANSACTIONAL_ID, "tx", Operation.WRITE)
    group = (ResourceType.GROUP, "g", Operation.READ)
    topic = (ResourceType.TOPIC, "x", Operation.READ)
    assert rule(_access(group, topic), request) == authorization.Refused(
        ErrorCode.transactional_id_authorization_failed
    )
    assert rule(_access(txn), request) == authorization.Refused(
        ErrorCode.group_authorization_failed
    )
    assert isinstance(rule(_access(txn, group), request), authorization.Split)
    assert rule(_access(txn, group, topic), request) is None


@pytest.mark.parametrize("version", [1, 5, 7])
def test_offset_fetch_of_all_topics_shows_only_describable_ones(version: int) -> None:
    request = _one_of_each(request_class(ApiKey.OFFSET_FETCH, version), group_id="g", topics=None)
    group = (ResourceType.GROUP, "g", Operation.DESCRIBE)
    mine = (ResourceType.TOPIC, "mine", Operation.DESCRIBE)
    decision = authorization.check(
        _context(ApiKey.OFFSET_FETCH, version, group, mine), ApiKey.OFFSET_FETCH, request
    )
    assert isinstance(decision, authorization.Filtered)
    response_cls = response_class(ApiKey.OFFSET_FETCH, version)
    topic_cls = adapter.nested_class(response_cls, "topics")
    topics = [adapter.filled(topic_cls, {"name": n}, ErrorCode.none) for n in ("mine", "other")]
    merged = decision.merge(adapter.filled(response_cls, {"topics": topics}, ErrorCode.none))
    assert [t.name for t in merged.topics] == ["mine"]


def test_offset_fetch_answers_each_group_and_topic() -> None:
    request_cls = request_class(ApiKey.OFFSET_FETCH, 8)
    group_cls = adapter.nested_class(request_cls, "groups")
    topic_cls = adapter.nested_class(group_cls, "topics")
    topics = tuple(
        adapter.filled(topic_cls, {"name": n, "partition_indexes": (0,)}, ErrorCode.none)
        for n in ("mine", "other")
    )
    groups = (
        adapter.filled(group_cls, {"group_id": "g", "topics": topics}, ErrorCode.none),
        adapter.filled(group_cls, {"group_id": "h", "topics": topics}, ErrorCode.none),
    )
    request = adapter.filled(request_cls, {"groups": groups}, ErrorCode.none)
    acls = [
        (ResourceType.GROUP, "g", Operation.DESCRIBE),
        (ResourceType.TOPIC, "mine", Operation.READ),
    ]
    decision = authorization.check(
        _context(ApiKey.OFFSET_FETCH, 8, *acls), ApiKey.OFFSET_FETCH, request
    )
    assert isinstance(decision, authorization.Filtered)
    (served,) = decision.request.groups
    assert (served.group_id, [t.name for t in served.topics]) == ("g", ["mine"])
    response = adapter.build(
        response_class(ApiKey.OFFSET_FETCH, 8),
        {"throttle_time": 0, "groups": [{"group_id": "g", "error_code": 0, "topics": []}]},
    )
    merged = _round_trip(decision.merge(response))
    answered = {
        (g.group_id, t.name): t.partitions[0].error_code for g in merged.groups for t in g.topics
    }
    assert answered == {("g", "other"): ErrorCode.topic_authorization_failed}
    assert [(g.group_id, g.error_code) for g in merged.groups] == [
        ("g", ErrorCode.none),
        ("h", ErrorCode.group_authorization_failed),
    ]
