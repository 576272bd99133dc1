"""Sparse segment indexes in Kafka's file formats.

`.index`: entries of (relative offset i32, file position i32), big-endian, 8 bytes each.
`.timeindex`: entries of (timestamp i64, relative offset i32), big-endian, 12 bytes each.
Files are appended to with plain writes (no preallocation), so what is on disk is always exactly
the entries; an in-memory copy of the two columns serves lookups by binary search.
"""

from __future__ import annotations

import bisect
import operator
import os
import struct
from array import array
from pathlib import Path

from broker.log.errors import LogCorruptError

INT32_MAX = 2**31 - 1


class CorruptIndexError(LogCorruptError):
    """An index failed its sanity check; the caller rebuilds it from the segment."""


def _strictly_increasing(values: array[int]) -> bool:
    return all(map(operator.lt, values, values[1:]))


def _non_decreasing(values: array[int]) -> bool:
    return all(map(operator.le, values, values[1:]))


class _SparseIndex:
    """Two parallel columns (key, value) persisted as fixed-size big-endian entries."""

    entry_struct: struct.Struct
    key_type: str
    value_type: str

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(max_index_bytes // self.entry_struct.size, 1)
        self.keys: array[int] = array(self.key_type)
        self.values: array[int] = array(self.value_type)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            self._load()
        except CorruptIndexError:
            self.close()
            raise

    def _load(self) -> None:
        data = os.pread(self._fd, os.fstat(self._fd).st_size, 0)
        if len(data) % self.entry_struct.size:
            raise CorruptIndexError(f"{self.path}: size {len(data)} is not a whole entry count")
        for key, value in self.entry_struct.iter_unpack(data):
            self.keys.append(key)
            self.values.append(value)

    @property
    def entries(self) -> int:
        return len(self.keys)

    @property
    def is_full(self) -> bool:
        return len(self.keys) >= self.max_entries

    @property
    def size_bytes(self) -> int:
        return len(self.keys) * self.entry_struct.size

    def _append_entry(self, key: int, value: int) -> None:
        os.write(self._fd, self.entry_struct.pack(key, value))
        self.keys.append(key)
        self.values.append(value)

    def _truncate_entries(self, entries: int) -> None:
        del self.keys[entries:]
        del self.values[entries:]
        os.ftruncate(self._fd, entries * self.entry_struct.size)

    def reset(self) -> None:
        self._truncate_entries(0)

    def flush(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def rename(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path


class OffsetIndex(_SparseIndex):
    """Maps offsets to the file position of the batch holding them (a lower bound)."""

    entry_struct = struct.Struct(">ii")
    key_type = "i"
    value_type = "i"

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.keys[-1] if self.keys else self.base_offset

    def append(self, offset: int, position: int) -> None:
        relative_offset = offset - self.base_offset
        if self.keys and relative_offset <= self.keys[-1]:
            raise ValueError(f"index offset {offset} not above last entry {self.last_offset}")
        self._append_entry(relative_offset, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the greatest entry <= offset, else (base_offset, 0)."""
        slot = bisect.bisect_right(self.keys, offset - self.base_offset) - 1
        if slot < 0:
            return self.base_offset, 0
        return self.base_offset + self.keys[slot], self.values[slot]

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= `offset`."""
        self._truncate_entries(bisect.bisect_left(self.keys, offset - self.base_offset))

    def sanity_check(self, log_size_bytes: int) -> None:
        if not self.keys:
            return
        if self.keys[0] < 0 or not _strictly_increasing(self.keys):
            raise CorruptIndexError(f"{self.path}: offsets are not increasing")
        if self.values[0] < 0 or not _strictly_increasing(self.values):
            raise CorruptIndexError(f"{self.path}: positions are not increasing")
        if self.values[-1] >= log_size_bytes:
            raise CorruptIndexError(f"{self.path}: position beyond the segment's end")


class TimeIndex(_SparseIndex):
    """Maps timestamps to the offset of the batch where the max timestamp so far was seen."""

    entry_struct = struct.Struct(">qi")
    key_type = "q"
    value_type = "i"

    @property
    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, or (-1, base_offset) when empty."""
        if not self.keys:
            return -1, self.base_offset
        return self.keys[-1], self.base_offset + self.values[-1]

    def maybe_append(self, timestamp_ms: int, offset: int, skip_full_check: bool = False) -> None:
        """Append only when the timestamp grows past the last entry's, so timestamps stay
        strictly increasing. An empty index counts as ending at timestamp -1, as Kafka's does:
        a segment closed without a timestamped batch (an empty one) keeps an empty `.timeindex`,
        byte for byte what Kafka leaves in a log dir."""
        if not skip_full_check and self.is_full:
            return
        if timestamp_ms <= self.last_entry[0]:
            return
        self._append_entry(timestamp_ms, max(offset - self.base_offset, 0))

    def lookup(self, timestamp_ms: int) -> tuple[int, int]:
        """(timestamp, offset) of the greatest entry with timestamp <= target.

        Falls back to (-1, base_offset) so a scan starts at the segment's beginning.
        """
        slot = bisect.bisect_right(self.keys, timestamp_ms) - 1
        if slot < 0:
            return -1, self.base_offset
        return self.keys[slot], self.base_offset + self.values[slot]

    def truncate_to(self, offset: int) -> None:
        """Drop entries pointing at offsets >= `offset`."""
        self._truncate_entries(bisect.bisect_left(self.values, offset - self.base_offset))

    def sanity_check(self) -> None:
        if not self.keys:
            return
        if not _strictly_increasing(self.keys):
            raise CorruptIndexError(f"{self.path}: timestamps are not increasing")
        if self.values[0] < 0 or not _non_decreasing(self.values):
            raise CorruptIndexError(f"{self.path}: offsets are decreasing")

    def check_offset_bound(self, next_offset: int) -> None:
        """Entries must point inside the segment's offsets."""
        if self.keys and self.base_offset + self.values[-1] >= max(
            next_offset, self.base_offset + 1
        ):
            raise CorruptIndexError(f"{self.path}: entry beyond the segment's last offset")
