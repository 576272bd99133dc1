"""A partition's log's producer state, a part `Log` holds: the state recorded as batches are
appended, its producer-state snapshots (`producer_snapshot`), and its rebuild after a
truncation.

Snapshots follow Kafka's rules: one at each segment roll (the state of the batches below the
new segment) and one at the log end when the log closes; a truncation deletes those above its
offset. Loading starts from the latest snapshot at or below the recovery point and replays
only the batches after it; a truncation rebuilds from the latest snapshot at or below its
offset, on the log's worker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from broker.log.batch import BatchHeader
from broker.log.control_records import EndTxnMarker
from broker.log.errors import LogCorruptError, RecordError
from broker.log.log_worker import LogLifecycle, LogWorker
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


class LogProducerState:
    """A log's producer state (`state`, a `ProducerStateManager`) with what keeps it across
    restarts and truncations: its snapshots and its rebuilds. The log hands it each batch
    (`record`); `segments` and `high_watermark` read the log's current ones, for rebuilds
    that run after the call that started them."""

    def __init__(
        self,
        directory: Path,
        worker: LogWorker,
        lifecycle: LogLifecycle,
        segments: Callable[[], list[LogSegment]],
        high_watermark: Callable[[], int],
        index_abort: Callable[[AbortedTxn], None],
        report_io_error: Callable[[OSError], None],
    ) -> None:
        self.state = ProducerStateManager()
        self.directory = directory  # the log's; `Log.rename_directory` moves it
        self._worker = worker
        self._lifecycle = lifecycle
        self._segments = segments
        self._high_watermark = high_watermark
        self._index_abort = index_abort
        self._report_io_error = report_io_error
        # While a rebuild after a truncation reads the log on the worker: the producer batches
        # appended since, replayed on top of its result (`_finish_rebuild`).
        self.batches_since_truncation: list[PendingBatch] | None = None
        self.rebuild_task: asyncio.Task[None] | None = None
        self._rebuild_generation = 0  # a newer truncation voids an older rebuild
        self._truncations = 0  # a truncation voids a roll snapshot not yet written
        self._end_snapshot_offset = NO_SNAPSHOT  # the log end the close-time snapshot holds

    # ---- snapshots -------------------------------------------------------------------------

    def restore_snapshot(self, recovery_point: int, log_end_offset: int) -> int:
        """(Loading.) The state of the latest usable snapshot, at or below the recovery point;
        returns its offset, from which the batches must be replayed (the first segment's base
        offset when there is none: the state is then empty)."""
        segments = self._segments()
        first_base = segments[0].base_offset
        usable_to = min(recovery_point, log_end_offset)
        offsets = snapshot_offsets(self.directory)
        for offset in reversed(offsets):
            if offset > log_end_offset:
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
            self.state.restore(entries, _aborted_below(segments, offset))
            return offset
        self.state.rebuild(())
        return first_base

    def snapshot_at_roll(self, base_offset: int) -> None:
        """A segment rolled at `base_offset`: the state now holds exactly the batches below
        it; the worker writes it. Skipped while a rebuild is pending (the state is partial)."""
        if self.batches_since_truncation is not None:
            return
        entries = self.state.snapshot_entries()
        truncations, first_base = self._truncations, self._segments()[0].base_offset
        lifecycle = self._lifecycle

        def write() -> None:
            with lifecycle.lock:
                # A truncation since may have removed the batches below it: not written then.
                if lifecycle.closed or self._truncations != truncations:
                    return
                write_snapshot(snapshot_path(self.directory, base_offset), entries)
                delete_snapshots(self.directory, first_base, base_offset)  # retention's leftovers

        self._worker.submit(write)

    def write_end_snapshot_locked(self, end_offset: int) -> bool:
        """The state at the log end `end_offset`, for the next start-up (the caller holds the
        lifecycle lock, and nothing appends any more, so the state and the end agree). True
        if it wrote one."""
        if end_offset == self._end_snapshot_offset:
            return False  # written already
        if self.batches_since_truncation is not None:
            return False  # partial until its rebuild ends: the next start-up replays the log
        entries = self.state.snapshot_entries()
        if not entries and end_offset == self._segments()[0].base_offset:
            # Loading without it starts there with no producers anyway; Kafka writes none
            # either (an empty log closes without a `.snapshot`).
            return False
        try:
            write_snapshot(snapshot_path(self.directory, end_offset), entries)
        except OSError as error:
            logger.error(
                "writing the producer snapshot of %s failed: %s", self.directory.name, error
            )
            self._report_io_error(error)
            return False
        self._end_snapshot_offset = end_offset
        return True

    # ---- appends and truncation ------------------------------------------------------------

    def record(
        self, header: BatchHeader, first_offset: int, marker: EndTxnMarker | None = None
    ) -> CompletedTxn | None:
        """A batch just appended at `first_offset` (a marker's, with `marker`)."""
        completed = self.state.update(header, first_offset, marker)
        if completed is not None and completed.is_aborted:
            txn = self.state.transactions.latest_aborted()
            if txn is not None:
                self._index_abort(txn)
        pending = self.batches_since_truncation
        if pending is not None and header.producer_id != NO_PRODUCER_ID:
            pending.append((header, first_offset, marker))
            if len(pending) > MAX_PRODUCER_BATCHES_DURING_REBUILD:
                self._rebuild()  # the worker is far behind: finish it here
                self.batches_since_truncation = None
                self._rebuild_generation += 1  # and discard what the worker brings
        return completed

    def truncated(self, log_end_offset: int) -> None:
        """The log was truncated to `log_end_offset`: snapshots above it hold batches that
        are gone (deleted by the worker, after any write queued before), and the state is
        rebuilt without them if it holds any (or a rebuild is under way)."""
        self._delete_snapshots_from(log_end_offset)
        if self.batches_since_truncation is not None or self.state.has_batches_from(log_end_offset):
            self._rebuild_after_truncation(log_end_offset)

    def truncated_fully(self) -> None:
        """The log restarts empty: every snapshot and the whole state go."""
        self._delete_snapshots_from(NO_SNAPSHOT)
        self.state.rebuild(())
        self.batches_since_truncation = None
        self._rebuild_generation += 1

    def _delete_snapshots_from(self, keep_to: int) -> None:
        self._truncations += 1
        self._end_snapshot_offset = NO_SNAPSHOT
        self._worker.submit(lambda: delete_snapshots(self.directory, 0, keep_to))

    def _rebuild(self) -> None:
        self.state.rebuild(producer_batches(self._segments()))
        self.state.transactions.on_high_watermark(self._high_watermark())

    def _rebuild_after_truncation(self, end_offset: int) -> None:
        """The producer state without the truncated batches: at once, those batches are
        dropped from it; the exact state (the older batches they had pushed out) is read
        by the worker, from the latest snapshot below the truncation and the batches after
        it, and replaces it, with what was appended meanwhile."""
        self.state.remove_batches_from(end_offset)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._rebuild()  # not on the loop: loading, tools
            return
        self._rebuild_generation += 1
        generation, segments = self._rebuild_generation, list(self._segments())
        aborted = self.state.transactions.aborted
        self.batches_since_truncation = []
        self.rebuild_task = loop.create_task(
            self._finish_rebuild(generation, segments, end_offset, aborted)
        )

    async def _finish_rebuild(
        self,
        generation: int,
        segments: list[LogSegment],
        end_offset: int,
        aborted: list[AbortedTxn],
    ) -> None:
        rebuilt: ProducerStateManager | None = None
        try:
            rebuilt = await self._worker.run(
                lambda: self._read_state(segments, end_offset, aborted)
            )
        except (OSError, RecordError, LogCorruptError) as error:
            logger.warning(
                "%s: rebuilding producer state off the loop failed: %s", self.directory.name, error
            )
        if generation != self._rebuild_generation:
            return  # truncated again meanwhile: that truncation rebuilds
        replay = self.batches_since_truncation or []
        self.batches_since_truncation = None
        if rebuilt is None:
            self._rebuild()
            return
        for header, first_offset, marker in replay:
            rebuilt.update(header, first_offset, marker)
        rebuilt.transactions.on_high_watermark(self._high_watermark())
        self.state = rebuilt

    def _read_state(
        self, segments: list[LogSegment], end_offset: int, aborted: list[AbortedTxn]
    ) -> ProducerStateManager:
        """(The log worker.) The producer state of the batches below `end_offset`: from the
        latest snapshot at or below it, if one reads, and the batches after it."""
        state = ProducerStateManager()
        with self._lifecycle.lock:
            if self._lifecycle.closed:
                raise LogCorruptError(f"log {self.directory} is closed")
            start = _restore_latest(state, self.directory, segments, end_offset, aborted)
            state.replay(producer_batches(segments, end_offset, start))
        return state


def _aborted_below(segments: list[LogSegment], offset: int) -> list[AbortedTxn]:
    """From the .txnindex files: the aborts whose markers lie below `offset`."""
    return [
        txn
        for segment in segments
        if segment.base_offset < offset
        for txn in segment.txn_index.entries()
        if txn.last_offset < offset
    ]


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
