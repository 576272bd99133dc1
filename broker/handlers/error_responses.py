"""Responses that answer a request entry by entry with errors, as Kafka's
`AbstractRequest.getErrorResponse` builds them: each topic, partition, group or resource the
request names comes back with the error, so that a client learns what failed and why.

An API declares its shape once, as `Echo`s: which request list is answered in which response
list, and which key fields are copied. Every other field of an entry is empty (see
`adapter.filled`), every error code the entry's error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from broker.protocol import adapter

ITSELF = ""  # a key taken from the item itself: lists of names or of partition indexes


@dataclass(frozen=True, slots=True)
class Echo:
    """Response list `into` gets one entry per item of request list `source` (a dotted path
    walks nested lists: `dirs.topics` is every topic of every dir). `keys` maps a response
    field to the request field it copies (or ITSELF); `constants` are fields Kafka sets to
    something other than empty; `nested` lists are echoed the same way inside each entry."""

    source: str
    into: str
    keys: Mapping[str, str] = field(default_factory=dict)
    nested: tuple[Echo, ...] = ()
    constants: Mapping[str, Any] = field(default_factory=dict)


ErrorOf = Callable[[Any], ErrorCode]


def items_of(owner: Any, source: str) -> list[Any]:
    """The items at `source` under `owner` (none where a version lacks the list or it is
    null)."""
    items = [owner]
    for name in source.split("."):
        items = [item for parent in items for item in (getattr(parent, name, None) or ())]
    return items


def entry_values(echo: Echo, item: Any) -> dict[str, Any]:
    """One response entry for `item`, as values for `adapter.filled`."""
    values: dict[str, Any] = dict(echo.constants)
    for target, source in echo.keys.items():
        value = item if source == ITSELF else getattr(item, source, None)
        if value is not None:
            values[target] = value
    for inner in echo.nested:
        values[inner.into] = [entry_values(inner, i) for i in items_of(item, inner.source)]
    return values


def entries(
    response_cls: type, echo: Echo, items: Iterable[Any], error_of: ErrorOf
) -> tuple[Any, ...]:
    """The entries of `response_cls`'s list `echo.into` answering `items`, each with its
    error."""
    entry_cls = adapter.nested_class(response_cls, echo.into)
    return tuple(adapter.filled(entry_cls, entry_values(echo, i), error_of(i)) for i in items)


def error_response(
    response_cls: type,
    request: Any,
    echoes: Iterable[Echo],
    error: ErrorCode,
    error_of: ErrorOf | None = None,
) -> Any:
    """The whole request answered: every echoed entry with `error_of(item)` (default
    `error`), every other error code, top-level ones included, `error`."""
    values: dict[str, list[Any]] = {}
    for echo in echoes:
        if not adapter.has_field(response_cls, echo.into):
            continue
        items = items_of(request, echo.source)
        values.setdefault(echo.into, []).extend(
            entries(response_cls, echo, items, error_of or (lambda _item: error))
        )
    return adapter.filled(response_cls, values, error)
