"""Taking a failed log dir offline on the broker: its replicas stop, the controller is told
(offline replica list first, then the log dir event), and with no log dir left the broker
halts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from kio.schema.errors import ErrorCode

from broker.cluster.log_dir_failure import LogDirFailureHandler
from broker.log.config import LogConfig
from broker.log.manager import LogManager
from broker.log.record_codec import SimpleRecord, build_batch
from broker.replication.alter_log_dirs import ReplicaAlterLogDirs
from broker.replication.replica_manager import ReplicaManager
from tests.unit.replication.hosting import prepare_now
from zk.errors import ConnectionLossError
from zk.kafka_zk import KafkaZk, PartitionState

ME = 1


class RecordingZk:
    def __init__(self, failures: int = 0) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.failures = failures

    async def set_offline_replicas(self, broker_id: int, partitions: Iterable[Any]) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionLossError("lost")
        self.calls.append(("offline", sorted(partitions)))

    async def propagate_log_dir_event(self, broker_id: int) -> str:
        self.calls.append(("event", broker_id))
        return "/log_dir_event_notification/log_dir_event_0000000000"


class Broker:
    def __init__(self, tmp_path: Path, zk: RecordingZk) -> None:
        self.dirs = [tmp_path / "a", tmp_path / "b"]
        self.logs = LogManager(self.dirs, LogConfig())
        self.replicas = ReplicaManager(ME, self.logs, lambda t, p: True, lambda topic: 1)
        mover = ReplicaAlterLogDirs(
            self.logs,
            hosted=lambda key: self.replicas.get(*key),
            is_offline=self.replicas.is_offline,
            partition_exists=self.replicas.partition_exists,
            chunk_bytes=1 << 20,
        )
        self.halted: list[int] = []
        self.handler = LogDirFailureHandler(
            ME, self.logs, self.replicas, mover, cast(KafkaZk, zk), halt=self.halted.append
        )
        state = PartitionState(leader=ME, leader_epoch=0, isr=[ME], controller_epoch=1)
        for partition in range(2):  # t-0 in a, t-1 in b
            prepare_now(self.replicas, "t", "", [partition])
            self.replicas.apply_state("t", "", partition, [ME], state, LogConfig())


def test_failed_dir_takes_its_replicas_offline_and_tells_the_controller(tmp_path: Path) -> None:
    async def scenario() -> None:
        zk = RecordingZk(failures=1)  # the first write is lost: retried
        broker = Broker(tmp_path, zk)
        broker.handler.on_log_dir_failure(broker.dirs[1])
        assert broker.replicas.is_offline(("t", 1))
        batch = build_batch([SimpleRecord(None, b"v", (), 1000)])
        assert (
            broker.replicas.append_records("t", 1, batch).error_code
            == ErrorCode.kafka_storage_error
        )
        assert broker.replicas.append_records("t", 0, batch).error_code == ErrorCode.none
        deadline = asyncio.get_running_loop().time() + 5
        while len(zk.calls) < 2 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        assert zk.calls == [("offline", [("t", 1)]), ("event", ME)]
        assert broker.halted == []
        await broker.handler.stop()

    asyncio.run(scenario())


def test_broker_halts_when_every_log_dir_failed(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path, RecordingZk())
        broker.handler.on_log_dir_failure(broker.dirs[0])
        assert broker.halted == []
        broker.handler.on_log_dir_failure(broker.dirs[1])
        assert broker.halted == [1]
        await broker.handler.stop()

    asyncio.run(scenario())
