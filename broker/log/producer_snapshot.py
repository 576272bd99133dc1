"""Producer-state snapshots, `<offset>.snapshot` in the partition directory, in Kafka's format
(ProducerStateManager, version 1), so Kafka's DumpLogSegments reads them.

A snapshot at offset S holds the producer state of the batches below S: per producer its
epoch, its latest batch (last sequence, last offset, offset delta, max timestamp), the
coordinator epoch of its last marker and the first offset of its open transaction (-1 for
none). The file: version (i16, 1), CRC-32C (u32) of everything after it, then the entries
(i32 count; each i64 producer id, i16 epoch, i32 last sequence, i64 last offset, i32 offset
delta, i64 timestamp, i32 coordinator epoch, i64 current transaction first offset).

They are written when a segment rolls (S is the new segment's base offset) and when the log
closes cleanly (S is its end), so that loading and truncation replay only the batches from S
on instead of the whole log.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from crc32c import crc32c

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
NO_OFFSET = -1


class SnapshotError(Exception):
    """A snapshot file that cannot be used (torn, corrupt, another version)."""


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    producer_id: int
    producer_epoch: int
    last_sequence: int  # -1 when no batch of this producer is retained
    last_offset: int  # -1 likewise
    offset_delta: int  # last offset minus first offset of that batch
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int  # -1 when no transaction is open


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def snapshot_offsets(directory: Path) -> list[int]:
    """The offsets of the snapshot files in `directory`, ascending."""
    offsets = []
    for path in directory.glob(f"*{SNAPSHOT_SUFFIX}"):
        stem = path.name[: -len(SNAPSHOT_SUFFIX)]
        if stem.isdigit():
            offsets.append(int(stem))
    return sorted(offsets)


def encode_snapshot(entries: list[SnapshotEntry]) -> bytes:
    body = _COUNT.pack(len(entries)) + b"".join(
        _ENTRY.pack(
            e.producer_id,
            e.producer_epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
        for e in entries
    )
    return _HEADER.pack(SNAPSHOT_VERSION, crc32c(body)) + body


def decode_snapshot(data: bytes) -> list[SnapshotEntry]:
    if len(data) < _HEADER.size + _COUNT.size:
        raise SnapshotError(f"{len(data)} bytes is too short for a snapshot")
    version, crc = _HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise SnapshotError(f"version {version}, expected {SNAPSHOT_VERSION}")
    body = memoryview(data)[_HEADER.size :]
    if crc32c(body) != crc:
        raise SnapshotError("CRC mismatch")
    (count,) = _COUNT.unpack_from(body)
    if count < 0 or _COUNT.size + count * _ENTRY.size != len(body):
        raise SnapshotError(f"{count} entries do not fill {len(body)} bytes")
    return [
        SnapshotEntry(*_ENTRY.unpack_from(body, _COUNT.size + n * _ENTRY.size))
        for n in range(count)
    ]


def read_snapshot(path: Path) -> list[SnapshotEntry]:
    """Raises SnapshotError for a file that cannot be used, OSError if it cannot be read."""
    return decode_snapshot(path.read_bytes())


def write_snapshot(path: Path, entries: list[SnapshotEntry]) -> None:
    """Written in place, as Kafka does (blocking: the log's worker, or the shutdown). Readers
    hold the log's lifecycle lock as the writer does, so only a crash can leave a partial
    file: it fails its CRC and is ignored, and loading trusts none above the recovery point.
    No temp file and rename: at shutdown 5,000 of them took twice as long."""
    path.write_bytes(encode_snapshot(entries))


def delete_snapshots(directory: Path, keep_from: int, keep_to: int) -> None:
    """Delete the snapshots outside [keep_from, keep_to] (blocking: the log's worker)."""
    for offset in snapshot_offsets(directory):
        if not keep_from <= offset <= keep_to:
            snapshot_path(directory, offset).unlink(missing_ok=True)
