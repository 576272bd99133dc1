from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from broker.log.batch import assign_offsets
from broker.log.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    read_offset_checkpoint,
)
from broker.log.log import Log
from broker.log.manager import (
    CLEAN_SHUTDOWN_FILE,
    KafkaStorageError,
    LogDirNotFoundError,
    LogManager,
)
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
    # The bytes Kafka 3.9 leaves in ZooKeeper mode (no KRaft broker epoch).
    marker = tmp_path / "d1" / CLEAN_SHUTDOWN_FILE
    assert marker.read_text() == '{"version":0,"brokerEpoch":-1}'
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


def test_new_logs_go_to_the_log_dir_with_fewest_logs(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    first = [manager.get_or_create_log("t", p).directory.parent.name for p in range(4)]
    assert first == ["d1", "d2", "d1", "d2"]
    manager.delete_log("t", 1)
    manager.delete_log("t", 3)  # d2 now holds nothing: the next two logs go there
    later = [manager.get_or_create_log("u", p).directory.parent.name for p in range(3)]
    assert later == ["d2", "d2", "d1"]
    manager.shutdown()


def test_placement_counts_survive_a_restart(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    for partition in range(3):
        manager.get_or_create_log("t", partition)  # d1, d2, d1
    manager.shutdown()
    loaded = _manager(tmp_path)
    loaded.load_logs()
    assert loaded.get_or_create_log("u", 0).directory.parent.name == "d2"
    loaded.shutdown()


def test_log_dirs_are_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    manager = LogManager([Path("rel1"), Path("rel2")], SMALL_CONFIG)
    assert manager.log_dirs == [tmp_path / "rel1", tmp_path / "rel2"]
    assert manager.resolve_log_dir(str(tmp_path / "rel2")) == tmp_path / "rel2"
    with pytest.raises(LogDirNotFoundError):
        manager.resolve_log_dir("rel2")
    with pytest.raises(LogDirNotFoundError):
        manager.resolve_log_dir(str(tmp_path / "elsewhere"))


def test_preferred_log_dir_wins_over_the_least_loaded_once(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.get_or_create_log("t", 0)  # d1
    manager.maybe_update_preferred_log_dir(("t", 1), tmp_path / "d1")
    assert manager.get_or_create_log("t", 1).directory.parent.name == "d1"
    assert manager.preferred_log_dir(("t", 1)) is None  # used up
    manager.maybe_update_preferred_log_dir(("t", 0), tmp_path / "d1")  # already there
    assert manager.preferred_log_dir(("t", 0)) is None
    manager.shutdown()


def _future_of(manager: LogManager, tmp_path: Path, log_dir: str) -> Log:
    return asyncio.run(manager.create_future_log_off_loop("t", 0, tmp_path / log_dir, SMALL_CONFIG))


def test_future_log_is_named_like_kafkas_and_counts_for_placement(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.get_or_create_log("t", 0)  # d1
    future = _future_of(manager, tmp_path, "d2")
    assert future.is_future
    assert re.fullmatch(r"t-0\.[0-9a-f]{32}-future", future.directory.name)
    assert future.directory.parent == tmp_path / "d2"
    assert manager.get_future_log("t", 0) is future
    assert manager.all_logs() == [manager.get_log("t", 0)]
    # d1 and d2 hold one log each now: the next goes to the first dir.
    assert manager.get_or_create_log("u", 0).directory.parent.name == "d1"
    manager.shutdown()


def test_swap_makes_the_future_log_current_and_deletes_the_old_one(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    current = manager.get_or_create_log("t", 0)
    current.append_as_leader(make_batch(3), 5, 0)
    current.update_high_watermark(2)
    future = _future_of(manager, tmp_path, "d2")
    future.append_as_follower(current.read(0, 1 << 20))
    old = manager.replace_current_with_future("t", 0)
    assert old is current
    assert manager.get_log("t", 0) is future and manager.get_future_log("t", 0) is None
    assert future.directory == tmp_path / "d2" / "t-0" and not future.is_future
    assert future.high_watermark == 2
    asyncio.run(manager.release_replaced_log_off_loop(old, future))
    assert not list((tmp_path / "d1").glob("t-0*"))
    assert ("t", 0) not in read_offset_checkpoint(tmp_path / "d1" / RECOVERY_POINT_CHECKPOINT)
    # The log goes on working where it moved: appends, rolls and a restart.
    future.append_as_follower(_batch_at(3, 2))
    future.roll()
    manager.shutdown()
    loaded = _manager(tmp_path)
    loaded.load_logs()
    reloaded = loaded.get_log("t", 0)
    assert reloaded is not None and reloaded.directory == tmp_path / "d2" / "t-0"
    assert [r.offset for r in decode_records(reloaded.read(0, 1 << 20))] == list(range(5))
    loaded.shutdown()


def test_future_log_survives_a_restart(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.get_or_create_log("t", 0).append_as_leader(make_batch(2), 0, 0)
    _future_of(manager, tmp_path, "d2").append_as_follower(_batch_at(0, 1))
    manager.shutdown()
    loaded = _manager(tmp_path)
    loaded.load_logs()
    future = loaded.get_future_log("t", 0)
    assert future is not None and future.log_end_offset == 1
    assert loaded.get_log("t", 0) is not None
    loaded.shutdown()


def test_crash_between_the_swap_renames_completes_the_swap(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.get_or_create_log("t", 0).append_as_leader(make_batch(2), 0, 0)
    future = _future_of(manager, tmp_path, "d2")
    future.append_as_follower(_batch_at(0, 2))
    manager.shutdown()
    # The old log was renamed for deletion, the future log not yet renamed.
    (tmp_path / "d1" / "t-0").rename(tmp_path / "d1" / f"t-0.{'0' * 32}-delete")
    loaded = _manager(tmp_path)
    loaded.load_logs()
    moved = loaded.get_log("t", 0)
    assert moved is not None and moved.directory == tmp_path / "d2" / "t-0"
    assert moved.log_end_offset == 2 and loaded.get_future_log("t", 0) is None
    assert not list((tmp_path / "d1").glob("t-0*"))
    loaded.shutdown()


def test_deleting_a_partition_deletes_its_future_log(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.get_or_create_log("t", 0)
    future = _future_of(manager, tmp_path, "d2")
    asyncio.run(manager.delete_log_off_loop("t", 0))
    assert manager.get_future_log("t", 0) is None
    assert not future.directory.exists() and not list((tmp_path / "d2").glob("t-0*"))


def _batch_at(base_offset: int, count: int) -> bytearray:
    """A batch as a leader wrote it: offsets from `base_offset`, leader epoch 5."""
    batch = make_batch(count)
    assign_offsets(batch, base_offset, 5)
    return batch


def test_offline_log_dir_takes_no_new_logs_and_no_checkpoints(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    kept = manager.get_or_create_log("t", 0)  # d1
    lost = manager.get_or_create_log("t", 1)  # d2
    current, future = manager.take_log_dir_offline(tmp_path / "d2")
    assert current == [lost] and future == []
    assert manager.get_log("t", 1) is None and manager.all_logs() == [kept]
    assert not manager.is_log_dir_online(tmp_path / "d2")
    assert [manager.get_or_create_log("u", p).directory.parent.name for p in range(2)] == [
        "d1",
        "d1",
    ]
    assert set(manager.checkpoint_snapshot()) == {tmp_path / "d1"}
    lost.close()
    manager.shutdown()
    assert not (tmp_path / "d2" / CLEAN_SHUTDOWN_FILE).exists()


def test_checkpoint_error_reports_that_dir_once_and_writes_the_others(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.get_or_create_log("t", 0)  # d1
    manager.get_or_create_log("t", 1)  # d2
    failed: list[Path] = []

    async def scenario() -> None:
        manager.on_failure(asyncio.get_running_loop(), failed.append)
        snapshot = manager.checkpoint_snapshot()
        broken = tmp_path / "d2"
        broken.rename(tmp_path / "d2.gone")
        broken.write_text("a file now")
        await asyncio.to_thread(manager.write_checkpoints, snapshot)
        await asyncio.to_thread(manager.write_checkpoints, snapshot)
        await asyncio.sleep(0)  # the handler runs on the loop

    asyncio.run(scenario())
    assert failed == [tmp_path / "d2"]
    assert ("t", 0) in read_offset_checkpoint(tmp_path / "d1" / RECOVERY_POINT_CHECKPOINT)


def test_all_log_dirs_offline_is_a_storage_error_for_new_logs(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.take_log_dir_offline(tmp_path / "d1")
    manager.take_log_dir_offline(tmp_path / "d2")
    with pytest.raises(KafkaStorageError):
        manager.get_or_create_log("t", 0)


def _torn(path: Path) -> None:
    """Keep the version and count lines, lose the entries: a torn or truncated file."""
    path.write_text("\n".join(path.read_text().splitlines()[:2]) + "\n")


def test_unreadable_log_start_offset_checkpoint_takes_its_log_dir_offline(
    tmp_path: Path,
) -> None:
    manager = _manager(tmp_path)
    deleted_from = manager.get_or_create_log("t", 0)  # d1
    kept = manager.get_or_create_log("t", 1)  # d2
    for log in (deleted_from, kept):
        log.append_as_leader(make_batch(10), 0, 0)
        log.increment_log_start_offset(4)  # as DeleteRecords does
    manager.shutdown()
    _torn(tmp_path / "d1" / LOG_START_OFFSET_CHECKPOINT)
    loaded = _manager(tmp_path)
    loaded.load_logs()
    failed: list[Path] = []

    async def scenario() -> None:
        loaded.on_failure(asyncio.get_running_loop(), failed.append)
        await asyncio.sleep(0)  # the handler runs on the loop

    asyncio.run(scenario())
    assert failed == [tmp_path / "d1"]  # reported while loading, handled once a handler is set
    reloaded = loaded.get_log("t", 1)
    assert reloaded is not None and reloaded.log_start_offset == 4


def test_unreadable_recovery_point_checkpoint_recovers_every_log(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    log = manager.get_or_create_log("t", 0)  # d1
    log.append_as_leader(make_batch(3), 0, 0)
    log.append_as_leader(make_batch(3), 0, 0)
    segment_path = log.active_segment.log_path
    manager.shutdown()
    with open(segment_path, "r+b") as segment:  # a bad CRC only a full recovery finds
        segment.seek(-1, 2)
        last = segment.read(1)
        segment.seek(-1, 2)
        segment.write(bytes([last[0] ^ 0xFF]))
    _torn(tmp_path / "d1" / RECOVERY_POINT_CHECKPOINT)
    loaded = _manager(tmp_path)
    loaded.load_logs()
    failed: list[Path] = []

    async def scenario() -> None:
        loaded.on_failure(asyncio.get_running_loop(), failed.append)
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert failed == []  # rebuilt, not fatal
    reloaded = loaded.get_log("t", 0)
    assert reloaded is not None and reloaded.log_end_offset == 3  # the bad batch cut
    loaded.shutdown()


def test_deleting_many_logs_at_once_checkpoints_each_dir_without_them(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    for partition in range(6):  # d1, d2, d1, ...
        manager.get_or_create_log("gone", partition).append_as_leader(make_batch(1), 0, 0)
    kept = manager.get_or_create_log("kept", 0)
    manager.checkpoint()
    asyncio.run(manager.delete_logs_off_loop([("gone", p) for p in range(6)]))
    assert [log.topic for log in manager.all_logs()] == ["kept"]
    for log_dir in ("d1", "d2"):
        assert not list((tmp_path / log_dir).glob("gone-*"))
        checkpoint = read_offset_checkpoint(tmp_path / log_dir / RECOVERY_POINT_CHECKPOINT)
        assert all(topic != "gone" for topic, _ in checkpoint)
    assert ("kept", 0) in read_offset_checkpoint(kept.directory.parent / RECOVERY_POINT_CHECKPOINT)
    manager.shutdown()


def test_opens_and_deletions_of_one_partition_take_turns(tmp_path: Path) -> None:
    """Two opens of one partition (the znode watch and a controller's LeaderAndIsr) and a
    StopReplica's deletion all in flight at once: each runs alone, so no open fails with its
    files renamed away under it and no log dir is taken offline."""
    manager = _manager(tmp_path)

    async def scenario() -> tuple[set[tuple[str, int]], set[tuple[str, int]]]:
        first = asyncio.create_task(manager.open_logs_off_loop([("t", 0)], lambda log: None))
        deletion = asyncio.create_task(manager.delete_logs_off_loop([("t", 0)]))
        second = asyncio.create_task(manager.open_logs_off_loop([("t", 0)], lambda log: None))
        (_, failed_first), _, (opened, failed_second) = await asyncio.gather(
            first, deletion, second
        )
        return failed_first | failed_second, set(opened)

    failed, opened_last = asyncio.run(scenario())
    assert failed == set()
    assert manager.online_log_dirs == manager.log_dirs
    # In arrival order: opened, deleted, opened again, as one fresh log on disk.
    assert opened_last == {("t", 0)}
    log = manager.get_log("t", 0)
    assert log is not None and log.directory.is_dir()
    assert [p.name for p in log.directory.parent.iterdir() if p.name.startswith("t-0")] == ["t-0"]
    manager.shutdown()
