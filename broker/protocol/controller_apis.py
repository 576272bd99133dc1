"""Schemas of the requests a ZooKeeper-mode controller sends every broker, which kio (following
Kafka 4.0, which removed them) does not ship: LeaderAndIsr (key 4) v0-v7, StopReplica (key 5)
v0-v4 and UpdateMetadata (key 6) v0-v8, with their responses.

The fields, their version ranges, defaults and tags are Kafka 3.9's
`clients/src/main/resources/common/message/{LeaderAndIsr,StopReplica,UpdateMetadata}*.json`,
written down once below as `Field` tables; `_entity` turns a table into the kio-style frozen
dataclass of one version (the class attributes and field metadata kio generates), so kio's
reader and writer, the bounds pre-check and the response adapter treat them like generated
ones.
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from dataclasses import dataclass
from typing import Any

import kio.schema.request_header.v1.header as request_header_v1
import kio.schema.request_header.v2.header as request_header_v2
import kio.schema.response_header.v0.header as response_header_v0
import kio.schema.response_header.v1.header as response_header_v1
from kio.schema.errors import ErrorCode
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i64

from broker.protocol.api_keys import ApiKey

LAST = 2**15  # "N+": every version from N on

# Kafka's sentinels for the leader epoch of a StopReplica partition (LeaderAndIsr.scala).
NO_EPOCH = -1  # the request version has no leader epoch: no check
EPOCH_DURING_DELETE = -2  # the topic is being deleted: stop whatever the epoch
UNKNOWN_BROKER_EPOCH = -1  # the request version has no broker epoch: no check


class _Required:
    """The default of a field that has none (dataclasses' MISSING cannot be a value)."""


REQUIRED = _Required()

_PYTHON_TYPES: dict[str, Any] = {
    "bool": bool,
    "int8": i8,
    "int16": i16,
    "int32": i32,
    "int64": i64,
    "string": str,
    "uuid": uuid.UUID | None,
    "error_code": ErrorCode,
}


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message, as Kafka's JSON declares it (versions `first`..`last`)."""

    name: str
    kafka_type: str  # a primitive, or the name of the struct in `fields`
    first: int = 0
    last: int = LAST
    array: bool = False
    fields: tuple[Field, ...] = ()  # a struct's fields
    nullable: bool = False
    default: Any = REQUIRED
    tag: int | None = None

    def in_version(self, version: int) -> bool:
        return self.first <= version <= self.last


def _struct(name: str, fields: tuple[Field, ...], first: int = 0, last: int = LAST) -> Field:
    return Field(name, "", first, last, array=True, fields=fields, default=REQUIRED)


@dataclass(frozen=True, slots=True)
class Message:
    api_key: ApiKey
    kind: EntityType
    class_name: str
    first_flexible: int
    last_version: int
    fields: tuple[Field, ...]


def _int32s(name: str, first: int = 0, last: int = LAST, default: Any = REQUIRED) -> Field:
    return Field(name, "int32", first, last, array=True, default=default)


# -- LeaderAndIsr (key 4) ------------------------------------------------------------------

_LEADER_AND_ISR_PARTITION_STATE = (
    Field("topic_name", "string", 0, 1),
    Field("partition_index", "int32"),
    Field("controller_epoch", "int32"),
    Field("leader", "int32"),
    Field("leader_epoch", "int32"),
    _int32s("isr"),
    # The partition state znode's zkVersion (Kafka's "PartitionEpoch").
    Field("partition_epoch", "int32"),
    _int32s("replicas"),
    _int32s("adding_replicas", 3, default=()),
    _int32s("removing_replicas", 3, default=()),
    Field("is_new", "bool", 1, default=False),
    Field("leader_recovery_state", "int8", 6, default=i8(0)),
)

LEADER_AND_ISR_REQUEST = Message(
    ApiKey.LEADER_AND_ISR,
    EntityType.request,
    "LeaderAndIsrRequest",
    first_flexible=4,
    last_version=7,
    fields=(
        Field("controller_id", "int32"),
        Field("is_kraft_controller", "bool", 7, default=False),
        Field("controller_epoch", "int32"),
        Field("broker_epoch", "int64", 2, default=i64(UNKNOWN_BROKER_EPOCH)),
        Field("type", "int8", 5, default=i8(0)),
        _struct("ungrouped_partition_states", _LEADER_AND_ISR_PARTITION_STATE, 0, 1),
        _struct(
            "topic_states",
            (
                Field("topic_name", "string"),
                Field("topic_id", "uuid", 5, default=None),
                _struct("partition_states", _LEADER_AND_ISR_PARTITION_STATE),
            ),
            2,
        ),
        _struct(
            "live_leaders",
            (Field("broker_id", "int32"), Field("host_name", "string"), Field("port", "int32")),
        ),
    ),
)

_LEADER_AND_ISR_PARTITION_ERROR = (
    Field("topic_name", "string", 0, 4),
    Field("partition_index", "int32"),
    Field("error_code", "error_code"),
)

LEADER_AND_ISR_RESPONSE = Message(
    ApiKey.LEADER_AND_ISR,
    EntityType.response,
    "LeaderAndIsrResponse",
    first_flexible=4,
    last_version=7,
    fields=(
        Field("error_code", "error_code"),
        _struct("partition_errors", _LEADER_AND_ISR_PARTITION_ERROR, 0, 4),
        _struct(
            "topics",
            (
                Field("topic_id", "uuid"),
                _struct("partition_errors", _LEADER_AND_ISR_PARTITION_ERROR),
            ),
            5,
        ),
    ),
)

# -- StopReplica (key 5) -------------------------------------------------------------------

STOP_REPLICA_REQUEST = Message(
    ApiKey.STOP_REPLICA,
    EntityType.request,
    "StopReplicaRequest",
    first_flexible=2,
    last_version=4,
    fields=(
        Field("controller_id", "int32"),
        Field("is_kraft_controller", "bool", 4, default=False),
        Field("controller_epoch", "int32"),
        Field("broker_epoch", "int64", 1, default=i64(UNKNOWN_BROKER_EPOCH)),
        Field("delete_partitions", "bool", 0, 2),
        _struct(
            "ungrouped_partitions",
            (Field("topic_name", "string"), Field("partition_index", "int32")),
            0,
            0,
        ),
        _struct("topics", (Field("name", "string"), _int32s("partition_indexes")), 1, 2),
        _struct(
            "topic_states",
            (
                Field("topic_name", "string"),
                _struct(
                    "partition_states",
                    (
                        Field("partition_index", "int32"),
                        Field("leader_epoch", "int32", default=i32(NO_EPOCH)),
                        Field("delete_partition", "bool"),
                    ),
                ),
            ),
            3,
        ),
    ),
)

STOP_REPLICA_RESPONSE = Message(
    ApiKey.STOP_REPLICA,
    EntityType.response,
    "StopReplicaResponse",
    first_flexible=2,
    last_version=4,
    fields=(
        Field("error_code", "error_code"),
        _struct(
            "partition_errors",
            (
                Field("topic_name", "string"),
                Field("partition_index", "int32"),
                Field("error_code", "error_code"),
            ),
        ),
    ),
)

# -- UpdateMetadata (key 6) ----------------------------------------------------------------

_UPDATE_METADATA_PARTITION_STATE = (
    Field("topic_name", "string", 0, 4),
    Field("partition_index", "int32"),
    Field("controller_epoch", "int32"),
    Field("leader", "int32"),
    Field("leader_epoch", "int32"),
    _int32s("isr"),
    Field("zk_version", "int32"),
    _int32s("replicas"),
    _int32s("offline_replicas", 4, default=()),
)

UPDATE_METADATA_REQUEST = Message(
    ApiKey.UPDATE_METADATA,
    EntityType.request,
    "UpdateMetadataRequest",
    first_flexible=6,
    last_version=8,
    fields=(
        Field("controller_id", "int32"),
        Field("is_kraft_controller", "bool", 8, default=False),
        Field("type", "int8", 8, default=i8(0), tag=0),
        Field("controller_epoch", "int32"),
        Field("broker_epoch", "int64", 5, default=i64(UNKNOWN_BROKER_EPOCH)),
        _struct("ungrouped_partition_states", _UPDATE_METADATA_PARTITION_STATE, 0, 4),
        _struct(
            "topic_states",
            (
                Field("topic_name", "string"),
                Field("topic_id", "uuid", 7, default=None),
                _struct("partition_states", _UPDATE_METADATA_PARTITION_STATE),
            ),
            5,
        ),
        _struct(
            "live_brokers",
            (
                Field("id", "int32"),
                Field("v0_host", "string", 0, 0),
                Field("v0_port", "int32", 0, 0),
                _struct(
                    "endpoints",
                    (
                        Field("port", "int32"),
                        Field("host", "string"),
                        Field("listener", "string", 3),
                        Field("security_protocol", "int16"),
                    ),
                    1,
                ),
                Field("rack", "string", 2, nullable=True, default=None),
            ),
        ),
    ),
)

UPDATE_METADATA_RESPONSE = Message(
    ApiKey.UPDATE_METADATA,
    EntityType.response,
    "UpdateMetadataResponse",
    first_flexible=6,
    last_version=8,
    fields=(Field("error_code", "error_code"),),
)

_REQUESTS = {
    m.api_key: m for m in (LEADER_AND_ISR_REQUEST, STOP_REPLICA_REQUEST, UPDATE_METADATA_REQUEST)
}
_RESPONSES = {
    m.api_key: m for m in (LEADER_AND_ISR_RESPONSE, STOP_REPLICA_RESPONSE, UPDATE_METADATA_RESPONSE)
}


def _class_name(field_name: str) -> str:
    return "".join(word.capitalize() for word in field_name.split("_"))


def _entity(
    message: Message, version: int, name: str, fields: tuple[Field, ...], kind: EntityType
) -> type:
    flexible = version >= message.first_flexible
    if message.kind is EntityType.request:
        header: type = (
            request_header_v2.RequestHeader if flexible else request_header_v1.RequestHeader
        )
    else:
        header = (
            response_header_v1.ResponseHeader if flexible else response_header_v0.ResponseHeader
        )
    specs: list[tuple[str, Any, Any]] = []
    for item in fields:
        if not item.in_version(version):
            continue
        default: dict[str, Any] = {} if item.default is REQUIRED else {"default": item.default}
        if item.fields:
            nested = _entity(
                message, version, _class_name(item.name), item.fields, EntityType.nested
            )
            specs.append((item.name, tuple[nested, ...], dataclasses.field(**default)))  # type: ignore[valid-type]
            continue
        python_type = _PYTHON_TYPES[item.kafka_type]
        if item.nullable:
            python_type = python_type | None
        if item.array:
            python_type = tuple[python_type, ...]  # type: ignore[valid-type]
        metadata: dict[str, Any] = {"kafka_type": item.kafka_type}
        if item.tag is not None:
            metadata["tag"] = item.tag
        specs.append((item.name, python_type, dataclasses.field(metadata=metadata, **default)))
    namespace = {
        "__type__": kind,
        "__version__": i16(version),
        "__flexible__": flexible,
        "__api_key__": i16(message.api_key),
        "__header_schema__": header,
        "__module__": f"{__name__}.{message.class_name}.v{version}",
    }
    return dataclasses.make_dataclass(
        name, specs, frozen=True, slots=True, kw_only=True, namespace=namespace
    )


@functools.cache
def _message_class(message: Message, version: int) -> type:
    return _entity(message, version, message.class_name, message.fields, message.kind)


def controller_request_class(api_key: int, version: int) -> type | None:
    message = _REQUESTS.get(api_key)  # type: ignore[call-overload]
    if message is None or not 0 <= version <= message.last_version:
        return None
    return _message_class(message, version)


def controller_response_class(api_key: int, version: int) -> type | None:
    message = _RESPONSES.get(api_key)  # type: ignore[call-overload]
    if message is None or not 0 <= version <= message.last_version:
        return None
    return _message_class(message, version)
