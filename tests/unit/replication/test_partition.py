"""The leader's rules for the high watermark and the ISR, without processes."""

from pathlib import Path

import pytest

from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.record_codec import SimpleRecord, build_batch
from broker.replication.partition import InvariantError, Partition
from zk.znodes import PartitionState

ME, OTHER, THIRD = 1, 2, 3
LAG_MS = 10_000


def _leader(tmp_path: Path, isr: list[int], records: int = 0) -> Partition:
    replica_log = Log.open(tmp_path / "t-0", LogConfig())
    partition = Partition("t", 0, replica_log, [], broker_id=ME)
    state = PartitionState(leader=ME, leader_epoch=3, isr=isr, controller_epoch=1)
    partition.make_leader(state, zk_version=0, replicas=[ME, OTHER, THIRD], now_ms=0)
    for index in range(records):
        batch = build_batch([SimpleRecord(None, b"v%d" % index, (), 1000)])
        replica_log.append_as_leader(bytearray(batch), partition.leader_epoch, 1000)
    return partition


def test_high_watermark_is_the_smallest_log_end_over_the_isr(tmp_path: Path) -> None:
    partition = _leader(tmp_path, isr=[ME, OTHER, THIRD], records=5)
    assert not partition.maybe_increment_high_watermark()  # followers' positions unknown
    partition.update_follower_fetch(OTHER, 5, now_ms=1)
    assert partition.high_watermark == 0
    assert partition.update_follower_fetch(THIRD, 3, now_ms=1)
    assert partition.high_watermark == 3


def test_high_watermark_of_a_leader_alone_in_the_isr_is_its_log_end(tmp_path: Path) -> None:
    partition = _leader(tmp_path, isr=[ME], records=4)
    assert partition.maybe_increment_high_watermark()
    assert partition.high_watermark == 4


def test_high_watermark_never_moves_back_when_a_follower_reports_less(tmp_path: Path) -> None:
    partition = _leader(tmp_path, isr=[ME, OTHER], records=4)
    partition.update_follower_fetch(OTHER, 4, now_ms=1)
    partition.update_follower_fetch(OTHER, 2, now_ms=2)
    assert partition.high_watermark == 4


def test_follower_that_has_not_caught_up_for_the_lag_time_leaves_the_isr(tmp_path: Path) -> None:
    partition = _leader(tmp_path, isr=[ME, OTHER, THIRD], records=4)
    partition.update_follower_fetch(OTHER, 4, now_ms=LAG_MS)  # caught up
    partition.update_follower_fetch(THIRD, 1, now_ms=LAG_MS)  # behind since the start
    assert partition.isr_after_shrink(now_ms=LAG_MS, lag_time_max_ms=LAG_MS) is None
    assert partition.isr_after_shrink(now_ms=LAG_MS + 1, lag_time_max_ms=LAG_MS) == [ME, OTHER]


def test_follower_that_reached_the_leader_end_at_its_previous_fetch_counts_as_caught_up(
    tmp_path: Path,
) -> None:
    partition = _leader(tmp_path, isr=[ME, OTHER], records=2)
    partition.update_follower_fetch(OTHER, 2, now_ms=5_000)
    partition.log.append_as_leader(
        bytearray(build_batch([SimpleRecord(None, b"late", (), 1000)])), 3, 1000
    )
    # Fetching from where the leader ended at the previous fetch: caught up as of then.
    partition.update_follower_fetch(OTHER, 2, now_ms=9_000)
    assert partition.followers[OTHER].last_caught_up_time_ms == 5_000


def test_follower_rejoins_only_after_reaching_the_high_watermark(tmp_path: Path) -> None:
    partition = _leader(tmp_path, isr=[ME], records=6)
    partition.maybe_increment_high_watermark()
    partition.update_follower_fetch(OTHER, 5, now_ms=1)
    assert partition.isr_after_expand(OTHER) is None
    partition.update_follower_fetch(OTHER, 6, now_ms=2)
    assert partition.isr_after_expand(OTHER) == [ME, OTHER]


def test_an_isr_outside_the_replicas_is_refused(tmp_path: Path) -> None:
    partition = _leader(tmp_path, isr=[ME])
    with pytest.raises(InvariantError):
        partition.apply_isr([ME, 9], zk_version=1)


def test_an_older_leader_epoch_is_refused(tmp_path: Path) -> None:
    partition = _leader(tmp_path, isr=[ME])
    older = PartitionState(leader=OTHER, leader_epoch=2, isr=[OTHER], controller_epoch=1)
    assert not partition.is_newer(older, zk_version=5)
    with pytest.raises(InvariantError):
        partition.make_follower(older, zk_version=5, replicas=[ME, OTHER])


def test_epoch_bump_of_an_ongoing_leadership_keeps_follower_positions(tmp_path: Path) -> None:
    partition = _leader(tmp_path, isr=[ME, OTHER, THIRD], records=3)
    partition.update_follower_fetch(OTHER, 3, now_ms=1)
    state = PartitionState(leader=ME, leader_epoch=4, isr=[ME, OTHER], controller_epoch=1)
    assert not partition.make_leader(state, zk_version=1, replicas=[ME, OTHER, THIRD], now_ms=2)
    assert partition.followers[OTHER].log_end_offset == 3
    assert partition.high_watermark == 3  # THIRD left the ISR; OTHER's position still counts
    assert partition.leader_epoch_start_offset == 3
    assert partition.log.leader_epoch_cache.entries[-1] == (4, 3)


def test_one_isr_write_at_a_time_and_only_while_leading(tmp_path: Path) -> None:
    partition = _leader(tmp_path, isr=[ME, OTHER])
    assert partition.begin_isr_write()
    assert not partition.begin_isr_write()  # the first is still on its way
    partition.end_isr_write()
    assert partition.begin_isr_write()
    partition.end_isr_write()
    assert partition.stop()  # ends this broker's leadership
    assert not partition.begin_isr_write()
    partition.log.close()


def test_stopping_a_leader_ends_its_leadership_once(tmp_path: Path) -> None:
    partition = _leader(tmp_path, isr=[ME, OTHER])
    generation = partition.leadership_generation
    assert partition.stop()
    assert not partition.is_leader
    assert partition.leadership_generation == generation + 1
    assert not partition.stop()  # no leadership left to end
    assert partition.leadership_generation == generation + 1
    partition.log.close()
