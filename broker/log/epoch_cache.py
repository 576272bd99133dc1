"""Leader epoch cache: (epoch, start offset) pairs, persisted as `leader-epoch-checkpoint`.

Followers use it to find where their log diverges from the leader's (OffsetsForLeaderEpoch).
The in-memory entries are the truth; a change only tells the owner (`on_change`), which writes
the checkpoint later, off the event loop (`EpochCheckpointWriter`). A crash before that write
leaves a stale file, which `reconcile_with_batches` corrects from the log's batches on load.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from broker.log.checkpoints import (
    CheckpointError,
    fsync_path,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from broker.log.errors import LogInvariantError

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1

logger = logging.getLogger(__name__)

EpochEntries = list[tuple[int, int]]


class LeaderEpochCache:
    def __init__(
        self,
        path: Path,
        entries: EpochEntries | None = None,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        """Reads the checkpoint unless `entries` are given; raises CheckpointError for a file
        that does not parse (the log rebuilds the cache from its batches then). Without
        `on_change`, every change is written at once (tools, tests, a log opened off-loop)."""
        self.path = path
        self.entries: EpochEntries = (
            read_leader_epoch_checkpoint(path) if entries is None else entries
        )
        if any(b <= a for (a, _), (b, _) in zip(self.entries, self.entries[1:], strict=False)):
            raise CheckpointError(f"{path}: epochs do not increase: {self.entries}")
        self.on_change = on_change
        # Bumped by every change; the writer records the version it wrote (`written_version`)
        # and the version known to be on disk (`synced_version`: fsynced, or a file-system sync).
        self.version = 0
        self.written_version = 0
        self.synced_version = 0

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED_EPOCH

    @property
    def dirty(self) -> bool:
        return self.written_version != self.version

    @property
    def unsynced(self) -> bool:
        return self.synced_version != self.version

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset`, by Kafka's LeaderEpochFileCache rules:
        nothing changes when `epoch` is the latest and started no later; otherwise the newest
        entries that conflict (an epoch not below `epoch`, or a start not below
        `start_offset`) are removed first, so that epochs and their start offsets only grow.
        A negative epoch or offset is a caller's bug (a batch without an epoch, message
        format v0/v1, is never assigned)."""
        if epoch < 0 or start_offset < 0:
            raise LogInvariantError(
                f"{self.path}: invalid leader epoch entry (epoch {epoch}, offset {start_offset})"
            )
        if self.entries and self.entries[-1][0] == epoch and self.entries[-1][1] <= start_offset:
            return
        kept = list(self.entries)
        removed: EpochEntries = []
        while kept and (kept[-1][0] >= epoch or kept[-1][1] >= start_offset):
            removed.insert(0, kept.pop())
        if len(removed) > 1 or (removed and removed[0][1] != start_offset):
            # An entry replaced at the same start offset means no data was written in its
            # epoch: expected. Anything else drops epochs the log had (Kafka warns too).
            logger.warning(
                "%s: new epoch entry (epoch %d, offset %d) caused truncation of conflicting"
                " entries %s",
                self.path,
                epoch,
                start_offset,
                removed,
            )
        self._set([*kept, (epoch, start_offset)])

    def set_entries(self, entries: Iterable[tuple[int, int]]) -> None:
        """Replace every entry (a log copy taking its source's epochs)."""
        self._set(list(entries))

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch whose range holds `offset` (-1 if the cache knows none that early)."""
        return epoch_for_offset(self.entries, offset)

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch <= requested, start offset of the next epoch), as Kafka answers."""
        if requested_epoch == UNDEFINED_EPOCH or not self.entries:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if requested_epoch == self.latest_epoch:
            return requested_epoch, log_end_offset
        later = [(e, s) for e, s in self.entries if e > requested_epoch]
        if not later:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET  # above every epoch this log has seen
        earlier = [e for e, _ in self.entries if e <= requested_epoch]
        return (earlier[-1] if earlier else requested_epoch), later[0][1]

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop epochs starting at or after `end_offset` (log truncated there)."""
        kept = [(e, s) for e, s in self.entries if s < end_offset]
        if kept != self.entries:
            self._set(kept)

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop epochs wholly below `start_offset`; the one spanning it now starts there."""
        self._set(_trimmed_from_start(self.entries, start_offset))

    def clear(self) -> None:
        self._set([])

    def write_checkpoint(self, fsync: bool = True) -> None:
        """Write the current entries (blocking: a worker thread, or a log not on the loop);
        without `fsync`, see overwrite_checkpoint_lines."""
        version, entries = self.version, list(self.entries)
        write_leader_epoch_checkpoint(self.path, entries, fsync)
        self.written_version = version
        if fsync:
            self.synced_version = version

    def sync_checkpoint(self) -> None:
        """Make the current entries durable (blocking): written with fsync when the file is
        behind, else the file written without one fsynced now."""
        if self.dirty:
            self.write_checkpoint(fsync=True)
        elif self.unsynced:
            version = self.written_version
            fsync_path(self.path)
            fsync_path(self.path.parent)
            self.synced_version = version

    def mark_synced(self) -> None:
        """A sync of the whole file system made the written file durable."""
        self.synced_version = self.written_version

    def _set(self, entries: EpochEntries) -> None:
        if entries == self.entries:
            return
        self.entries = entries  # a new list each time: a writer thread reads it whole
        self.version += 1
        if self.on_change is None:
            self.write_checkpoint()
        else:
            self.on_change()


