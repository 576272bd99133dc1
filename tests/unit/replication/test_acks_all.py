"""acks=all answers: after the ISR has the batch, after the ISR shrank, or at the timeout."""

import asyncio
from pathlib import Path

from kio.schema.errors import ErrorCode

from broker.log.config import LogConfig
from broker.log.manager import LogManager
from broker.log.record_codec import SimpleRecord, build_batch
from broker.replication.replica_manager import ReplicaManager
from tests.unit.replication.hosting import prepare_now
from zk.znodes import PartitionState

ME, FOLLOWER = 1, 2


def _leading(tmp_path: Path, isr: list[int]) -> ReplicaManager:
    logs = LogManager([tmp_path], LogConfig())
    manager = ReplicaManager(ME, logs, lambda t, p: True, lambda topic: 1)
    state = PartitionState(leader=ME, leader_epoch=0, isr=isr, controller_epoch=1)
    prepare_now(manager, "t", "", [0])
    manager.apply_state("t", "", 0, [ME, FOLLOWER], state, LogConfig(), zk_version=0)
    return manager


def _append(manager: ReplicaManager) -> int:
    result = manager.append_records("t", 0, build_batch([SimpleRecord(None, b"v", (), 1000)]))
    assert result.info is not None
    return result.info.last_offset + 1


def test_acks_all_completes_when_the_follower_fetches_past_the_batch(tmp_path: Path) -> None:
    async def scenario() -> None:
        manager = _leading(tmp_path, isr=[ME, FOLLOWER])
        required = _append(manager)
        waiting = asyncio.create_task(manager.wait_for_replication("t", 0, required, 2, 30))
        await asyncio.sleep(0)
        assert not waiting.done()
        manager.read("t", 0, required, 1024, True, replica_id=FOLLOWER)
        assert await asyncio.wait_for(waiting, 5) == ErrorCode.none

    asyncio.run(scenario())


def test_acks_all_after_the_isr_shrank_below_the_minimum_is_not_enough_replicas_after_append(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        manager = _leading(tmp_path, isr=[ME, FOLLOWER])
        required = _append(manager)
        waiting = asyncio.create_task(manager.wait_for_replication("t", 0, required, 2, 30))
        await asyncio.sleep(0)
        partition = manager.get("t", 0)
        assert partition is not None
        partition.apply_isr([ME], zk_version=1)  # the leader's shrink landed in ZooKeeper
        manager.on_isr_changed(partition)
        outcome = await asyncio.wait_for(waiting, 5)
        assert outcome == ErrorCode.not_enough_replicas_after_append

    asyncio.run(scenario())


def test_acks_all_times_out_when_the_follower_never_fetches(tmp_path: Path) -> None:
    async def scenario() -> None:
        manager = _leading(tmp_path, isr=[ME, FOLLOWER])
        required = _append(manager)
        outcome = await manager.wait_for_replication("t", 0, required, 2, timeout_s=0.05)
        assert outcome == ErrorCode.request_timed_out

    asyncio.run(scenario())


def test_acks_all_waiting_when_leadership_moves_is_not_leader(tmp_path: Path) -> None:
    async def scenario() -> None:
        manager = _leading(tmp_path, isr=[ME, FOLLOWER])
        required = _append(manager)
        waiting = asyncio.create_task(manager.wait_for_replication("t", 0, required, 2, 30))
        await asyncio.sleep(0)
        moved = PartitionState(leader=FOLLOWER, leader_epoch=1, isr=[FOLLOWER], controller_epoch=1)
        prepare_now(manager, "t", "", [0])
        manager.apply_state("t", "", 0, [ME, FOLLOWER], moved, LogConfig(), zk_version=1)
        assert await asyncio.wait_for(waiting, 5) == ErrorCode.not_leader_or_follower

    asyncio.run(scenario())


def test_consumers_read_only_below_the_high_watermark(tmp_path: Path) -> None:
    manager = _leading(tmp_path, isr=[ME, FOLLOWER])
    _append(manager)
    assert manager.read("t", 0, 0, 1024, True).records == b""
    assert manager.read("t", 0, 0, 1024, True, replica_id=FOLLOWER).records != b""


def test_acks_all_survives_an_epoch_bump_that_keeps_this_broker_leader(tmp_path: Path) -> None:
    """The controller shrinking the ISR after a broker death bumps the epoch, but the batch
    was appended in the same leadership: it is acknowledged once committed, not refused."""

    async def scenario() -> None:
        manager = _leading(tmp_path, isr=[ME, FOLLOWER])
        required = _append(manager)
        waiting = asyncio.create_task(manager.wait_for_replication("t", 0, required, 1, 30))
        await asyncio.sleep(0)
        shrunk = PartitionState(leader=ME, leader_epoch=1, isr=[ME], controller_epoch=1)
        prepare_now(manager, "t", "", [0])
        manager.apply_state("t", "", 0, [ME, FOLLOWER], shrunk, LogConfig(), zk_version=1)
        assert await asyncio.wait_for(waiting, 5) == ErrorCode.none

    asyncio.run(scenario())
