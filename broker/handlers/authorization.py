"""Which resource and operation each API needs: the one table the dispatcher checks before a
handler runs (only when an authorizer is configured; without one nothing here is called).

Each API declares, beside its check, how its request is answered entry by entry (`Echo`s, see
`error_responses`). A check looks at the decoded request and answers one of:

- `None`: allowed, the handler runs as is;
- `Refused(error)`: the whole request is answered as Kafka's getErrorResponse does, every entry
  it names (topic, partition, group, resource) with `error`, and the top-level error code too;
- `Split(source, refused)`: Kafka's partitionSeqByAuthorized: the handler runs on the entries
  of request list `source` that are allowed, and each refused one is answered with its error
  after them (when none is allowed, the handler does not run);
- `Answered(response)`: the response, built by the check (a refused consumer Fetch);
- `Filtered(request, merge)`: the handler runs on `request`, and `merge` edits its response
  (listings that show only what the principal may describe).

`check` turns the first two into the last two, in one place.

APIs not in RULES need nothing (ApiVersions, the SASL ones) or are checked by hand where the
check needs the handler's data: Metadata (`may_describe_topic`, `may_create_topic`).
Kafka's resources and operations per API are those of its KafkaApis (ZooKeeper mode, 3.9).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import leader_and_isr, stop_replica, update_metadata
from broker.handlers.error_responses import ITSELF, Echo, entries, error_response
from broker.log.batch import has_transactional_records
from broker.network.context import RequestContext
from broker.network.errors import CloseConnectionError
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.security.acl import CLUSTER_NAME, Operation, ResourceType
from broker.security.authorizer import AclAuthorizer


@dataclass(frozen=True, slots=True)
class Refused:
    """The whole request refused: every entry answered with `error`, except the items in
    `errors` (request entries, by identity), each answered with its own."""

    error: ErrorCode
    errors: tuple[tuple[Any, ErrorCode], ...] = ()


@dataclass(frozen=True, slots=True)
class Split:
    """The items of request list `source` in `refused` (by identity) are answered each with
    its error; the handler serves the others."""

    source: str
    refused: tuple[tuple[Any, ErrorCode], ...]


@dataclass(frozen=True, slots=True)
class Filtered:
    request: Any
    merge: Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class Answered:
    """The request is answered with `response`, built here, and the handler does not run."""

    response: Any


Decision = Refused | Split | Filtered | Answered | None


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
        return self.allowed(operation, ResourceType.CLUSTER, CLUSTER_NAME)


Check = Callable[[Access, Any], Decision]


@dataclass(frozen=True, slots=True)
class Rule:
    check: Check
    echoes: tuple[Echo, ...] = ()


def access_of(context: RequestContext) -> Access | None:
    authorizer = context.services.authorizer
    if authorizer is None:
        return None
    return Access(authorizer, context.principal, context.client_host, context)


def may_describe_topic(context: RequestContext, topic: str) -> bool:
    access = access_of(context)
    return access is None or access.allowed(Operation.DESCRIBE, ResourceType.TOPIC, topic)


def may_create_topic(context: RequestContext, topic: str) -> bool:
    access = access_of(context)
    return (
        access is None
        or access.cluster(Operation.CREATE)
        or access.allowed(Operation.CREATE, ResourceType.TOPIC, topic)
    )


def check(context: RequestContext, api_key: int, request: Any) -> Answered | Filtered | None:
    access = access_of(context)
    rule = RULES.get(api_key)
    if access is None or rule is None:
        return None
    decision = rule.check(access, request)
    if isinstance(decision, Refused):
        return Answered(refusal(context, rule.echoes, request, decision))
    if isinstance(decision, Split):
        return _split(context, rule.echoes, request, decision)
    return decision


def refusal(
    context: RequestContext, echoes: tuple[Echo, ...], request: Any, refused: Refused
) -> Any:
    """The response refusing the whole request (Kafka's getErrorResponse)."""
    if getattr(request, "acks", None) == 0:
        # Produce with acks=0: the client reads no answer; Kafka closes the connection.
        raise CloseConnectionError(f"refused an acks=0 produce: {refused.error.name}")
    errors = {id(item): error for item, error in refused.errors}
    cls = response_class(context.header.api_key, context.api_version)
    return error_response(
        cls, request, echoes, refused.error, lambda item: errors.get(id(item), refused.error)
    )


def refused_whole(context: RequestContext, request: Any, error: ErrorCode) -> Any:
    """`request` refused with `error`, answered in its API's shape: for the refusals Kafka
    makes whether or not an authorizer is on."""
    echoes = RULES[context.header.api_key].echoes
    return refusal(context, echoes, request, Refused(error))


def _split(
    context: RequestContext, echoes: tuple[Echo, ...], request: Any, split: Split
) -> Answered | Filtered:
    echo = next(e for e in echoes if e.source == split.source)
    errors = {id(item): error for item, error in split.refused}
    allowed = tuple(i for i in getattr(request, split.source) if id(i) not in errors)
    if not allowed:
        return Answered(refusal(context, echoes, request, Refused(ErrorCode.none, split.refused)))

    def merge(response: Any) -> Any:
        if response is None:  # acks=0: Kafka closes the connection when anything failed
            raise CloseConnectionError("refused part of an acks=0 produce")
        refused = (item for item, _ in split.refused)
        added = entries(type(response), echo, refused, lambda item: errors[id(item)])
        return dataclasses.replace(response, **{echo.into: (*getattr(response, echo.into), *added)})

    return Filtered(dataclasses.replace(request, **{split.source: allowed}), merge)


# -- checks -----------------------------------------------------------------------------


def _on_resource(
    resource_type: ResourceType,
    operation: Operation,
    error: ErrorCode,
    name_of: Callable[[Any], str],
) -> Check:
    def rule(access: Access, request: Any) -> Decision:
        return (
            None if access.allowed(operation, resource_type, name_of(request)) else Refused(error)
        )

    return rule


def _on_cluster(operation: Operation) -> Check:
    return _on_resource(
        ResourceType.CLUSTER,
        operation,
        ErrorCode.cluster_authorization_failed,
        lambda _request: CLUSTER_NAME,
    )


def _from_controller(refusal: Callable[[int, Any, ErrorCode], Any]) -> Check:
    """A controller's request (LeaderAndIsr, StopReplica, UpdateMetadata): ClusterAction on
    the cluster, else the whole request refused as the handler module's `error_response`
    builds it (Kafka's getErrorResponse: every partition named, with the error)."""

    def check(access: Access, request: Any) -> Decision:
        if access.cluster(Operation.CLUSTER_ACTION):
            return None
        error = ErrorCode.cluster_authorization_failed
        return Answered(refusal(access.context.api_version, request, error))

    return check


def _on_group(operation: Operation) -> Check:
    return _on_resource(
        ResourceType.GROUP,
        operation,
        ErrorCode.group_authorization_failed,
        lambda request: str(request.group_id),
    )


def _on_transactional_id(operation: Operation) -> Check:
    return _on_resource(
        ResourceType.TRANSACTIONAL_ID,
        operation,
        ErrorCode.transactional_id_authorization_failed,
        lambda request: str(request.transactional_id),
    )


def _name(item: Any) -> str | None:
    return str(item.name)


def _each(
    source: str,
    resource_type: ResourceType,
    operation: Operation,
    error: ErrorCode,
    name_of: Callable[[Any], str | None] = _name,
) -> Check:
    """Each item of request list `source` checked apart (a name of None: not checked here,
    the handler answers it)."""

    def rule(access: Access, request: Any) -> Decision:
        refused = tuple(
            (item, error)
            for item in getattr(request, source, None) or ()
            if (name := name_of(item)) is not None
            and not access.allowed(operation, resource_type, name)
        )
        return Split(source, refused) if refused else None

    return rule


def _each_topic(
    source: str, operation: Operation, name_of: Callable[[Any], str | None] = _name
) -> Check:
    return _each(
        source, ResourceType.TOPIC, operation, ErrorCode.topic_authorization_failed, name_of
    )


def _first(*checks: Check) -> Check:
    """The checks in order: the first that does not allow decides."""

    def rule(access: Access, request: Any) -> Decision:
        for one in checks:
            decision = one(access, request)
            if decision is not None:
                return decision
        return None

    return rule


def _unless_cluster(operation: Operation, otherwise: Check) -> Check:
    """`operation` on the cluster allows the request whole; without it, `otherwise`."""

    def rule(access: Access, request: Any) -> Decision:
        return None if access.cluster(operation) else otherwise(access, request)

    return rule


def _transactional_produce(access: Access, request: Any) -> Decision:
    """Transactional batches need a transactional id with Write on it: Kafka looks at the
    batches' flag, not at the field (a transactional id on plain batches is not checked)."""
    if not has_transactional_records(request):
        return None
    transactional_id = getattr(request, "transactional_id", None)
    if transactional_id is not None and access.allowed(
        Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        return None
    return Refused(ErrorCode.transactional_id_authorization_failed)


def _fetch(access: Access, request: Any) -> Decision:
    replica_id = getattr(request, "replica_id", -1)
    replica_state = getattr(request, "replica_state", None)
    if replica_state is not None and getattr(replica_state, "replica_id", -1) >= 0:
        replica_id = replica_state.replica_id
    if replica_id >= 0:
        return _on_cluster(Operation.CLUSTER_ACTION)(access, request)
    cache = access.context.services.metadata_cache
    refused = []
    for topic in request.topics:
        name = getattr(topic, "topic", None)
        topic_id = getattr(topic, "topic_id", None)
        if not name and topic_id is not None:
            name = cache.topic_name(topic_id) or ""
        if not access.allowed(Operation.READ, ResourceType.TOPIC, name or ""):
            refused.append(topic)
    if not refused:
        return None
    # All or nothing (DEVIATIONS.md): only the refused partitions are answered, each with
    # TOPIC_AUTHORIZATION_FAILED; no fetch session is kept.
    cls = response_class(ApiKey.FETCH, access.context.api_version)
    error = ErrorCode.topic_authorization_failed
    responses = entries(cls, FETCH_TOPICS, refused, lambda _topic: error)
    values = {"responses": responses, "session_id": 0, "error_code": ErrorCode.none}
    return Answered(adapter.filled(cls, values, error))


def _find_coordinator(access: Access, request: Any) -> Decision:
    """v0-v3 name one key; v4+ several, each answered apart (KIP-699)."""
    if getattr(request, "key_type", 0) == 1:
        resource = ResourceType.TRANSACTIONAL_ID
        error = ErrorCode.transactional_id_authorization_failed
    else:
        resource, error = ResourceType.GROUP, ErrorCode.group_authorization_failed
    if getattr(request, "coordinator_keys", None) is not None:
        return _each("coordinator_keys", resource, Operation.DESCRIBE, error, str)(access, request)
    return _on_resource(resource, Operation.DESCRIBE, error, lambda r: str(r.key))(access, request)


def _add_partitions_to_txn(access: Access, request: Any) -> Decision:
    """v0-v3 (producers): Write on the transactional id and on each topic (never on an
    internal one); a refused topic fails the whole request, the other partitions answering
    OPERATION_NOT_ATTEMPTED. v4+ (brokers verifying a transaction, KIP-890): ClusterAction."""
    # Imported here: metadata imports this module.
    from broker.handlers.metadata import INTERNAL_TOPICS

    transactional_id = getattr(request, "v3_and_below_transactional_id", None)
    if transactional_id is None:
        return _on_cluster(Operation.CLUSTER_ACTION)(access, request)
    if not access.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return Refused(ErrorCode.transactional_id_authorization_failed)
    refused = tuple(
        (t, ErrorCode.topic_authorization_failed)
        for t in request.v3_and_below_topics
        if t.name in INTERNAL_TOPICS
        or not access.allowed(Operation.WRITE, ResourceType.TOPIC, t.name)
    )
    return Refused(ErrorCode.operation_not_attempted, refused) if refused else None


def _init_producer_id(access: Access, request: Any) -> Decision:
    if request.transactional_id is not None:
        return _on_transactional_id(Operation.WRITE)(access, request)
    # An idempotent producer: IdempotentWrite on the cluster, or Write on some topic (KIP-679).
    if access.cluster(Operation.IDEMPOTENT_WRITE) or access.authorizer.authorize_any(
        access.principal, access.host, Operation.WRITE, ResourceType.TOPIC
    ):
        return None
    return Refused(ErrorCode.cluster_authorization_failed)


def _listed_only(resource_type: ResourceType, response_field: str, key_field: str) -> Check:
    """Listing APIs: only the resources the principal may describe are listed (all of them
    with Describe on the cluster, for ListGroups as in Kafka)."""

    def rule(access: Access, request: Any) -> Decision:
        if resource_type == ResourceType.GROUP and access.cluster(Operation.DESCRIBE):
            return None

        def merge(response: Any) -> Any:
            listed = tuple(
                e
                for e in getattr(response, response_field)
                if access.allowed(Operation.DESCRIBE, resource_type, getattr(e, key_field))
            )
            return dataclasses.replace(response, **{response_field: listed})

        return Filtered(request, merge)

    return rule


TOPIC_CONFIG_RESOURCE = 2  # ConfigResource.Type.TOPIC; brokers and broker loggers are the cluster's


def _config_resources(operation: Operation) -> Check:
    """DescribeConfigs, AlterConfigs, IncrementalAlterConfigs: a topic's configs need the
    operation on the topic (TOPIC_AUTHORIZATION_FAILED), a broker's on the cluster
    (CLUSTER_AUTHORIZATION_FAILED); each refused resource is answered apart."""

    def refusal_of(access: Access, item: Any) -> ErrorCode | None:
        if int(item.resource_type) == TOPIC_CONFIG_RESOURCE:
            if access.allowed(operation, ResourceType.TOPIC, item.resource_name):
                return None
            return ErrorCode.topic_authorization_failed
        return None if access.cluster(operation) else ErrorCode.cluster_authorization_failed

    def rule(access: Access, request: Any) -> Decision:
        refused = tuple(
            (item, error)
            for item in request.resources
            if (error := refusal_of(access, item)) is not None
        )
        return Split("resources", refused) if refused else None

    return rule


def _delete_topics(access: Access, request: Any) -> Decision:
    """v0-v5 name topics in `topic_names`; v6 in `topics`, by name or by id (an unknown id
    is left to the handler)."""
    if getattr(request, "topic_names", None) is not None:
        return _each_topic("topic_names", Operation.DELETE, str)(access, request)
    cache = access.context.services.metadata_cache

    def name_of(topic: Any) -> str | None:
        if topic.name is not None:
            return str(topic.name)
        return None if topic.topic_id is None else cache.topic_name(topic.topic_id)

    return _each_topic("topics", Operation.DELETE, name_of)(access, request)


def _offset_fetch(access: Access, request: Any) -> Decision:
    """Describe on the group; the topics it may not describe are answered with
    TOPIC_AUTHORIZATION_FAILED, or, when all the group's offsets are asked for (null
    topics), left out. v8+ ask for several groups, each answered apart."""
    if getattr(request, "groups", None) is not None:
        return _offset_fetch_groups(access, request)
    refused = _on_group(Operation.DESCRIBE)(access, request)
    if refused is not None:
        return refused
    if request.topics is None:
        return Filtered(request, lambda response: _describable_only(access, response))
    return _each_topic("topics", Operation.DESCRIBE)(access, request)


def _describable_only(access: Access, answer: Any) -> Any:
    """`answer` (a response or one of its groups) without the topics the principal may not
    describe."""
    shown = tuple(
        t for t in answer.topics if access.allowed(Operation.DESCRIBE, ResourceType.TOPIC, t.name)
    )
    return dataclasses.replace(answer, topics=shown)


def _offset_fetch_groups(access: Access, request: Any) -> Decision:
    refused_groups = [
        g
        for g in request.groups
        if not access.allowed(Operation.DESCRIBE, ResourceType.GROUP, g.group_id)
    ]
    served, refused_topics = [], {}
    for group in request.groups:
        if any(group is g for g in refused_groups):
            continue
        if group.topics is not None:
            refused = [
                t
                for t in group.topics
                if not access.allowed(Operation.DESCRIBE, ResourceType.TOPIC, t.name)
            ]
            kept = tuple(t for t in group.topics if all(t is not r for r in refused))
            refused_topics[group.group_id] = refused
            group = dataclasses.replace(group, topics=kept)
        served.append(group)
    everything_named = all(g.topics is not None for g in request.groups)
    if not refused_groups and not any(refused_topics.values()) and everything_named:
        return None

    def answered(group: Any) -> Any:
        if group.error_code != ErrorCode.none:
            return group
        if group.group_id not in refused_topics:  # all its offsets were asked for
            return _describable_only(access, group)
        added = entries(
            type(group),
            TOPIC_INDEXES,
            refused_topics[group.group_id],
            lambda _topic: ErrorCode.topic_authorization_failed,
        )
        return dataclasses.replace(group, topics=(*group.topics, *added))

    def merge(response: Any) -> Any:
        refused = entries(
            type(response),
            OFFSET_FETCH_GROUPS,
            refused_groups,
            lambda _group: ErrorCode.group_authorization_failed,
        )
        groups = (*(answered(g) for g in response.groups), *refused)
        return dataclasses.replace(response, groups=groups)

    return Filtered(dataclasses.replace(request, groups=tuple(served)), merge)


# -- each API's check and answer --------------------------------------------------------

# Request entries echoed in responses (key fields copied; see error_responses.Echo).
TOPIC_PARTITIONS = Echo(
    "topics",
    "topics",
    {"name": "name"},
    (Echo("partitions", "partitions", {"partition_index": "partition_index"}),),
)
TOPIC_INDEXES = Echo(
    "topics",
    "topics",
    {"name": "name"},
    (Echo("partition_indexes", "partitions", {"partition_index": ITSELF}),),
)
OFFSET_FETCH_GROUPS = Echo("groups", "groups", {"group_id": "group_id"})
FETCH_TOPICS = Echo(
    "topics",
    "responses",
    {"topic": "topic", "topic_id": "topic_id"},
    (
        Echo(
            "partitions", "partitions", {"partition_index": "partition"}, constants={"records": b""}
        ),
    ),
)
CONFIG_RESOURCES = {"resource_type": "resource_type", "resource_name": "resource_name"}

RULES: dict[int, Rule] = {
    ApiKey.PRODUCE: Rule(
        _first(_transactional_produce, _each_topic("topic_data", Operation.WRITE)),
        (
            Echo(
                "topic_data",
                "responses",
                {"name": "name"},
                (Echo("partition_data", "partition_responses", {"index": "index"}),),
            ),
        ),
    ),
    ApiKey.FETCH: Rule(_fetch, (FETCH_TOPICS,)),
    ApiKey.LIST_OFFSETS: Rule(_each_topic("topics", Operation.DESCRIBE), (TOPIC_PARTITIONS,)),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: Rule(
        # Followers truncate with it: ClusterAction (a broker's documented minimum) suffices.
        _unless_cluster(
            Operation.CLUSTER_ACTION,
            _each_topic("topics", Operation.DESCRIBE, lambda t: str(t.topic)),
        ),
        (
            Echo(
                "topics",
                "topics",
                {"topic": "topic"},
                (Echo("partitions", "partitions", {"partition": "partition"}),),
            ),
        ),
    ),
    ApiKey.LEADER_AND_ISR: Rule(_from_controller(leader_and_isr.error_response)),
    ApiKey.STOP_REPLICA: Rule(_from_controller(stop_replica.error_response)),
    ApiKey.UPDATE_METADATA: Rule(_from_controller(update_metadata.error_response)),
    ApiKey.CONTROLLED_SHUTDOWN: Rule(_on_cluster(Operation.CLUSTER_ACTION)),
    ApiKey.ALTER_PARTITION: Rule(_on_cluster(Operation.CLUSTER_ACTION)),
    ApiKey.ALLOCATE_PRODUCER_IDS: Rule(_on_cluster(Operation.CLUSTER_ACTION)),
    ApiKey.WRITE_TXN_MARKERS: Rule(
        _unless_cluster(Operation.ALTER, _on_cluster(Operation.CLUSTER_ACTION)),
        (
            Echo(
                "markers",
                "markers",
                {"producer_id": "producer_id"},
                (
                    Echo(
                        "topics",
                        "topics",
                        {"name": "name"},
                        (Echo("partition_indexes", "partitions", {"partition_index": ITSELF}),),
                    ),
                ),
            ),
        ),
    ),
    ApiKey.OFFSET_COMMIT: Rule(
        _first(_on_group(Operation.READ), _each_topic("topics", Operation.READ)),
        (TOPIC_PARTITIONS,),
    ),
    ApiKey.OFFSET_FETCH: Rule(_offset_fetch, (TOPIC_INDEXES, OFFSET_FETCH_GROUPS)),
    ApiKey.FIND_COORDINATOR: Rule(
        _find_coordinator, (Echo("coordinator_keys", "coordinators", {"key": ITSELF}),)
    ),
    ApiKey.JOIN_GROUP: Rule(_on_group(Operation.READ)),
    ApiKey.HEARTBEAT: Rule(_on_group(Operation.READ)),
    ApiKey.LEAVE_GROUP: Rule(_on_group(Operation.READ)),
    ApiKey.SYNC_GROUP: Rule(_on_group(Operation.READ)),
    ApiKey.OFFSET_DELETE: Rule(
        _first(_on_group(Operation.DELETE), _each_topic("topics", Operation.READ)),
        (TOPIC_PARTITIONS,),
    ),
    ApiKey.DESCRIBE_GROUPS: Rule(
        _each(
            "groups",
            ResourceType.GROUP,
            Operation.DESCRIBE,
            ErrorCode.group_authorization_failed,
            str,
        ),
        (Echo("groups", "groups", {"group_id": ITSELF}),),
    ),
    ApiKey.DELETE_GROUPS: Rule(
        _each(
            "groups_names",
            ResourceType.GROUP,
            Operation.DELETE,
            ErrorCode.group_authorization_failed,
            str,
        ),
        (Echo("groups_names", "results", {"group_id": ITSELF}),),
    ),
    ApiKey.LIST_GROUPS: Rule(_listed_only(ResourceType.GROUP, "groups", "group_id")),
    ApiKey.DESCRIBE_TRANSACTIONS: Rule(
        _each(
            "transactional_ids",
            ResourceType.TRANSACTIONAL_ID,
            Operation.DESCRIBE,
            ErrorCode.transactional_id_authorization_failed,
            str,
        ),
        (Echo("transactional_ids", "transaction_states", {"transactional_id": ITSELF}),),
    ),
    ApiKey.LIST_TRANSACTIONS: Rule(
        _listed_only(ResourceType.TRANSACTIONAL_ID, "transaction_states", "transactional_id")
    ),
    ApiKey.DESCRIBE_PRODUCERS: Rule(_each_topic("topics", Operation.READ), (TOPIC_INDEXES,)),
    ApiKey.CREATE_TOPICS: Rule(
        _unless_cluster(Operation.CREATE, _each_topic("topics", Operation.CREATE)),
        (Echo("topics", "topics", {"name": "name"}),),
    ),
    ApiKey.DELETE_TOPICS: Rule(
        _delete_topics,
        (
            Echo("topic_names", "responses", {"name": ITSELF}),
            Echo("topics", "responses", {"name": "name", "topic_id": "topic_id"}),
        ),
    ),
    ApiKey.DELETE_RECORDS: Rule(_each_topic("topics", Operation.DELETE), (TOPIC_PARTITIONS,)),
    ApiKey.CREATE_PARTITIONS: Rule(
        _each_topic("topics", Operation.ALTER), (Echo("topics", "results", {"name": "name"}),)
    ),
    ApiKey.INIT_PRODUCER_ID: Rule(_init_producer_id),
    ApiKey.ADD_PARTITIONS_TO_TXN: Rule(
        _add_partitions_to_txn,
        (
            Echo(
                "v3_and_below_topics",
                "results_by_topic_v3_and_below",
                {"name": "name"},
                (Echo("partitions", "results_by_partition", {"partition_index": ITSELF}),),
            ),
        ),
    ),
    ApiKey.ADD_OFFSETS_TO_TXN: Rule(
        _first(_on_transactional_id(Operation.WRITE), _on_group(Operation.READ))
    ),
    ApiKey.END_TXN: Rule(_on_transactional_id(Operation.WRITE)),
    ApiKey.TXN_OFFSET_COMMIT: Rule(
        _first(
            _on_transactional_id(Operation.WRITE),
            _on_group(Operation.READ),
            _each_topic("topics", Operation.READ),
        ),
        (TOPIC_PARTITIONS,),
    ),
    ApiKey.ALTER_CONFIGS: Rule(
        _config_resources(Operation.ALTER_CONFIGS),
        (Echo("resources", "responses", CONFIG_RESOURCES),),
    ),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: Rule(
        _config_resources(Operation.ALTER_CONFIGS),
        (Echo("resources", "responses", CONFIG_RESOURCES),),
    ),
    ApiKey.DESCRIBE_CONFIGS: Rule(
        _config_resources(Operation.DESCRIBE_CONFIGS),
        (Echo("resources", "results", CONFIG_RESOURCES),),
    ),
    ApiKey.ALTER_REPLICA_LOG_DIRS: Rule(
        _on_cluster(Operation.ALTER),
        (
            Echo(
                "dirs.topics",
                "results",
                {"topic_name": "name"},
                (Echo("partitions", "partitions", {"partition_index": ITSELF}),),
            ),
        ),
    ),
    ApiKey.DESCRIBE_LOG_DIRS: Rule(_on_cluster(Operation.DESCRIBE)),
    ApiKey.ELECT_LEADERS: Rule(
        _on_cluster(Operation.ALTER),
        (
            Echo(
                "topic_partitions",
                "replica_election_results",
                {"topic": "topic"},
                (Echo("partitions", "partition_result", {"partition_id": ITSELF}),),
            ),
        ),
    ),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: Rule(
        _on_cluster(Operation.ALTER),
        (
            Echo(
                "topics",
                "responses",
                {"name": "name"},
                (Echo("partitions", "partitions", {"partition_index": "partition_index"}),),
            ),
        ),
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: Rule(_on_cluster(Operation.DESCRIBE), (TOPIC_INDEXES,)),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: Rule(_on_cluster(Operation.DESCRIBE_CONFIGS)),
    ApiKey.ALTER_CLIENT_QUOTAS: Rule(
        _on_cluster(Operation.ALTER_CONFIGS),
        (
            Echo(
                "entries",
                "entries",
                nested=(
                    Echo(
                        "entity",
                        "entity",
                        {"entity_type": "entity_type", "entity_name": "entity_name"},
                    ),
                ),
            ),
        ),
    ),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: Rule(
        _on_cluster(Operation.ALTER),
        (
            Echo("deletions", "results", {"user": "name"}),
            Echo("upsertions", "results", {"user": "name"}),
        ),
    ),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: Rule(
        _on_cluster(Operation.DESCRIBE), (Echo("users", "results", {"user": "name"}),)
    ),
    ApiKey.UPDATE_FEATURES: Rule(_on_cluster(Operation.ALTER)),
    ApiKey.CREATE_ACLS: Rule(_on_cluster(Operation.ALTER), (Echo("creations", "results"),)),
    ApiKey.DELETE_ACLS: Rule(_on_cluster(Operation.ALTER), (Echo("filters", "filter_results"),)),
    ApiKey.DESCRIBE_ACLS: Rule(_on_cluster(Operation.DESCRIBE)),
}
