"""Schemas of ZooKeeper-mode inter-broker APIs that kio (following Kafka 4.0, which removed
them) does not ship at all: ControlledShutdown (key 7) v1-v3 here, and the controller's
LeaderAndIsr, StopReplica and UpdateMetadata from broker/protocol/controller_apis.py.

They are built as kio-style frozen dataclasses (the same class attributes and field metadata
kio generates), so kio's reader and writer, the bounds pre-check and the response adapter treat
them like generated ones. The fields are Kafka 3.0's
`clients/src/main/resources/common/message/ControlledShutdown{Request,Response}.json`. Version 0
has a request header without a client id, which our header parser does not read: it stays
advertised (as Kafka 3.0 does) but is not decodable (see the registry).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import field
from typing import Any

import kio.schema.request_header.v1.header as request_header_v1
import kio.schema.request_header.v2.header as request_header_v2
import kio.schema.response_header.v0.header as response_header_v0
import kio.schema.response_header.v1.header as response_header_v1
from kio.schema.errors import ErrorCode
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i64

from broker.protocol.api_keys import ApiKey
from broker.protocol.controller_apis import controller_request_class, controller_response_class

FIRST_DECODABLE_VERSION = 1
LAST_VERSION = 3
FIRST_FLEXIBLE_VERSION = 3  # "flexibleVersions": "3+"
FIRST_VERSION_WITH_BROKER_EPOCH = 2
UNKNOWN_BROKER_EPOCH = -1  # the field's default when a v0-v1 sender cannot name it


def _namespace(version: int, kind: EntityType, header: type) -> dict[str, Any]:
    return {
        "__type__": kind,
        "__version__": i16(version),
        "__flexible__": version >= FIRST_FLEXIBLE_VERSION,
        "__api_key__": i16(ApiKey.CONTROLLED_SHUTDOWN),
        "__header_schema__": header,
        "__module__": f"{__name__}.v{version}",
    }


def _make(name: str, fields: list[tuple[str, Any, Any]], namespace: dict[str, Any]) -> type:
    return dataclasses.make_dataclass(
        name, fields, frozen=True, slots=True, kw_only=True, namespace=namespace
    )


@functools.cache
def controlled_shutdown_request(version: int) -> type:
    flexible = version >= FIRST_FLEXIBLE_VERSION
    header = request_header_v2.RequestHeader if flexible else request_header_v1.RequestHeader
    fields: list[tuple[str, Any, Any]] = [
        ("broker_id", i32, field(metadata={"kafka_type": "int32"})),
    ]
    if version >= FIRST_VERSION_WITH_BROKER_EPOCH:
        epoch_field = field(metadata={"kafka_type": "int64"}, default=i64(UNKNOWN_BROKER_EPOCH))
        fields.append(("broker_epoch", i64, epoch_field))
    namespace = _namespace(version, EntityType.request, header)
    return _make("ControlledShutdownRequest", fields, namespace)


@functools.cache
def controlled_shutdown_response(version: int) -> type:
    flexible = version >= FIRST_FLEXIBLE_VERSION
    header = response_header_v1.ResponseHeader if flexible else response_header_v0.ResponseHeader
    remaining = _make(
        "RemainingPartition",
        [
            ("topic_name", str, field(metadata={"kafka_type": "string"})),
            ("partition_index", i32, field(metadata={"kafka_type": "int32"})),
        ],
        _namespace(version, EntityType.nested, header),
    )
    fields: list[tuple[str, Any, Any]] = [
        ("error_code", ErrorCode, field(metadata={"kafka_type": "error_code"})),
        ("remaining_partitions", tuple[remaining, ...], field()),  # type: ignore[valid-type]
    ]
    namespace = _namespace(version, EntityType.response, header)
    return _make("ControlledShutdownResponse", fields, namespace)


def zk_broker_request_class(api_key: int, version: int) -> type | None:
    if api_key != ApiKey.CONTROLLED_SHUTDOWN:
        return controller_request_class(api_key, version)
    if not FIRST_DECODABLE_VERSION <= version <= LAST_VERSION:
        return None
    return controlled_shutdown_request(version)


def zk_broker_response_class(api_key: int, version: int) -> type | None:
    if api_key != ApiKey.CONTROLLED_SHUTDOWN:
        return controller_response_class(api_key, version)
    if not FIRST_DECODABLE_VERSION <= version <= LAST_VERSION:
        return None
    return controlled_shutdown_response(version)
