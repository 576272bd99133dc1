"""A follower's lag (Kafka's FetcherLagMetrics ConsumerLag) after each fetch answer: the
leader's high watermark less the follower's next fetch offset, never negative, and listed
under Kafka's fetcher thread name."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from kio.schema.errors import ErrorCode

from broker.replication.fetcher import (
    FetcherConfig,
    FetchState,
    PartitionErrors,
    ReplicaFetcher,
    ReplicaFetcherManager,
    fetcher_id,
)

KEY = ("orders", 0)
LEADER = 2


@dataclass
class _Log:
    log_end_offset: int = 0
    log_start_offset: int = 0


@dataclass
class _Partition:
    key: tuple[str, int] = KEY
    log: _Log = field(default_factory=_Log)


class _Logs:
    """Appends move the log end by the number of offsets the test says a batch holds."""

    def __init__(self) -> None:
        self.partition = _Partition()
        self.next_append_offsets = 0

    def follower(self, key: tuple[str, int], leader_epoch: int) -> Any:
        return self.partition

    def append_replicated(
        self, partition: Any, records: bytes, high_watermark: int, log_start_offset: int
    ) -> None:
        partition.log.log_end_offset += self.next_append_offsets


def _config() -> FetcherConfig:
    return FetcherConfig(1, 1, 500, 1, 10_000_000, 1_000_000, 1000, 30_000)


def _answer(fetcher: ReplicaFetcher, logs: _Logs, appended: int, high_watermark: int) -> int:
    logs.next_append_offsets = appended
    state = fetcher.partitions[KEY]
    data = SimpleNamespace(
        error_code=ErrorCode.none,
        records=b"x" if appended else b"",
        high_watermark=high_watermark,
        log_start_offset=0,
    )
    fetcher._on_partition_data(KEY, state.fetch_offset, data, PartitionErrors("test"))
    lag = fetcher.partitions[KEY].lag
    assert lag is not None
    return lag


def test_lag_is_the_high_watermark_less_the_next_fetch_offset() -> None:
    logs = _Logs()
    fetcher = ReplicaFetcher(LEADER, _config(), logs, lambda broker_id: None)
    fetcher.partitions[KEY] = FetchState(leader_epoch=0, fetch_offset=0, truncating=False)
    assert fetcher.partitions[KEY].lag is None  # no answer yet: no lag reported
    assert _answer(fetcher, logs, appended=10, high_watermark=100) == 90
    assert _answer(fetcher, logs, appended=90, high_watermark=100) == 0
    # The leader's high watermark may trail what the follower fetched: never below 0.
    assert _answer(fetcher, logs, appended=5, high_watermark=100) == 0


def test_the_manager_lists_lags_under_kafkas_fetcher_thread_name() -> None:
    logs = _Logs()
    manager = ReplicaFetcherManager(_config(), logs, lambda broker_id: None)
    fetcher = ReplicaFetcher(LEADER, _config(), logs, lambda broker_id: None)
    index = fetcher_id(KEY, 1)
    manager._fetchers[(LEADER, index)] = fetcher
    fetcher.partitions[KEY] = FetchState(leader_epoch=0, fetch_offset=0, truncating=False)
    fetcher.partitions[("orders", 1)] = FetchState(leader_epoch=0)  # not answered yet
    assert list(manager.lags()) == []
    _answer(fetcher, logs, appended=3, high_watermark=7)
    assert list(manager.lags()) == [(f"ReplicaFetcherThread-{index}-{LEADER}", KEY, 4)]
