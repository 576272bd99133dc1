"""An incremental fetch session reads only what changed: its partitions mark themselves in the
session's watch on each event, and the session names what the next request reads."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from broker.replication.fetch_session import (
    CachedPartition,
    FetchPosition,
    FetchSession,
    FetchSessionCache,
)
from broker.replication.purgatory import PartitionWaiters

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)


def _session(*keys: tuple[str, int]) -> FetchSession:
    partitions = {key: CachedPartition(FetchPosition(0, 1024)) for key in keys}
    return FetchSession(1, True, partitions, 0)


def _replica() -> Any:
    """What the session needs of a Partition: its waiters."""
    return SimpleNamespace(waiters=PartitionWaiters())


def test_a_new_session_sweeps_then_reads_only_named_and_marked_partitions() -> None:
    session = _session(A0, A1, B0)
    assert session.last_sweep_ms is None  # never swept: the first request reads everything
    assert session.keys_to_read(sweep=True) == [A0, A1, B0]
    assert session.keys_to_read(sweep=False) == []
    replicas = {key: _replica() for key in (A0, A1, B0)}
    for key, replica in replicas.items():
        session.watch_replica(key, replica)
    session.update([(B0, FetchPosition(3, 1024))], [])  # the request moved b-0
    replicas[A0].waiters.on_append()
    assert session.keys_to_read(sweep=False) == [A0, B0]  # in session order
    assert session.keys_to_read(sweep=False) == []  # read: settled until the next event


def test_every_event_of_a_replica_marks_the_partition() -> None:
    session, replica = _session(A0), _replica()
    session.watch_replica(A0, replica)
    events = [
        replica.waiters.on_append,
        lambda: replica.waiters.on_high_watermark(5),
        replica.waiters.on_leadership_change,
        replica.waiters.on_log_start_offset,
    ]
    for event in events:
        event()
        assert session.take_changed() == [A0]
    replica.waiters.on_low_watermark()  # a follower's log start: the leader's answer is the same
    assert session.take_changed() == []


def test_an_unsettled_partition_is_read_again_until_its_read_settles() -> None:
    session = _session(A0, A1)
    session.keys_to_read(sweep=True)
    session.unsettled.add(A1)  # its read answered records, or an error
    assert session.keys_to_read(sweep=False) == [A1]
    assert session.keys_to_read(sweep=False) == []


def test_a_forgotten_partition_or_a_closed_session_stops_watching() -> None:
    cache = FetchSessionCache(2, random_id=lambda: 7)
    session_id = cache.create(
        True,
        {A0: CachedPartition(FetchPosition(0, 1)), A1: CachedPartition(FetchPosition(0, 1))},
        0,
    )
    session = cache.get(session_id, 0)
    assert session is not None
    first, second = _replica(), _replica()
    session.watch_replica(A0, first)
    session.watch_replica(A1, second)
    session.update([], [A0])
    first.waiters.on_append()
    assert session.take_changed() == []
    assert len(first.waiters._sessions) == 0
    cache.remove(session_id)
    assert len(second.waiters._sessions) == 0


def test_a_replaced_replica_is_watched_instead_of_the_old_one() -> None:
    session, old, new = _session(A0), _replica(), _replica()
    session.watch_replica(A0, old)
    session.watch_replica(A0, new)
    old.waiters.on_append()
    assert session.take_changed() == []
    new.waiters.on_append()
    assert session.take_changed() == [A0]


def test_the_wait_ends_at_a_mark_or_at_the_timeout() -> None:
    async def scenario() -> None:
        session, replica = _session(A0), _replica()
        session.watch_replica(A0, replica)
        loop = asyncio.get_running_loop()
        loop.call_soon(replica.waiters.on_append)
        await asyncio.wait_for(session.watch.wait(30), 5)
        assert session.take_changed() == [A0]
        started = loop.time()
        await session.watch.wait(0.05)
        assert loop.time() - started >= 0.04 and session.take_changed() == []
        replica.waiters.on_append()
        await asyncio.wait_for(session.watch.wait(30), 1)  # marked before: no wait at all

    asyncio.run(scenario())
