import asyncio
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from broker.log.config import LogConfig
from broker.log.control_records import ControlType, EndTxnMarker
from broker.log.manager import LogManager
from broker.log.partition_metadata import read_topic_id
from broker.log.record_codec import SimpleRecord, build_batch
from broker.replication.replica_manager import PREPARE_BATCH_SIZE, ReplicaManager
from tests.unit.replication.hosting import prepare_now
from zk.kafka_zk import PartitionState

ME = 1
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
OTHER_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAg"


def _MIN_ISR(topic: str) -> int:
    return 2 if topic == "needs-two" else 1


def _manager(tmp_path: Path, known: set[tuple[str, int]] | None = None) -> ReplicaManager:
    logs = LogManager([tmp_path], LogConfig())
    logs.load_logs()  # what is already on disk, as at broker start-up
    return ReplicaManager(ME, logs, lambda t, p: (t, p) in (known or set()), _MIN_ISR)


def _state(leader: int, epoch: int) -> PartitionState:
    return PartitionState(leader=leader, leader_epoch=epoch, isr=[1, 2], controller_epoch=1)


def _records(value: bytes) -> bytes:
    return build_batch([SimpleRecord(None, value, (), 1000)])


def test_partition_known_to_metadata_but_not_hosted_is_not_leader(tmp_path: Path) -> None:
    manager = _manager(tmp_path, known={("t", 0)})
    assert (
        manager.append_records("t", 0, _records(b"x")).error_code
        == ErrorCode.not_leader_or_follower
    )
    assert manager.append_records("t", 1, _records(b"x")).error_code == (
        ErrorCode.unknown_topic_or_partition
    )


