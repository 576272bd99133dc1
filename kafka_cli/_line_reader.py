"""The console producer's line format (Kafka's LineMessageReader, with KIP-798 headers).

Properties (`--property k=v`) and their defaults:
parse.key=false, key.separator=<TAB>, parse.headers=false, headers.delimiter=<TAB>,
headers.separator=, (a regular expression), headers.key.separator=:, ignore.error=false,
null.marker (unset: a field equal to it becomes null).

    parse.headers=true and parse.key=true:  h1:v1,h2:v2<TAB>key<TAB>value
    parse.key=true:                         key<TAB>value
    parse.headers=true:                     h1:v1,h2:v2<TAB>value
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kafka_cli.common import ToolError

Headers = list[tuple[str, bytes | None]]


@dataclass(frozen=True)
class LineRecord:
    key: bytes | None
    value: bytes | None
    headers: Headers


def _flag(properties: Mapping[str, str], name: str) -> bool:
    return properties.get(name, "false").strip().lower() == "true"


class LineReader:
    def __init__(self, properties: Mapping[str, str]) -> None:
        self.parse_key = _flag(properties, "parse.key")
        self.key_separator = properties.get("key.separator", "\t")
        self.parse_headers = _flag(properties, "parse.headers")
        self.headers_delimiter = properties.get("headers.delimiter", "\t")
        self.headers_separator = properties.get("headers.separator", ",")
        self.headers_key_separator = properties.get("headers.key.separator", ":")
        self.ignore_error = _flag(properties, "ignore.error")
        self.null_marker = properties.get("null.marker")
        self._check_separators()
        try:
            self.headers_pattern = re.compile(self.headers_separator)
        except re.error as error:
            raise ToolError(f"Invalid headers.separator '{self.headers_separator}'") from error
        self.line_number = 0

    def _check_separators(self) -> None:
        """Kafka's checks: separators that could not be told apart are refused up front."""
        named = {
            "headers.delimiter": self.headers_delimiter,
            "headers.separator": self.headers_separator,
            "headers.key.separator": self.headers_key_separator,
        }
        names = list(named)
        for index, first in enumerate(names):
            for second in names[index + 1 :]:
                if named[first] == named[second]:
                    raise ToolError(f"{first} and {second} may not be equal")
        if self.null_marker is None:
            return
        for name, separator in {"key.separator": self.key_separator, **named}.items():
            if self.null_marker == separator:
                raise ToolError(f"null.marker and {name} may not be equal")

    def read(self, line: str) -> LineRecord:
        """One record from one line (without its line ending). With ignore.error=true a
        missing separator leaves that field null instead of failing."""
        self.line_number += 1
        headers = self._field(self.parse_headers, line, 0, self.headers_delimiter, "headers")
        header_end = 0 if headers is None else len(headers) + len(self.headers_delimiter)
        key = self._field(self.parse_key, line, header_end, self.key_separator, "key")
        key_end = 0 if key is None else len(key) + len(self.key_separator)
        value = line[header_end + key_end :]
        return LineRecord(
            key=self._bytes_or_null(key),
            value=self._bytes_or_null(value),
            headers=[] if headers is None or headers == self.null_marker else self._split(headers),
        )

    def _field(self, enabled: bool, line: str, start: int, separator: str, name: str) -> str | None:
        if not enabled:
            return None
        end = line.find(separator, start)
        if end >= 0:
            return line[start:end]
        if self.ignore_error:
            return None
        raise ToolError(f"No {name} separator found on line number {self.line_number}: '{line}'")

    def _bytes_or_null(self, text: str | None) -> bytes | None:
        if text is None or text == self.null_marker:
            return None
        return text.encode("utf-8")

    def _split(self, headers: str) -> Headers:
        pairs = self.headers_pattern.split(headers)
        while pairs and pairs[-1] == "":  # as Java's Pattern.split drops trailing empties
            pairs.pop()
        parsed: Headers = []
        for pair in pairs:
            at = pair.find(self.headers_key_separator)
            if at < 0:
                if not self.ignore_error:
                    raise ToolError(
                        f"No header key separator found in pair '{pair}' on line number "
                        f"{self.line_number}"
                    )
                parsed.append((pair, None))
                continue
            header_key = pair[:at]
            if header_key == self.null_marker:
                raise ToolError(
                    f"Header keys should not be equal to the null marker '{self.null_marker}' "
                    "as they can't be null"
                )
            parsed.append(
                (header_key, self._bytes_or_null(pair[at + len(self.headers_key_separator) :]))
            )
        return parsed
