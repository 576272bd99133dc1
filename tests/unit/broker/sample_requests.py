"""Well-formed sample bodies for every request version the broker decodes.

Built from kio's own schema (every field filled, arrays with two elements, tagged fields set),
then encoded with kio's writer, so they exercise every length and count prefix.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import types
import typing
import uuid
from typing import Any

from kio.serial import entity_writer

from broker.handlers import build_registry
from broker.protocol.registry import request_class

_PRIMITIVE_SAMPLES: dict[str, Any] = {
    "bool": True,
    "int8": 1,
    "uint8": 1,
    "int16": 1,
    "uint16": 1,
    "int32": 1,
    "uint32": 1,
    "int64": 1,
    "uint64": 1,
    "float64": 1.5,
    "string": "ab",
    "bytes": b"ab",
    "records": b"records",
    "uuid": uuid.UUID(int=7),
    "timedelta_i32": datetime.timedelta(milliseconds=5),
    "timedelta_i64": datetime.timedelta(milliseconds=5),
    "datetime_i64": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
}


def _unwrap(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if typing.get_origin(hint) is tuple:
        return typing.get_args(hint)[0], True
    return hint, False


def sample_entity(cls: type) -> Any:
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        element, is_array = _unwrap(hints[field.name])
        if dataclasses.is_dataclass(element):
            one: Any = sample_entity(element)  # type: ignore[arg-type]
        else:
            one = _PRIMITIVE_SAMPLES[field.metadata["kafka_type"]]
        values[field.name] = (one, one) if is_array else one
    return cls(**values)


def encode_entity(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def decodable_request_classes() -> list[type]:
    classes = []
    for spec in build_registry().all():
        for version in range(spec.min_decodable_version, spec.max_version + 1):
            classes.append(request_class(spec.api_key, version))
    return classes
