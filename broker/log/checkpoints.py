"""Kafka's checkpoint files: a version line, a count line, then one entry per line.

Offset checkpoints (`recovery-point-offset-checkpoint`, `replication-offset-checkpoint`,
`log-start-offset-checkpoint`, `cleaner-offset-checkpoint`): "<topic> <partition> <offset>".
The cleaner's offset is the first dirty (not yet compacted) offset of each compacted log.
Leader epoch checkpoint (per partition, `leader-epoch-checkpoint`): "<epoch> <start_offset>".
Offset checkpoint writes go to "<name>.tmp", are fsynced, then renamed over the file (and the
directory fsynced), so a crash leaves either the old or the new file, never a mix.

A leader-epoch checkpoint is overwritten in place instead: a failover rewrites thousands of
them, and on ext4 each rename over an existing file costs about a millisecond of kernel CPU
(it starts the new file's write-back), against some 20 microseconds for a write in place. A
crash mid-write can leave a mix of old and new, which the count line almost always exposes; the
log's loader checks the file against the batches anyway and rebuilds one it cannot trust
(`epoch_cache.EpochRebuilder`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
CHECKPOINT_VERSION = 0


class CheckpointError(Exception):
    """A checkpoint file that does not parse."""


def fsync_path(path: Path) -> None:
    """fsync a file or a directory named by its path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(directory: Path) -> None:
    fsync_path(directory)


def write_checkpoint_lines(path: Path, entries: Sequence[str]) -> None:
    """Write the file anew: a temporary file, fsynced, renamed over it."""
    text = _checkpoint_text(entries)
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    fsync_directory(path.parent)


def overwrite_checkpoint_lines(path: Path, entries: Sequence[str], fsync: bool = True) -> None:
    """Write the file anew in place (see the module's docstring for when that is safe)."""
    data = _checkpoint_text(entries).encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        written = os.pwrite(fd, data, 0)
        if written != len(data):
            raise OSError(f"{path}: wrote {written} of {len(data)} bytes")
        os.ftruncate(fd, len(data))
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    if fsync:
        fsync_directory(path.parent)


def _checkpoint_text(entries: Sequence[str]) -> str:
    return f"{CHECKPOINT_VERSION}\n{len(entries)}\n" + "".join(f"{e}\n" for e in entries)


def read_checkpoint_lines(
    path: Path, fields_per_line: int, short_reads_empty: bool = False
) -> list[list[str]]:
    """Entries split into fields; an absent file reads as no entries.

    With `short_reads_empty`, a file that ends before its count line (empty, or a version line
    alone) also reads as no entries, as Kafka's checkpoint reader has it: Kafka creates its
    offset checkpoint files empty when it opens them (`cleaner-offset-checkpoint` stays so
    until the cleaner first compacts something), and a log dir Kafka wrote must load here
    without a warning. The leader-epoch checkpoint keeps the stricter rule: ours is written in
    place, so a short file there is a torn write to rebuild from the log, not a fresh file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    if short_reads_empty and not lines:
        return []
    if lines and lines[0].strip() != str(CHECKPOINT_VERSION):
        raise CheckpointError(f"{path}: unsupported checkpoint version {lines[0]!r}")
    if len(lines) < 2:
        if short_reads_empty:
            return []
        raise CheckpointError(f"{path}: missing version or count line")
    try:
        expected_count = int(lines[1])
    except ValueError as error:
        raise CheckpointError(f"{path}: bad count line {lines[1]!r}") from error
    entries = [line.split() for line in lines[2:] if line.strip()]
    if len(entries) != expected_count:
        raise CheckpointError(f"{path}: expected {expected_count} entries, found {len(entries)}")
    for fields in entries:
        if len(fields) != fields_per_line:
            raise CheckpointError(f"{path}: malformed line {' '.join(fields)!r}")
    return entries


def _to_int(path: Path, text: str) -> int:
    try:
        return int(text)
    except ValueError as error:
        raise CheckpointError(f"{path}: {text!r} is not a number") from error


def read_offset_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    offsets: dict[tuple[str, int], int] = {}
    for topic, partition, offset in read_checkpoint_lines(path, 3, short_reads_empty=True):
        offsets[(topic, _to_int(path, partition))] = _to_int(path, offset)
    return offsets


def write_offset_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    entries = [f"{topic} {partition} {offset}" for (topic, partition), offset in offsets.items()]
    write_checkpoint_lines(path, entries)


def read_leader_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    return [
        (_to_int(path, epoch), _to_int(path, start_offset))
        for epoch, start_offset in read_checkpoint_lines(path, 2)
    ]


def write_leader_epoch_checkpoint(
    path: Path, entries: Sequence[tuple[int, int]], fsync: bool = True
) -> None:
    lines = [f"{epoch} {start_offset}" for epoch, start_offset in entries]
    overwrite_checkpoint_lines(path, lines, fsync)
