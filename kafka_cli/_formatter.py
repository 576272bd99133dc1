"""The console consumer's output (Kafka's DefaultMessageFormatter).

Properties (`--property k=v`): print.timestamp, print.partition, print.offset, print.headers,
print.key (all false), print.value (true), key.separator (TAB, between columns),
line.separator (newline), headers.separator (`,`), null.literal (`null`). Columns appear in
that order:

    CreateTime:1700000000000<TAB>Partition:0<TAB>Offset:5<TAB>h1:v1,h2:v2<TAB>key<TAB>value

Deserializer properties are accepted and ignored: keys, values and headers print as raw bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# confluent_kafka's Message.timestamp() types.
TIMESTAMP_NOT_AVAILABLE = 0
TIMESTAMP_CREATE_TIME = 1
TIMESTAMP_LOG_APPEND_TIME = 2
TIMESTAMP_TYPE_NAMES = {
    TIMESTAMP_CREATE_TIME: "CreateTime",
    TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime",
}


@dataclass(frozen=True)
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    timestamp_type: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes | None]]


def _flag(properties: Mapping[str, str], name: str, default: bool) -> bool:
    if name not in properties:
        return default
    return properties[name].strip().lower() == "true"


def _bytes(properties: Mapping[str, str], name: str, default: str) -> bytes:
    return properties.get(name, default).encode("utf-8")


class MessageFormatter:
    def __init__(self, properties: Mapping[str, str]) -> None:
        self.print_timestamp = _flag(properties, "print.timestamp", False)
        self.print_partition = _flag(properties, "print.partition", False)
        self.print_offset = _flag(properties, "print.offset", False)
        self.print_headers = _flag(properties, "print.headers", False)
        self.print_key = _flag(properties, "print.key", False)
        self.print_value = _flag(properties, "print.value", True)
        self.key_separator = _bytes(properties, "key.separator", "\t")
        self.line_separator = _bytes(properties, "line.separator", "\n")
        self.headers_separator = _bytes(properties, "headers.separator", ",")
        self.null_literal = _bytes(properties, "null.literal", "null")

    def format(self, record: ConsumedRecord) -> bytes:
        """The enabled columns joined by key.separator, then line.separator."""
        columns = self._columns(record)
        if not columns:
            return b""
        return self.key_separator.join(columns) + self.line_separator

    def _columns(self, record: ConsumedRecord) -> list[bytes]:
        columns: list[bytes] = []
        if self.print_timestamp:
            name = TIMESTAMP_TYPE_NAMES.get(record.timestamp_type)
            columns.append(f"{name}:{record.timestamp_ms}".encode() if name else b"NO_TIMESTAMP")
        if self.print_partition:
            columns.append(f"Partition:{record.partition}".encode())
        if self.print_offset:
            columns.append(f"Offset:{record.offset}".encode())
        if self.print_headers:
            columns.append(self._headers(record.headers))
        if self.print_key:
            columns.append(self._or_null(record.key))
        if self.print_value:
            columns.append(self._or_null(record.value))
        return columns

    def _headers(self, headers: Sequence[tuple[str, bytes | None]]) -> bytes:
        if not headers:
            return b"NO_HEADERS"
        return self.headers_separator.join(
            key.encode("utf-8") + b":" + self._or_null(value) for key, value in headers
        )

    def _or_null(self, data: bytes | None) -> bytes:
        return self.null_literal if data is None else data
