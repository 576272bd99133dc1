"""All partition logs of a broker across its `log.dirs`, plus their checkpoint files.

Several log dirs (JBOD, KIP-112/113): a new log goes to the directory AlterReplicaLogDirs asked
for (its "preferred" dir, remembered until the log is created), else to the directory with the
fewest logs, future logs included, as Kafka's `nextLogDirs` chooses; the counts are kept as logs
come and go (logs being created in a batch count too), so choosing costs the same with 5 logs
or 5,000. Logs are opened and deleted in batches, one worker-thread round trip each. Paths are
absolute, as Kafka reports them. A partition may also have a future log
(`<t>-<p>.<uuid>-future`) in another directory: the copy `replace_current_with_future` swaps in
once it has caught up. Checkpoint files are per directory and cover both kinds of log.

An I/O error on a log dir (a failed write, flush, checkpoint) is reported with
`report_failure`, from any thread; the handler set with `on_failure` takes the directory
offline on the event loop (`take_log_dir_offline`), after which it holds no logs, takes no new
ones and gets no checkpoints, while the other directories go on (Kafka's
LogDirFailureChannel and handleLogDirFailure).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import shutil
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Generic, TypeVar

from broker.log.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointError,
    fsync_directory,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from broker.log.config import LogConfig
from broker.log.dir_names import (
    delete_dir_name,
    future_dir_name,
    is_delete_dir,
    is_future_dir,
    log_dir_name,
    parse_log_dir_name,
)
from broker.log.errors import LogCorruptError
from broker.log.log import Log
from broker.log.syncfs import sync_file_system, syncfs_available

logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
CLEAN_SHUTDOWN_CONTENT = '{"version":0,"brokerEpoch":-1}'
# Threads that fsync logs at once in flush_all (at shutdown).
FLUSH_ALL_THREADS = 8

TopicPartition = tuple[str, int]


class LogDirNotFoundError(Exception):
    """A log dir this broker does not have (Kafka's LogDirNotFoundException)."""


class KafkaStorageError(Exception):
    """No online log dir can take the log (Kafka's KafkaStorageException)."""


def _read_checkpoint(path: Path) -> dict[TopicPartition, int] | None:
    """The checkpoint's offsets; None (logged) when the file does not parse."""
    try:
        return read_offset_checkpoint(path)
    except CheckpointError as error:
        logger.error("Error while reading checkpoint file %s", error)
        return None


def _write_clean_shutdown_marker(path: Path) -> None:
    """Only the file's presence counts on loading (here and in ZooKeeper-mode Kafka); its
    content is what Kafka 3.9 writes there without a KRaft broker epoch, so that a log dir
    ours shut down holds the same bytes as one Kafka did."""
    with open(path, "w", encoding="utf-8") as file:
        file.write(CLEAN_SHUTDOWN_CONTENT)
        file.flush()
        os.fsync(file.fileno())


def _create_log(directory: Path, config: LogConfig) -> Log:
    log = Log.open(directory, config)
    fsync_directory(directory.parent)
    return log


def _close_all(logs: list[Log]) -> None:
    for log in logs:
        log.close()


R = TypeVar("R")


@dataclass
class OpenBatch(Generic[R]):
    """One worker-thread round trip of `open_logs_off_loop`: the logs to create (planned on the
    loop, each in the log dir chosen for it), the logs already registered, and what the
    per-log step returned, or the I/O error that stopped a log."""

    to_create: list[tuple[TopicPartition, Path]]
    existing: list[Log]
    config: LogConfig
    created: list[Log] = field(default_factory=list)
    results: dict[TopicPartition, R] = field(default_factory=dict)
    failed: dict[TopicPartition, tuple[Path, OSError]] = field(default_factory=dict)


def _run_open_batch(batch: OpenBatch[R], step: Callable[[Log], R]) -> None:
    """The file-system work of a batch (a worker thread): create the new logs, make their
    directory entries durable with one fsync per log dir, then run `step` on every log."""
    parents: set[Path] = set()
    for key, directory in batch.to_create:
        try:
            batch.created.append(Log.open(directory, batch.config))
            parents.add(directory.parent)
        except OSError as error:
            batch.failed[key] = (directory.parent, error)
    for parent in sorted(parents):
        try:
            fsync_directory(parent)
        except OSError as error:
            for log in batch.created:
                if log.directory.parent == parent:
                    batch.failed[(log.topic, log.partition)] = (parent, error)
    for log in [*batch.existing, *batch.created]:
        key = (log.topic, log.partition)
        if key in batch.failed:
            continue
        try:
            batch.results[key] = step(log)
        except OSError as error:
            batch.failed[key] = (log.directory.parent, error)


OffsetMap = dict[TopicPartition, int]
# Per log dir: recovery points, log start offsets, high watermarks.
CheckpointSnapshot = dict[Path, tuple[OffsetMap, OffsetMap, OffsetMap]]


class LogManager:
    def __init__(self, log_dirs: list[Path], default_config: LogConfig) -> None:
        self.log_dirs = [Path(log_dir).absolute() for log_dir in log_dirs]
        if len(set(self.log_dirs)) != len(self.log_dirs):
            raise ValueError(f"log.dirs names a directory twice: {self.log_dirs}")
        self.default_config = default_config
        self._logs: dict[TopicPartition, Log] = {}
        self._future_logs: dict[TopicPartition, Log] = {}
        # Partitions with an open or a deletion of their logs in flight (`_exclusive`).
        self._busy: dict[TopicPartition, asyncio.Future[None]] = {}
        # Per log dir, its logs of both kinds: what placement counts and checkpoints cover.
        self._logs_in_dir: dict[Path, dict[TopicPartition, Log]] = {d: {} for d in self.log_dirs}
        self._future_logs_in_dir: dict[Path, dict[TopicPartition, Log]] = {
            d: {} for d in self.log_dirs
        }
        # Where AlterReplicaLogDirs wants a replica that this broker does not host yet.
        self._preferred_log_dirs: dict[TopicPartition, Path] = {}
        # Logs being created on worker threads, per log dir: counted by placement, so that a
        # batch of new logs spreads over the dirs as one-by-one creation would.
        self._creating_in_dir: dict[Path, int] = {d: 0 for d in self.log_dirs}
        self._offline_log_dirs: set[Path] = set()
        self._checkpoint_lock = threading.Lock()
        # Failure reports come from worker threads too: handed to the loop, once per dir.
        self._failure_lock = threading.Lock()
        self._failures_reported: set[Path] = set()
        # Reported before `on_failure` (while loading): handed over once a handler is set.
        self._failures_unhandled: list[Path] = []
        self._failure_loop: asyncio.AbstractEventLoop | None = None
        self._failure_handler: Callable[[Path], None] | None = None
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)

    # -- log dirs -------------------------------------------------------------------------

    @property
    def online_log_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if d not in self._offline_log_dirs]

    def is_log_dir_online(self, log_dir: Path) -> bool:
        return log_dir in self._logs_in_dir and log_dir not in self._offline_log_dirs

    def resolve_log_dir(self, path: str) -> Path:
        """The configured log dir `path` names (absolute, as clients send it); raises
        LogDirNotFoundError for any other path."""
        for log_dir in self.log_dirs:
            if str(log_dir) == path:  # Kafka compares the absolute path's text
                return log_dir
        raise LogDirNotFoundError(f"Failed to find the log directory {path}")

    # -- failed log dirs ------------------------------------------------------------------------

    def on_failure(self, loop: asyncio.AbstractEventLoop, handler: Callable[[Path], None]) -> None:
        """Call `handler(log_dir)` on `loop` for each log dir that failed before (while the
        logs loaded) or fails from now on."""
        with self._failure_lock:
            self._failure_loop, self._failure_handler = loop, handler
            unhandled, self._failures_unhandled = self._failures_unhandled, []
        for log_dir in unhandled:
            loop.call_soon_threadsafe(handler, log_dir)

    def report_failure(self, log_dir: Path, error: OSError) -> None:
        """An I/O error on `log_dir` (any thread): the dir is to go offline."""
        with self._failure_lock:
            if log_dir in self._failures_reported or log_dir not in self._logs_in_dir:
                return
            self._failures_reported.add(log_dir)
            loop, handler = self._failure_loop, self._failure_handler
            if loop is None or handler is None:
                self._failures_unhandled.append(log_dir)
        logger.error("I/O error in log dir %s: %s; taking it offline", log_dir, error)
        if loop is not None and handler is not None:
            loop.call_soon_threadsafe(handler, log_dir)

    def take_log_dir_offline(self, log_dir: Path) -> tuple[list[Log], list[Log]]:
        """Stop using `log_dir`: its current and future logs leave the registry (returned,
        for the caller to close off the loop; their files stay), and nothing goes there
        any more."""
        self._offline_log_dirs.add(log_dir)
        current = list(self._logs_in_dir[log_dir].values())
        future = list(self._future_logs_in_dir[log_dir].values())
        for log in [*current, *future]:
            self._remove(log)
        for key, preferred in list(self._preferred_log_dirs.items()):
            if preferred == log_dir:
                del self._preferred_log_dirs[key]
        return current, future

    def flush_log(self, log: Log) -> None:
        """fsync one log (blocking: run in an executor); an I/O error is reported."""
        try:
            log.flush()
        except OSError as error:
            self.report_failure(log.directory.parent, error)

    def logs_in_dir(self, log_dir: Path) -> list[Log]:
        """The current and future logs in `log_dir` (none when it is offline)."""
        return [*self._logs_in_dir[log_dir].values(), *self._future_logs_in_dir[log_dir].values()]

    def _log_count(self, log_dir: Path) -> int:
        return (
            len(self._logs_in_dir[log_dir])
            + len(self._future_logs_in_dir[log_dir])
            + self._creating_in_dir[log_dir]
        )

    def _least_loaded_log_dir(self) -> Path:
        """The online dir with the fewest logs (the first configured one on a tie)."""
        online = self.online_log_dirs
        if not online:
            raise KafkaStorageError(f"no log directory is online: {self.log_dirs} all failed")
        return min(online, key=self._log_count)

    def _next_log_dir(self, key: TopicPartition) -> Path:
        preferred = self._preferred_log_dirs.get(key)
        if preferred is not None and self.is_log_dir_online(preferred):
            return preferred
        return self._least_loaded_log_dir()

    def maybe_update_preferred_log_dir(self, key: TopicPartition, log_dir: Path) -> None:
        """Remember where the replica of `key` should be created (AlterReplicaLogDirs for a
        replica not here yet), unless its current or future log is already there."""
        current = self._logs.get(key)
        future = self._future_logs.get(key)
        if (current is not None and current.directory.parent == log_dir) or (
            future is not None and future.directory.parent == log_dir
        ):
            return
        self._preferred_log_dirs[key] = log_dir

    def preferred_log_dir(self, key: TopicPartition) -> Path | None:
        return self._preferred_log_dirs.get(key)

    # -- loading --------------------------------------------------------------------------

    def load_logs(
        self, topic_configs: Mapping[str, LogConfig] | None = None, now_ms: int | None = None
    ) -> None:
        """Open every partition directory; a clean-shutdown marker means no full recovery."""
        for log_dir in self.online_log_dirs:
            self._load_log_dir(log_dir, topic_configs or {}, now_ms)
        self._finish_interrupted_swaps()

    def _load_log_dir(
        self, log_dir: Path, topic_configs: Mapping[str, LogConfig], now_ms: int | None
    ) -> None:
        marker = log_dir / CLEAN_SHUTDOWN_FILE
        had_clean_shutdown = marker.exists()
        recovery_points = _read_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT)
        if recovery_points is None:
            # Rebuilt: recover every log of the dir from its start, as after a crash.
            logger.warning("%s: recovering every log from its start", log_dir)
            had_clean_shutdown, recovery_points = False, {}
        high_watermarks = _read_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT)
        if high_watermarks is None:
            # Rebuilt by replication: from the log start, leaders move them up again as
            # followers fetch, and followers take theirs from their leaders.
            logger.warning("%s: high watermarks restart from the log start offsets", log_dir)
            high_watermarks = {}
        log_start_offsets = _read_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT)
        if log_start_offsets is None:
            # Not rebuildable: records deleted below a log start offset (DeleteRecords) would
            # be served again. The dir's logs load, so that its replicas are known, then the
            # dir goes offline as on an I/O error (with no other log dir, the broker halts).
            log_start_offsets = {}
            self.report_failure(
                log_dir,
                OSError(
                    f"unreadable {log_dir / LOG_START_OFFSET_CHECKPOINT}: log start offsets"
                    " of its logs are unknown"
                ),
            )
        for child in sorted(log_dir.iterdir()):
            if not child.is_dir():
                continue
            if is_delete_dir(child.name):
                shutil.rmtree(child, ignore_errors=True)  # a deletion interrupted by a crash
                continue
            try:
                key = parse_log_dir_name(child.name)
            except ValueError:
                continue
            registry = self._future_logs if is_future_dir(child.name) else self._logs
            if key in registry:
                kind = "a future log" if registry is self._future_logs else "a log"
                raise LogCorruptError(f"{key[0]}-{key[1]} has {kind} in more than one log dir")
            self._add(
                Log.open(
                    child,
                    topic_configs.get(key[0], self.default_config),
                    recovery_point=recovery_points.get(key, 0),
                    log_start_offset=log_start_offsets.get(key, 0),
                    now_ms=now_ms,
                    had_clean_shutdown=had_clean_shutdown,
                    high_watermark=high_watermarks.get(key, 0),
                )
            )
        marker.unlink(missing_ok=True)  # from now on, a crash means recovery

    def _finish_interrupted_swaps(self) -> None:
        """A future log without a current log: a crash came between the two renames of
        `replace_current_with_future` (the old log was already renamed for deletion), so the
        future log is complete: finish the swap. One in its current log's own dir cannot
        have come from a move: drop it."""
        for key, future in list(self._future_logs.items()):
            current = self._logs.get(key)
            if current is None:
                logger.info("%s-%d: completing an interrupted log dir move", *key)
                self._remove(future)
                future.rename_directory(future.directory.with_name(log_dir_name(*key)))
                self._add(future)
            elif current.directory.parent == future.directory.parent:
                logger.warning("%s-%d: dropping a future log in its own log dir", *key)
                self._remove(future)
                future.delete()

    # -- the registry -----------------------------------------------------------------------

    def _add(self, log: Log) -> None:
        key = (log.topic, log.partition)
        # The log's own background file work (deletes, epoch checkpoints) reports here too.
        log.on_io_error = partial(self.report_failure, log.directory.parent)
        if log.is_future:
            self._future_logs[key] = log
            self._future_logs_in_dir[log.directory.parent][key] = log
        else:
            self._logs[key] = log
            self._logs_in_dir[log.directory.parent][key] = log

    def _remove(self, log: Log) -> None:
        key = (log.topic, log.partition)
        registry, in_dir = (
            (self._future_logs, self._future_logs_in_dir)
            if log.is_future
            else (self._logs, self._logs_in_dir)
        )
        if registry.get(key) is log:
            del registry[key]
            in_dir[log.directory.parent].pop(key, None)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def get_future_log(self, topic: str, partition: int) -> Log | None:
        return self._future_logs.get((topic, partition))

    def all_logs(self) -> list[Log]:
        """Every current log (not future ones)."""
        return list(self._logs.values())

    def all_future_logs(self) -> list[Log]:
        return list(self._future_logs.values())

    # -- creating logs ----------------------------------------------------------------------

    async def open_logs_off_loop(
        self, keys: Sequence[TopicPartition], step: Callable[[Log], R]
    ) -> tuple[dict[TopicPartition, tuple[Log, R]], set[TopicPartition]]:
        """Open (creating where needed) the logs of `keys` and run `step` on each, all in one
        worker-thread round trip; the registry is only touched here, on the event loop.
        Returns each ready log with what `step` returned, and the keys that failed (their log
        dir is reported failed, or went offline meanwhile)."""
        async with self._exclusive(keys):
            batch: OpenBatch[R] = OpenBatch([], [], self.default_config)
            await self._open_batch(batch, keys, step)
            return await self._register_batch(batch)

    async def _open_batch(
        self, batch: OpenBatch[R], keys: Sequence[TopicPartition], step: Callable[[Log], R]
    ) -> None:
        try:
            for key in keys:
                existing = self._logs.get(key)
                if existing is not None:
                    batch.existing.append(existing)
                    continue
                log_dir = self._next_log_dir(key)
                self._creating_in_dir[log_dir] += 1
                batch.to_create.append((key, log_dir / log_dir_name(*key)))
            await asyncio.to_thread(_run_open_batch, batch, step)
        finally:
            for _, directory in batch.to_create:
                self._creating_in_dir[directory.parent] -= 1

    @contextlib.asynccontextmanager
    async def _exclusive(self, keys: Iterable[TopicPartition]) -> AsyncIterator[None]:
        """Run one open or deletion of these partitions' logs at a time. The znode watch and the
        controller's requests may both open a partition's log, and a StopReplica may delete it
        meanwhile: a deletion renames the directory away, files created there by an open in
        flight would go with it (and the open fail as if the disk had)."""
        wanted = set(keys)
        while True:
            running = {self._busy[key] for key in wanted if key in self._busy}
            if not running:
                break
            await asyncio.wait(running)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for key in wanted:
            self._busy[key] = done
        try:
            yield
        finally:
            for key in wanted:
                del self._busy[key]
            done.set_result(None)

    async def _register_batch(
        self, batch: OpenBatch[R]
    ) -> tuple[dict[TopicPartition, tuple[Log, R]], set[TopicPartition]]:
        for key, (log_dir, error) in batch.failed.items():
            logger.error("%s-%d: cannot open its log in %s: %s", *key, log_dir, error)
            self.report_failure(log_dir, error)
        ready: dict[TopicPartition, tuple[Log, R]] = {}
        unused: list[Log] = []
        for log in [*batch.existing, *batch.created]:
            key = (log.topic, log.partition)
            if key in batch.failed or key not in batch.results:
                unused.append(log)
                continue
            registered = self._logs.get(key)
            if not self.is_log_dir_online(log.directory.parent):
                unused.append(log)
                batch.failed[key] = (log.directory.parent, OSError("log dir went offline"))
                continue
            if registered is None:
                self._on_created(log)  # created by this batch
            elif registered is not log:  # created or replaced by another task meanwhile
                unused.append(log)
                continue
            ready[key] = (log, batch.results[key])
        created = set(map(id, batch.created))
        leftovers = [log for log in unused if id(log) in created]
        if leftovers:
            await asyncio.to_thread(_close_all, leftovers)
        return ready, set(batch.failed)

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        key = (topic, partition)
        log = self._logs.get(key)
        if log is not None:
            return log
        log_dir = self._next_log_dir(key)
        log = _create_log(log_dir / log_dir_name(topic, partition), config or self.default_config)
        self._on_created(log)
        return log

    def _on_created(self, log: Log) -> None:
        self._add(log)
        # Satisfied, as Kafka forgets it once the log exists.
        self._preferred_log_dirs.pop((log.topic, log.partition), None)

    async def create_future_log_off_loop(
        self, topic: str, partition: int, log_dir: Path, config: LogConfig
    ) -> Log:
        """A new, empty future log of the partition in `log_dir` (the caller checked that the
        partition has a current log elsewhere and no future log yet)."""
        key = (topic, partition)
        if key in self._future_logs:
            raise LogCorruptError(f"{topic}-{partition} already has a future log")
        try:
            future = await asyncio.to_thread(
                _create_log, log_dir / future_dir_name(topic, partition), config
            )
        except OSError as error:
            self.report_failure(log_dir, error)
            raise KafkaStorageError(f"cannot create a future log in {log_dir}") from error
        if key in self._future_logs or not self.is_log_dir_online(log_dir):
            await asyncio.to_thread(future.delete)
            raise KafkaStorageError(f"could not create the future log of {topic}-{partition}")
        self._on_created(future)
        return future

    # -- swapping in a future log -------------------------------------------------------------

    def replace_current_with_future(self, topic: str, partition: int) -> Log:
        """Make the caught-up future log the partition's log; returns the old log, out of the
        registry, for `release_replaced_log_off_loop`.

        Runs on the event loop with no await, so nothing appends to either log in between
        (Kafka holds the partition's write lock here). The old log is renamed for deletion
        before the future log takes its name, so a crash between the two renames leaves one
        complete log (see `_finish_interrupted_swaps`), never two."""
        key = (topic, partition)
        current = self._logs.get(key)
        future = self._future_logs.get(key)
        if current is None or future is None:
            raise KafkaStorageError(f"{topic}-{partition} has no current and future log to swap")
        if current.log_end_offset != future.log_end_offset:
            raise LogCorruptError(f"{topic}-{partition}: future log has not caught up")
        # Before any rename, so that a broken invariant leaves both logs as they were. In
        # range: the same log end, and the future log's start never passes its high watermark,
        # which never passes the current log's.
        future.update_high_watermark(current.high_watermark)
        self._remove(current)
        self._remove(future)
        current.rename_directory(current.directory.with_name(delete_dir_name(topic, partition)))
        future.rename_directory(future.directory.with_name(log_dir_name(topic, partition)))
        self._add(future)
        return current

    async def release_replaced_log_off_loop(self, old: Log, new: Log) -> None:
        """After `replace_current_with_future`: make both renames durable, delete the old
        log's files and checkpoint its dir without it."""
        snapshot = {
            old.directory.parent: self._snapshot_log_dir(old.directory.parent),
            new.directory.parent: self._snapshot_log_dir(new.directory.parent),
        }
        await asyncio.to_thread(self._release_replaced, old, new, snapshot)

    def _release_replaced(self, old: Log, new: Log, snapshot: CheckpointSnapshot) -> None:
        fsync_directory(new.directory.parent)
        old.close()
        fsync_directory(old.directory.parent)
        shutil.rmtree(old.directory, ignore_errors=True)
        self.write_checkpoints(snapshot)

    # -- deleting logs --------------------------------------------------------------------

    async def delete_log_off_loop(self, topic: str, partition: int) -> None:
        """`delete_log` with the renames, removal and checkpoint writes on a worker thread.
        The partition's future log, if any, goes too."""
        await self.delete_logs_off_loop([(topic, partition)])

    async def delete_logs_off_loop(self, keys: Sequence[TopicPartition]) -> None:
        """Delete the logs (current and future) of `keys` in one worker-thread round trip:
        every directory renamed for deletion, one fsync and one checkpoint write per log dir
        after all the renames (as Kafka's batched asyncDelete), then the files removed."""
        async with self._exclusive(keys):
            detached = [log for key in keys for log in self._detach(*key)]
            if not detached:
                return
            log_dirs = {log.directory.parent for log in detached}
            snapshot = {log_dir: self._snapshot_log_dir(log_dir) for log_dir in log_dirs}
            await asyncio.to_thread(self._remove_all_detached, detached, snapshot)

    def _remove_all_detached(self, logs: list[Log], snapshot: CheckpointSnapshot) -> None:
        for log in logs:
            log.close()
            log.rename_directory(log.directory.with_name(delete_dir_name(log.topic, log.partition)))
        for log_dir in sorted(snapshot):
            fsync_directory(log_dir)
        for log in logs:
            shutil.rmtree(log.directory, ignore_errors=True)
        self.write_checkpoints(snapshot)

    async def delete_future_log_off_loop(self, topic: str, partition: int) -> None:
        future = self._future_logs.get((topic, partition))
        if future is None:
            return
        self._remove(future)
        snapshot = {future.directory.parent: self._snapshot_log_dir(future.directory.parent)}
        await asyncio.to_thread(self._remove_detached, future, snapshot)

    def _detach(self, topic: str, partition: int) -> list[Log]:
        key = (topic, partition)
        detached = [log for log in (self._logs.get(key), self._future_logs.get(key)) if log]
        for log in detached:
            self._remove(log)
        return detached

    def _remove_detached(self, log: Log, snapshot: CheckpointSnapshot) -> None:
        """Rename to `<dir>.<uuid>-delete` (so a crash cannot resurrect it), then remove."""
        log_dir = log.directory.parent
        log.close()
        log.rename_directory(log.directory.with_name(delete_dir_name(log.topic, log.partition)))
        fsync_directory(log_dir)
        shutil.rmtree(log.directory, ignore_errors=True)
        self.write_checkpoints(snapshot)

    def delete_log(self, topic: str, partition: int) -> None:
        """Blocking `delete_log_off_loop` (start-up and tests)."""
        for log in self._detach(topic, partition):
            snapshot = {log.directory.parent: self._snapshot_log_dir(log.directory.parent)}
            self._remove_detached(log, snapshot)

    # -- durability -------------------------------------------------------------------------

    def flush_all(self) -> None:
        """fsync every log, FLUSH_ALL_THREADS at a time (blocking: run in an executor). A
        broker shutting down flushes thousands of logs; concurrent fsyncs overlap their waits
        for the disk (measured: 5,000 logs in 2.5 s instead of 3.0 s)."""
        logs = [*self.all_logs(), *self.all_future_logs()]
        with concurrent.futures.ThreadPoolExecutor(
            FLUSH_ALL_THREADS, thread_name_prefix="log-flush"
        ) as pool:
            for _ in pool.map(self.flush_log, logs):
                pass

    def start_early_sync(self) -> None:
        """A controlled shutdown is starting: write back what is dirty now, on a thread,
        while the controller moves the partitions away, so that the syncfs at the end has
        only what was written since. Its errors are left to that syncfs to report."""
        if not syncfs_available():
            return
        threading.Thread(
            target=_sync_quietly, args=(self.online_log_dirs,), name="early-syncfs", daemon=True
        ).start()

    def _sync_all_at_once(self) -> bool:
        """At shutdown, when nothing appends any more: dirty epoch checkpoints written, then
        one syncfs per log dir instead of an fsync per file of every log, then each log's
        recovery point moved to its end, as its flush would. False where syncfs does not
        exist."""
        if not syncfs_available():
            return False
        started = time.monotonic()
        logs = [*self.all_logs(), *self.all_future_logs()]
        ends = [(log, log.log_end_offset, log.truncation_count) for log in logs]
        dirty = [log for log in logs if log.leader_epoch_cache.dirty]
        # The syncfs below makes them and the producer snapshots at the log ends durable.
        # Epoch checkpoints on threads: each rename over the old file waits for the disk
        # (ext4 flushes a file renamed over another). Snapshots, new files, on this thread
        # meanwhile: more threads only slowed them down (5,000 new files: 0.45 s on one
        # thread, 0.7-1.0 s on two to eight).
        with concurrent.futures.ThreadPoolExecutor(
            FLUSH_ALL_THREADS, thread_name_prefix="epoch-checkpoint"
        ) as pool:
            checkpoints = [
                pool.submit(log.write_epoch_checkpoint_if_dirty, fsync=False) for log in dirty
            ]
            snapshots = sum(log.write_end_snapshot() for log in logs)
            for checkpoint in checkpoints:
                checkpoint.result()
        written = time.monotonic()
        synced: set[Path] = set()
        for log_dir in self.online_log_dirs:
            try:
                sync_file_system(log_dir)
            except OSError as error:
                self.report_failure(log_dir, error)
                continue
            synced.add(log_dir)
        for log, end_offset, truncations in ends:
            if log.directory.parent in synced:
                log.mark_synced(end_offset, truncations)
        logger.info(
            "synced %d logs (%d epoch checkpoints and %d producer snapshots written) in %d ms:"
            " their end states written in %d ms, then the file systems synced in %d ms",
            len(logs),
            len(dirty),
            snapshots,
            (time.monotonic() - started) * 1000,
            (written - started) * 1000,
            (time.monotonic() - written) * 1000,
        )
        return True

    def checkpoint(self) -> None:
        """Write recovery-point and log-start-offset checkpoints of every log dir."""
        self.write_checkpoints(self.checkpoint_snapshot())

    def checkpoint_snapshot(self) -> CheckpointSnapshot:
        """The offsets to checkpoint, read on the thread that changes the logs (the loop);
        `write_checkpoints` may then run in an executor without touching live state."""
        return {log_dir: self._snapshot_log_dir(log_dir) for log_dir in self.online_log_dirs}

    def _snapshot_log_dir(self, log_dir: Path) -> tuple[OffsetMap, OffsetMap, OffsetMap]:
        logs = {(log.topic, log.partition): log for log in self.logs_in_dir(log_dir)}
        recovery_points = {key: log.recovery_point for key, log in logs.items()}
        log_start_offsets = {
            key: log.log_start_offset
            for key, log in logs.items()
            if log.log_start_offset > log.segments[0].base_offset
        }
        high_watermarks = {key: log.high_watermark for key, log in logs.items()}
        return recovery_points, log_start_offsets, high_watermarks

    def high_watermark_snapshot(self) -> dict[Path, OffsetMap]:
        """High watermarks per log dir, read on the loop (see `checkpoint_snapshot`)."""
        return {
            log_dir: {
                (log.topic, log.partition): log.high_watermark for log in self.logs_in_dir(log_dir)
            }
            for log_dir in self.online_log_dirs
        }

    def write_high_watermarks(self, snapshot: dict[Path, OffsetMap]) -> None:
        """replication-offset-checkpoint of every log dir (blocking: run in an executor)."""
        with self._checkpoint_lock:
            for log_dir, high_watermarks in snapshot.items():
                try:
                    write_offset_checkpoint(
                        log_dir / REPLICATION_OFFSET_CHECKPOINT, high_watermarks
                    )
                except OSError as error:
                    self.report_failure(log_dir, error)

    def write_checkpoints(self, snapshot: CheckpointSnapshot) -> None:
        # One writer at a time: each file goes through the same .tmp name.
        with self._checkpoint_lock:
            for log_dir, (recovery_points, log_start_offsets, high_watermarks) in snapshot.items():
                try:
                    write_offset_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT, recovery_points)
                    write_offset_checkpoint(
                        log_dir / LOG_START_OFFSET_CHECKPOINT, log_start_offsets
                    )
                    write_offset_checkpoint(
                        log_dir / REPLICATION_OFFSET_CHECKPOINT, high_watermarks
                    )
                except OSError as error:
                    self.report_failure(log_dir, error)

    def shutdown(self) -> None:
        """Flush, checkpoint, close, then mark each log dir as cleanly shut down."""
        if not self._sync_all_at_once():
            self.flush_all()
        self.checkpoint()
        for log in [*self.all_logs(), *self.all_future_logs()]:
            log.close()
        for log_dir in self.online_log_dirs:
            _write_clean_shutdown_marker(log_dir / CLEAN_SHUTDOWN_FILE)
            fsync_directory(log_dir)


def _sync_quietly(log_dirs: list[Path]) -> None:
    for log_dir in log_dirs:
        try:
            sync_file_system(log_dir)
        except OSError as error:
            logger.info(
                "early sync of %s failed (the shutdown's sync reports it): %s", log_dir, error
            )
