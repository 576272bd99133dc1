"""The authorization table (broker/handlers/authorization.py): every refusal it can send
encodes for every version of its API, and the rules pick Kafka's resources and errors."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.handlers import authorization, build_registry
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
    authorize,
)

REGISTRY = build_registry()


@pytest.mark.parametrize(
    ("api_key", "version"),
    [
        (spec.api_key, version)
        for spec in REGISTRY.all()
        if spec.api_key in authorization.RULES
        for version in range(spec.min_decodable_version, spec.max_version + 1)
    ],
)
def test_every_refusal_encodes(api_key: ApiKey, version: int) -> None:
    cls = response_class(api_key, version)
    response = authorization._filled(cls, {}, ErrorCode.cluster_authorization_failed)
    assert adapter.encode(response)


class FakeAuthorizer:
    def __init__(self, acls: list[AclBinding]) -> None:
        self.acls = acls
        self.settings = AuthorizerSettings()

    def authorize(
        self, principal: str, host: str, operation: Operation, rtype: ResourceType, name: str
    ) -> bool:
        return authorize(self.settings, self.acls, principal, host, operation, rtype, name)

    def authorize_any(
        self, principal: str, host: str, operation: Operation, rtype: ResourceType
    ) -> bool:
        return allows_any(self.settings, self.acls, principal, host, operation, rtype)


def _access(*acls: tuple[ResourceType, str, Operation]) -> Any:
    bindings = [
        AclBinding(
            ResourcePattern(rtype, name, PatternType.LITERAL),
            AccessControlEntry("User:alice", "*", operation, Permission.ALLOW),
        )
        for rtype, name, operation in acls
    ]
    return authorization.Access(FakeAuthorizer(bindings), "User:alice", "127.0.0.1", None)  # type: ignore[arg-type]


def test_join_group_needs_read_on_the_group() -> None:
    rule = authorization.RULES[ApiKey.JOIN_GROUP]
    request = SimpleNamespace(group_id="g")
    assert rule(_access(), request) == authorization.Refused(ErrorCode.group_authorization_failed)
    assert rule(_access((ResourceType.GROUP, "g", Operation.READ)), request) is None


def test_idempotent_init_producer_id_is_allowed_by_write_on_some_topic() -> None:
    rule = authorization.RULES[ApiKey.INIT_PRODUCER_ID]
    request = SimpleNamespace(transactional_id=None)
    refused = authorization.Refused(ErrorCode.cluster_authorization_failed)
    assert rule(_access(), request) == refused
    assert rule(_access((ResourceType.TOPIC, "t", Operation.WRITE)), request) is None
    cluster = (ResourceType.CLUSTER, "kafka-cluster", Operation.IDEMPOTENT_WRITE)
    assert rule(_access(cluster), request) is None


def test_transactional_init_producer_id_needs_write_on_the_transactional_id() -> None:
    rule = authorization.RULES[ApiKey.INIT_PRODUCER_ID]
    request = SimpleNamespace(transactional_id="tx")
    refused = authorization.Refused(ErrorCode.transactional_id_authorization_failed)
    assert rule(_access((ResourceType.TOPIC, "t", Operation.WRITE)), request) == refused
    assert rule(_access((ResourceType.TRANSACTIONAL_ID, "tx", Operation.WRITE)), request) is None


def test_acl_apis_need_alter_or_describe_on_the_cluster() -> None:
    describe = (ResourceType.CLUSTER, "kafka-cluster", Operation.DESCRIBE)
    refused = authorization.Refused(ErrorCode.cluster_authorization_failed)
    assert authorization.RULES[ApiKey.DESCRIBE_ACLS](_access(describe), None) is None
    assert authorization.RULES[ApiKey.CREATE_ACLS](_access(describe), None) == refused


def _fake_context(api_key: ApiKey, version: int) -> Any:
    header = SimpleNamespace(api_key=api_key, api_version=version)
    return SimpleNamespace(header=header, api_version=version, server=SimpleNamespace())


PER_NAME_REQUESTS = {
    ApiKey.DESCRIBE_GROUPS: ("groups", ["g1", "g2"]),
    ApiKey.DELETE_GROUPS: ("groups_names", ["g1", "g2"]),
    ApiKey.DESCRIBE_TRANSACTIONS: ("transactional_ids", ["t1"]),
    ApiKey.DELETE_TOPICS: ("topic_names", ["a", "b"]),
}


@pytest.mark.parametrize(
    ("api_key", "version"),
    [
        (spec.api_key, version)
        for spec in REGISTRY.all()
        if spec.api_key in PER_NAME_REQUESTS
        for version in range(spec.min_decodable_version, spec.max_version + 1)
        if spec.api_key != ApiKey.DELETE_TOPICS or version < 6
    ],
)
def test_refused_names_are_answered_each_with_the_error(api_key: ApiKey, version: int) -> None:
    field, names = PER_NAME_REQUESTS[api_key]
    request_cls = request_class(api_key, version)
    request = authorization._filled(request_cls, {field: tuple(names)}, ErrorCode.none)
    context = _fake_context(api_key, version)
    access = authorization.Access(FakeAuthorizer([]), "User:alice", "h", context)  # type: ignore[arg-type]
    decision = authorization.RULES[api_key](access, request)
    assert isinstance(decision, authorization.Filtered)
    assert getattr(decision.request, field) == ()
    handler_response = authorization._filled(response_class(api_key, version), {}, ErrorCode.none)
    merged = decision.merge(handler_response)
    assert adapter.encode(merged)
    error_codes = [entry.error_code for entry in _entries(merged)]
    assert len(error_codes) == len(names) and ErrorCode.none not in error_codes


def _entries(response: Any) -> tuple[Any, ...]:
    for name in ("groups", "results", "transaction_states", "responses"):
        if hasattr(response, name):
            entries: tuple[Any, ...] = getattr(response, name)
            return entries
    return ()


CONFIG_APIS = {
    ApiKey.DESCRIBE_CONFIGS: "results",
    ApiKey.ALTER_CONFIGS: "responses",
    ApiKey.INCREMENTAL_ALTER_CONFIGS: "responses",
}


@pytest.mark.parametrize(
    ("api_key", "version"),
    [
        (spec.api_key, version)
        for spec in REGISTRY.all()
        if spec.api_key in CONFIG_APIS
        for version in range(spec.min_decodable_version, spec.max_version + 1)
    ],
)
def test_config_resources_are_refused_each_against_topic_or_cluster(
    api_key: ApiKey, version: int
) -> None:
    request_cls = request_class(api_key, version)
    resource_cls = adapter.nested_class(request_cls, "resources")
    resources = tuple(
        authorization._filled(
            resource_cls, {"resource_type": rtype, "resource_name": name}, ErrorCode.none
        )
        for rtype, name in ((2, "mine"), (2, "other"), (4, "1"))
    )
    request = authorization._filled(request_cls, {"resources": resources}, ErrorCode.none)
    context = _fake_context(api_key, version)
    acl = (ResourceType.TOPIC, "mine", Operation.ALTER_CONFIGS)
    access = authorization.Access(
        FakeAuthorizer(_access(acl).authorizer.acls), "User:alice", "h", context
    )  # type: ignore[arg-type]
    decision = authorization.RULES[api_key](access, request)
    assert isinstance(decision, authorization.Filtered)
    assert [r.resource_name for r in decision.request.resources] == ["mine"]
    handler_response = authorization._filled(response_class(api_key, version), {}, ErrorCode.none)
    merged = decision.merge(handler_response)
    assert adapter.encode(merged)
    answered = {e.resource_name: e.error_code for e in getattr(merged, CONFIG_APIS[api_key])}
    assert answered == {
        "other": ErrorCode.topic_authorization_failed,
        "1": ErrorCode.cluster_authorization_failed,
    }


@pytest.mark.parametrize(
    "version",
    range(
        REGISTRY.get(ApiKey.OFFSET_COMMIT).min_decodable_version,  # type: ignore[union-attr]
        REGISTRY.get(ApiKey.OFFSET_COMMIT).max_version + 1,  # type: ignore[union-attr]
    ),
)
def test_offset_commit_answers_each_refused_topic(version: int) -> None:
    request_cls = request_class(ApiKey.OFFSET_COMMIT, version)
    topic_cls = adapter.nested_class(request_cls, "topics")
    partition_cls = adapter.nested_class(topic_cls, "partitions")
    topics = tuple(
        authorization._filled(
            topic_cls,
            {
                "name": name,
                "partitions": (
                    authorization._filled(
                        partition_cls,
                        {"partition_index": 0, "committed_offset": 1, "committed_metadata": None},
                        ErrorCode.none,
                    ),
                ),
            },
            ErrorCode.none,
        )
        for name in ("mine", "other")
    )
    request = authorization._filled(
        request_cls, {"group_id": "g", "topics": topics}, ErrorCode.none
    )
    acls = _access(
        (ResourceType.GROUP, "g", Operation.READ), (ResourceType.TOPIC, "mine", Operation.READ)
    ).authorizer.acls
    context = _fake_context(ApiKey.OFFSET_COMMIT, version)
    access = authorization.Access(FakeAuthorizer(acls), "User:alice", "h", context)  # type: ignore[arg-type]
    decision = authorization.RULES[ApiKey.OFFSET_COMMIT](access, request)
    assert isinstance(decision, authorization.Filtered)
    assert [t.name for t in decision.request.topics] == ["mine"]
    response_cls = response_class(ApiKey.OFFSET_COMMIT, version)
    merged = decision.merge(authorization._filled(response_cls, {}, ErrorCode.none))
    assert adapter.encode(merged)
    assert [(t.name, t.partitions[0].error_code) for t in merged.topics] == [
        ("other", ErrorCode.topic_authorization_failed)
    ]


def _request(api_key: ApiKey, version: int, values: dict[str, Any]) -> Any:
    return authorization._filled(request_class(api_key, version), values, ErrorCode.none)


@pytest.mark.parametrize("version", range(0, 4))
def test_add_partitions_to_txn_needs_write_on_the_id_and_the_topics(version: int) -> None:
    topic_cls = adapter.nested_class(
        request_class(ApiKey.ADD_PARTITIONS_TO_TXN, version), "v3_and_below_topics"
    )
    topics = (authorization._filled(topic_cls, {"name": "t", "partitions": (0,)}, ErrorCode.none),)
    request = _request(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        version,
        {"v3_and_below_transactional_id": "tx", "v3_and_below_topics": topics},
    )
    rule = authorization.RULES[ApiKey.ADD_PARTITIONS_TO_TXN]
    txn = (ResourceType.TRANSACTIONAL_ID, "tx", Operation.WRITE)
    topic = (ResourceType.TOPIC, "t", Operation.WRITE)
    assert rule(_access(txn), request) == authorization.Refused(
        ErrorCode.topic_authorization_failed
    )
    assert rule(_access(topic), request) == authorization.Refused(
        ErrorCode.transactional_id_authorization_failed
    )
    assert rule(_access(txn, topic), request) is None


def test_add_partitions_to_txn_from_a_broker_needs_cluster_action() -> None:
    request = _request(ApiKey.ADD_PARTITIONS_TO_TXN, 4, {"transactions": ()})
    rule = authorization.RULES[ApiKey.ADD_PARTITIONS_TO_TXN]
    refused = authorization.Refused(ErrorCode.cluster_authorization_failed)
    assert rule(_access(), request) == refused
    action = (ResourceType.CLUSTER, "kafka-cluster", Operation.CLUSTER_ACTION)
    assert rule(_access(action), request) is None


def test_txn_offset_commit_needs_the_id_the_group_and_the_topics() -> None:
    topic_cls = adapter.nested_class(request_class(ApiKey.TXN_OFFSET_COMMIT, 3), "topics")
    topics = (authorization._filled(topic_cls, {"name": "t", "partitions": ()}, ErrorCode.none),)
    request = _request(
        ApiKey.TXN_OFFSET_COMMIT, 3, {"transactional_id": "tx", "group_id": "g", "topics": topics}
    )
    rule = authorization.RULES[ApiKey.TXN_OFFSET_COMMIT]
    txn = (ResourceType.TRANSACTIONAL_ID, "tx", Operation.WRITE)
    group = (ResourceType.GROUP, "g", Operation.READ)
    topic = (ResourceType.TOPIC, "t", Operation.READ)
    assert rule(_access(txn), request) == authorization.Refused(
        ErrorCode.group_authorization_failed
    )
    assert rule(_access(txn, group), request) == authorization.Refused(
        ErrorCode.topic_authorization_failed
    )
    assert rule(_access(txn, group, topic), request) is None


@pytest.mark.parametrize(
    ("api_key", "version"),
    [
        (spec.api_key, version)
        for spec in REGISTRY.all()
        if spec.api_key in authorization.RULES
        for version in range(spec.min_decodable_version, spec.max_version + 1)
    ],
)
def test_every_rule_reads_every_version_of_its_request(api_key: ApiKey, version: int) -> None:
    """A rule that names a field some version lacks would close every such connection."""
    request = _request(api_key, version, {})
    context = _fake_context(api_key, version)
    context.server.metadata_cache = SimpleNamespace(topic_name=lambda _topic_id: None)
    for acls in ([], [(ResourceType.CLUSTER, "kafka-cluster", Operation.ALL)]):
        access = authorization.Access(
            FakeAuthorizer(_access(*acls).authorizer.acls), "User:alice", "h", context
        )
        authorization.RULES[api_key](access, request)
