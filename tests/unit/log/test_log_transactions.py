"""A log with transactions: transactional batches hold the last stable offset until their
marker is written and replicated; markers are fenced by producer and coordinator epochs;
followers and a reopened log rebuild the same state from the batches."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.log.config import LogConfig
from broker.log.control_records import ControlType, EndTxnMarker
from broker.log.errors import INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED, RecordError
from broker.log.log import Log
from broker.log.record_codec import SimpleRecord, build_batch
from broker.log.transaction_state import AbortedTxn

COMMIT = EndTxnMarker(ControlType.COMMIT, coordinator_epoch=0)
ABORT = EndTxnMarker(ControlType.ABORT, coordinator_epoch=0)


def _txn_batch(producer_id: int, sequence: int, epoch: int = 0, count: int = 2) -> bytearray:
    records = [SimpleRecord(None, f"v{sequence + i}".encode(), (), 1000 + i) for i in range(count)]
    return bytearray(
        build_batch(
            records,
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=sequence,
            is_transactional=True,
        )
    )


def _open(tmp_path: Path, name: str = "t-0") -> Log:
    return Log.open(tmp_path / name, LogConfig())


def _replicate(leader: Log, follower: Log) -> None:
    follower.append_as_follower(leader.read(follower.log_end_offset, 1 << 20))


def test_an_open_transaction_holds_the_lso_until_its_marker_is_replicated(tmp_path: Path) -> None:
    log = _open(tmp_path)
    log.append_as_leader(_txn_batch(7, 0), 0, 1)  # offsets 0-1
    log.update_high_watermark(2)
    assert log.last_stable_offset == 0
    completed = log.append_marker_as_leader(7, 0, COMMIT, leader_epoch=0, now_ms=5)
    assert (completed.first_offset, completed.last_offset) == (0, 2)
    assert log.last_stable_offset == 0  # the marker is not below the high watermark yet
    log.update_high_watermark(3)
    assert log.last_stable_offset == 3


def test_an_aborted_transaction_is_named_to_read_committed_fetches(tmp_path: Path) -> None:
    log = _open(tmp_path)
    log.append_as_leader(_txn_batch(7, 0), 0, 1)
    log.append_marker_as_leader(7, 0, ABORT, leader_epoch=0, now_ms=5)
    assert log.aborted_transactions(0, 3) == [AbortedTxn(7, 0, 2, 3)]
    assert log.aborted_transactions(3, 10) == []


def test_a_marker_from_an_older_producer_epoch_is_fenced(tmp_path: Path) -> None:
    log = _open(tmp_path)
    log.append_as_leader(_txn_batch(7, 0, epoch=2), 0, 1)
    with pytest.raises(RecordError) as refused:
        log.append_marker_as_leader(7, 1, COMMIT, leader_epoch=0, now_ms=5)
    assert refused.value.error_code == INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 2  # nothing written


def test_a_marker_from_an_older_coordinator_epoch_is_fenced(tmp_path: Path) -> None:
    log = _open(tmp_path)
    log.append_as_leader(_txn_batch(7, 0), 0, 1)
    log.append_marker_as_leader(7, 0, EndTxnMarker(ControlType.COMMIT, 4), 0, now_ms=5)
    log.append_as_leader(_txn_batch(7, 2), 0, 1)
    with pytest.raises(RecordError) as refused:
        log.append_marker_as_leader(7, 0, EndTxnMarker(ControlType.ABORT, 3), 0, now_ms=6)
    assert refused.value.error_code == TRANSACTION_COORDINATOR_FENCED


def test_a_marker_with_a_bumped_epoch_restarts_the_producers_sequences(tmp_path: Path) -> None:
    log = _open(tmp_path)
    log.append_as_leader(_txn_batch(7, 0), 0, 1)
    log.append_marker_as_leader(7, 1, ABORT, leader_epoch=0, now_ms=5)  # fenced on timeout
    assert log.append_as_leader(_txn_batch(7, 0, epoch=1), 0, 1).first_offset == 3


def test_a_follower_and_a_reopened_log_rebuild_the_same_transactions(tmp_path: Path) -> None:
    leader = _open(tmp_path, "leader-0")
    leader.append_as_leader(_txn_batch(7, 0), 0, 1)  # 0-1
    leader.append_as_leader(_txn_batch(8, 0), 0, 1)  # 2-3, still open
    leader.append_marker_as_leader(7, 0, ABORT, leader_epoch=0, now_ms=5)  # 4
    follower = _open(tmp_path, "follower-0")
    _replicate(leader, follower)
    leader.close()
    reopened = _open(tmp_path, "leader-0")
    for log in (follower, reopened):
        assert log.producer_state.transactions.ongoing == {8: 2}
        # The abort's last stable offset is where producer 8's open transaction begins.
        assert log.aborted_transactions(0, 10) == [AbortedTxn(7, 0, 4, 2)]


def test_truncating_a_marker_away_reopens_its_transaction(tmp_path: Path) -> None:
    log = _open(tmp_path)
    log.append_as_leader(_txn_batch(7, 0), 0, 1)
    log.append_marker_as_leader(7, 0, ABORT, leader_epoch=0, now_ms=5)
    log.truncate_to(2)
    assert log.producer_state.transactions.ongoing == {7: 0}
    assert log.aborted_transactions(0, 10) == []
