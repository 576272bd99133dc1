"""Reading and writing the internal topics' record schemas (`__consumer_offsets`,
`__transaction_state`): every key and value is an int16 schema version then its fields.
Non-flexible versions use int16-length strings (-1 = null), int32-length bytes and int32 array
counts; flexible ones (TransactionLogValue v1) compact lengths (unsigned varint of length + 1)
and tagged fields after each structure."""

from __future__ import annotations

import struct

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class RecordFormatError(ValueError):
    """A key or value that does not follow its schema."""


class RecordWriter:
    def __init__(self) -> None:
        self.buffer = bytearray()

    def int16(self, value: int) -> RecordWriter:
        self.buffer += _INT16.pack(value)
        return self

    def int32(self, value: int) -> RecordWriter:
        self.buffer += _INT32.pack(value)
        return self

    def int64(self, value: int) -> RecordWriter:
        self.buffer += _INT64.pack(value)
        return self

    def string(self, value: str | None) -> RecordWriter:
        if value is None:
            return self.int16(-1)
        data = value.encode("utf-8")
        if len(data) > 0x7FFF:
            raise RecordFormatError(f"string of {len(data)} bytes is too long")
        self.int16(len(data))
        self.buffer += data
        return self

    def bytes_(self, value: bytes) -> RecordWriter:
        self.int32(len(value))
        self.buffer += value
        return self

    def int8(self, value: int) -> RecordWriter:
        self.buffer += _INT8.pack(value)
        return self


class RecordReader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def _take(self, size: int) -> bytes:
        if size < 0 or self.position + size > len(self.data):
            raise RecordFormatError(f"needs {size} bytes at {self.position} of {len(self.data)}")
        chunk = self.data[self.position : self.position + size]
        self.position += size
        return chunk

    def int16(self) -> int:
        return int(_INT16.unpack(self._take(2))[0])

    def int32(self) -> int:
        return int(_INT32.unpack(self._take(4))[0])

    def int64(self) -> int:
        return int(_INT64.unpack(self._take(8))[0])

    def nullable_string(self) -> str | None:
        return self._text(self.int16())

    def string(self) -> str:
        return _required(self.nullable_string())

    def _text(self, size: int) -> str | None:
        """`size` bytes of UTF-8, None for the null length -1."""
        if size == -1:
            return None
        try:
            return self._take(size).decode("utf-8")
        except UnicodeDecodeError as error:
            raise RecordFormatError(f"string is not UTF-8: {error}") from None

    def bytes_(self) -> bytes:
        return self._take(self.int32())

    def array_count(self) -> int:
        count = self.int32()
        # Each element takes at least one byte: a forged count cannot make us loop for long.
        if count < 0 or count > len(self.data) - self.position:
            raise RecordFormatError(f"array count {count} does not fit")
        return count

    def int8(self) -> int:
        return int(_INT8.unpack(self._take(1))[0])

    def unsigned_varint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise RecordFormatError("unsigned varint longer than 5 bytes")

    def compact_nullable_string(self) -> str | None:
        return self._text(self.unsigned_varint() - 1)

    def compact_string(self) -> str:
        return _required(self.compact_nullable_string())

    def compact_array_count(self) -> int | None:
        """None for a null array."""
        count = self.unsigned_varint() - 1
        if count == -1:
            return None
        if count > len(self.data) - self.position:
            raise RecordFormatError(f"array count {count} does not fit")
        return count

    def skip_tagged_fields(self) -> None:
        for _ in range(self.unsigned_varint()):
            self.unsigned_varint()  # tag
            self._take(self.unsigned_varint())


def _required(value: str | None) -> str:
    if value is None:
        raise RecordFormatError("null where a string is required")
    return value
