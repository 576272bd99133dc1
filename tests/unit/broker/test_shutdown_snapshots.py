"""A broker in controlled shutdown writes the end snapshots of the logs it does not lead
while the controller works, and those of logs whose leadership moves away meanwhile."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.producer_snapshot import read_snapshot, snapshot_offsets, snapshot_path
from broker.log.record_codec import SimpleRecord, build_batch
from broker.replication.partition import Partition
from broker.shutdown_snapshots import RESCAN_INTERVAL_S, write_snapshots_of_settled_logs

ME = 1
WAIT_S = 10.0


def _partition(tmp_path: Path, number: int, is_leader: bool) -> Partition:
    replica_log = Log.open(tmp_path / f"t-{number}", LogConfig())
    batch = build_batch([SimpleRecord(None, b"v", (), 1000)], producer_id=7, producer_epoch=0)
    replica_log.append_as_leader(bytearray(batch), 0, 1)
    partition = Partition("t", number, replica_log, [ME, 2], broker_id=ME)
    partition.is_leader = is_leader
    return partition


async def _until_written(log: Log) -> None:
    async with asyncio.timeout(WAIT_S):
        while log.log_end_offset not in snapshot_offsets(log.directory):
            await asyncio.sleep(RESCAN_INTERVAL_S / 4)


def test_followed_logs_first_then_those_whose_leadership_moved(tmp_path: Path) -> None:
    followed, led = _partition(tmp_path, 0, False), _partition(tmp_path, 1, True)

    async def shut_down() -> None:
        task = asyncio.create_task(write_snapshots_of_settled_logs(lambda: [followed, led]))
        await _until_written(followed.log)
        # A whole rescan later, the log still led has none.
        await asyncio.sleep(RESCAN_INTERVAL_S * 2)
        assert snapshot_offsets(led.log.directory) == []
        led.is_leader = False  # the controller moved it away
        await _until_written(led.log)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(shut_down())
    for partition in (followed, led):
        path = snapshot_path(partition.log.directory, partition.log.log_end_offset)
        assert read_snapshot(path) == partition.log.producer_state.snapshot_entries()
