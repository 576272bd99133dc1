"""Log compaction (Kafka's log cleaner) for logs whose cleanup.policy includes "compact".

One pass over one log (Kafka's Cleaner.doClean):
1. On the event loop, a snapshot: inactive segments, high watermark, log start and end,
   producer state, truncation count, config.
2. On a worker thread: the dirty range, from the first dirty offset (cleaner-offset-checkpoint)
   to the first uncleanable offset (`compaction_plan`); the offset map over it, bounded by
   log.cleaner.dedupe.buffer.size, so a pass covers the dirty range only as far as the map
   reaches (its end offset: the map's latest offset + 1).
3. Every segment below the end offset is rewritten - the clean part too, since newer records
   in the dirty part supersede its records - group by group (`group_segments_by_size`): on a
   worker, the group is filtered into one `.cleaned` segment (`compaction_io`); on the loop,
   `Log.replace_segments` swaps it in, or refuses if the log changed meanwhile (closed,
   truncated, segments deleted by retention), which ends this log's pass. The replaced
   segments, renamed `.deleted`, stay open for file.delete.delay.ms (reads that already hold
   them finish), then a later pass closes and deletes them.
4. The end offset is checkpointed as the log's first dirty offset.

The event loop only takes snapshots and swaps segment lists (a few renames); reading, decoding,
re-compressing, writing and fsyncing all happen on worker threads.

Wiring (server): one `LogCleaner(CleanerConfig.from_broker_config(config))`; a task that
loops `await cleaner.clean_once(log_manager.all_logs(), now_ms)`, pausing
log.cleaner.backoff.ms after a round that cleaned nothing (Kafka's cleaner thread); at shutdown
`await cleaner.close()` first, before tasks are cancelled and logs closed.

Deviations (DEVIATIONS.md): one cleaner (log.cleaner.threads is ignored); the offset map's
memory is counted at CPython's real cost per key (`compaction_map`); keyless records are kept,
transactions cleaned by Kafka's rules (`compaction_txn`); a `<base>.swap-end`
marker makes crash recovery exact (`compaction_recovery`); tombstones expire by segment
modification time (Kafka 2.x), not by a delete horizon stored in batches (Kafka 3.1+).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from broker.log.checkpoints import (
    CLEANER_OFFSET_CHECKPOINT,
    CheckpointError,
    fsync_directory,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from broker.log.compaction_io import (
    CleanerIo,
    CleaningAborted,
    SourceSegment,
    Throttler,
    build_offset_map,
    discard_swap_end,
    first_batch_timestamp,
    modified_ms,
    write_cleaned_segment,
)
from broker.log.compaction_map import OffsetMap
from broker.log.compaction_plan import (
    CleanableRange,
    SegmentInfo,
    cleanable_range,
    delete_horizon_ms,
    first_dirty_offset,
    group_segments_by_size,
    max_compaction_delay_ms,
    needs_cleaning,
)
from broker.log.compaction_txn import TxnCleaning
from broker.log.config import LONG_MAX, LogConfig
from broker.log.errors import LogCorruptError, RecordError
from broker.log.log import Log
from broker.log.segment import LogSegment
from broker.log.transaction_state import AbortedTxn

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
MIN_DEDUPE_BUFFER_BYTES = 1024 * 1024  # Kafka's floor per cleaner thread
DOUBLE_MAX = 1.7976931348623157e308  # Kafka's default for log.cleaner.io.max.bytes.per.second


class BrokerConfigLookup(Protocol):
    """What `CleanerConfig.from_broker_config` needs of the broker's KafkaConfig."""

    def __getitem__(self, name: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    enable: bool = True  # log.cleaner.enable
    backoff_ms: int = 15000  # log.cleaner.backoff.ms: the caller's pause between passes
    dedupe_buffer_bytes: int = 134217728  # log.cleaner.dedupe.buffer.size
    io_buffer_load_factor: float = 0.9  # log.cleaner.io.buffer.load.factor
    # log.cleaner.io.buffer.size: Kafka splits it into a read and a write buffer; reads here
    # take half of it at a time (a bigger batch is read alone).
    io_buffer_bytes: int = 524288
    io_max_bytes_per_second: float = DOUBLE_MAX  # log.cleaner.io.max.bytes.per.second

    def __post_init__(self) -> None:
        if self.dedupe_buffer_bytes < MIN_DEDUPE_BUFFER_BYTES:
            raise ValueError("log.cleaner.dedupe.buffer.size must be at least 1 MiB")
        if not 0 < self.io_buffer_load_factor <= 1:
            raise ValueError("log.cleaner.io.buffer.load.factor must be in (0, 1]")
        if self.io_buffer_bytes < 2:
            raise ValueError("log.cleaner.io.buffer.size must be at least 2 bytes")
        if self.io_max_bytes_per_second <= 0:
            raise ValueError("log.cleaner.io.max.bytes.per.second must be positive")
        if self.backoff_ms < 0:
            raise ValueError("log.cleaner.backoff.ms must not be negative")

    @property
    def offset_map_bytes(self) -> int:
        return int(self.dedupe_buffer_bytes * self.io_buffer_load_factor)

    @property
    def read_chunk_bytes(self) -> int:
        return self.io_buffer_bytes // 2

    @classmethod
    def from_broker_config(cls, config: BrokerConfigLookup) -> CleanerConfig:
        return cls(
            enable=bool(config["log.cleaner.enable"]),
            backoff_ms=int(config["log.cleaner.backoff.ms"]),
            dedupe_buffer_bytes=int(config["log.cleaner.dedupe.buffer.size"]),
            io_buffer_load_factor=float(config["log.cleaner.io.buffer.load.factor"]),
            io_buffer_bytes=int(config["log.cleaner.io.buffer.size"]),
            io_max_bytes_per_second=float(config["log.cleaner.io.max.bytes.per.second"]),
        )


@dataclass(slots=True)
class CleanerStats:
    """What one `clean_once` did, summed over the logs it cleaned."""

    logs_cleaned: int = 0
    logs_abandoned: int = 0  # the log changed under the cleaner, or an error (logged)
    segments_replaced: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    cleaned: list[TopicPartition] = field(default_factory=list)

    def add_io(self, io: CleanerIo) -> None:
        self.bytes_read += io.bytes_read
        self.bytes_written += io.bytes_written
        self.records_read += io.records_read
        self.records_kept += io.records_kept


@dataclass(frozen=True, slots=True)
class LogSnapshot:
    """A log as the event loop saw it; the worker plans and reads from this alone."""

    log: Log
    log_dir: Path
    key: TopicPartition
    config: LogConfig
    sources: tuple[SourceSegment, ...]  # inactive segments, oldest first
    active_base_offset: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    last_stable_offset: int
    truncation_count: int
    producer_last_offsets: dict[int, int]
    aborted: tuple[AbortedTxn, ...]  # the log's aborted transactions

    @property
    def infos(self) -> list[SegmentInfo]:
        return [source.info for source in self.sources]


def take_snapshot(log: Log) -> LogSnapshot:
    """Read on the event loop: no I/O, no await."""
    segments = log.segments
    sources = tuple(
        SourceSegment(_segment_info(segment, following.base_offset), segment.log_path, segment)
        for segment, following in itertools.pairwise(segments)
    )
    return LogSnapshot(
        log=log,
        log_dir=log.directory.parent,
        key=(log.topic, log.partition),
        config=log.config,
        sources=sources,
        active_base_offset=segments[-1].base_offset,
        log_start_offset=log.log_start_offset,
        log_end_offset=log.log_end_offset,
        high_watermark=log.high_watermark,
        last_stable_offset=log.last_stable_offset,
        truncation_count=log.truncation_count,
        producer_last_offsets=log.producer_state.last_offsets(),
        aborted=tuple(log.producer_state.transactions.aborted),
    )


def _segment_info(segment: LogSegment, end_offset: int) -> SegmentInfo:
    return SegmentInfo(
        base_offset=segment.base_offset,
        end_offset=end_offset,
        size_bytes=segment.size_bytes,
        largest_timestamp=segment.largest_timestamp,
        offset_index_bytes=segment.offset_index.size_bytes,
        time_index_bytes=segment.time_index.size_bytes,
    )


@dataclass(frozen=True, slots=True)
class _Pass:
    """The worker's preparation of one log's pass: what to rewrite and with which map."""

    offset_map: OffsetMap
    end_offset: int
    horizon_ms: int
    groups: list[list[SourceSegment]]
    txns: TxnCleaning  # follows the pass's batches in offset order, group after group


def _discard(cleaned: LogSegment) -> None:
    """A cleaned segment the log refused (worker thread)."""
    cleaned.delete()
    discard_swap_end(cleaned.log_path.parent, cleaned.base_offset)


def _make_durable(log: Log, base_offset: int) -> None:
    """After a swap (worker thread): fsync the directory, then drop the swap's end marker,
    which only a crash before that fsync could need."""
    try:
        fsync_directory(log.directory)
    except FileNotFoundError:
        return  # the log was deleted meanwhile; nothing left to make durable
    discard_swap_end(log.directory, base_offset)


@dataclass(frozen=True, slots=True)
class _Retired:
    """Segments swapped out, kept open until `due_s` for reads that already hold them."""

    due_s: float
    log: Log
    segments: list[LogSegment]


class LogCleaner:
    def __init__(
        self, config: CleanerConfig, clock_s: Callable[[], float] = time.monotonic
    ) -> None:
        self.config = config
        self._clock_s = clock_s
        # Replaced segments waiting out file.delete.delay.ms, oldest first.
        self._retired: list[_Retired] = []
        self._stop = threading.Event()
        self._lock = asyncio.Lock()  # one pass at a time
        # Per log dir, the cleaner-offset-checkpoint as last read or written.
        self._checkpoints: dict[Path, dict[TopicPartition, int]] = {}
        # Truncation count of each log when it was last cleaned: a truncation since then may
        # have removed offsets the checkpoint calls clean, so the whole log is dirty again.
        self._truncations_seen: dict[Path, int] = {}
        # Logs (by directory) whose cleaning failed on bad data: skipped until a restart, as
        # Kafka marks them uncleanable, rather than failing again every pass.
        self._uncleanable: set[Path] = set()
        # Per log dir, what its cleaner-offset-checkpoint file holds (writes only on change).
        self._written: dict[Path, dict[TopicPartition, int]] = {}

    async def clean_once(self, logs: Iterable[Log], now_ms: int) -> CleanerStats:
        """One cleaning round: every compacted log that needs it, dirtiest first. `logs`
        should be all the broker's logs: checkpoint entries of logs not given are dropped."""
        stats = CleanerStats()
        if not self.config.enable or self._stop.is_set():
            return stats
        async with self._lock:
            await self._delete_retired(self._clock_s())
            given = [log for log in logs if not log.closed]
            compacted = [
                log
                for log in given
                if log.config.compact and log.directory not in self._uncleanable
            ]
            if not compacted:
                return stats
            log_dirs = {log.directory.parent for log in compacted}
            await asyncio.to_thread(self._load_checkpoints, log_dirs)
            snapshots = [take_snapshot(log) for log in compacted]
            chosen = await asyncio.to_thread(self._choose, snapshots, now_ms)
            for snapshot in chosen:
                if self._stop.is_set():
                    break
                await self._clean_log(snapshot.log, now_ms, stats)
            await self._save_checkpoints(given, log_dirs)
            await self._delete_retired(self._clock_s())
        return stats

    async def close(self) -> None:
        """Stop: a pass under way is abandoned at its next batch; returns once it is, with
        every replaced segment closed and deleted."""
        self._stop.set()
        async with self._lock:
            await self._delete_retired(float("inf"))

    async def _delete_retired(self, now_s: float) -> None:
        due = [retired for retired in self._retired if retired.due_s <= now_s]
        self._retired = [retired for retired in self._retired if retired.due_s > now_s]
        for retired in due:
            try:
                release = partial(retired.log.release_replaced_segments, retired.segments)
                await retired.log.worker.run(release)  # after the log's earlier file work
            except OSError as error:
                logger.warning("deleting replaced segments of %s failed: %s", retired.log, error)

    # ---- choosing ----------------------------------------------------------------------------

    def _first_dirty(self, snapshot: LogSnapshot) -> int:
        checkpointed = self._checkpoints.get(snapshot.log_dir, {}).get(snapshot.key)
        seen = self._truncations_seen.get(snapshot.log.directory)
        if seen is not None and seen != snapshot.truncation_count:
            checkpointed = None
        return first_dirty_offset(checkpointed, snapshot.log_start_offset, snapshot.log_end_offset)

    def _range(self, snapshot: LogSnapshot, now_ms: int) -> CleanableRange:
        return cleanable_range(
            snapshot.infos,
            snapshot.active_base_offset,
            self._first_dirty(snapshot),
            # Kafka's bound: nothing of a transaction still open (at or above the LSO).
            min(snapshot.high_watermark, snapshot.last_stable_offset),
            now_ms,
            snapshot.config.min_compaction_lag_ms,
        )

    def _choose(self, snapshots: list[LogSnapshot], now_ms: int) -> list[LogSnapshot]:
        """Logs worth cleaning now, dirtiest first (worker thread: may read batch headers)."""
        ranked: list[tuple[float, LogSnapshot]] = []
        for snapshot in snapshots:
            cleanable = self._range(snapshot, now_ms)
            delay_ms = self._compaction_delay_ms(snapshot, cleanable, now_ms)
            if needs_cleaning(cleanable, snapshot.config.min_cleanable_dirty_ratio, delay_ms):
                ranked.append((cleanable.dirty_ratio, snapshot))
        ranked.sort(key=lambda entry: entry[0], reverse=True)
        return [snapshot for _, snapshot in ranked]

    @staticmethod
    def _compaction_delay_ms(snapshot: LogSnapshot, cleanable: CleanableRange, now_ms: int) -> int:
        if snapshot.config.max_compaction_lag_ms >= LONG_MAX:
            return 0  # the default: no deadline, so no need to read any header
        timestamps = [
            first_batch_timestamp(source.log_path)
            for source in snapshot.sources
            if source.info.end_offset > cleanable.first_dirty_offset
        ]
        return max_compaction_delay_ms(timestamps, now_ms, snapshot.config.max_compaction_lag_ms)

    # ---- cleaning one log ----------------------------------------------------------------------

    async def _clean_log(self, log: Log, now_ms: int, stats: CleanerStats) -> None:
        if log.closed or not log.config.compact:
            return
        snapshot = take_snapshot(log)  # fresh: earlier logs of this round took time
        cleanable = self._range(snapshot, now_ms)
        if cleanable.dirty_bytes == 0:
            return
        io = CleanerIo(
            self.config.read_chunk_bytes,
            self._stop,
            Throttler(self.config.io_max_bytes_per_second),
        )
        try:
            prepared = await asyncio.to_thread(self._prepare, snapshot, cleanable, io)
            if prepared is not None:
                await self._rewrite(snapshot, prepared, io, stats)
                self._done(snapshot, prepared.end_offset, stats)
        except CleaningAborted as reason:
            logger.info("cleaning %s-%d abandoned: %s", *snapshot.key, reason)
            stats.logs_abandoned += 1
        except (LogCorruptError, RecordError) as error:
            logger.error("%s-%d is uncleanable until a restart: %s", *snapshot.key, error)
            self._uncleanable.add(log.directory)
            stats.logs_abandoned += 1
        except OSError as error:
            logger.warning("cleaning %s-%d failed: %s", *snapshot.key, error)
            stats.logs_abandoned += 1
        finally:
            stats.add_io(io)

    def _prepare(
        self, snapshot: LogSnapshot, cleanable: CleanableRange, io: CleanerIo
    ) -> _Pass | None:
        """Worker thread: the offset map, how far it reaches, the groups to rewrite."""
        first_dirty = cleanable.first_dirty_offset
        offset_map = OffsetMap(self.config.offset_map_bytes)
        dirty = [
            source
            for source in snapshot.sources
            if source.info.end_offset > first_dirty
            and source.info.base_offset < cleanable.first_uncleanable_offset
        ]
        build_offset_map(
            dirty,
            first_dirty,
            cleanable.first_uncleanable_offset,
            offset_map,
            io,
            snapshot.config.max_decompressed_bytes,
            TxnCleaning(snapshot.aborted),
        )
        end_offset = offset_map.latest_offset + 1
        if end_offset <= first_dirty:
            return None
        clean = [source for source in snapshot.sources if source.info.base_offset < first_dirty]
        last_clean_modified_ms = modified_ms(clean[-1].log_path) if clean else None
        horizon_ms = delete_horizon_ms(last_clean_modified_ms, snapshot.config.delete_retention_ms)
        to_rewrite = [source for source in snapshot.sources if source.info.base_offset < end_offset]
        infos = group_segments_by_size(
            [source.info for source in to_rewrite],
            snapshot.config.segment_bytes,
            snapshot.config.segment_index_bytes,
        )
        by_base = {source.info.base_offset: source for source in to_rewrite}
        groups = [[by_base[info.base_offset] for info in group] for group in infos]
        return _Pass(offset_map, end_offset, horizon_ms, groups, TxnCleaning(snapshot.aborted))

    async def _rewrite(
        self, snapshot: LogSnapshot, prepared: _Pass, io: CleanerIo, stats: CleanerStats
    ) -> None:
        """Clean and swap in each group; CleaningAborted when the log changed meanwhile."""
        log = snapshot.log
        for group in prepared.groups:
            cleaned = await asyncio.to_thread(
                write_cleaned_segment,
                log.directory,
                group,
                snapshot.config,
                prepared.offset_map,
                prepared.horizon_ms,
                snapshot.producer_last_offsets,
                prepared.txns,
                io,
            )
            replaced = [source.segment for source in group]
            try:
                swapped = log.replace_segments(replaced, cleaned, snapshot.truncation_count)
            except OSError as error:  # a rename failed: loading the log will sort it out
                raise LogCorruptError(f"swapping in {cleaned} failed: {error}") from error
            if not swapped:
                await asyncio.to_thread(_discard, cleaned)
                raise CleaningAborted("the log changed while it was being cleaned")
            log.producer_state.transactions.forget_aborted(set(prepared.txns.take_removed()))
            stats.segments_replaced += len(group)
            delay_s = snapshot.config.file_delete_delay_ms / 1000
            self._retired.append(_Retired(self._clock_s() + delay_s, log, replaced))
            await asyncio.to_thread(_make_durable, log, cleaned.base_offset)

    def _done(self, snapshot: LogSnapshot, end_offset: int, stats: CleanerStats) -> None:
        self._checkpoints.setdefault(snapshot.log_dir, {})[snapshot.key] = end_offset
        self._truncations_seen[snapshot.log.directory] = snapshot.truncation_count
        stats.logs_cleaned += 1
        stats.cleaned.append(snapshot.key)
        logger.info("cleaned %s-%d: offsets below %d are clean", *snapshot.key, end_offset)

    # ---- cleaner-offset-checkpoint -------------------------------------------------------------

    def _load_checkpoints(self, log_dirs: Iterable[Path]) -> None:
        """Worker thread. An unreadable file is rebuilt: every log is cleaned from its start
        once, and the next write replaces the file."""
        for log_dir in log_dirs:
            if log_dir in self._checkpoints:
                continue
            try:
                offsets = read_offset_checkpoint(log_dir / CLEANER_OFFSET_CHECKPOINT)
            except CheckpointError as error:
                logger.warning("%s; cleaning every compacted log there from its start", error)
                offsets = {}
            self._checkpoints[log_dir] = offsets
            self._written[log_dir] = dict(offsets)

    async def _save_checkpoints(self, logs: list[Log], log_dirs: set[Path]) -> None:
        """Write the checkpoint of each log dir whose entries changed; entries of logs that
        no longer exist there are dropped."""
        present: dict[Path, set[TopicPartition]] = {log_dir: set() for log_dir in log_dirs}
        for log in logs:
            present.setdefault(log.directory.parent, set()).add((log.topic, log.partition))
        directories = {log.directory for log in logs}
        for directory in set(self._truncations_seen) - directories:
            del self._truncations_seen[directory]
        changed: dict[Path, dict[TopicPartition, int]] = {}
        for log_dir in log_dirs:
            current = self._checkpoints.get(log_dir, {})
            kept = {key: offset for key, offset in current.items() if key in present[log_dir]}
            if kept != self._written.get(log_dir):
                changed[log_dir] = kept
            self._checkpoints[log_dir] = kept
        if changed:
            await asyncio.to_thread(self._write_checkpoints, changed)

    def _write_checkpoints(self, changed: dict[Path, dict[TopicPartition, int]]) -> None:
        for log_dir, offsets in changed.items():
            write_offset_checkpoint(log_dir / CLEANER_OFFSET_CHECKPOINT, offsets)
            self._written[log_dir] = dict(offsets)
