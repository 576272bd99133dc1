"""All partition logs of a broker across its `log.dirs`, plus their checkpoint files."""

from __future__ import annotations

import asyncio
import logging
import shutil
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path

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
from broker.log.errors import LogCorruptError
from broker.log.log import Log, parse_partition_dir

logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"

TopicPartition = tuple[str, int]


def _open_new_log(log_dir: Path, name: str, config: LogConfig) -> Log:
    log = Log.open(log_dir / name, config)
    fsync_directory(log_dir)
    return log


def _read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    try:
        return read_offset_checkpoint(path)
    except CheckpointError as error:
        # Losing a checkpoint only costs recovery time: recover everything instead.
        logger.warning("ignoring unreadable checkpoint: %s", error)
        return {}


OffsetMap = dict[TopicPartition, int]
# Per log dir: recovery points, log start offsets, high watermarks.
CheckpointSnapshot = dict[Path, tuple[OffsetMap, OffsetMap, OffsetMap]]


class LogManager:
    def __init__(self, log_dirs: list[Path], default_config: LogConfig) -> None:
        self.log_dirs = [Path(log_dir) for log_dir in log_dirs]
        self.default_config = default_config
        self._logs: dict[TopicPartition, Log] = {}
        self._log_dir_of: dict[TopicPartition, Path] = {}
        self._checkpoint_lock = threading.Lock()
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)

    def load_logs(
        self, topic_configs: Mapping[str, LogConfig] | None = None, now_ms: int | None = None
    ) -> None:
        """Open every partition directory; a clean-shutdown marker means no full recovery."""
        for log_dir in self.log_dirs:
            self._load_log_dir(log_dir, topic_configs or {}, now_ms)

    def _load_log_dir(
        self, log_dir: Path, topic_configs: Mapping[str, LogConfig], now_ms: int | None
    ) -> None:
        marker = log_dir / CLEAN_SHUTDOWN_FILE
        had_clean_shutdown = marker.exists()
        recovery_points = _read_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT)
        log_start_offsets = _read_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT)
        high_watermarks = _read_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT)
        for child in sorted(log_dir.iterdir()):
            if not child.is_dir() or child.name.endswith(FUTURE_DIR_SUFFIX):
                continue
            if child.name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(child, ignore_errors=True)  # a deletion interrupted by a crash
                continue
            try:
                key = parse_partition_dir(child.name)
            except ValueError:
                continue
            if key in self._logs:
                raise LogCorruptError(f"{key[0]}-{key[1]} exists in more than one log dir")
            self._logs[key] = Log.open(
                child,
                topic_configs.get(key[0], self.default_config),
                recovery_point=recovery_points.get(key, 0),
                log_start_offset=log_start_offsets.get(key, 0),
                now_ms=now_ms,
                had_clean_shutdown=had_clean_shutdown,
                high_watermark=high_watermarks.get(key, 0),
            )
            self._log_dir_of[key] = log_dir
        marker.unlink(missing_ok=True)  # from now on, a crash means recovery

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    async def open_log_off_loop(self, topic: str, partition: int) -> Log:
        """`get_or_create_log` with the file-system work (directory, segment files, fsync) on
        a worker thread; the registry itself is only touched on the event loop."""
        key = (topic, partition)
        existing = self._logs.get(key)
        if existing is not None:
            return existing
        log_dir = self._least_loaded_log_dir()
        opened = await asyncio.to_thread(
            _open_new_log, log_dir, f"{topic}-{partition}", self.default_config
        )
        raced = self._logs.get(key)
        if raced is not None:  # opened by another task meanwhile: keep that one
            await asyncio.to_thread(opened.close)
            return raced
        self._logs[key] = opened
        self._log_dir_of[key] = log_dir
        return opened

    async def delete_log_off_loop(self, topic: str, partition: int) -> None:
        """`delete_log` with the renames, removal and checkpoint writes on a worker thread."""
        detached = self._detach(topic, partition)
        if detached is None:
            return
        log, log_dir = detached
        snapshot = {log_dir: self._snapshot_log_dir(log_dir)}
        await asyncio.to_thread(self._remove_detached, log, log_dir, snapshot)

    def _detach(self, topic: str, partition: int) -> tuple[Log, Path] | None:
        key = (topic, partition)
        log = self._logs.pop(key, None)
        log_dir = self._log_dir_of.pop(key, None)
        if log is None or log_dir is None:
            return None
        return log, log_dir

    def _remove_detached(self, log: Log, log_dir: Path, snapshot: CheckpointSnapshot) -> None:
        """Rename to `<dir>.<uuid>-delete` (so a crash cannot resurrect it), then remove."""
        log.close()
        doomed = log.directory.with_name(
            f"{log.directory.name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
        )
        log.directory.rename(doomed)
        log.rename_directory(doomed)
        fsync_directory(log_dir)
        shutil.rmtree(doomed, ignore_errors=True)
        self.write_checkpoints(snapshot)

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        key = (topic, partition)
        log = self._logs.get(key)
        if log is not None:
            return log
        log_dir = self._least_loaded_log_dir()
        log = Log.open(log_dir / f"{topic}-{partition}", config or self.default_config)
        fsync_directory(log_dir)
        self._logs[key] = log
        self._log_dir_of[key] = log_dir
        return log

    def _least_loaded_log_dir(self) -> Path:
        counts = dict.fromkeys(self.log_dirs, 0)
        for log_dir in self._log_dir_of.values():
            counts[log_dir] += 1
        return min(self.log_dirs, key=lambda log_dir: counts[log_dir])

    def delete_log(self, topic: str, partition: int) -> None:
        """Blocking `delete_log_off_loop` (start-up and tests)."""
        detached = self._detach(topic, partition)
        if detached is not None:
            log, log_dir = detached
            self._remove_detached(log, log_dir, {log_dir: self._snapshot_log_dir(log_dir)})

    def all_logs(self) -> list[Log]:
        return list(self._logs.values())

    def flush_all(self) -> None:
        """fsync every log (blocking: run in an executor)."""
        for log in self.all_logs():
            log.flush()

    def checkpoint(self) -> None:
        """Write recovery-point and log-start-offset checkpoints of every log dir."""
        self.write_checkpoints(self.checkpoint_snapshot())

    def checkpoint_snapshot(self) -> CheckpointSnapshot:
        """The offsets to checkpoint, read on the thread that changes the logs (the loop);
        `write_checkpoints` may then run in an executor without touching live state."""
        return {log_dir: self._snapshot_log_dir(log_dir) for log_dir in self.log_dirs}

    def _snapshot_log_dir(self, log_dir: Path) -> tuple[OffsetMap, OffsetMap, OffsetMap]:
        logs = {key: log for key, log in self._logs.items() if self._log_dir_of[key] == log_dir}
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
        snapshot: dict[Path, OffsetMap] = {log_dir: {} for log_dir in self.log_dirs}
        for key, log in self._logs.items():
            snapshot[self._log_dir_of[key]][key] = log.high_watermark
        return snapshot

    def write_high_watermarks(self, snapshot: dict[Path, OffsetMap]) -> None:
        """replication-offset-checkpoint of every log dir (blocking: run in an executor)."""
        with self._checkpoint_lock:
            for log_dir, high_watermarks in snapshot.items():
                write_offset_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT, high_watermarks)

    def write_checkpoints(self, snapshot: CheckpointSnapshot) -> None:
        # One writer at a time: each file goes through the same .tmp name.
        with self._checkpoint_lock:
            for log_dir, (recovery_points, log_start_offsets, high_watermarks) in snapshot.items():
                write_offset_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT, recovery_points)
                write_offset_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT, log_start_offsets)
                write_offset_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT, high_watermarks)

    def shutdown(self) -> None:
        """Flush, checkpoint, close, then mark each log dir as cleanly shut down."""
        self.flush_all()
        self.checkpoint()
        for log in self.all_logs():
            log.close()
        for log_dir in self.log_dirs:
            (log_dir / CLEAN_SHUTDOWN_FILE).touch()
            fsync_directory(log_dir)
