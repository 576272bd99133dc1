"""A fetch naming its last fetched epoch (Fetch v12+): a leader whose epochs part from the
fetcher's below its fetch offset answers the diverging epoch (epoch, end offset) and no
records, and the fetcher's position counts for nothing, as in Kafka 3.9 (Partition.readRecords).
Kafka's followers truncate on this answer alone, so without it a Kafka follower of our leader
kept batches of an epoch the leader never had."""

from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import fetch
from broker.log.config import LogConfig
from broker.log.manager import LogManager
from broker.log.record_codec import SimpleRecord, build_batch
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.replication.read_checks import ReadResult
from broker.replication.replica_manager import ReplicaManager
from tests.unit.replication.hosting import prepare_now
from zk.znodes import PartitionState

ME, FOLLOWER = 1, 2


def _leading_at_epochs_0_then_2(tmp_path: Path) -> ReplicaManager:
    """Offsets 0-2 written at epoch 0, offset 3 at epoch 2: epochs (0, 0), (2, 3)."""
    logs = LogManager([tmp_path], LogConfig())
    manager = ReplicaManager(ME, logs, lambda t, p: True, lambda topic: 1)
    prepare_now(manager, "t", "", [0])
    for leader_epoch, batches in ((0, 3), (2, 1)):
        state = PartitionState(leader=ME, leader_epoch=leader_epoch, isr=[ME], controller_epoch=1)
        manager.apply_state("t", "", 0, [ME, FOLLOWER], state, LogConfig(), zk_version=0)
        for _ in range(batches):
            batch = build_batch([SimpleRecord(None, b"v", (), 1000)])
            assert manager.append_records("t", 0, batch).info is not None
    partition = manager.get("t", 0)
    assert partition is not None
    assert partition.log.leader_epoch_cache.entries == [(0, 0), (2, 3)]
    return manager


def _follower_read(manager: ReplicaManager, fetch_offset: int, last_epoch: int) -> ReadResult:
    return manager.read(
        "t", 0, fetch_offset, 1 << 20, True, replica_id=FOLLOWER, last_fetched_epoch=last_epoch
    )


def _follower_offset(manager: ReplicaManager) -> int:
    partition = manager.get("t", 0)
    assert partition is not None
    follower = partition.followers.get(FOLLOWER)
    return -1 if follower is None else follower.log_end_offset


def test_a_fetcher_holding_an_epoch_the_leader_never_had_is_told_where_to_truncate(
    tmp_path: Path,
) -> None:
    manager = _leading_at_epochs_0_then_2(tmp_path)
    before = _follower_offset(manager)
    # The follower led at epoch 1 meanwhile and wrote offsets 3-4 there.
    result = _follower_read(manager, fetch_offset=5, last_epoch=1)
    assert (result.error_code, result.records, result.diverging_epoch) == (
        ErrorCode.none,
        b"",
        (0, 3),
    )
    assert result.log_end_offset == 4
    # Its position is not its fetch offset: it does not count as having offset 4.
    assert _follower_offset(manager) == before


def test_a_fetcher_past_the_end_of_its_last_epoch_is_told_that_end(tmp_path: Path) -> None:
    manager = _leading_at_epochs_0_then_2(tmp_path)
    result = _follower_read(manager, fetch_offset=4, last_epoch=0)
    assert result.diverging_epoch == (0, 3)
    assert result.records == b""


def test_a_fetcher_in_step_reads_as_before(tmp_path: Path) -> None:
    manager = _leading_at_epochs_0_then_2(tmp_path)
    at_epoch_boundary = _follower_read(manager, fetch_offset=3, last_epoch=0)
    assert at_epoch_boundary.diverging_epoch is None and at_epoch_boundary.records
    assert _follower_offset(manager) == 3
    unnamed = _follower_read(manager, fetch_offset=4, last_epoch=-1)
    assert unnamed.diverging_epoch is None and unnamed.error_code == ErrorCode.none
    assert _follower_offset(manager) == 4


def test_the_fetch_response_carries_the_diverging_epoch_from_v12() -> None:
    result = ReadResult(ErrorCode.none, b"", 3, 0, 4, 3, diverging_epoch=(0, 3))
    data = fetch._partition_data(0, result)
    assert data["diverging_epoch"] == {"epoch": 0, "end_offset": 3}
    values: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "session_id": 0,
        "responses": [{"topic": "t", "topic_id": None, "partitions": [data]}],
    }
    built = adapter.build(response_class(ApiKey.FETCH, 12), values)
    partition = built.responses[0].partitions[0]
    assert (partition.diverging_epoch.epoch, partition.diverging_epoch.end_offset) == (0, 3)
    assert fetch._any_diverging(values["responses"])
