"""A LogManager shutting down makes its logs durable with one syncfs per log dir, not an
fsync per file, and falls back to flushing log by log where syncfs does not exist."""

from __future__ import annotations

import threading
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


def test_the_early_sync_writes_back_each_log_dir_on_its_own_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[tuple[Path, str]] = []
    done = threading.Event()

    def recording_sync(path: Path) -> None:
        synced.append((path, threading.current_thread().name))
        if len(synced) == 2:
            done.set()

    monkeypatch.setattr(manager_module, "sync_file_system", recording_sync)
    manager = _manager_with_logs(tmp_path)
    manager.start_early_sync()
    assert done.wait(10), f"the early sync reached only {synced}"
    assert sorted(path for path, _ in synced) == [tmp_path / "d1", tmp_path / "d2"]
    assert {thread for _, thread in synced} == {"early-syncfs"}


def test_a_failed_early_sync_is_left_to_the_shutdowns_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path] = []
    early_done = threading.Event()

    def failing_first_in_d1(path: Path) -> None:
        calls.append(path)
        if len(calls) == 2:
            early_done.set()
        if path.name == "d1" and len(calls) == 1:
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(manager_module, "sync_file_system", failing_first_in_d1)
    manager = _manager_with_logs(tmp_path)
    manager.start_early_sync()
    assert early_done.wait(10), f"the early sync reached only {calls}"
    assert calls == [tmp_path / "d1", tmp_path / "d2"]  # it went on past the failure
    assert manager.online_log_dirs == [tmp_path / "d1", tmp_path / "d2"]
    manager.shutdown()
    assert _recovery_points(tmp_path) == {("t", p): 3 for p in range(4)}
