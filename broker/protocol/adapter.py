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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.serial.writers import write_compact_array_length, write_legacy_array_length
from kio.static.primitive import i32

if TYPE_CHECKING:
    from broker.log.file_records import FileRecords

# A part of an encoded body: bytes, or record batches left in a segment file (a fetch's).
BodyPart = typing.Union[bytes, "FileRecords"]


@dataclass(frozen=True, slots=True)
class _FieldSpec:
    name: str
    kafka_type: str | None
    nested: type | None
    required: bool
    empty: Any  # the value `filled` gives the field when none is given


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


def _empty(hint: Any, kafka_type: str | None) -> Any:
    """A field's value in a response that answers nothing but an error: null where the
    field is nullable, an empty list, zero durations and booleans, empty strings and bytes,
    -1 for numbers (Kafka's "unknown" offsets, epochs, ids and nodes)."""
    while hasattr(hint, "__supertype__"):  # NewType names (kio's BrokerId, TopicName, ...)
        hint = hint.__supertype__
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint):
        return None
    if origin is tuple:
        return ()
    if kafka_type is not None and kafka_type.startswith("timedelta"):
        return datetime.timedelta(0)
    empties: dict[str | None, Any] = {
        "string": "",
        "bool": False,
        "bytes": b"",
        "float64": 0.0,
        "records": b"",
        "uuid": None,  # kio's zero uuid
        "datetime_i64": datetime.datetime.fromtimestamp(0, tz=datetime.UTC),
    }
    if kafka_type in empties:
        return empties[kafka_type]
    return hint(-1) if isinstance(hint, type) and issubclass(hint, int) else hint()


@functools.cache
def _specs(cls: type) -> tuple[_FieldSpec, ...]:
    hints = typing.get_type_hints(cls)
    return tuple(
        _FieldSpec(
            name=f.name,
            kafka_type=f.metadata.get("kafka_type"),
            nested=_nested_entity(hints[f.name]),
            required=f.default is MISSING and f.default_factory is MISSING,
            empty=_empty(hints[f.name], f.metadata.get("kafka_type")),
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
    if converter is not None and not isinstance(
        value, ErrorCode | datetime.timedelta | datetime.datetime
    ):
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


def filled(cls: type, values: Mapping[str, Any], error: ErrorCode) -> Any:
    """`cls` built from `values` as `build` does, but every required field missing from them
    given its empty value and every error code `error` (the shape of Kafka's
    getErrorResponse). Nested entities given as mappings are filled the same way; entities
    given built are kept as they are."""
    kwargs: dict[str, Any] = {}
    for spec in _specs(cls):
        if spec.name in values:
            kwargs[spec.name] = _filled_value(spec, values[spec.name], error)
        elif spec.kafka_type == "error_code":
            kwargs[spec.name] = error
        elif spec.required:
            kwargs[spec.name] = spec.empty
    return cls(**kwargs)


def _filled_value(spec: _FieldSpec, value: Any, error: ErrorCode) -> Any:
    if spec.nested is None:
        return _convert(spec, value)
    if isinstance(value, Mapping):
        return filled(spec.nested, value, error)
    if isinstance(value, list | tuple):
        return tuple(
            filled(spec.nested, item, error) if isinstance(item, Mapping) else item
            for item in value
        )
    return value


def has_field(cls: type, name: str) -> bool:
    return any(spec.name == name for spec in _specs(cls))


def encode(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


@dataclass(frozen=True, slots=True)
class Encoded:
    """A response body a handler encoded itself (see fetch_encoding), as buffers to write in
    order; the connection sends it as it is (record sets in files with sendfile)."""

    parts: Sequence[BodyPart]


@dataclass(frozen=True, slots=True)
class EncodedRequest:
    """A request body its sender encoded itself (see replica_request_encoding);
    `BrokerClient.send` frames it as it is and decodes the answer as `version`'s response."""

    api_key: int
    version: int
    flexible: bool
    body: bytes


def encode_parts(response: Any) -> Sequence[BodyPart]:
    """A handler's response (a kio entity or `Encoded`) as buffers to write in order."""
    if isinstance(response, Encoded):
        return response.parts
    return [encode(response)]


def millis(value: datetime.timedelta) -> int:
    return round(value.total_seconds() * 1000)


def nested_class(cls: type, name: str) -> type:
    """The entity class of `cls`'s field `name` (e.g. a response's topic entries)."""
    for spec in _specs(cls):
        if spec.name == name and spec.nested is not None:
            return spec.nested
    raise KeyError(f"{cls.__qualname__} has no entity field {name!r}")


# Bytes of the fixed-size kinds a field after a spliced array may have.
_FIXED_SIZES = {"int8": 1, "bool": 1, "int16": 2, "error_code": 2, "int32": 4, "int64": 8}


def encode_with_array(
    cls: type, values: Mapping[str, Any], array_field: str, items: list[bytes]
) -> list[bytes]:
    """`cls` built from `values` and encoded, with its array field `array_field` made of
    `items`, each an entry already encoded (so that entries that did not change are not
    encoded again): buffers to write in order.

    kio encodes the entity with the array empty, and the items go where the empty array
    was. That place is found from the end: only fixed-size fields may follow the array, and
    a flexible entity ends with its (empty) tagged fields."""
    if any(f.metadata.get("tag") is not None for f in fields(cls)):
        raise ValueError(f"{cls.__qualname__} has tagged fields: its end is not fixed")
    encoded = encode(build(cls, {**values, array_field: ()}))
    flexible = bool(cls.__flexible__)  # type: ignore[attr-defined]
    tail_bytes = _tail_bytes(cls, array_field) + (1 if flexible else 0)
    empty = _array_length(0, flexible)
    start = len(encoded) - tail_bytes - len(empty)
    if encoded[start : start + len(empty)] != empty:
        raise ValueError(f"{cls.__qualname__}: no empty {array_field} array where expected")
    length = _array_length(len(items), flexible)
    return [encoded[:start], length, *items, encoded[start + len(empty) :]]


def _array_length(count: int, flexible: bool) -> bytes:
    buffer = io.BytesIO()
    if flexible:
        write_compact_array_length(buffer, count)
    else:
        write_legacy_array_length(buffer, i32(count))
    return buffer.getvalue()


def _tail_bytes(cls: type, array_field: str) -> int:
    names = [f.name for f in fields(cls)]
    total = 0
    for field in fields(cls)[names.index(array_field) + 1 :]:
        kafka_type = field.metadata.get("kafka_type")
        if kafka_type not in _FIXED_SIZES or field.metadata.get("tag") is not None:
            raise ValueError(f"{cls.__qualname__}.{field.name} after {array_field} is not fixed")
        total += _FIXED_SIZES[kafka_type]
    return total
