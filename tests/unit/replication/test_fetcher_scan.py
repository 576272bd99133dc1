"""The replica fetcher's pass over its partitions before each request: which partitions it
truncates first, which it fetches and from where, and that an unchanged position is kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker.replication.fetch_session import FetchPosition
from broker.replication.fetcher import FetcherConfig, FetchState, ReplicaFetcher

MAX_BYTES = 1_000_000
NOW_S = 1000.0


@dataclass
class _Log:
    log_start_offset: int = 0


@dataclass
class _Partition:
    leader_epoch: int
    log: _Log = field(default_factory=_Log)


class _Logs:
    """Followers at an epoch; any other key or epoch is not followed here."""

    def __init__(self, **epochs: int) -> None:
        self.partitions = {(topic, 0): _Partition(epoch) for topic, epoch in epochs.items()}

    def follower(self, key: tuple[str, int], leader_epoch: int) -> Any:
        partition = self.partitions.get(key)
        return partition if partition and partition.leader_epoch == leader_epoch else None


def _fetcher(logs: _Logs) -> ReplicaFetcher:
    config = FetcherConfig(1, 1, 500, 1, 10_000_000, MAX_BYTES, 1000, 30_000)
    return ReplicaFetcher(2, config, logs, lambda broker_id: None)  # type: ignore[arg-type]


def test_truncating_backed_off_and_no_longer_followed_partitions_are_not_fetched() -> None:
    logs = _Logs(ready=3, truncating=3, delayed=3, moved_on=4)
    fetcher = _fetcher(logs)
    fetcher.partitions[("ready", 0)] = FetchState(3, fetch_offset=7, truncating=False)
    fetcher.partitions[("truncating", 0)] = FetchState(3)
    fetcher.partitions[("delayed", 0)] = FetchState(
        3, fetch_offset=1, truncating=False, delayed_until_s=NOW_S + 1
    )
    fetcher.partitions[("moved_on", 0)] = FetchState(3, fetch_offset=1, truncating=False)

    truncating, wanted = fetcher._scan(NOW_S)

    assert list(truncating) == [("truncating", 0)]
    assert wanted == {("ready", 0): FetchPosition(7, MAX_BYTES, 3, 0)}
    assert fetcher._scan(NOW_S, truncate=False)[0] == {}
    # Once its back-off ends, the delayed partition is fetched again.
    assert ("delayed", 0) in fetcher._scan(NOW_S + 1)[1]


def test_a_position_is_kept_until_its_offset_epoch_or_log_start_changes() -> None:
    logs = _Logs(a=3)
    fetcher = _fetcher(logs)
    state = fetcher.partitions[("a", 0)] = FetchState(3, fetch_offset=7, truncating=False)

    first = fetcher._scan(NOW_S)[1][("a", 0)]
    assert fetcher._scan(NOW_S)[1][("a", 0)] is first  # the session sees no change

    state.fetch_offset = 9
    moved = fetcher._scan(NOW_S)[1][("a", 0)]
    assert moved == FetchPosition(9, MAX_BYTES, 3, 0)

    logs.partitions[("a", 0)].log.log_start_offset = 5
    assert fetcher._scan(NOW_S)[1][("a", 0)] == FetchPosition(9, MAX_BYTES, 3, 5)

    logs.partitions[("a", 0)].leader_epoch = state.leader_epoch = 4
    assert fetcher._scan(NOW_S)[1][("a", 0)] == FetchPosition(9, MAX_BYTES, 4, 5)
