"""Version-agnostic response building on top of kio's one-class-per-version schema.

Handlers describe a response as plain dicts with the union of all versions' fields; `build`
turns that into the kio entity of the request's version, dropping fields the version lacks and
converting Kafka-typed primitives (error codes, millisecond durations, timestamps, UUIDs).
"""

from __future__ import annotations

import datetime
import functools
import io
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial import entity_writer


@dataclass(frozen=True, slots=True)
class _FieldSpec:
    name: str
    kafka_type: str | None
    nested: type | None
    required: bool


def _nested_entity(hint: Any) -> type | None:
    """The entity class inside `X`, `X | None` or `tuple[X, ...]`, if any."""
    origin = typing.get_origin(hint)
    if origin is tuple or origin in (typing.Union, types.UnionType):
        for argument in typing.get_args(hint):
            found = _nested_entity(argument)
            if found is not None:
                return found
        return None
    return hint if isinstance(hint, type) and is_dataclass(hint) else None


@functools.cache
def _specs(cls: type) -> tuple[_FieldSpec, ...]:
    hints = typing.get_type_hints(cls)
    return tuple(
        _FieldSpec(
            name=f.name,
            kafka_type=f.metadata.get("kafka_type"),
            nested=_nested_entity(hints[f.name]),
            required=f.default is MISSING and f.default_factory is MISSING,
        )
        for f in fields(cls)
    )


def _millis(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def _timestamp(value: int | None) -> datetime.datetime | None:
    if value is None or value < 0:
        return None
    return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)


def _uuid(value: uuid.UUID | bytes | None) -> uuid.UUID | None:
    if value is None or isinstance(value, uuid.UUID):
        return value
    return uuid.UUID(bytes=value)


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "error_code": ErrorCode,
    "timedelta_i32": _millis,
    "timedelta_i64": _millis,
    "datetime_i64": _timestamp,
    "uuid": _uuid,
}


def _convert(spec: _FieldSpec, value: Any) -> Any:
    if spec.nested is not None and value is not None:
        if isinstance(value, list | tuple):
            return tuple(build(spec.nested, item) for item in value)
        return build(spec.nested, value)
    if isinstance(value, list):
        return tuple(value)
    converter = _CONVERTERS.get(spec.kafka_type or "")
    if converter is not None and not isinstance(value, ErrorCode | datetime.timedelta):
        return converter(value)
    return value


def build(cls: type, values: Mapping[str, Any]) -> Any:
    kwargs: dict[str, Any] = {}
    for spec in _specs(cls):
        if spec.name in values:
            kwargs[spec.name] = _convert(spec, values[spec.name])
        elif spec.required:
            raise KeyError(f"{cls.__qualname__} v{cls.__version__} needs field {spec.name!r}")  # type: ignore[attr-defined]
    return cls(**kwargs)


def has_field(cls: type, name: str) -> bool:
    return any(spec.name == name for spec in _specs(cls))


def encode(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


@dataclass(frozen=True, slots=True)
class Encoded:
    """A response body a handler encoded itself (see fetch_encoding), as buffers to write in
    order; the connection sends it as it is."""

    parts: list[bytes]


def encode_parts(response: Any) -> list[bytes]:
    """A handler's response (a kio entity or `Encoded`) as buffers to write in order."""
    if isinstance(response, Encoded):
        return response.parts
    return [encode(response)]


def millis(value: datetime.timedelta) -> int:
    return round(value.total_seconds() * 1000)
