"""Prove a request body is safe to hand to kio's native parser, before it sees a byte.

kio's Rust parser reserves memory for whatever element count an array prefix claims; a failed
allocation aborts the whole process, with no exception to catch. So every body walks through
this checker first. It follows the same schema kio does (the entity dataclasses, their
`kafka_type` metadata, flexible versions and tagged fields) and checks each length and count
against the bytes left, as Kafka's generated readers do ("Tried to allocate a collection of
size N, but there are only R bytes remaining"). It reads no values and builds nothing.

A checker is compiled once per entity class into nested closures. `marks`, when given, collects
the position and encoding of every length or count prefix, so the fuzzer can aim at them.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
import types
import typing
from collections.abc import Callable
from typing import Any

Buffer = bytes | bytearray | memoryview
Marks = list[tuple[int, str]] | None
# (data, position, end, marks) -> position after the field
Checker = Callable[[Buffer, int, int, Marks], int]

# Encodings of length prefixes, as recorded in marks.
INT16_LENGTH = "int16"
INT32_LENGTH = "int32"
UVARINT_LENGTH = "uvarint"

_MAX_UVARINT_BYTES = 5  # Kafka's readUnsignedVarint refuses longer encodings
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

_FIXED_WIDTH_BYTES = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}


class BoundsError(ValueError):
    """A length or count that does not fit the bytes left; the request must be dropped."""


def check_body(cls: type, data: Buffer, position: int, marks: Marks = None) -> int:
    """Walk one `cls` entity at `position`; return where it ends. Raises BoundsError."""
    return _entity_checker(cls)(data, position, len(data), marks)


def length_positions(cls: type, data: Buffer, position: int) -> list[tuple[int, str]]:
    """(position, encoding) of every length and count prefix of a well-formed body."""
    marks: list[tuple[int, str]] = []
    check_body(cls, data, position, marks)
    return marks


# ---- primitives --------------------------------------------------------------------------


def _need(position: int, size: int, end: int, what: str) -> int:
    if size > end - position:
        raise BoundsError(f"{what} needs {size} bytes but {max(end - position, 0)} remain")
    return position + size


def _read_uvarint(data: Buffer, position: int, end: int, what: str) -> tuple[int, int]:
    value = 0
    for index in range(_MAX_UVARINT_BYTES):
        if position >= end:
            raise BoundsError(f"{what}: unsigned varint runs past the end")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return value, position
    raise BoundsError(f"{what}: unsigned varint longer than {_MAX_UVARINT_BYTES} bytes")


def _read_prefix(
    data: Buffer, position: int, end: int, marks: Marks, flexible: bool, wide: bool, what: str
) -> tuple[int | None, int]:
    """A length or count prefix: None for null, else the length. Compact prefixes hold N+1."""
    if flexible:
        if marks is not None:
            marks.append((position, UVARINT_LENGTH))
        raw, position = _read_uvarint(data, position, end, what)
        return (None if raw == 0 else raw - 1), position
    if marks is not None:
        marks.append((position, INT32_LENGTH if wide else INT16_LENGTH))
    fixed = _I32 if wide else _I16
    _need(position, fixed.size, end, what)
    (length,) = fixed.unpack_from(data, position)
    position += fixed.size
    if length == -1:
        return None, position
    if length < 0:
        raise BoundsError(f"{what}: negative length {length}")
    return length, position


def _sized_checker(flexible: bool, wide: bool, nullable: bool, what: str) -> Checker:
    """string (int16 legacy prefix), bytes and records (int32 legacy prefix)."""

    def check(data: Buffer, position: int, end: int, marks: Marks) -> int:
        length, position = _read_prefix(data, position, end, marks, flexible, wide, what)
        if length is None:
            if not nullable:
                raise BoundsError(f"{what}: null in a non-nullable field")
            return position
        return _need(position, length, end, what)

    return check


def _fixed_checker(width: int, what: str) -> Checker:
    def check(data: Buffer, position: int, end: int, marks: Marks) -> int:
        return _need(position, width, end, what)

    return check


def _array_checker(element: Checker, flexible: bool, nullable: bool, what: str) -> Checker:
    def check(data: Buffer, position: int, end: int, marks: Marks) -> int:
        count, position = _read_prefix(data, position, end, marks, flexible, True, what)
        if count is None:
            if not nullable:
                raise BoundsError(f"{what}: null in a non-nullable array")
            return position
        # Every element takes at least one byte, so no honest count exceeds the bytes left.
        if count > end - position:
            raise BoundsError(f"{what}: {count} elements but {end - position} bytes remain")
        for _ in range(count):
            position = element(data, position, end, marks)
        return position

    return check


# ---- schema compilation ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Shape:
    element: type  # the entity class or primitive type inside optional/tuple wrappers
    is_array: bool
    nullable: bool


def _shape(hint: Any) -> _Shape:
    nullable = False
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        arguments = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(arguments) != len(typing.get_args(hint))
        if len(arguments) != 1:
            raise TypeError(f"unsupported union {hint}")
        hint = arguments[0]
    if typing.get_origin(hint) is tuple:
        return _Shape(typing.get_args(hint)[0], True, nullable)
    return _Shape(hint, False, nullable)


def _primitive_checker(kafka_type: str, flexible: bool, nullable: bool, what: str) -> Checker:
    width = _FIXED_WIDTH_BYTES.get(kafka_type)
    if width is not None:
        return _fixed_checker(width, what)
    if kafka_type == "string":
        return _sized_checker(flexible, False, nullable, what)
    if kafka_type in ("bytes", "records"):
        return _sized_checker(flexible, True, nullable, what)
    raise TypeError(f"{what}: no bounds rule for kafka_type {kafka_type!r}")


def _field_checker(owner: type, field: dataclasses.Field[Any], hint: Any) -> Checker:
    flexible = bool(owner.__flexible__)  # type: ignore[attr-defined]
    what = f"{owner.__qualname__}.{field.name}"
    shape = _shape(hint)
    if dataclasses.is_dataclass(shape.element):
        if not shape.is_array and shape.nullable:
            raise TypeError(f"{what}: nullable structs are not supported")
        element = _entity_checker(shape.element)
    else:
        kafka_type = field.metadata["kafka_type"]
        element_nullable = shape.nullable and not shape.is_array
        element = _primitive_checker(kafka_type, flexible, element_nullable, what)
    if shape.is_array:
        return _array_checker(element, flexible, shape.nullable, what)
    return element


def _fixed_width(field: dataclasses.Field[Any], hint: Any) -> int | None:
    shape = _shape(hint)
    if shape.is_array or dataclasses.is_dataclass(shape.element):
        return None
    return _FIXED_WIDTH_BYTES.get(field.metadata.get("kafka_type", ""))


@functools.cache
def _entity_checker(cls: type) -> Checker:
    hints = typing.get_type_hints(cls)
    regular: list[Checker] = []
    tagged: dict[int, Checker] = {}
    run_bytes = 0  # consecutive fixed-width fields are checked as one run (hot path speed)
    for field in dataclasses.fields(cls):
        if "tag" in field.metadata:
            tagged[int(field.metadata["tag"])] = _field_checker(cls, field, hints[field.name])
            continue
        width = _fixed_width(field, hints[field.name])
        if width is not None:
            run_bytes += width
            continue
        if run_bytes:
            regular.append(_fixed_checker(run_bytes, cls.__qualname__))
            run_bytes = 0
        regular.append(_field_checker(cls, field, hints[field.name]))
    if run_bytes:
        regular.append(_fixed_checker(run_bytes, cls.__qualname__))
    steps = tuple(regular)
    if not cls.__flexible__:  # type: ignore[attr-defined]
        return _sequence_checker(steps)
    return _flexible_checker(steps, tagged, cls.__qualname__)


def _sequence_checker(steps: tuple[Checker, ...]) -> Checker:
    def check(data: Buffer, position: int, end: int, marks: Marks) -> int:
        for step in steps:
            position = step(data, position, end, marks)
        return position

    return check


def _flexible_checker(steps: tuple[Checker, ...], tagged: dict[int, Checker], what: str) -> Checker:
    def check(data: Buffer, position: int, end: int, marks: Marks) -> int:
        for step in steps:
            position = step(data, position, end, marks)
        return check_tagged_fields(data, position, end, marks, tagged, what)

    return check


def check_tagged_fields(
    data: Buffer,
    position: int,
    end: int,
    marks: Marks,
    known: dict[int, Checker] | None = None,
    what: str = "tagged fields",
) -> int:
    """The tagged-field section: a count, then (tag, size, data) per field.

    A tag the schema knows must fill exactly its declared size, so the native parser reads it
    along the same path this check took.
    """
    if marks is None and position < end and data[position] == 0:
        return position + 1  # no tagged fields: the common case
    if marks is not None:
        marks.append((position, UVARINT_LENGTH))
    count, position = _read_uvarint(data, position, end, what)
    if count > end - position:
        raise BoundsError(f"{what}: {count} tagged fields but {end - position} bytes remain")
    for _ in range(count):
        tag, position = _read_uvarint(data, position, end, what)
        if marks is not None:
            marks.append((position, UVARINT_LENGTH))
        size, position = _read_uvarint(data, position, end, what)
        field_end = _need(position, size, end, f"{what} tag {tag}")
        checker = (known or {}).get(tag)
        if checker is not None and checker(data, position, field_end, marks) != field_end:
            raise BoundsError(f"{what} tag {tag}: value does not fill its {size} bytes")
        position = field_end
    return position
