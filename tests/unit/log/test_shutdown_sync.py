"""A LogManager shutting down makes its logs durable with one syncfs per log dir, not an
fsync per file, and falls back to flushing log by log where syncfs does not exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.log import manager as manager_module
from broker.log.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
)
from broker.log.manager import CLEAN_SHUTDOWN_FILE, LogManager

from .support import SMALL_CONFIG, count_segment_fsyncs, make_batch


def _manager_with_logs(tmp_path: Path) -> LogManager:
    manager = LogManager([tmp_path / "d1", tmp_path / "d2"], SMALL_CONFIG)
    for partition in range(4):
        manager.get_or_create_log("t", partition).append_as_leader(make_batch(3), 0, 0)
    return manager


def _recovery_points(tmp_path: Path) -> dict[tuple[str, int], int]:
    points: dict[tuple[str, int], int] = {}
    for log_dir in ("d1", "d2"):
        points |= read_offset_checkpoint(tmp_path / log_dir / RECOVERY_POINT_CHECKPOINT)
    return points


def test_shutdown_syncs_each_log_dir_once_instead_of_each_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushed = count_segment_fsyncs(monkeypatch)
    synced: list[Path] = []
    real_sync = manager_module.sync_file_system

    def recording_sync(path: Path) -> None:
        synced.append(path)
        real_sync(path)

    monkeypatch.setattr(manager_module, "sync_file_system", recording_sync)
    manager = _manager_with_logs(tmp_path)
    manager.shutdown()
    assert sorted(synced) == [tmp_path / "d1", tmp_path / "d2"]
    assert flushed == []
    assert _recovery_points(tmp_path) == {("t", p): 3 for p in range(4)}
    assert (tmp_path / "d1" / CLEAN_SHUTDOWN_FILE).exists()
    # The epoch checkpoints were written before the sync (their entries are below the new
    # recovery points, which recovery does not re-derive).
    for log in manager.all_logs():
        assert read_leader_epoch_checkpoint(log.directory / LEADER_EPOCH_CHECKPOINT) == [(0, 0)]


def test_without_syncfs_shutdown_flushes_log_by_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushed = count_segment_fsyncs(monkeypatch)
    monkeypatch.setattr(manager_module, "syncfs_available", lambda: False)
    manager = _manager_with_logs(tmp_path)
    manager.shutdown()
    assert len(flushed) == 4
    assert _recovery_points(tmp_path) == {("t", p): 3 for p in range(4)}


def test_a_failed_sync_leaves_that_dirs_recovery_points_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_in_d2(path: Path) -> None:
        if path.name == "d2":
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(manager_module, "sync_file_system", failing_in_d2)
    manager = _manager_with_logs(tmp_path)
    in_d2 = [log for log in manager.all_logs() if log.directory.parent.name == "d2"]
    assert in_d2
    manager.shutdown()
    for log in manager.all_logs():
        expected = 0 if log.directory.parent.name == "d2" else 3
        assert log.recovery_point == expected
