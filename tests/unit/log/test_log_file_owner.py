"""The event loop never waits for a log's files: epoch checkpoints are written by the
per-broker writer on a worker thread, segment deletion by the log's worker, in order; a crash
before a checkpoint write still recovers the right epochs."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from types import TracebackType

import pytest

from broker.log import epoch_cache
from broker.log.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from broker.log.epoch_checkpoint_writer import EpochCheckpointWriter
from broker.log.log import Log
from broker.log.log_worker import LogWorker
from broker.log.record_codec import SimpleRecord, build_batch

from .support import SMALL_CONFIG, all_values, make_batch, open_log


class RecordingLock:
    """A lock that remembers which threads took it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.takers: list[int] = []

    def __enter__(self) -> None:
        self._lock.acquire()
        self.takers.append(threading.get_ident())

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._lock.release()


def _checkpoint(log: Log) -> list[tuple[int, int]]:
    return read_leader_epoch_checkpoint(log.directory / LEADER_EPOCH_CHECKPOINT)


async def _wait_for(condition: object, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


def test_epoch_checkpoint_is_written_off_the_loop_in_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer_threads: list[int] = []
    fsyncs: list[bool] = []
    write = epoch_cache.write_leader_epoch_checkpoint

    def recording_write(path: Path, entries: list[tuple[int, int]], fsync: bool = True) -> None:
        writer_threads.append(threading.get_ident())
        fsyncs.append(fsync)
        write(path, entries, fsync)

    monkeypatch.setattr(epoch_cache, "write_leader_epoch_checkpoint", recording_write)

    async def scenario() -> None:
        logs = [Log.open(tmp_path / f"t-{n}", SMALL_CONFIG) for n in range(50)]
        for log in logs:  # a failover: every partition gets a new leader epoch
            log.leader_epoch_cache.assign(3, log.log_end_offset)
        assert writer_threads == []  # nothing written on the loop
        writer = EpochCheckpointWriter.for_loop(asyncio.get_running_loop())
        await _wait_for(lambda: writer.batches_written > 0)
        assert all(_checkpoint(log) == [(3, 0)] for log in logs)
        assert len(writer_threads) == 50
        assert threading.get_ident() not in writer_threads
        assert writer.batches_written == 1  # the burst went to the worker in one call
        assert not any(fsyncs)  # a failover's thousands of files: no fsync each
        for log in logs:
            log.close()

    asyncio.run(scenario())


def test_flush_makes_a_background_epoch_checkpoint_durable_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[Path] = []
    monkeypatch.setattr(epoch_cache, "fsync_path", synced.append)

    async def scenario() -> None:
        log = Log.open(tmp_path / "t-0", SMALL_CONFIG)
        log.append_as_leader(make_batch(), leader_epoch=4, now_ms=1_000)
        writer = EpochCheckpointWriter.for_loop(asyncio.get_running_loop())
        await writer.flush()
        checkpoint = log.directory / LEADER_EPOCH_CHECKPOINT
        assert _checkpoint(log) == [(4, 0)] and synced == []
        await asyncio.to_thread(log.flush)  # the recovery point moves past epoch 4's start
        assert synced == [checkpoint, log.directory]
        assert log.recovery_point == 1
        await asyncio.to_thread(log.flush)
        assert synced == [checkpoint, log.directory]  # nothing new to make durable
        log.close()

    asyncio.run(scenario())


def test_crash_before_the_epoch_checkpoint_recovers_the_new_epochs(tmp_path: Path) -> None:
    async def scenario() -> Log:
        log = open_log(tmp_path)
        log.append_as_leader(make_batch(2), leader_epoch=1, now_ms=0)
        await EpochCheckpointWriter.for_loop(asyncio.get_running_loop()).flush()
        assert _checkpoint(log) == [(1, 0)]
        log.leader_epoch_cache.assign(4, log.log_end_offset)  # a new leadership...
        log.append_as_leader(make_batch(3), leader_epoch=4, now_ms=0)  # ...writes at once
        log.leader_epoch_cache.assign(6, log.log_end_offset)  # one more, no batch yet
        assert _checkpoint(log) == [(1, 0)]  # the process dies before the writer runs
        return log

    asyncio.run(scenario())
    reopened = open_log(tmp_path)  # no close: the crash
    assert reopened.leader_epoch_cache.entries == [(1, 0), (4, 2)]
    assert _checkpoint(reopened) == [(1, 0), (4, 2)]  # the repaired cache is written


def test_stale_checkpoint_after_a_truncation_is_rebuilt_from_the_batches(tmp_path: Path) -> None:
    async def scenario() -> None:
        leader = open_log(tmp_path / "leader")
        for epoch in (0, 0, 0, 2, 2):
            leader.append_as_leader(make_batch(1), leader_epoch=epoch, now_ms=0)
        follower = open_log(tmp_path)
        follower.append_as_follower(leader.read(0, 1 << 20, max_offset=3))
        for epoch in (1, 1, 1):  # this replica led epoch 1 alone
            follower.append_as_leader(make_batch(1), leader_epoch=epoch, now_ms=0)
        await EpochCheckpointWriter.for_loop(asyncio.get_running_loop()).flush()
        assert _checkpoint(follower) == [(0, 0), (1, 3)]
        follower.truncate_to(3)  # epoch 1 is gone; the leader's epoch 2 follows
        follower.append_as_follower(leader.read(3, 1 << 20))
        assert follower.leader_epoch_cache.entries == [(0, 0), (2, 3)]
        assert _checkpoint(follower) == [(0, 0), (1, 3)]  # crash before the writer ran

    asyncio.run(scenario())
    assert open_log(tmp_path).leader_epoch_cache.entries == [(0, 0), (2, 3)]


def test_truncation_and_retention_never_take_the_file_lock_on_the_loop(tmp_path: Path) -> None:
    async def scenario() -> None:
        log = open_log(tmp_path)
        lock = RecordingLock()
        log._lifecycle.lock = lock  # type: ignore[assignment]
        for _ in range(40):
            log.append_as_leader(make_batch(1, value_bytes=300), leader_epoch=0, now_ms=0)
        assert len(log.segments) > 3
        log.delete_oldest_segments(1)
        log.truncate_to(log.segments[1].base_offset + 1)
        log.truncate_fully_and_start_at(100)
        assert threading.get_ident() not in lock.takers
        await log.worker.idle()
        assert lock.takers  # the worker deleted the files, under the lock
        assert threading.get_ident() not in lock.takers
        assert sorted(p.name for p in log.directory.glob("*.log*")) == [f"{100:020d}.log"]
        log.close()

    asyncio.run(scenario())


def test_log_worker_runs_work_in_submission_order(tmp_path: Path) -> None:
    async def scenario() -> None:
        worker = LogWorker("t-0")
        seen: list[str] = []
        worker.submit(lambda: (time.sleep(0.05), seen.append("slow first")))
        worker.submit(lambda: seen.append("second"))
        assert await worker.run(lambda: [*seen, "third"]) == ["slow first", "second", "third"]

    asyncio.run(scenario())


def test_truncate_queued_after_an_append_sees_it(tmp_path: Path) -> None:
    """A truncation's file work runs after what came before it and never touches the
    segment an append then creates at the same base offset."""

    async def scenario() -> None:
        log = open_log(tmp_path)
        for _ in range(30):
            log.append_as_leader(make_batch(1, value_bytes=300), leader_epoch=0, now_ms=0)
        reused_base = log.segments[-1].base_offset
        log.truncate_to(reused_base - 1)  # retires the last segment; its deletion is queued
        log.append_as_leader(make_batch(1, value_bytes=300), leader_epoch=1, now_ms=0)
        assert log.roll().base_offset == reused_base  # a new segment where the retired one was
        log.append_as_leader(make_batch(1, value_bytes=300), leader_epoch=1, now_ms=0)
        await log.worker.idle()
        values = all_values(log)
        assert [offset for offset, _ in values] == list(range(reused_base + 1))
        assert not list(log.directory.glob("*.deleted"))
        log.close()

    asyncio.run(scenario())


def _idempotent_batch(sequence: int) -> bytearray:
    records = [SimpleRecord(None, b"v%d" % sequence, (), 1000)]
    return bytearray(build_batch(records, producer_id=7, producer_epoch=0, base_sequence=sequence))


def test_producer_state_after_a_truncation_is_rebuilt_by_the_worker(tmp_path: Path) -> None:
    async def scenario() -> None:
        log = open_log(tmp_path)
        for sequence in range(10):  # offsets 0-9; the state keeps the last five batches
            log.append_as_leader(_idempotent_batch(sequence), leader_epoch=0, now_ms=0)
        log.truncate_to(7)
        entry = log.producer_state.entry(7)
        assert entry is not None
        assert [b.first_sequence for b in entry.batches] == [5, 6]  # at once: what remains
        log.append_as_follower(_follower_batch(7, base_offset=7))  # appended meanwhile
        await log.worker.idle()
        await _wait_for(lambda: log._producers.batches_since_truncation is None)
        entry = log.producer_state.entry(7)
        assert entry is not None
        assert [b.first_sequence for b in entry.batches] == [3, 4, 5, 6, 7]  # read from the log
        # A retry of a batch the rebuild restored is recognised as a duplicate.
        retried = log.append_as_leader(_idempotent_batch(3), leader_epoch=0, now_ms=0)
        assert retried.first_offset == 3
        log.close()

    asyncio.run(scenario())


def _follower_batch(sequence: int, base_offset: int) -> bytes:
    records = [SimpleRecord(None, b"v%d" % sequence, (), 1000)]
    return build_batch(
        records,
        base_offset=base_offset,
        producer_id=7,
        producer_epoch=0,
        base_sequence=sequence,
        partition_leader_epoch=1,
    )


def test_a_checkpoint_that_agrees_keeps_epochs_whose_batches_are_gone(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_follower(_follower_batch(0, base_offset=0))  # epoch 1
    later = build_batch(
        [SimpleRecord(None, b"x", (), 1000)], base_offset=4, partition_leader_epoch=3
    )
    log.append_as_follower(later)
    log.close()
    # Epoch 2 ran over offsets 1-3, which compaction removed: only the file still knows it.
    write_leader_epoch_checkpoint(log.directory / LEADER_EPOCH_CHECKPOINT, [(1, 0), (2, 1), (3, 4)])
    assert open_log(tmp_path).leader_epoch_cache.entries == [(1, 0), (2, 1), (3, 4)]


def test_a_missing_checkpoint_is_rebuilt_from_the_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for epoch in (0, 0, 2, 5):
        log.append_as_leader(make_batch(1), leader_epoch=epoch, now_ms=0)
    log.close()
    (log.directory / LEADER_EPOCH_CHECKPOINT).unlink()
    assert open_log(tmp_path).leader_epoch_cache.entries == [(0, 0), (2, 2), (5, 3)]


def test_a_checkpoint_torn_by_a_crash_mid_overwrite_is_rebuilt(tmp_path: Path) -> None:
    """The file is overwritten in place: a crash after a shorter write but before the cut
    leaves the new lines followed by the old tail, which the count line exposes."""
    log = open_log(tmp_path)
    for epoch in (0, 0, 2, 5):
        log.append_as_leader(make_batch(1), leader_epoch=epoch, now_ms=0)
    log.close()
    path = log.directory / LEADER_EPOCH_CHECKPOINT
    assert path.read_text() == "0\n3\n0 0\n2 2\n5 3\n"
    with open(path, "r+") as file:
        file.write("0\n1\n0 0\n")  # a truncation's content, never cut to its length
    assert open_log(tmp_path).leader_epoch_cache.entries == [(0, 0), (2, 2), (5, 3)]


def test_a_failed_background_epoch_checkpoint_write_is_reported(tmp_path: Path) -> None:
    reported: list[OSError] = []

    async def scenario() -> None:
        log = open_log(tmp_path)
        log.on_io_error = reported.append
        log.leader_epoch_cache.path = tmp_path / "missing-dir" / LEADER_EPOCH_CHECKPOINT
        log.leader_epoch_cache.assign(2, 0)
        await EpochCheckpointWriter.for_loop(asyncio.get_running_loop()).flush()
        assert len(reported) == 1 and isinstance(reported[0], FileNotFoundError)
        log.close()  # still closes its files, reporting the write it could not do
        assert log.closed and len(reported) == 2

    asyncio.run(scenario())
