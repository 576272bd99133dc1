"""OffsetStore loading: a load that fails is retried until it succeeds, and a load in
progress is abandoned when leadership moves."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from kio.schema.errors import ErrorCode

from broker.coordinator.group import offsets
from broker.coordinator.group.offsets import OffsetsConfig, OffsetStore
from broker.replication.replica_manager import ReplicaManager

GROUP = "g"


@dataclass
class _FailingLog:
    """An empty-looking log whose first `failures` reads raise OSError."""

    failures: int
    reads: int = 0
    log_start_offset: int = 0
    log_end_offset: int = 1

    def read(self, offset: int, max_bytes: int, end: int, min_one_batch: bool) -> bytes:
        self.reads += 1
        if self.reads <= self.failures:
            raise OSError("disk went away")
        return b""


@dataclass
class _Replica:
    log: _FailingLog


@dataclass
class _FakeReplicaManager:
    replicas: dict[int, _Replica] = field(default_factory=dict)

    def get(self, topic: str, partition: int) -> _Replica | None:
        return self.replicas.get(partition)


def _store(manager: _FakeReplicaManager) -> OffsetStore:
    config = OffsetsConfig(partition_count=1)
    return OffsetStore(cast(ReplicaManager, manager), config, lambda: 1)


async def _wait_for(condition: Any, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.005)


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offsets, "LOAD_RETRY_BACKOFF_MS", 1)
    monkeypatch.setattr(offsets, "LOAD_RETRY_MAX_BACKOFF_MS", 4)


def test_a_load_that_fails_is_retried_until_the_group_is_served() -> None:
    asyncio.run(_a_load_that_fails_is_retried_until_the_group_is_served())


async def _a_load_that_fails_is_retried_until_the_group_is_served() -> None:
    replica_log = _FailingLog(failures=3)
    store = _store(_FakeReplicaManager({0: _Replica(replica_log)}))
    store.on_leadership_change(0, is_leader=True)
    await _wait_for(lambda: store.coordinator_error(GROUP) == ErrorCode.none)
    assert replica_log.reads == 4


def test_a_load_waits_for_a_replica_that_is_not_there_yet() -> None:
    asyncio.run(_a_load_waits_for_a_replica_that_is_not_there_yet())


async def _a_load_waits_for_a_replica_that_is_not_there_yet() -> None:
    manager = _FakeReplicaManager()
    store = _store(manager)
    store.on_leadership_change(0, is_leader=True)
    await asyncio.sleep(0.05)
    assert store.coordinator_error(GROUP) == ErrorCode.coordinator_load_in_progress
    manager.replicas[0] = _Replica(_FailingLog(failures=0))
    await _wait_for(lambda: store.coordinator_error(GROUP) == ErrorCode.none)


def test_losing_leadership_stops_the_retries() -> None:
    asyncio.run(_losing_leadership_stops_the_retries())


async def _losing_leadership_stops_the_retries() -> None:
    replica_log = _FailingLog(failures=10**9)
    store = _store(_FakeReplicaManager({0: _Replica(replica_log)}))
    store.on_leadership_change(0, is_leader=True)
    await _wait_for(lambda: replica_log.reads >= 2)
    store.on_leadership_change(0, is_leader=False)
    await asyncio.sleep(0.02)
    reads = replica_log.reads
    await asyncio.sleep(0.05)
    assert replica_log.reads == reads
    assert store.coordinator_error(GROUP) == ErrorCode.not_coordinator


@pytest.mark.parametrize(
    ("named_leader", "expected"),
    [(True, ErrorCode.coordinator_load_in_progress), (False, ErrorCode.not_coordinator)],
)
def test_a_partition_not_loaded_yet_is_loading_where_metadata_names_this_broker_leader(
    named_leader: bool, expected: ErrorCode
) -> None:
    # Before this broker's coordinator has picked up the partition, a client sent here by
    # FindCoordinator must retry (librdkafka gives up an OffsetFetch on NOT_COORDINATOR).
    config = OffsetsConfig(partition_count=1)
    manager = cast(ReplicaManager, _FakeReplicaManager())
    store = OffsetStore(manager, config, lambda: 1, named_leader=lambda partition: named_leader)
    assert store.coordinator_error(GROUP) == expected
