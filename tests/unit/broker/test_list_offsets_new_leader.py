"""ListOffsets on a new leader whose high watermark is still below its leader epoch's start
offset (KIP-207): consumers get the retriable OFFSET_NOT_AVAILABLE instead of an offset older
than the previous leader gave out; replicas and tools (replica id >= 0) see the log end."""

from pathlib import Path
from types import SimpleNamespace

from kio.schema.errors import ErrorCode

from broker.handlers.list_offsets import LATEST_TIMESTAMP, _list_partition
from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.record_codec import SimpleRecord, build_batch
from broker.replication.partition import Partition
from zk.znodes import PartitionState

ME, OTHER = 1, 2
RECORDS = 5
CONSUMER, REPLICA = -1, OTHER


def _new_leader(tmp_path: Path) -> Partition:
    """A former follower holding RECORDS records of which it knows none committed yet."""
    replica_log = Log.open(tmp_path / "t-0", LogConfig())
    for index in range(RECORDS):
        batch = build_batch([SimpleRecord(None, b"value-%d" % index, (), 1000)])
        replica_log.append_as_leader(bytearray(batch), 1, 1000)
    partition = Partition("t", 0, replica_log, [], broker_id=ME)
    state = PartitionState(leader=ME, leader_epoch=2, isr=[ME, OTHER], controller_epoch=1)
    partition.make_leader(state, zk_version=0, replicas=[ME, OTHER], now_ms=0)
    return partition


def _context(partition: Partition) -> SimpleNamespace:
    def leader_partition(topic: str, index: int, epoch: int) -> tuple[Partition | None, ErrorCode]:
        return partition, ErrorCode.none

    replica_manager = SimpleNamespace(leader_partition=leader_partition)
    return SimpleNamespace(services=SimpleNamespace(replica_manager=replica_manager))


def _latest(partition: Partition, replica_id: int) -> dict[str, object]:
    request = SimpleNamespace(partition_index=0, timestamp=LATEST_TIMESTAMP)
    return _list_partition(_context(partition), "t", request, False, replica_id)  # type: ignore[arg-type]


def test_a_consumer_waits_until_the_new_leaders_high_watermark_reaches_its_epoch(
    tmp_path: Path,
) -> None:
    partition = _new_leader(tmp_path)
    assert partition.high_watermark < partition.leader_epoch_start_offset == RECORDS
    assert _latest(partition, CONSUMER)["error_code"] == ErrorCode.offset_not_available
    assert _latest(partition, REPLICA)["offset"] == RECORDS

    partition.update_follower_fetch(OTHER, RECORDS, now_ms=1, follower_log_start_offset=0)
    partition.maybe_increment_high_watermark()
    answer = _latest(partition, CONSUMER)
    assert (answer["error_code"], answer["offset"]) == (ErrorCode.none, RECORDS)
