"""A partition's log: ordered segments in `<log.dir>/<topic>-<partition>/`.

The active (last) segment takes appends; reads find the segment by base offset, then the batch
through its offset index. `recovery_point` is the offset below which data is known fsynced.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from broker.log import log_read
from broker.log.batch import (
    BatchHeader,
    assign_offsets,
    is_compressed,
    set_log_append_time,
    validate_batches,
)
from broker.log.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    CheckpointError,
    fsync_directory,
    read_leader_epoch_checkpoint,
)
from broker.log.config import LOG_APPEND_TIME, LogConfig
from broker.log.control_records import EndTxnMarker, build_marker_batch
from broker.log.dir_names import is_future_dir, parse_log_dir_name, parse_partition_dir
from broker.log.epoch_cache import (
    UNDEFINED_EPOCH,
    EpochRebuilder,
    LeaderEpochCache,
    epochs_from_batches,
)
from broker.log.epoch_checkpoint_writer import EpochCheckpointWriter
from broker.log.errors import (
    INVALID_RECORD,
    RECORD_LIST_TOO_LARGE,
    LogCorruptError,
    LogInvariantError,
    OffsetOutOfRangeError,
    RecordError,
    UnexpectedAppendOffsetError,
)
from broker.log.file_records import FileRecords, records_bytes
from broker.log.log_loader import load_segments
from broker.log.log_producer_state import LogProducerState
from broker.log.log_worker import LogLifecycle, LogWorker
from broker.log.producer_scan import marker_at, replicated_marker
from broker.log.producer_state import NO_PRODUCER_ID, ProducerStateManager
from broker.log.record_validation import RecordChecks, check_records
from broker.log.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    BatchSpan,
    LogSegment,
    batch_spans,
)
from broker.log.transaction_state import AbortedTxn, CompletedTxn
from broker.log.txn_index import reconcile_txn_indexes

__all__ = ["AppendInfo", "Log", "LogConfig", "OffsetOutOfRangeError", "parse_partition_dir"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time_ms: int  # -1 with CreateTime
    log_start_offset: int


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Log:
    """Its parts own their state: the producer state with its snapshots (`LogProducerState`),
    the leader epochs (`LeaderEpochCache`), each segment's indexes (its `TransactionIndex`
    among them); the log owns the segments and the offsets, and hands the parts what they
    need."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[LogSegment],
        log_start_offset: int,
        recovery_point: int,
        high_watermark: int = 0,
    ) -> None:
        """Use `Log.open`."""
        self.directory = directory
        self.topic, self.partition = parse_log_dir_name(directory.name)
        self.config = config
        self._segments = segments
        self._bases = [segment.base_offset for segment in segments]
        self.log_end_offset = segments[-1].next_offset
        self.log_start_offset = max(log_start_offset, segments[0].base_offset)
        self.recovery_point = min(recovery_point, self.log_end_offset)
        # The offset below which every ISR member holds the data (what consumers may read);
        # checkpointed in replication-offset-checkpoint, so a restart neither exposes records
        # that were never committed nor hides committed ones. The checkpoint may lie beyond
        # a log whose torn tail recovery cut off (or before a later log start): bound it.
        self.high_watermark = min(max(high_watermark, self.log_start_offset), self.log_end_offset)
        # Worker threads only (never the loop): an fsync or checkpoint write must not race
        # with the files being closed or renamed.
        self._lifecycle = LogLifecycle()
        self._directory_dirty = False
        # The one owner of this log's blocking file work (deleting segments, checkpoints).
        self.worker = LogWorker(directory.name)
        self.worker.on_io_error = self._report_io_error
        # Set by the log manager: takes the log dir offline (any thread).
        self.on_io_error: Callable[[OSError], None] | None = None
        self._retired: list[LogSegment] = []  # renamed to `.deleted`, the worker deletes them
        self._producers = LogProducerState(
            directory,
            self.worker,
            self._lifecycle,
            segments=lambda: self._segments,
            high_watermark=lambda: self.high_watermark,
            index_abort=self._index_abort,
            report_io_error=self._report_io_error,
        )
        self.leader_epoch_cache = LeaderEpochCache(directory / LEADER_EPOCH_CHECKPOINT, [])
        self._load_state_from_batches()
        reconcile_txn_indexes(self._segments, self._producers.state.transactions.aborted)
        # Bumped by every truncation, so the log cleaner can tell that segments it read may
        # have been rewritten meanwhile (same objects, different bytes).
        self.truncation_count = 0
        # truncation_count when the last flush started: the active segment needs an fsync
        # after a truncation even when no append followed it.
        self._truncations_flushed = 0

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        now_ms: int | None = None,
        had_clean_shutdown: bool = False,
        high_watermark: int = 0,
    ) -> Log:
        """Load segments, recovering from `recovery_point` (see `log_loader`)."""
        now_ms = _now_ms() if now_ms is None else now_ms
        directory.mkdir(parents=True, exist_ok=True)
        segments = load_segments(directory, config, recovery_point, had_clean_shutdown, now_ms)
        if not segments:
            segments = [LogSegment(directory, log_start_offset, config, now_ms)]
        if had_clean_shutdown:
            recovery_point = segments[-1].next_offset
        log = cls(directory, config, segments, log_start_offset, recovery_point, high_watermark)
        if log.log_start_offset > log.log_end_offset:
            log.truncate_fully_and_start_at(log.log_start_offset, now_ms)
        return log

    # ---- properties ------------------------------------------------------------------------

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def producer_state(self) -> ProducerStateManager:
        return self._producers.state

    @property
    def size_bytes(self) -> int:
        return sum(segment.size_bytes for segment in self._segments)

    def update_config(self, config: LogConfig) -> None:
        """New topic config; takes effect for the next roll and the next append."""
        self.config = config

    # ---- append ----------------------------------------------------------------------------

    def append_as_leader(
        self,
        records: bytes | bytearray,
        leader_epoch: int,
        now_ms: int,
        require_single_batch: bool = False,
        compressed_checked: bool = False,
        check_sequences: bool = True,
    ) -> AppendInfo:
        """Validate, assign offsets from log_end_offset, stamp LogAppendTime if configured,
        write. A retried idempotent batch is not written again: its original offsets are
        returned. Raises RecordError. `compressed_checked`: the caller already ran
        `check_compressed_records` (off the event loop), and `check_records` if the log
        checks records."""
        self._check_open()
        data = records if isinstance(records, bytearray) else bytearray(records)
        headers = validate_batches(
            data,
            self.config.max_message_bytes,
            max_decompressed_bytes=self.config.max_decompressed_bytes,
            compressed_checked=compressed_checked,
        )
        if not headers:
            return AppendInfo(-1, -1, -1, -1, self.log_start_offset)
        self._check_single_batch(headers, require_single_batch)
        checks = RecordChecks.for_log(self.config, now_ms)
        if checks is not None and not (compressed_checked and is_compressed(data)):
            check_records(data, checks, self.config.max_decompressed_bytes, self.directory.name)
        duplicate = self._producers.state.check(headers[0], check_sequences)
        if duplicate is not None:
            return AppendInfo(
                duplicate.first_offset,
                duplicate.last_offset,
                duplicate.max_timestamp,
                -1,
                self.log_start_offset,
            )
        self._check_append_size(len(data))
        first_offset = self.log_end_offset
        last_offset = assign_offsets(data, first_offset, leader_epoch)
        log_append_time_ms = self._maybe_stamp_append_time(data, headers, now_ms)
        spans = batch_spans(headers, first_offset, log_append_time_ms)
        self._write(data, spans, first_offset, now_ms)
        self.leader_epoch_cache.assign(leader_epoch, first_offset)
        self._producers.record(headers[0], first_offset)
        max_timestamp = max(span[2] for span in spans)
        return AppendInfo(
            first_offset, last_offset, max_timestamp, log_append_time_ms, self.log_start_offset
        )

    def append_as_follower(
        self, records: bytes | bytearray, now_ms: int | None = None
    ) -> AppendInfo:
        """Append batches replicated from the leader, offsets and epochs as they are.

        Raises RecordError (corrupt batch) or UnexpectedAppendOffsetError (offsets not above
        log_end_offset, or not increasing).
        """
        self._check_open()
        headers = validate_batches(records, self.config.max_message_bytes, from_client=False)
        if not headers:
            return AppendInfo(-1, -1, -1, -1, self.log_start_offset)
        self._check_follower_offsets(headers)
        spans = [(h.size_bytes, h.last_offset, h.max_timestamp) for h in headers]
        self._write(records, spans, headers[0].base_offset, _now_ms() if now_ms is None else now_ms)
        position = 0
        for header in headers:
            # As on the leader: a follower that becomes leader must recognise retried batches.
            if header.partition_leader_epoch != UNDEFINED_EPOCH:
                self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
            marker = replicated_marker(records, position, header)
            self._producers.record(header, header.base_offset, marker)
            position += header.size_bytes
        return AppendInfo(
            headers[0].base_offset,
            headers[-1].last_offset,
            max(h.max_timestamp for h in headers),
            -1,
            self.log_start_offset,
        )

    def _check_follower_offsets(self, headers: list[BatchHeader]) -> None:
        next_offset = self.log_end_offset
        for header in headers:
            if header.base_offset < next_offset or header.last_offset < header.base_offset:
                raise UnexpectedAppendOffsetError(
                    f"batch at offset {header.base_offset} is below next offset {next_offset}",
                    headers[0].base_offset,
                    headers[-1].last_offset,
                )
            next_offset = header.last_offset + 1

    @staticmethod
    def _check_single_batch(headers: list[BatchHeader], required: bool) -> None:
        # Produce v3+ carries exactly one batch per partition; batches of idempotent producers
        # are always checked one at a time, so the sequence rules see each in turn.
        producer_batches = any(h.producer_id != NO_PRODUCER_ID for h in headers)
        if len(headers) > 1 and (required or producer_batches):
            raise RecordError(INVALID_RECORD, f"expected one record batch, got {len(headers)}")

    def _load_state_from_batches(self) -> None:
        """One pass over the batches after the latest producer snapshot (at or below the
        recovery point) rebuilds the producer state and checks the epoch checkpoint,
        completing or replacing it (`EpochRebuilder`): an unreadable or stale file must not
        make truncation guess. Below the recovery point the checkpoint is trusted: a flush
        writes it before the recovery point moves."""
        path = self.leader_epoch_cache.path
        checkpointed: list[tuple[int, int]] | None
        try:
            checkpointed = read_leader_epoch_checkpoint(path)
        except CheckpointError as error:
            logger.warning("%s; rebuilding it from the log", error)
            checkpointed = None
        rebuilder = EpochRebuilder(checkpointed, self.log_start_offset, self.log_end_offset)
        start_offset = self._producers.restore_snapshot(self.recovery_point, self.log_end_offset)
        state = self._producers.state
        for segment in self._segments:
            if segment.next_offset <= start_offset:
                continue
            for position, header in segment.iter_batches(0):
                if header.last_offset < start_offset:
                    continue
                rebuilder.see(header.partition_leader_epoch, header.base_offset, header.last_offset)
                if header.producer_id != NO_PRODUCER_ID:
                    marker = marker_at(segment, position, header)
                    state.update(header, header.base_offset, marker)
        state.transactions.on_high_watermark(self.high_watermark)
        entries = rebuilder.result()
        if rebuilder.contradiction is not None:
            if checkpointed is not None:
                logger.warning("%s: %s; rebuilding it from the log", path, rebuilder.contradiction)
            batches = (
                (header.partition_leader_epoch, header.base_offset, header.last_offset)
                for segment in self._segments
                for _, header in segment.iter_batches(0)
            )
            entries = epochs_from_batches(batches, self.log_start_offset)
        self.leader_epoch_cache = LeaderEpochCache(
            path, entries=entries, on_change=self._epoch_cache_changed
        )
        if entries != checkpointed:
            self.leader_epoch_cache.version += 1  # the file is behind: write it
            self._epoch_cache_changed()

    def _epoch_cache_changed(self) -> None:
        """On the loop, the per-broker writer writes the checkpoint soon, off the loop;
        elsewhere (loading, tools) it is written at once."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.write_epoch_checkpoint_if_dirty()
            return
        EpochCheckpointWriter.for_loop(loop).mark_dirty(self)

    def write_epoch_checkpoint_if_dirty(self, fsync: bool = True) -> None:
        """Write leader-epoch-checkpoint if the cache changed since (blocking: not the loop);
        an I/O error is reported (as Kafka's checkpoint files take their log dir offline).
        Without `fsync` the caller syncs the file system afterwards (shutdown)."""
        try:
            with self._lifecycle.lock:
                if not self._lifecycle.closed:
                    self._write_epoch_checkpoint_locked(fsync)
        except OSError as error:
            logger.error("writing %s failed: %s", self.leader_epoch_cache.path, error)
            self._report_io_error(error)

    def _report_io_error(self, error: OSError) -> None:
        if self.on_io_error is not None:
            self.on_io_error(error)

    def _write_epoch_checkpoint_locked(self, fsync: bool = True) -> None:
        if self.leader_epoch_cache.dirty:
            self.leader_epoch_cache.write_checkpoint(fsync)

    def write_end_snapshot(self) -> bool:
        """The producer state at the log end, for the next start-up (shutdown: blocking, not
        the loop; only once nothing appends any more, so the state and the end agree). True if
        it wrote one."""
        with self._lifecycle.lock:
            if self._lifecycle.closed:
                return False
            return self._producers.write_end_snapshot_locked(self.log_end_offset)

    # ---- transactions (KIP-98) -------------------------------------------------------------

    @property
    def last_stable_offset(self) -> int:
        """What read_committed consumers may read below: the high watermark, or the first
        offset of a transaction not yet decided (or whose marker is not yet replicated)."""
        return self._producers.state.transactions.last_stable_offset(self.high_watermark)

    def aborted_transactions(self, fetch_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """Aborted transactions with records in [fetch_offset, upper_offset)."""
        return self._producers.state.transactions.aborted_between(fetch_offset, upper_offset)

    def append_marker_as_leader(
        self,
        producer_id: int,
        producer_epoch: int,
        marker: EndTxnMarker,
        leader_epoch: int,
        now_ms: int,
    ) -> CompletedTxn:
        """Write a transaction marker for the coordinator (WriteTxnMarkers). Raises
        RecordError when the producer's epoch or the coordinator's is older than one seen.
        (A follower reads the markers it replicates in `append_as_follower`.)"""
        self._check_open()
        producers = self._producers
        producers.state.check_marker(producer_id, producer_epoch, marker.coordinator_epoch)
        data = bytearray(build_marker_batch(producer_id, producer_epoch, marker, now_ms))
        header = validate_batches(data, self.config.max_message_bytes, from_client=False)[0]
        first_offset = self.log_end_offset
        assign_offsets(data, first_offset, leader_epoch)
        self._write(data, batch_spans([header], first_offset, -1), first_offset, now_ms)
        self.leader_epoch_cache.assign(leader_epoch, first_offset)
        completed = producers.record(header, first_offset, marker)
        if completed is None:
            raise LogInvariantError(f"{self}: the marker at {first_offset} completed nothing")
        return completed

    def _index_abort(self, txn: AbortedTxn) -> None:
        """An abort just recorded, into the .txnindex of the segment holding its marker."""
        try:
            self.segment_for(txn.last_offset).txn_index.append(txn)
        except OSError as error:
            logger.error("writing the transaction index of %s failed: %s", self, error)
            self._report_io_error(error)

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, which must lie within [log start, log end]; returns it.
        A caller holding a value from elsewhere (a follower taking the leader's) bounds it
        itself: out of range here is a bug, raised rather than silently clamped."""
        if not self.log_start_offset <= offset <= self.log_end_offset:
            raise LogInvariantError(
                f"{self.topic}-{self.partition}: high watermark {offset} outside"
                f" [{self.log_start_offset}, {self.log_end_offset}]"
            )
        self.high_watermark = offset
        self._producers.state.transactions.on_high_watermark(offset)
        return self.high_watermark

    def _check_open(self) -> None:
        if self._lifecycle.closed:
            raise LogCorruptError(f"log {self.directory} is closed")

    def _check_append_size(self, size_bytes: int) -> None:
        if size_bytes > self.config.segment_bytes:
            raise RecordError(
                RECORD_LIST_TOO_LARGE,
                f"{size_bytes} bytes of records exceed segment.bytes {self.config.segment_bytes}",
            )

    def _maybe_stamp_append_time(
        self, data: bytearray, headers: list[BatchHeader], now_ms: int
    ) -> int:
        if self.config.message_timestamp_type != LOG_APPEND_TIME:
            return -1
        position = 0
        for header in headers:
            set_log_append_time(data, position, now_ms)
            position += header.size_bytes
        return now_ms

    def _write(
        self, data: bytes | bytearray, spans: list[BatchSpan], first_offset: int, now_ms: int
    ) -> None:
        if first_offset < self.log_end_offset or spans[-1][1] < first_offset:
            # The log end only grows, except by explicit truncation.
            raise LogInvariantError(
                f"{self.topic}-{self.partition}: append of offsets {first_offset}-{spans[-1][1]}"
                f" at log end {self.log_end_offset}"
            )
        segment = self.active_segment
        max_timestamp = max(span[2] for span in spans)
        if segment.should_roll(self.config, len(data), max_timestamp, spans[-1][1], now_ms):
            segment = self.roll(first_offset, now_ms)
        segment.append(data, spans)
        self.log_end_offset = spans[-1][1] + 1

    def roll(self, base_offset: int | None = None, now_ms: int | None = None) -> LogSegment:
        """Start a new active segment at `base_offset` (default: log_end_offset)."""
        base_offset = self.log_end_offset if base_offset is None else base_offset
        now_ms = _now_ms() if now_ms is None else now_ms
        active = self.active_segment
        if active.base_offset == base_offset and active.size_bytes == 0:
            return active
        active.on_become_inactive()
        self._clear_stale_files(base_offset)
        segment = LogSegment(self.directory, base_offset, self.config, now_ms)
        self._segments.append(segment)
        self._bases.append(base_offset)
        self._directory_dirty = True
        self._producers.snapshot_at_roll(base_offset)
        return segment

    def _clear_stale_files(self, base_offset: int) -> None:
        log_path = self.directory / f"{base_offset:020d}{LOG_SUFFIX}"
        if log_path.exists() and log_path.stat().st_size > 0:
            raise LogCorruptError(f"cannot roll: {log_path} already holds data")
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            (self.directory / f"{base_offset:020d}{suffix}").unlink(missing_ok=True)

    # ---- reads (log_read.py) ---------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> bytes:
        """Whole batches from the one holding `start_offset`, up to `max_bytes` (but at least
        one batch with `min_one_batch`), none with base offset >= `max_offset`."""
        return records_bytes(self.read_records(start_offset, max_bytes, max_offset, min_one_batch))

    def read_records(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
        zero_copy_min_bytes: int | None = None,
    ) -> bytes | FileRecords:
        """What `read` reads; with `zero_copy_min_bytes`, a large read stays a file slice."""
        if start_offset < self.log_start_offset or start_offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {start_offset} outside [{self.log_start_offset}, {self.log_end_offset}]"
                f" of {self.topic}-{self.partition}"
            )
        if start_offset == self.log_end_offset:
            return b""
        return log_read.read_records(
            self._segments,
            self._bases,
            start_offset,
            max_bytes,
            max_offset,
            min_one_batch,
            zero_copy_min_bytes,
        )

    def segment_for(self, offset: int) -> LogSegment:
        """The segment whose range holds `offset` (for zero-copy reads)."""
        return log_read.segment_for(self._segments, self._bases, offset)

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """ListOffsets by timestamp (and its -1/-2 sentinels), see log_read.py."""
        return log_read.offset_for_timestamp(
            self._segments, self.log_start_offset, self.log_end_offset, timestamp_ms
        )

    def max_timestamp_and_offset(self) -> tuple[int, int] | None:
        """ListOffsets' MAX_TIMESTAMP (-3): the first record with the largest timestamp."""
        return log_read.max_timestamp_and_offset(self._segments, self.log_start_offset)

    # ---- durability ------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync everything appended so far and advance recovery_point (blocking: run it in
        an executor)."""
        end_offset = self.log_end_offset
        truncations = self.truncation_count
        with self._lifecycle.lock:
            if self._lifecycle.closed:
                return
            truncated = truncations != self._truncations_flushed
            # Only what changed since the last flush: a broker shutting down flushes thousands
            # of logs, most with nothing new.
            for segment in list(self._segments):
                if segment.next_offset > self.recovery_point or (
                    truncated and segment is self.active_segment
                ):
                    segment.flush()
            self._truncations_flushed = truncations
            if self._directory_dirty:
                self._directory_dirty = False
                fsync_directory(self.directory)
            # Kafka's order: the epochs of everything below the new recovery point are on
            # disk before it moves (recovery re-derives only the epochs above it).
            self.leader_epoch_cache.sync_checkpoint()
        # A truncation while fsync ran may have moved the end below what was flushed.
        self.recovery_point = min(max(self.recovery_point, end_offset), self.log_end_offset)

    def mark_synced(self, end_offset: int, truncations: int) -> None:
        """Everything up to `end_offset` (with `truncations` truncations done) was made durable
        by a sync of the whole file system (shutdown): move the recovery point as flush()
        would. The epoch checkpoint must have been written before that sync."""
        with self._lifecycle.lock:
            if self._lifecycle.closed:
                return
            self._directory_dirty = False
            self._truncations_flushed = truncations
            self.leader_epoch_cache.mark_synced()
        self.recovery_point = min(max(self.recovery_point, end_offset), self.log_end_offset)

    # ---- truncation ------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove everything from `offset` on (a follower diverging from its leader). On the
        loop this only cuts the active segment (ftruncate) and renames the later segments to
        `.deleted`; closing and deleting their files is the log worker's job."""
        if offset >= self.log_end_offset:
            return
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return
        self.truncation_count += 1
        kept = bisect.bisect_right(self._bases, offset)
        doomed = self._segments[kept:]
        self._segments = self._segments[:kept]
        self._bases = self._bases[:kept]
        self._retire_segments(doomed)
        self.active_segment.truncate_to(offset)
        self.log_end_offset = self.active_segment.next_offset
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.log_start_offset = min(self.log_start_offset, self.log_end_offset)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
        self._producers.truncated(self.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int, now_ms: int | None = None) -> None:
        """Drop all data; the log restarts empty at `offset`."""
        self.truncation_count += 1
        doomed = self._segments
        self._retire_segments(doomed)
        self._clear_stale_files(offset)
        now_ms = _now_ms() if now_ms is None else now_ms
        self._segments = [LogSegment(self.directory, offset, self.config, now_ms)]
        self._bases = [offset]
        self.log_end_offset = self.log_start_offset = self.recovery_point = offset
        self.high_watermark = offset
        self.leader_epoch_cache.clear()
        self._producers.truncated_fully()

    def increment_log_start_offset(self, offset: int) -> None:
        """Move the log start forward (DeleteRecords, retention); never past the log end."""
        offset = min(offset, self.log_end_offset)
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self.high_watermark = max(self.high_watermark, offset)
            self.leader_epoch_cache.truncate_from_start(offset)
            transactions = self._producers.state.transactions
            transactions.trim_below(offset)
            transactions.on_high_watermark(self.high_watermark)

    def delete_oldest_segments(self, count: int) -> int:
        """Delete up to `count` oldest segments (never the active one); returns how many.
        As in `truncate_to`, their files are renamed here and deleted by the log worker."""
        count = min(count, len(self._segments) - 1)
        if count <= 0:
            return 0
        doomed, self._segments = self._segments[:count], self._segments[count:]
        self._bases = self._bases[count:]
        self._retire_segments(doomed)
        self.increment_log_start_offset(self._segments[0].base_offset)
        return count

    def _retire_segments(self, doomed: list[LogSegment]) -> None:
        """Segments just taken out of the log: rename their files to `.deleted` (cheap; a
        crash before the deletion leaves leftovers that loading removes, and a new segment
        may reuse the base offset at once), then have the worker close and delete them."""
        if not doomed:
            return
        for segment in doomed:
            segment.change_file_suffixes("", DELETED_SUFFIX)
        self._directory_dirty = True
        self._retired = [*self._retired, *doomed]
        self.worker.submit(lambda: self._delete_retired(doomed))

    def _delete_retired(self, doomed: list[LogSegment]) -> None:
        with self._lifecycle.lock:
            for segment in doomed:
                segment.delete()
            self._retired = [s for s in self._retired if all(s is not d for d in doomed)]

    def detach_segments_below_log_start(self) -> list[LogSegment]:
        """Take the segments wholly below the log start offset (never the active one) out of
        the log, touching no file, so it can run on the event loop; the caller then deletes
        their files on a worker thread with `release_replaced_segments`."""
        count = 0
        while (
            count < len(self._segments) - 1
            and self._segments[count + 1].base_offset <= self.log_start_offset
        ):
            count += 1
        if count == 0:
            return []
        doomed = self._segments[:count]
        self._segments = self._segments[count:]
        self._bases = self._bases[count:]
        self._directory_dirty = True
        return doomed

    # ---- compaction ------------------------------------------------------------------------

    def replace_segments(
        self, old: Sequence[LogSegment], new: LogSegment, truncation_count: int
    ) -> bool:
        """Swap `old`, a run of inactive segments, for `new`: their compacted copy, written
        with CLEANED_SUFFIX by the log cleaner. Call on the event loop: it only renames files
        and swaps the segment list, so readers see either all old or all new segments.

        Returns False, changing nothing, when the log moved on since the cleaner's snapshot
        (closed, truncated, or `old` is no longer a run of inactive segments because retention
        deleted some). The caller then closes the replaced segments and fsyncs the directory
        off the loop (`release_replaced_segments`).
        """
        first = self._replaceable_slot(old, truncation_count)
        if first is None:
            return False
        following = self._segments[first + len(old)]
        if new.base_offset != old[0].base_offset or new.next_offset > following.base_offset:
            raise LogCorruptError(
                f"cleaned segment {new} does not fit between {old[0]} and {following}"
            )
        # Kafka's order: `.swap` commits the new segment; a crash after it makes loading
        # finish the swap (delete what the swap covers), a crash before it discards it.
        new.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
        for segment in old:
            segment.change_file_suffixes("", DELETED_SUFFIX)
        new.change_file_suffixes(SWAP_SUFFIX, "")
        self._segments[first : first + len(old)] = [new]
        self._bases[first : first + len(old)] = [new.base_offset]
        self._directory_dirty = True
        return True

    def _replaceable_slot(self, old: Sequence[LogSegment], truncation_count: int) -> int | None:
        """Where the run `old` starts in the segment list, if it is still there, inactive."""
        if self._lifecycle.closed or truncation_count != self.truncation_count or not old:
            return None
        first = next((i for i, s in enumerate(self._segments) if s is old[0]), None)
        if first is None or first + len(old) >= len(self._segments):
            return None  # gone, or reaching the active segment
        current = self._segments[first : first + len(old)]
        if any(kept is not expected for kept, expected in zip(current, old, strict=True)):
            return None
        return first

    def release_replaced_segments(self, old: Sequence[LogSegment]) -> None:
        """Close and delete the `.deleted` files of segments `replace_segments` took out, and
        make the swap durable (blocking: run it on a worker thread)."""
        with self._lifecycle.lock:
            for segment in old:
                segment.delete()
            if not self._lifecycle.closed:
                fsync_directory(self.directory)

    @property
    def closed(self) -> bool:
        return self._lifecycle.closed

    # ---- lifecycle -------------------------------------------------------------------------

    def close(self, snapshot: bool = True) -> None:
        """Close the files, writing a dirty epoch checkpoint and (with `snapshot`) the
        producer state at the log end first (blocking: not the loop)."""
        with self._lifecycle.lock:
            if self._lifecycle.closed:
                return
            if snapshot:
                self._producers.write_end_snapshot_locked(self.log_end_offset)
            try:
                self._write_epoch_checkpoint_locked()
            except OSError as error:  # the files must still be closed (a failed disk)
                logger.error("writing %s failed: %s", self.leader_epoch_cache.path, error)
                self._report_io_error(error)
            self._lifecycle.closed = True
            for segment in self._segments:
                segment.close()

    def delete(self) -> None:
        """Close and remove the whole partition directory."""
        self.close(snapshot=False)
        shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def is_future(self) -> bool:
        """A copy AlterReplicaLogDirs is building in another log dir (`<dir>.<uuid>-future`)."""
        return is_future_dir(self.directory.name)

    def rename_directory(self, directory: Path) -> None:
        """Rename the partition directory (Kafka's renameDir); open files stay valid, and the
        segments and leader-epoch checkpoint follow it to their new paths."""
        with self._lifecycle.lock:
            self.directory.rename(directory)
            self.directory = directory
            for segment in [*self._segments, *self._retired]:
                segment.move_to(directory)
            self.leader_epoch_cache.path = directory / LEADER_EPOCH_CHECKPOINT
            self._producers.directory = directory

    def __repr__(self) -> str:
        return (
            f"Log({self.topic}-{self.partition}, start={self.log_start_offset}, "
            f"end={self.log_end_offset}, segments={len(self._segments)})"
        )