def test_leader_epoch_is_checked_before_the_role(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    prepare_now(manager, "t", TOPIC_ID, [0])
    manager.apply_state("t", TOPIC_ID, 0, [2, 1], _state(leader=2, epoch=5), LogConfig())
    assert manager.read("t", 0, 0, 100, True, 4).error_code == ErrorCode.fenced_leader_epoch
    assert manager.read("t", 0, 0, 100, True, 6).error_code == ErrorCode.unknown_leader_epoch
    assert manager.read("t", 0, 0, 100, True, 5).error_code == ErrorCode.not_leader_or_follower


def test_stale_state_is_ignored(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    prepare_now(manager, "t", TOPIC_ID, [0])
    manager.apply_state("t", TOPIC_ID, 0, [1, 2], _state(leader=1, epoch=3), LogConfig())
    prepare_now(manager, "t", TOPIC_ID, [0])
    manager.apply_state("t", TOPIC_ID, 0, [1, 2], _state(leader=2, epoch=2), LogConfig())
    partition = manager.get("t", 0)
    assert partition is not None and partition.is_leader and partition.leader_epoch == 3


def test_topic_config_reaches_an_existing_log(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    small = LogConfig(max_message_bytes=100)
    prepare_now(manager, "t", TOPIC_ID, [0])
    manager.apply_state("t", TOPIC_ID, 0, [1], _state(leader=1, epoch=0), small)
    result = manager.append_records("t", 0, _records(b"x" * 500))
    assert result.error_code == ErrorCode.message_too_large


def test_acks_all_below_min_isr_is_refused_by_the_partition_before_writing(
    tmp_path: Path,
) -> None:
    """Kafka's Partition.appendRecordsToLeader: acks=all with fewer in-sync replicas than
    min.insync.replicas is NOT_ENOUGH_REPLICAS and writes nothing; acks=1 is not checked."""
    manager = _manager(tmp_path)
    prepare_now(manager, "needs-two", TOPIC_ID, [0])
    alone = PartitionState(leader=ME, leader_epoch=0, isr=[ME], controller_epoch=1)
    manager.apply_state("needs-two", TOPIC_ID, 0, [ME, 2], alone, LogConfig())
    refused = manager.append_records("needs-two", 0, _records(b"x"), required_acks=-1)
    assert refused.error_code == ErrorCode.not_enough_replicas and refused.info is None
    replica = manager.get("needs-two", 0)
    assert replica is not None and replica.log.log_end_offset == 0
    taken = manager.append_records("needs-two", 0, _records(b"x"), required_acks=1)
    assert taken.error_code == ErrorCode.none and replica.log.log_end_offset == 1


def test_a_follower_answers_not_leader_before_min_isr(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    prepare_now(manager, "needs-two", TOPIC_ID, [0])
    following = PartitionState(leader=2, leader_epoch=0, isr=[2], controller_epoch=1)
    manager.apply_state("needs-two", TOPIC_ID, 0, [2, ME], following, LogConfig())
    result = manager.append_records("needs-two", 0, _records(b"x"), required_acks=-1)
    assert result.error_code == ErrorCode.not_leader_or_follower


def test_a_marker_below_min_isr_is_refused_by_the_partition(tmp_path: Path) -> None:
    """WriteTxnMarkers writes with acks=all: the partition refuses the marker while the ISR
    is below min.insync.replicas, and writes it once the ISR suffices."""
    manager = _manager(tmp_path)
    prepare_now(manager, "needs-two", TOPIC_ID, [0])
    alone = PartitionState(leader=ME, leader_epoch=0, isr=[ME], controller_epoch=1)
    manager.apply_state("needs-two", TOPIC_ID, 0, [ME, 2], alone, LogConfig())
    commit = EndTxnMarker(ControlType.COMMIT, coordinator_epoch=0)
    refused = manager.append_marker("needs-two", 0, 7, 0, commit)
    assert refused == (ErrorCode.not_enough_replicas, None)
    replica = manager.get("needs-two", 0)
    assert replica is not None and replica.log.log_end_offset == 0
    both = PartitionState(leader=ME, leader_epoch=1, isr=[ME, 2], controller_epoch=1)
    manager.apply_state("needs-two", TOPIC_ID, 0, [ME, 2], both, LogConfig(), zk_version=1)
    assert manager.append_marker("needs-two", 0, 7, 0, commit) == (ErrorCode.none, 1)


def test_log_of_a_deleted_incarnation_is_replaced(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    prepare_now(manager, "t", TOPIC_ID, [0])
    manager.apply_state("t", TOPIC_ID, 0, [1], _state(leader=1, epoch=0), LogConfig())
    assert manager.append_records("t", 0, _records(b"old")).error_code == ErrorCode.none
    partition_dir = tmp_path / "t-0"
    assert read_topic_id(partition_dir) == TOPIC_ID
    restarted = _manager(tmp_path)
    prepare_now(restarted, "t", OTHER_TOPIC_ID, [0])
    restarted.apply_state("t", OTHER_TOPIC_ID, 0, [1], _state(leader=1, epoch=0), LogConfig())
    partition = restarted.get("t", 0)
    assert partition is not None and partition.log.log_end_offset == 0
    assert read_topic_id(tmp_path / "t-0") == OTHER_TOPIC_ID


@pytest.mark.parametrize("stored", [None, TOPIC_ID])
def test_same_or_missing_topic_id_keeps_the_log(tmp_path: Path, stored: str | None) -> None:
    manager = _manager(tmp_path)
    prepare_now(manager, "t", stored or "", [0])
    manager.apply_state("t", stored or "", 0, [1], _state(leader=1, epoch=0), LogConfig())
    manager.append_records("t", 0, _records(b"kept"))
    restarted = _manager(tmp_path)
    prepare_now(restarted, "t", TOPIC_ID, [0])
    restarted.apply_state("t", TOPIC_ID, 0, [1], _state(leader=1, epoch=0), LogConfig())
    partition = restarted.get("t", 0)
    assert partition is not None and partition.log.log_end_offset == 1


def test_offline_replica_answers_storage_error_and_is_never_recreated(tmp_path: Path) -> None:
    manager = _manager(tmp_path, known={("t", 0)})
    prepare_now(manager, "t", TOPIC_ID, [0])
    manager.apply_state("t", TOPIC_ID, 0, [1, 2], _state(leader=1, epoch=1), LogConfig())
    manager.take_offline([("t", 0)])
    assert manager.get("t", 0) is None and manager.is_offline(("t", 0))
    assert (
        manager.append_records("t", 0, _records(b"x")).error_code == ErrorCode.kafka_storage_error
    )
    assert manager.read("t", 0, 0, 100, True).error_code == ErrorCode.kafka_storage_error
    prepare_now(manager, "t", TOPIC_ID, [0])
    manager.apply_state("t", TOPIC_ID, 0, [1, 2], _state(leader=1, epoch=2), LogConfig())
    assert manager.get("t", 0) is None  # not re-created in another log dir
    asyncio.run(manager.delete_topic("t"))
    assert not manager.is_offline(("t", 0))  # a re-created topic may live here again


def test_state_for_a_log_not_prepared_opens_nothing_on_the_loop(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.apply_state("t", TOPIC_ID, 0, [1], _state(leader=1, epoch=0), LogConfig())
    assert manager.get("t", 0) is None
    assert not (tmp_path / "t-0").exists()


def test_logs_are_prepared_in_batches_each_applied_once_ready(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    partitions = list(range(PREPARE_BATCH_SIZE * 2 + 1))
    batches: list[list[int]] = []

    async def scenario() -> None:
        await manager.prepare_logs("t", TOPIC_ID, partitions, batches.append)

    asyncio.run(scenario())
    assert sorted(len(batch) for batch in batches) == [1, PREPARE_BATCH_SIZE, PREPARE_BATCH_SIZE]
    assert sorted(p for batch in batches for p in batch) == partitions
    for partition in partitions:
        assert manager.is_ready(("t", partition), TOPIC_ID)
        assert read_topic_id(tmp_path / f"t-{partition}") == TOPIC_ID
    manager.apply_state("t", TOPIC_ID, 5, [1], _state(leader=1, epoch=0), LogConfig())
    partition = manager.get("t", 5)
    assert partition is not None and partition.is_leader


def test_a_batch_spreads_new_logs_over_the_log_dirs(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = ReplicaManager(ME, LogManager(dirs, LogConfig()), lambda t, p: True, _MIN_ISR)
    assert prepare_now(manager, "t", TOPIC_ID, range(10)) == list(range(10))
    assert [len(list(d.iterdir())) for d in dirs] == [5, 5]
