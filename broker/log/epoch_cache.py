"""Leader epoch cache: (epoch, start offset) pairs, persisted as `leader-epoch-checkpoint`.

Followers use it to find where their log diverges from the leader's (OffsetsForLeaderEpoch).
"""

from __future__ import annotations

from pathlib import Path

from broker.log.checkpoints import (
    CheckpointError,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class LeaderEpochCache:
    def __init__(self, path: Path, entries: list[tuple[int, int]] | None = None) -> None:
        """Reads the checkpoint unless `entries` are given; raises CheckpointError for a file
        that does not parse (the log rebuilds the cache from its batches then)."""
        self.path = path
        self.entries: list[tuple[int, int]] = (
            read_leader_epoch_checkpoint(path) if entries is None else entries
        )
        if any(b <= a for (a, _), (b, _) in zip(self.entries, self.entries[1:], strict=False)):
            raise CheckpointError(f"{path}: epochs do not increase: {self.entries}")

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int, persist: bool = True) -> None:
        """Record that `epoch` starts at `start_offset` (no-op if already the latest epoch)."""
        if epoch < 0 or epoch == self.latest_epoch:
            return
        kept = [(e, s) for e, s in self.entries if e < epoch and s < start_offset]
        self.entries = [*kept, (epoch, start_offset)]
        if persist:
            self._write()

    def persist(self) -> None:
        self._write()

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch whose range holds `offset` (-1 if the cache knows none that early)."""
        epoch = UNDEFINED_EPOCH
        for entry_epoch, start_offset in self.entries:
            if start_offset > offset:
                break
            epoch = entry_epoch
        return epoch

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
            self.entries = kept
            self._write()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop epochs wholly below `start_offset`; the one spanning it now starts there."""
        below = [(e, s) for e, s in self.entries if s <= start_offset]
        if not below:
            return
        above = [(e, s) for e, s in self.entries if s > start_offset]
        updated = [(below[-1][0], start_offset), *above]
        if updated != self.entries:
            self.entries = updated
            self._write()

    def clear(self) -> None:
        self.entries = []
        self._write()

    def _write(self) -> None:
        write_leader_epoch_checkpoint(self.path, self.entries)
