"""Old API versions that kio (which follows Kafka 4.0's schemas) no longer ships, derived from
the nearest version it has.

Each old version is declared as edits to a newer kio entity: fields dropped and fields added
(with their Kafka type), per entity class name; nested entities are rebuilt with the old version
number. The result is an ordinary kio-style dataclass, so kio's reader and writer, the bounds
pre-check and the response adapter treat it exactly like a generated one. The schema facts come
from Kafka's message definitions (`clients/src/main/resources/common/message/*.json`).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.static.primitive import i16, i32, i64

from broker.protocol.api_keys import ApiKey


@dataclass(frozen=True, slots=True)
class AddedField:
    name: str
    python_type: Any
    kafka_type: str
    after: str | None  # the field it follows; None: the entity's first field
    default: Any  # as Kafka's message definition gives it


@dataclass(frozen=True, slots=True)
class Derivation:
    """Build `version` from kio's `base_version`: per entity class name, fields to drop and
    fields to add."""

    base_version: int
    drop: dict[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    add: dict[str, tuple[AddedField, ...]] = dataclasses.field(default_factory=dict)


_SAME_AS_V1 = Derivation(base_version=1)
_SAME_AS_V2 = Derivation(base_version=2)
_SAME_AS_V3 = Derivation(base_version=3)
_FETCH_V4_PARTITION_FIELDS = frozenset({"last_stable_offset", "aborted_transactions"})
_FETCH_V1_V2 = (
    Derivation(4, drop={"FetchRequest": frozenset({"isolation_level", "max_bytes"})}),
    Derivation(4, drop={"PartitionData": _FETCH_V4_PARTITION_FIELDS}),
)

# AlterPartition v0-v1 name topics where v2 (KIP-841) gives topic ids; v0 also lacks the
# leader recovery state (KIP-704).
_ALTER_PARTITION_TOPIC_NAME: dict[str, tuple[AddedField, ...]] = {
    "TopicData": (AddedField("topic_name", str, "string", None, ""),),
}
_ALTER_PARTITION_V1 = Derivation(
    2, drop={"TopicData": frozenset({"topic_id"})}, add=_ALTER_PARTITION_TOPIC_NAME
)
_ALTER_PARTITION_V0 = Derivation(
    2,
    drop={
        "TopicData": frozenset({"topic_id"}),
        "PartitionData": frozenset({"leader_recovery_state"}),
    },
    add=_ALTER_PARTITION_TOPIC_NAME,
)

# (api key, version) -> (request derivation, response derivation)
LEGACY_VERSIONS: dict[tuple[int, int], tuple[Derivation, Derivation]] = {
    # The delegation-token APIs' v0 has v1's schema (v1 only changed throttling, KIP-219).
    (ApiKey.CREATE_DELEGATION_TOKEN, 0): (_SAME_AS_V1, _SAME_AS_V1),
    (ApiKey.RENEW_DELEGATION_TOKEN, 0): (_SAME_AS_V1, _SAME_AS_V1),
    (ApiKey.EXPIRE_DELEGATION_TOKEN, 0): (_SAME_AS_V1, _SAME_AS_V1),
    (ApiKey.DESCRIBE_DELEGATION_TOKEN, 0): (_SAME_AS_V1, _SAME_AS_V1),
    (ApiKey.ALTER_PARTITION, 0): (_ALTER_PARTITION_V0, _ALTER_PARTITION_V0),
    (ApiKey.ALTER_PARTITION, 1): (_ALTER_PARTITION_V1, _ALTER_PARTITION_V1),
    # OffsetCommit v0 has no generation or member (Kafka stored these in ZooKeeper); v1 adds
    # them and a per-partition commit timestamp; v2 replaced that by a retention time.
    (ApiKey.OFFSET_COMMIT, 0): (
        Derivation(
            2,
            drop={
                "OffsetCommitRequest": frozenset(
                    {"generation_id_or_member_epoch", "member_id", "retention_time"}
                )
            },
        ),
        _SAME_AS_V2,
    ),
    (ApiKey.OFFSET_COMMIT, 1): (
        Derivation(
            2,
            drop={"OffsetCommitRequest": frozenset({"retention_time"})},
            add={
                "OffsetCommitRequestPartition": (
                    AddedField("commit_timestamp", i64, "int64", "committed_offset", i64(-1)),
                )
            },
        ),
        _SAME_AS_V2,
    ),
    # OffsetFetch v0 is v1's schema (v0 read from ZooKeeper in Kafka).
    (ApiKey.OFFSET_FETCH, 0): (_SAME_AS_V1, _SAME_AS_V1),
    # AlterReplicaLogDirs v0 and DescribeLogDirs v0 are their v1's schemas (v1 only changed
    # when throttling happens).
    (ApiKey.ALTER_REPLICA_LOG_DIRS, 0): (_SAME_AS_V1, _SAME_AS_V1),
    (ApiKey.DESCRIBE_LOG_DIRS, 0): (_SAME_AS_V1, _SAME_AS_V1),
    # OffsetForLeaderEpoch v0-v1 have no current leader epoch, no throttle time; v0 answers
    # no leader epoch.
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 0): (
        Derivation(2, drop={"OffsetForLeaderPartition": frozenset({"current_leader_epoch"})}),
        Derivation(
            2,
            drop={
                "OffsetForLeaderEpochResponse": frozenset({"throttle_time"}),
                "EpochEndOffset": frozenset({"leader_epoch"}),
            },
        ),
    ),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 1): (
        Derivation(2, drop={"OffsetForLeaderPartition": frozenset({"current_leader_epoch"})}),
        Derivation(2, drop={"OffsetForLeaderEpochResponse": frozenset({"throttle_time"})}),
    ),
    # CreateTopics v0 has no validate_only and answers no error message.
    (ApiKey.CREATE_TOPICS, 0): (
        Derivation(2, drop={"CreateTopicsRequest": frozenset({"validate_only"})}),
        Derivation(
            2,
            drop={
                "CreateTopicsResponse": frozenset({"throttle_time"}),
                "CreatableTopicResult": frozenset({"error_message"}),
            },
        ),
    ),
    (ApiKey.CREATE_TOPICS, 1): (
        _SAME_AS_V2,
        Derivation(2, drop={"CreateTopicsResponse": frozenset({"throttle_time"})}),
    ),
    # DeleteTopics v0 answers without a throttle time.
    (ApiKey.DELETE_TOPICS, 0): (
        _SAME_AS_V1,
        Derivation(1, drop={"DeleteTopicsResponse": frozenset({"throttle_time"})}),
    ),
    # Produce v0-v2 carry no transactional id; responses gained a throttle time in v1 and a
    # log append time in v2 (v2 answers as v3 does).
    (ApiKey.PRODUCE, 0): (
        Derivation(3, drop={"ProduceRequest": frozenset({"transactional_id"})}),
        Derivation(
            3,
            drop={
                "ProduceResponse": frozenset({"throttle_time"}),
                "PartitionProduceResponse": frozenset({"log_append_time"}),
            },
        ),
    ),
    (ApiKey.PRODUCE, 1): (
        Derivation(3, drop={"ProduceRequest": frozenset({"transactional_id"})}),
        Derivation(3, drop={"PartitionProduceResponse": frozenset({"log_append_time"})}),
    ),
    (ApiKey.PRODUCE, 2): (
        Derivation(3, drop={"ProduceRequest": frozenset({"transactional_id"})}),
        _SAME_AS_V3,
    ),
    # Fetch v0-v3 have no isolation level (v0-v2 no response size limit either) and answer no
    # last stable offset or aborted transactions; v0 answers no throttle time.
    (ApiKey.FETCH, 0): (
        Derivation(4, drop={"FetchRequest": frozenset({"isolation_level", "max_bytes"})}),
        Derivation(
            4,
            drop={
                "FetchResponse": frozenset({"throttle_time"}),
                "PartitionData": _FETCH_V4_PARTITION_FIELDS,
            },
        ),
    ),
    (ApiKey.FETCH, 1): _FETCH_V1_V2,
    (ApiKey.FETCH, 2): _FETCH_V1_V2,
    (ApiKey.FETCH, 3): (
        Derivation(4, drop={"FetchRequest": frozenset({"isolation_level"})}),
        Derivation(4, drop={"PartitionData": _FETCH_V4_PARTITION_FIELDS}),
    ),
    # ListOffsets v0 asks for up to max_num_offsets offsets and answers them as an array.
    (ApiKey.LIST_OFFSETS, 0): (
        Derivation(
            1,
            add={
                "ListOffsetsPartition": (
                    AddedField("max_num_offsets", i32, "int32", "timestamp", i32(1)),
                )
            },
        ),
        Derivation(
            1,
            drop={"ListOffsetsPartitionResponse": frozenset({"timestamp", "offset"})},
            add={
                "ListOffsetsPartitionResponse": (
                    AddedField("old_style_offsets", tuple[i64, ...], "int64", "error_code", ()),
                )
            },
        ),
    ),
    # DescribeConfigs v0 has no synonyms and answers is_default instead of a config source.
    (ApiKey.DESCRIBE_CONFIGS, 0): (
        Derivation(1, drop={"DescribeConfigsRequest": frozenset({"include_synonyms"})}),
        Derivation(
            1,
            drop={"DescribeConfigsResourceResult": frozenset({"config_source", "synonyms"})},
            add={
                "DescribeConfigsResourceResult": (
                    AddedField("is_default", bool, "bool", "read_only", False),
                )
            },
        ),
    ),
}


def legacy_request_class(api_key: int, version: int) -> type | None:
    return _derive_top(api_key, version, "request")


def legacy_response_class(api_key: int, version: int) -> type | None:
    return _derive_top(api_key, version, "response")


@functools.cache
def _derive_top(api_key: int, version: int, kind: str) -> type | None:
    found = LEGACY_VERSIONS.get((api_key, version))
    if found is None:
        return None
    derivation = found[0] if kind == "request" else found[1]
    loader = load_request_schema if kind == "request" else load_response_schema
    return _derive(loader(api_key, derivation.base_version), version, derivation)


def _derive(cls: type, version: int, derivation: Derivation) -> type:
    hints = typing.get_type_hints(cls)
    dropped = derivation.drop.get(cls.__name__, frozenset())
    fields: list[tuple[str, Any, Any]] = []
    for base_field in dataclasses.fields(cls):
        if base_field.name in dropped:
            continue
        python_type = _rebuild_type(hints[base_field.name], version, derivation)
        fields.append((base_field.name, python_type, _copy_field(base_field)))
    for added in derivation.add.get(cls.__name__, ()):
        names = [name for name, _, _ in fields]
        position = 0 if added.after is None else names.index(added.after) + 1
        spec = field(metadata={"kafka_type": added.kafka_type}, default=added.default)
        fields.insert(position, (added.name, added.python_type, spec))
    namespace = {
        "__type__": cls.__type__,  # type: ignore[attr-defined]
        "__version__": i16(version),
        "__flexible__": cls.__flexible__,  # type: ignore[attr-defined]
        "__api_key__": cls.__api_key__,  # type: ignore[attr-defined]
        "__header_schema__": cls.__header_schema__,  # type: ignore[attr-defined]
        "__module__": f"{__name__}.v{version}",
    }
    return dataclasses.make_dataclass(
        cls.__name__, fields, frozen=True, slots=True, kw_only=True, namespace=namespace
    )


def _copy_field(base_field: dataclasses.Field[Any]) -> Any:
    if base_field.default is not dataclasses.MISSING:
        return field(metadata=base_field.metadata, default=base_field.default)
    if base_field.default_factory is not dataclasses.MISSING:
        return field(metadata=base_field.metadata, default_factory=base_field.default_factory)
    return field(metadata=base_field.metadata)


def _rebuild_type(hint: Any, version: int, derivation: Derivation) -> Any:
    """The same type with every nested entity rebuilt at `version`."""
    origin = typing.get_origin(hint)
    if origin is tuple:
        element = _rebuild_type(typing.get_args(hint)[0], version, derivation)
        return tuple[element, ...]  # type: ignore[valid-type]
    if origin in (typing.Union, types.UnionType):
        members = [_rebuild_type(a, version, derivation) for a in typing.get_args(hint)]
        return functools.reduce(lambda a, b: a | b, members)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _derive(hint, version, derivation)
    return hint