def epoch_for_offset(entries: EpochEntries, offset: int) -> int:
    epoch = UNDEFINED_EPOCH
    for entry_epoch, start_offset in entries:
        if start_offset > offset:
            break
        epoch = entry_epoch
    return epoch


def _trimmed_from_start(entries: EpochEntries, start_offset: int) -> EpochEntries:
    below = [(e, s) for e, s in entries if s <= start_offset]
    if not below:
        return entries
    return [(below[-1][0], start_offset), *((e, s) for e, s in entries if s > start_offset)]


class EpochRebuilder:
    """Checks a checkpoint read at load time against the log's batches, seen in offset order
    (one pass, shared with the producer-state rebuild), and derives what the file lacks.

    The file may be stale: its writes lag the changes (they happen off the event loop), so a
    crash can lose the newest epochs, or keep entries a truncation removed. Epochs newer than
    the file's latest are taken from the batches from its last entry on (as Kafka re-derives
    them while recovering segments). A batch whose epoch contradicts the file means the file
    cannot be trusted: the cache is then rebuilt from the batches alone (`epochs_from_batches`,
    a second pass), as for a corrupt file. Entries the batches cannot show (epochs whose
    batches compaction removed) come only from a file that agrees with the log.
    """

    def __init__(
        self, checkpointed: EpochEntries | None, log_start_offset: int, log_end_offset: int
    ) -> None:
        """`checkpointed`: the file's entries, None if it did not parse."""
        self._log_start_offset = log_start_offset
        self._checkpointed: EpochEntries = []
        self.contradiction: str | None = "the checkpoint is unreadable"
        if checkpointed is not None:
            self.contradiction = None
            trimmed = _scratch_cache(checkpointed)
            trimmed.truncate_from_end(log_end_offset)
            trimmed.truncate_from_start(log_start_offset)
            self._checkpointed = trimmed.entries
        self._newer = _scratch_cache(self._checkpointed)
        self._latest_start = self._checkpointed[-1][1] if self._checkpointed else -1
        self._next_slot = 0  # first checkpointed entry starting above the batches seen

    def see(self, epoch: int, base_offset: int, last_offset: int) -> None:
        """A batch of the log, in offset order."""
        if self.contradiction is not None or epoch < 0 or last_offset < self._log_start_offset:
            return  # message format v0/v1 carries no epoch; below the log start is gone
        if base_offset >= self._latest_start and epoch >= self._newer.latest_epoch:
            self._newer.assign(epoch, base_offset)
            return
        expected = self._expected_epoch(last_offset)
        if epoch != expected:
            self.contradiction = (
                f"the batch at offset {base_offset} has epoch {epoch}, the checkpoint says"
                f" {expected}"
            )

    def _expected_epoch(self, last_offset: int) -> int:
        entries = self._checkpointed
        while self._next_slot < len(entries) and entries[self._next_slot][1] <= last_offset:
            self._next_slot += 1
        return entries[self._next_slot - 1][0] if self._next_slot else UNDEFINED_EPOCH

    def result(self) -> EpochEntries:
        """The checkpoint's entries plus the newer epochs (with no contradiction)."""
        return list(self._newer.entries)


def epochs_from_batches(
    batches: Iterable[tuple[int, int, int]], log_start_offset: int
) -> EpochEntries:
    """The cache the batches imply: (epoch, base offset, last offset) in offset order."""
    derived = _scratch_cache()
    for epoch, base_offset, last_offset in batches:
        if epoch != UNDEFINED_EPOCH and last_offset >= log_start_offset:
            derived.assign(epoch, base_offset)
    derived.truncate_from_start(log_start_offset)
    return derived.entries


def _scratch_cache(entries: EpochEntries | None = None) -> LeaderEpochCache:
    return LeaderEpochCache(Path("unused"), entries=list(entries or []), on_change=_ignore)


def _ignore() -> None:
    return None
