"""Compare the replicas of each partition on disk: the segment files `<log.dir>/<topic>-<p>/
<20-digit base offset>.log` of every broker in the assignment must have the same names and,
concatenated, the same bytes.

Brokers append with os.write, so another process sees every byte as soon as the append
returns; no flush is needed before reading. Replicas only agree once followers have caught up,
so callers compare after producing has stopped and poll until it holds (bounded).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

# RecordBatch v2: baseOffset int64, batchLength int32 (bytes after this field), ...,
# lastOffsetDelta int32 at byte 23.
BATCH_HEAD = struct.Struct(">qi")
LAST_OFFSET_DELTA = struct.Struct(">i")
LAST_OFFSET_DELTA_AT = 23
PRODUCER_EPOCH = struct.Struct(">h")
PRODUCER_EPOCH_AT = 51
SEGMENT_NAME_DIGITS = 20
CHUNK_BYTES = 65536


@dataclass(frozen=True, slots=True)
class ReplicaLog:
    broker: int
    segments: tuple[str, ...]  # .log file names, in base offset order
    size_bytes: int
    sha256: str
    log_end_offset: int  # after the last whole batch; 0 when empty or missing
    missing: bool  # no partition directory in any of the broker's log dirs


@dataclass(frozen=True, slots=True)
class Divergence:
    partition: int
    replicas: list[ReplicaLog]
    first_difference_byte: int | None  # where the first two differing replicas part

    def describe(self) -> str:
        parts = [
            f"broker {r.broker}: {'missing' if r.missing else ','.join(r.segments) or 'no .log'}"
            f" {r.size_bytes} B end offset {r.log_end_offset} sha256 {r.sha256[:12]}"
            for r in self.replicas
        ]
        where = self.first_difference_byte
        return f"partition {self.partition}: " + "; ".join(parts) + f"; first difference at {where}"


def _partition_dir(log_dirs: list[Path], topic: str, partition: int) -> Path | None:
    for log_dir in log_dirs:
        candidate = log_dir / f"{topic}-{partition}"
        if candidate.is_dir():
            return candidate
    return None


def _segments(directory: Path) -> list[Path]:
    found = [
        path
        for path in directory.glob("*.log")
        if len(path.stem) == SEGMENT_NAME_DIGITS and path.stem.isdigit()
    ]
    return sorted(found, key=lambda path: int(path.stem))


def _whole_batches(data: bytes) -> Iterator[tuple[int, int]]:
    """(position, base offset) of each whole batch; a torn tail is ignored."""
    position = 0
    while position + PRODUCER_EPOCH_AT + PRODUCER_EPOCH.size <= len(data):
        base_offset, length = BATCH_HEAD.unpack_from(data, position)
        following = position + BATCH_HEAD.size + length
        if length <= 0 or following > len(data):
            return
        yield position, base_offset
        position = following


def log_end_offset(data: bytes) -> int:
    """The offset after the last whole batch."""
    end = 0
    for position, base_offset in _whole_batches(data):
        (delta,) = LAST_OFFSET_DELTA.unpack_from(data, position + LAST_OFFSET_DELTA_AT)
        end = base_offset + delta + 1
    return end


def read_replica(
    broker: int, log_dirs: list[Path], topic: str, partition: int
) -> tuple[ReplicaLog, bytes]:
    directory = _partition_dir(log_dirs, topic, partition)
    segments = _segments(directory) if directory is not None else []
    data = b"".join(path.read_bytes() for path in segments)
    replica = ReplicaLog(
        broker,
        tuple(path.name for path in segments),
        len(data),
        hashlib.sha256(data).hexdigest(),
        log_end_offset(data),
        directory is None,
    )
    return replica, data


def _first_difference(left: bytes, right: bytes) -> int:
    # Chunks first: logs run to megabytes and the settle loop compares them often.
    common = min(len(left), len(right))
    start = 0
    while (
        start < common and left[start : start + CHUNK_BYTES] == right[start : start + CHUNK_BYTES]
    ):
        start += CHUNK_BYTES
    for index in range(start, min(start + CHUNK_BYTES, common)):
        if left[index] != right[index]:
            return index
    return common


def compare_partition(
    partition: int, replicas: list[int], log_dirs: Callable[[int], list[Path]], topic: str
) -> Divergence | None:
    """None when every replica holds the same segment names and bytes (and exists)."""
    logs = [read_replica(broker, log_dirs(broker), topic, partition) for broker in replicas]
    reference, reference_data = logs[0]
    difference: int | None = None
    for replica, data in logs[1:]:
        same = (replica.segments, replica.sha256) == (reference.segments, reference.sha256)
        if not same and difference is None:
            difference = _first_difference(reference_data, data)
    if difference is None and not any(replica.missing for replica, _ in logs):
        return None
    return Divergence(partition, [replica for replica, _ in logs], difference)


def compare_topic(
    assignment: dict[int, list[int]], log_dirs: Callable[[int], list[Path]], topic: str
) -> list[Divergence]:
    found = (compare_partition(p, r, log_dirs, topic) for p, r in sorted(assignment.items()))
    return [divergence for divergence in found if divergence is not None]


def batch_epochs(data: bytes) -> list[tuple[int, int]]:
    """(base offset, producer epoch) of each whole batch, in offset order."""
    return [
        (base_offset, PRODUCER_EPOCH.unpack_from(data, position + PRODUCER_EPOCH_AT)[0])
        for position, base_offset in _whole_batches(data)
    ]
