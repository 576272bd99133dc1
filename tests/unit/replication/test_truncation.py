"""Where a follower cuts its log before fetching, and the epoch cache it relies on."""

from pathlib import Path

from broker.log.checkpoints import LEADER_EPOCH_CHECKPOINT
from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.record_codec import SimpleRecord, build_batch
from broker.replication.fetcher import ReplicaFetcher
from broker.replication.partition import Partition


def _log_with_epochs(directory: Path, epochs: list[tuple[int, int]]) -> Log:
    """A log with `count` one-record batches written at each (epoch, count)."""
    replica_log = Log.open(directory, LogConfig())
    for epoch, count in epochs:
        for index in range(count):
            batch = build_batch([SimpleRecord(None, b"e%d-%d" % (epoch, index), (), 1000)])
            replica_log.append_as_leader(bytearray(batch), epoch, 1000)
    return replica_log


def _follower(replica_log: Log) -> Partition:
    return Partition("t", 0, replica_log, [1, 2], broker_id=2)


def test_follower_with_the_leaders_latest_epoch_keeps_up_to_the_leaders_end(
    tmp_path: Path,
) -> None:
    follower = _follower(_log_with_epochs(tmp_path / "t-0", [(0, 3), (1, 4)]))  # end 7
    assert ReplicaFetcher._truncation_offset(follower, leader_epoch=1, end_offset=5) == 5
    assert ReplicaFetcher._truncation_offset(follower, leader_epoch=1, end_offset=9) == 7


def test_ex_leader_with_an_unreplicated_epoch_cuts_back_to_where_the_leader_moved_on(
    tmp_path: Path,
) -> None:
    # Epoch 0 ran to offset 3 here, then this replica led epoch 1 alone (offsets 3-5); the new
    # leader knows epoch 0 ended at 3.
    ex_leader = _follower(_log_with_epochs(tmp_path / "t-0", [(0, 3), (1, 3)]))
    assert ReplicaFetcher._truncation_offset(ex_leader, leader_epoch=0, end_offset=3) == 3


def test_corrupt_leader_epoch_checkpoint_is_rebuilt_from_the_batches(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _log_with_epochs(directory, [(0, 2), (3, 2), (5, 1)]).close()
    (directory / LEADER_EPOCH_CHECKPOINT).write_text("0\n3\n0 0\nnot a line\n")
    reopened = Log.open(directory, LogConfig())
    assert reopened.leader_epoch_cache.entries == [(0, 0), (3, 2), (5, 4)]
    assert (directory / LEADER_EPOCH_CHECKPOINT).read_text().splitlines()[1] == "3"
