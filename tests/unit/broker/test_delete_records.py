"""DeleteRecords' rules on a leader (log start offset, low watermark, segments below it),
without processes."""

from pathlib import Path

from kio.schema.errors import ErrorCode

from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.record_codec import SimpleRecord, build_batch
from broker.replication.delete_records import delete_on_leader
from broker.replication.partition import Partition
from zk.znodes import PartitionState

ME, OTHER, DEAD = 1, 2, 3
RECORDS = 12


class _Replicas:
    """The one method of ReplicaManager that delete_on_leader uses."""

    def __init__(self, partition: Partition) -> None:
        self.partition = partition

    def leader_partition(self, topic: str, partition: int) -> tuple[Partition | None, ErrorCode]:
        if self.partition.is_leader:
            return self.partition, ErrorCode.none
        return None, ErrorCode.not_leader_or_follower


def _leader(tmp_path: Path) -> Partition:
    # Small segments: a few one-record batches each.
    replica_log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=200))
    partition = Partition("t", 0, replica_log, [], broker_id=ME)
    state = PartitionState(leader=ME, leader_epoch=1, isr=[ME, OTHER, DEAD], controller_epoch=1)
    partition.make_leader(state, zk_version=0, replicas=[ME, OTHER, DEAD], now_ms=0)
    for index in range(RECORDS):
        batch = build_batch([SimpleRecord(None, b"value-%d" % index, (), 1000)])
        replica_log.append_as_leader(bytearray(batch), 1, 1000)
    replica_log.update_high_watermark(RECORDS)
    return partition


def _alive(broker_id: int) -> bool:
    return broker_id != DEAD


def test_log_start_moves_and_low_watermark_waits_for_live_followers(tmp_path: Path) -> None:
    partition = _leader(tmp_path)
    replicas = _Replicas(partition)
    result = delete_on_leader(replicas, ("t", 0), 5, _alive)  # type: ignore[arg-type]
    assert result.error_code == ErrorCode.none
    assert partition.log.log_start_offset == 5
    assert (result.required_offset, result.low_watermark) == (5, -1)  # follower not heard yet
    assert not result.complete

    partition.update_follower_fetch(OTHER, RECORDS, now_ms=1, follower_log_start_offset=5)
    assert partition.low_watermark(_alive) == 5  # the dead broker's replica does not count

    back = delete_on_leader(replicas, ("t", 0), 2, _alive)  # type: ignore[arg-type]
    assert (partition.log.log_start_offset, back.low_watermark, back.complete) == (5, 5, True)


def test_offsets_above_the_high_watermark_and_minus_one(tmp_path: Path) -> None:
    partition = _leader(tmp_path)
    replicas = _Replicas(partition)
    too_far = delete_on_leader(replicas, ("t", 0), RECORDS + 1, _alive)  # type: ignore[arg-type]
    assert too_far.error_code == ErrorCode.offset_out_of_range
    assert partition.log.log_start_offset == 0
    to_high_watermark = delete_on_leader(replicas, ("t", 0), -1, _alive)  # type: ignore[arg-type]
    assert to_high_watermark.required_offset == RECORDS
    assert partition.log.log_start_offset == RECORDS


def test_only_segments_wholly_below_the_log_start_are_detached(tmp_path: Path) -> None:
    partition = _leader(tmp_path)
    replica_log = partition.log
    bases = [segment.base_offset for segment in replica_log.segments]
    assert len(bases) > 3
    inside = bases[2] + 1
    replica_log.increment_log_start_offset(inside)
    doomed = replica_log.detach_segments_below_log_start()
    assert [segment.base_offset for segment in doomed] == bases[:2]
    assert replica_log.segments[0].base_offset == bases[2]
    replica_log.release_replaced_segments(doomed)
    assert not any(segment.log_path.exists() for segment in doomed)
    assert replica_log.read(inside, 10_000)  # what remains is readable from the new start
