from __future__ import annotations

from pathlib import Path

from broker.log.checkpoints import read_offset_checkpoint
from broker.log.manager import CLEAN_SHUTDOWN_FILE, LogManager
from broker.log.records import decode_records

from .support import SMALL_CONFIG, make_batch


def _manager(tmp_path: Path) -> LogManager:
    return LogManager([tmp_path / "d1", tmp_path / "d2"], SMALL_CONFIG)


def test_create_spreads_partitions_over_log_dirs(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    logs = [manager.get_or_create_log("t", p) for p in range(4)]
    assert {log.directory.parent.name for log in logs} == {"d1", "d2"}
    assert manager.get_or_create_log("t", 0) is logs[0]
    assert manager.get_log("t", 9) is None
    manager.shutdown()


def test_shutdown_then_load_restores_logs(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    for partition in range(3):
        log = manager.get_or_create_log("orders", partition)
        for _ in range(partition + 1):
            log.append_as_leader(make_batch(2), 0, 0)
    manager.shutdown()
    assert (tmp_path / "d1" / CLEAN_SHUTDOWN_FILE).exists()
    assert read_offset_checkpoint(tmp_path / "d1" / "recovery-point-offset-checkpoint")

    loaded = _manager(tmp_path)
    loaded.load_logs()
    assert not (tmp_path / "d1" / CLEAN_SHUTDOWN_FILE).exists()
    assert len(loaded.all_logs()) == 3
    reloaded = loaded.get_log("orders", 2)
    assert reloaded is not None and reloaded.log_end_offset == 6
    assert reloaded.recovery_point == 6
    assert [r.offset for r in decode_records(reloaded.read(0, 1 << 20))] == list(range(6))
    loaded.shutdown()


def test_load_without_marker_recovers_from_checkpoint(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    log = manager.get_or_create_log("t", 0)
    log.append_as_leader(make_batch(3), 0, 0)
    log.flush()
    manager.checkpoint()
    log.append_as_leader(make_batch(3), 0, 0)  # never flushed; no marker: a crash
    for segment in log.segments:
        segment.close_handles()
    loaded = _manager(tmp_path)
    loaded.load_logs()
    reloaded = loaded.get_log("t", 0)
    assert reloaded is not None and reloaded.log_end_offset == 6
    assert reloaded.recovery_point == 3  # recovered data is still not known to be fsynced
    loaded.shutdown()


def test_delete_log_removes_directory_and_checkpoint_entry(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    log = manager.get_or_create_log("gone", 0)
    log.append_as_leader(make_batch(1), 0, 0)
    manager.checkpoint()
    directory = log.directory
    manager.delete_log("gone", 0)
    assert manager.get_log("gone", 0) is None
    assert not directory.exists()
    assert not list(directory.parent.glob("gone-0*"))
    checkpoint = read_offset_checkpoint(directory.parent / "recovery-point-offset-checkpoint")
    assert ("gone", 0) not in checkpoint


def test_load_removes_interrupted_deletions_and_ignores_other_entries(tmp_path: Path) -> None:
    (tmp_path / "d1" / "t-0.0123abcd-delete").mkdir(parents=True)
    (tmp_path / "d1" / "not-a-partition").mkdir()
    (tmp_path / "d1" / "meta.properties").write_text("version=0\nbroker.id=1\n")
    manager = _manager(tmp_path)
    manager.load_logs()
    assert manager.all_logs() == []
    assert not (tmp_path / "d1" / "t-0.0123abcd-delete").exists()


def test_log_start_offset_checkpoint_survives_restart(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    log = manager.get_or_create_log("t", 0)
    log.append_as_leader(make_batch(10), 0, 0)
    log.log_start_offset = 4  # as DeleteRecords would
    manager.shutdown()
    loaded = _manager(tmp_path)
    loaded.load_logs()
    reloaded = loaded.get_log("t", 0)
    assert reloaded is not None and reloaded.log_start_offset == 4
    loaded.shutdown()
