"""The producer-state side of a partition's log, mixed into `Log`: the state recorded as
batches are appended, its producer-state snapshots (`producer_snapshot`), and its rebuild
after a truncation.

Snapshots follow Kafka's rules: one at each segment roll (the state of the batches below the
new segment) and one at the log end when the log closes; a truncation deletes those above its
offset. Loading starts from the latest snapshot at or below the recovery point and replays
only the batches after it; a truncation rebuilds from the latest snapshot at or below its
offset, on the log's worker.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from broker.log.batch import BatchHeader
from broker.log.control_records import EndTxnMarker
from broker.log.errors import LogCorruptError, RecordError
from broker.log.log_worker import LogWorker
from broker.log.producer_scan import producer_batches
from broker.log.producer_snapshot import (
    SnapshotError,
    delete_snapshots,
    read_snapshot,
    snapshot_offsets,
    snapshot_path,
    write_snapshot,
)
from broker.log.producer_state import NO_PRODUCER_ID, ProducerStateManager
from broker.log.transaction_state import AbortedTxn, CompletedTxn

if TYPE_CHECKING:
    from broker.log.segment import LogSegment

logger = logging.getLogger(__name__)

# A producer batch appended while the producer state is rebuilt after a truncation.
PendingBatch = tuple[BatchHeader, int, EndTxnMarker | None]

# Producer batches appended while the worker rebuilds the producer state after a truncation
# (seconds at most); beyond this the loop rebuilds it itself rather than buffer more.
MAX_PRODUCER_BATCHES_DURING_REBUILD = 10_000

NO_SNAPSHOT = -1


class ProducerStateLog:
    if TYPE_CHECKING:  # provided by Log
        directory: Path
        producer_state: ProducerStateManager
        high_watermark: int
        log_end_offset: int
        recovery_point: int
        truncation_count: int
        worker: LogWorker
        _segments: list[LogSegment]
        _lifecycle_lock: threading.Lock
        _closed: bool

        def _index_abort(self) -> None: ...

        def _report_io_error(self, error: OSError) -> None: ...

    def _init_producer_state(self) -> None:
        self.producer_state = ProducerStateManager()
        # While a rebuild after a truncation reads the log on the worker: the producer batches
        # appended since, replayed on top of its result (`_finish_producer_rebuild`).
        self._producer_batches_since_truncation: list[PendingBatch] | None = None
        self._producer_rebuild: asyncio.Task[None] | None = None
        self._producer_rebuild_generation = 0  # a newer truncation voids an older rebuild
        self._end_snapshot_offset = NO_SNAPSHOT  # the log end the close-time snapshot holds

    # ---- snapshots -------------------------------------------------------------------------

    def _restore_producer_snapshot(self) -> int:
        """(Loading.) The state of the latest usable snapshot, at or below the recovery point;
        returns its offset, from which the batches must be replayed (the first segment's base
        offset when there is none: the state is then empty)."""
        first_base = self._segments[0].base_offset
        usable_to = min(self.recovery_point, self.log_end_offset)
        offsets = snapshot_offsets(self.directory)
        for offset in reversed(offsets):
            if offset > self.log_end_offset:
                snapshot_path(self.directory, offset).unlink(missing_ok=True)  # truncated away
                continue
            if not first_base <= offset <= usable_to:
                continue
            path = snapshot_path(self.directory, offset)
            try:
                entries = read_snapshot(path)
            except (SnapshotError, OSError) as error:
                logger.warning("%s: ignoring it: %s", path, error)
                path.unlink(missing_ok=True)
                continue
            self.producer_state.restore(entries, self._aborted_below(offset))
            return offset
        self.producer_state.rebuild(())
        return first_base

    def _aborted_below(self, offset: int) -> list[AbortedTxn]:
        """From the .txnindex files: the aborts whose markers lie below `offset`."""
        return [
            txn
            for segment in self._segments
            if segment.base_offset < offset
            for txn in segment.txn_index.entries()
            if txn.last_offset < offset
        ]

    def _snapshot_at_roll(self, base_offset: int) -> None:
        """A segment rolled at `base_offset`: the state now holds exactly the batches below
        it; the worker writes it. Skipped while a rebuild is pending (the state is partial)."""
        if self._producer_batches_since_truncation is not None:
            return
        entries = self.producer_state.snapshot_entries()
        truncations, first_base = self.truncation_count, self._segments[0].base_offset

        def write() -> None:
            with self._lifecycle_lock:
                # A truncation since may have removed the batches below it: not written then.
                if self._closed or self.truncation_count != truncations:
                    return
                write_snapshot(snapshot_path(self.directory, base_offset), entries)
                delete_snapshots(self.directory, first_base, base_offset)  # retention's leftovers

        self.worker.submit(write)

    def write_end_snapshot(self) -> bool:
        """The state at the log end, for the next start-up (shutdown: blocking, not the loop;
        only once nothing appends any more, so the state and the end agree). True if it
        wrote one."""
        with self._lifecycle_lock:
            return not self._closed and self._write_end_snapshot_locked()

    def _write_end_snapshot_locked(self) -> bool:
        end_offset = self.log_end_offset
        if end_offset == self._end_snapshot_offset:
            return False  # written already
        if self._producer_batches_since_truncation is not None:
            return False  # partial until its rebuild ends: the next start-up replays the log
        try:
            write_snapshot(
                snapshot_path(self.directory, end_offset), self.producer_state.snapshot_entries()
            )
        except OSError as error:
            logger.error("writing the producer snapshot of %s failed: %s", self, error)
            self._report_io_error(error)
            return False
        self._end_snapshot_offset = end_offset
        return True

    def _delete_snapshots_after_truncation(self, everything: bool = False) -> None:
        """Snapshots above the new log end hold batches that are gone, and after a full
        truncation every one does (deleted by the worker, after any write queued before)."""
        keep_to = NO_SNAPSHOT if everything else self.log_end_offset
        self._end_snapshot_offset = NO_SNAPSHOT
        self.worker.submit(lambda: delete_snapshots(self.directory, 0, keep_to))

    # ---- appends and truncation ------------------------------------------------------------

    def _rebuild_producer_state(self) -> None:
        self.producer_state.rebuild(producer_batches(self._segments))
        self.producer_state.transactions.on_high_watermark(self.high_watermark)

    def _record_producer_batch(
        self, header: BatchHeader, first_offset: int, marker: EndTxnMarker | None = None
    ) -> CompletedTxn | None:
        completed = self.producer_state.update(header, first_offset, marker)
        if completed is not None and completed.is_aborted:
            self._index_abort()
        pending = self._producer_batches_since_truncation
        if pending is not None and header.producer_id != NO_PRODUCER_ID:
            pending.append((header, first_offset, marker))
            if len(pending) > MAX_PRODUCER_BATCHES_DURING_REBUILD:
                self._rebuild_producer_state()  # the worker is far behind: finish it here
                self._producer_batches_since_truncation = None
                self._producer_rebuild_generation += 1  # and discard what the worker brings
        return completed

    def _rebuild_producer_state_after_truncation(self) -> None:
        """The producer state without the truncated batches: at once, those batches are
        dropped from it; the exact state (the older batches they had pushed out) is read
        by the worker, from the latest snapshot below the truncation and the batches after
        it, and replaces it, with what was appended meanwhile."""
        self.producer_state.remove_batches_from(self.log_end_offset)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._rebuild_producer_state()  # not on the loop: loading, tools
            return
        self._producer_rebuild_generation += 1
        generation, segments = self._producer_rebuild_generation, list(self._segments)
        end_offset = self.log_end_offset
        aborted = self.producer_state.transactions.aborted
        self._producer_batches_since_truncation = []
        self._producer_rebuild = loop.create_task(
            self._finish_producer_rebuild(generation, segments, end_offset, aborted)
        )

    async def _finish_producer_rebuild(
        self,
        generation: int,
        segments: list[LogSegment],
        end_offset: int,
        aborted: list[AbortedTxn],
    ) -> None:
        rebuilt: ProducerStateManager | None = None
        try:
            rebuilt = await self.worker.run(
                lambda: self._read_producer_state(segments, end_offset, aborted)
            )
        except (OSError, RecordError, LogCorruptError) as error:
            logger.warning("%s: rebuilding producer state off the loop failed: %s", self, error)
        if generation != self._producer_rebuild_generation:
            return  # truncated again meanwhile: that truncation rebuilds
        replay = self._producer_batches_since_truncation or []
        self._producer_batches_since_truncation = None
        if rebuilt is None:
            self._rebuild_producer_state()
            return
        for header, first_offset, marker in replay:
            rebuilt.update(header, first_offset, marker)
        rebuilt.transactions.on_high_watermark(self.high_watermark)
        self.producer_state = rebuilt

    def _read_producer_state(
        self, segments: list[LogSegment], end_offset: int, aborted: list[AbortedTxn]
    ) -> ProducerStateManager:
        """(The log worker.) The producer state of the batches below `end_offset`: from the
        latest snapshot at or below it, if one reads, and the batches after it."""
        state = ProducerStateManager()
        with self._lifecycle_lock:
            if self._closed:
                raise LogCorruptError(f"log {self.directory} is closed")
            start = _restore_latest(state, self.directory, segments, end_offset, aborted)
            state.replay(producer_batches(segments, end_offset, start))
        return state


def _restore_latest(
    state: ProducerStateManager,
    directory: Path,
    segments: list[LogSegment],
    end_offset: int,
    aborted: list[AbortedTxn],
) -> int:
    """The latest snapshot within the segments and at or below `end_offset` into `state`;
    the offset to replay from (0 without one)."""
    first_base = segments[0].base_offset
    for offset in reversed(snapshot_offsets(directory)):
        if not first_base <= offset <= end_offset:
            continue
        try:
            entries = read_snapshot(snapshot_path(directory, offset))
        except (SnapshotError, OSError) as error:
            logger.warning("%s: ignoring it: %s", snapshot_path(directory, offset), error)
            continue
        state.restore(entries, [txn for txn in aborted if txn.last_offset < offset])
        return offset
    return 0
