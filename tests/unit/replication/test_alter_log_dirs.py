"""Moving a replica between log dirs: AlterReplicaLogDirs' answers and the copy into the
future log, followed to the swap, with real logs and a real replica manager."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from kio.schema.errors import ErrorCode

from broker.log.batch import assign_offsets
from broker.log.config import LogConfig
from broker.log.manager import LogManager
from broker.log.records import SimpleRecord, build_batch, decode_records
from broker.replication.alter_log_dirs import ReplicaAlterLogDirs
from broker.replication.replica_manager import ReplicaManager
from tests.unit.log.support import make_batch
from tests.unit.replication.hosting import prepare_now
from zk.znodes import PartitionState

ME, OTHER = 1, 2
CONFIG = LogConfig(segment_bytes=2048, index_interval_bytes=256, segment_index_bytes=4096)
# Small chunks: a move takes several steps.
CHUNK_BYTES = 512
MAX_STEPS = 1000


class Broker:
    def __init__(self, tmp_path: Path) -> None:
        self.dir_a, self.dir_b = tmp_path / "a", tmp_path / "b"
        self.logs = LogManager([self.dir_a, self.dir_b], CONFIG)
        self.known = {("t", 0), ("t", 1)}
        self.replicas = ReplicaManager(
            ME, self.logs, lambda t, p: (t, p) in self.known, lambda topic: 1
        )
        self.mover = ReplicaAlterLogDirs(
            self.logs,
            hosted=lambda key: self.replicas.get(*key),
            is_offline=self.replicas.is_offline,
            partition_exists=self.replicas.partition_exists,
            chunk_bytes=CHUNK_BYTES,
        )

    def host(self, partition: int = 0, leader: int = ME, epoch: int = 0) -> None:
        state = PartitionState(leader=leader, leader_epoch=epoch, isr=[ME], controller_epoch=1)
        prepare_now(self.replicas, "t", "", [partition])
        self.replicas.apply_state("t", "", partition, [ME, OTHER], state, CONFIG, zk_version=epoch)

    def produce(self, count: int) -> None:
        for _ in range(count):
            result = self.replicas.append_records("t", 0, make_batch(3, value_bytes=40))
            assert result.error_code == ErrorCode.none

    def log_dir_of(self, partition: int = 0) -> Path:
        current = self.logs.get_log("t", partition)
        assert current is not None
        return current.directory.parent

    def other_dir(self, partition: int = 0) -> Path:
        return self.dir_b if self.log_dir_of(partition) == self.dir_a else self.dir_a

    def move_until_done(self) -> int:
        steps = 0
        while ("t", 0) in self.mover.moving:
            self.mover.step(("t", 0))
            steps += 1
            assert steps < MAX_STEPS, "the move never finished"
        return steps


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(scenario())


def offsets_and_values(broker: Broker) -> list[tuple[int, bytes | None]]:
    current = broker.logs.get_log("t", 0)
    assert current is not None
    found: list[tuple[int, bytes | None]] = []
    offset = current.log_start_offset
    while offset < current.log_end_offset:
        records = [r for r in decode_records(current.read(offset, 1 << 20)) if r.offset >= offset]
        found.extend((r.offset, r.value) for r in records)
        offset = records[-1].offset + 1
    return found


def test_replica_is_copied_in_chunks_then_swapped_in(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path)
        broker.host()
        broker.produce(20)
        before = offsets_and_values(broker)
        source, destination = broker.log_dir_of(), broker.other_dir()
        assert await broker.mover.alter(("t", 0), str(destination)) == ErrorCode.none
        future = broker.logs.get_future_log("t", 0)
        assert future is not None and future.directory.parent == destination
        assert broker.move_until_done() > 2
        partition = broker.replicas.get("t", 0)
        assert partition is not None and partition.log is future and not future.is_future
        assert broker.log_dir_of() == destination
        assert offsets_and_values(broker) == before
        await broker.mover.stop()  # waits for the old log's deletion
        assert not list(source.glob("t-0*"))
        broker.produce(1)  # the moved log is the partition's log now
        assert partition.log.log_end_offset == before[-1][0] + 4

    run(scenario)


def test_records_appended_during_the_move_are_copied_too(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path)
        broker.host()
        broker.produce(10)
        assert await broker.mover.alter(("t", 0), str(broker.other_dir())) == ErrorCode.none
        for _ in range(5):
            broker.mover.step(("t", 0))
            broker.produce(2)
        broker.move_until_done()
        partition = broker.replicas.get("t", 0)
        assert partition is not None and partition.log.log_end_offset == 3 * 20
        assert [offset for offset, _ in offsets_and_values(broker)] == list(range(60))

    run(scenario)


def test_future_log_follows_a_truncation_of_the_replica(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path)
        broker.host(leader=OTHER, epoch=0)
        partition = broker.replicas.get("t", 0)
        assert partition is not None
        broker.replicas.append_replicated(partition, batches(0, 10, epoch=0), 0, 0)
        assert await broker.mover.alter(("t", 0), str(broker.other_dir())) == ErrorCode.none
        while True:  # copy everything, but do not swap yet
            future = broker.logs.get_future_log("t", 0)
            assert future is not None
            if future.log_end_offset == 30:
                break
            broker.mover.step(("t", 0))
        # A new leader's log diverged from offset 15: the replica truncates and re-fetches.
        broker.replicas.truncate(partition, 15)
        broker.replicas.append_replicated(partition, batches(15, 5, epoch=1, value=b"new"), 0, 0)
        broker.move_until_done()
        values = offsets_and_values(broker)
        assert [offset for offset, _ in values] == list(range(30))
        assert {value for offset, value in values if offset >= 15} == {b"new"}

    run(scenario)


def test_future_log_restarts_where_retention_left_the_replica(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path)
        broker.host()
        broker.produce(30)
        assert await broker.mover.alter(("t", 0), str(broker.other_dir())) == ErrorCode.none
        partition = broker.replicas.get("t", 0)
        assert partition is not None
        partition.log.update_high_watermark(partition.log.log_end_offset)
        partition.log.delete_oldest_segments(3)  # before the first chunk was copied
        start = partition.log.log_start_offset
        assert start > 0
        broker.move_until_done()
        assert partition.log.log_start_offset == start
        assert [offset for offset, _ in offsets_and_values(broker)] == list(range(start, 90))

    run(scenario)


def test_moving_to_the_current_dir_is_a_no_op(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path)
        broker.host()
        current = broker.log_dir_of()
        assert await broker.mover.alter(("t", 0), str(current)) == ErrorCode.none
        assert broker.logs.get_future_log("t", 0) is None
        assert not broker.mover.moving

    run(scenario)


def test_a_new_destination_cancels_the_move_under_way(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path)
        broker.host()
        broker.produce(5)
        source, destination = broker.log_dir_of(), broker.other_dir()
        assert await broker.mover.alter(("t", 0), str(destination)) == ErrorCode.none
        broker.mover.step(("t", 0))
        assert await broker.mover.alter(("t", 0), str(source)) == ErrorCode.none
        assert broker.logs.get_future_log("t", 0) is None
        assert not list(destination.glob("t-0*"))
        assert broker.log_dir_of() == source

    run(scenario)


def test_replica_not_hosted_yet_is_created_in_the_requested_dir(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path)
        broker.host(partition=0)  # in dir a: the least loaded dir is now b
        error = await broker.mover.alter(("t", 1), str(broker.dir_a))
        assert error == ErrorCode.replica_not_available
        broker.host(partition=1)
        assert broker.log_dir_of(1) == broker.dir_a
        unknown = await broker.mover.alter(("gone", 0), str(broker.dir_a))
        assert unknown == ErrorCode.unknown_topic_or_partition

    run(scenario)


def test_destination_must_be_a_configured_absolute_log_dir(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path)
        broker.host()
        for path in (str(tmp_path / "c"), "a", str(broker.dir_a) + "/"):
            assert await broker.mover.alter(("t", 0), path) == ErrorCode.log_dir_not_found
        long_topic = ("x" * 249, 0)  # its future dir's name would pass 255 bytes
        error = await broker.mover.alter(long_topic, str(broker.dir_a))
        assert error == ErrorCode.invalid_topic_exception

    run(scenario)


def test_future_log_found_at_start_up_resumes_once_hosted(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path)
        broker.host()
        broker.produce(10)
        destination = broker.other_dir()
        assert await broker.mover.alter(("t", 0), str(destination)) == ErrorCode.none
        broker.mover.step(("t", 0))
        await broker.mover.stop()
        broker.logs.shutdown()

        restarted = Broker(tmp_path)
        restarted.logs.load_logs()
        restarted.mover.resume([("t", 0)])
        assert not restarted.mover.step(("t", 0))  # not hosted yet: waits
        restarted.host()
        restarted.move_until_done()
        assert restarted.log_dir_of() == destination
        assert [offset for offset, _ in offsets_and_values(restarted)] == list(range(30))

    run(scenario)


def batches(first_offset: int, count: int, epoch: int, value: bytes = b"old") -> bytes:
    """`count` batches of three records from `first_offset`, as a leader at `epoch` wrote
    them."""
    data = bytearray()
    for index in range(count):
        records = [SimpleRecord(key=None, value=value, timestamp_ms=1000) for _ in range(3)]
        batch = bytearray(build_batch(records))
        assign_offsets(batch, first_offset + 3 * index, epoch)
        data += batch
    return bytes(data)
