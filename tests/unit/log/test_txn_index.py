"""The aborted-transaction index (`<base>.txnindex`, Kafka's 34-byte entries): written when a
marker aborts a transaction, cut back by truncation, and brought in line with the log's
markers when the log is opened."""

from __future__ import annotations

import struct
from pathlib import Path

from broker.log.control_records import ControlType, EndTxnMarker
from broker.log.log import Log
from broker.log.transaction_state import AbortedTxn
from broker.log.txn_index import TransactionIndex

from .test_log_transactions import _open, _replicate, _txn_batch

ABORT = EndTxnMarker(ControlType.ABORT, coordinator_epoch=0)
COMMIT = EndTxnMarker(ControlType.COMMIT, coordinator_epoch=0)


def _index_file(log: Log) -> Path:
    return log.directory / "00000000000000000000.txnindex"


def test_entries_are_kafkas_34_bytes_and_survive_replace_and_truncation(tmp_path: Path) -> None:
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    assert index.entries() == [] and not index.path.exists()  # created with its first entry
    first, second = AbortedTxn(7, 0, 2, 3), AbortedTxn(8, 3, 9, 10)
    index.append(first)
    index.append(second)
    data = index.path.read_bytes()
    assert len(data) == 68
    assert struct.unpack(">hqqqq", data[:34]) == (0, 7, 0, 2, 3)
    assert index.entries() == [first, second]
    index.truncate_to(9)  # the second marker is gone
    assert index.entries() == [first]
    index.path.write_bytes(index.path.read_bytes() + b"\x00\x00\x01")  # a torn entry
    assert index.entries() == [first]
    index.replace([])
    assert not index.path.exists()


def test_an_abort_is_indexed_in_the_segment_holding_its_marker(tmp_path: Path) -> None:
    log = _open(tmp_path)
    log.append_as_leader(_txn_batch(7, 0), 0, 1)  # 0-1
    log.append_marker_as_leader(7, 0, COMMIT, leader_epoch=0, now_ms=5)  # 2: not indexed
    log.append_as_leader(_txn_batch(7, 2), 0, 6)  # 3-4
    log.append_marker_as_leader(7, 0, ABORT, leader_epoch=0, now_ms=7)  # 5
    assert TransactionIndex(_index_file(log)).entries() == [AbortedTxn(7, 3, 5, 6)]
    follower = _open(tmp_path, "follower-0")
    _replicate(log, follower)
    assert TransactionIndex(_index_file(follower)).entries() == [AbortedTxn(7, 3, 5, 6)]
    log.close()
    follower.close()


def test_opening_a_log_rewrites_an_index_that_disagrees_with_its_markers(tmp_path: Path) -> None:
    log = _open(tmp_path)
    log.append_as_leader(_txn_batch(7, 0), 0, 1)
    log.append_marker_as_leader(7, 0, ABORT, leader_epoch=0, now_ms=5)  # 0-1, marker 2
    log.close()
    path = _index_file(log)
    expected = TransactionIndex(path).entries()
    path.unlink()  # lost in a crash
    reopened = _open(tmp_path)
    assert TransactionIndex(path).entries() == expected == [AbortedTxn(7, 0, 2, 3)]
    reopened.close()
    TransactionIndex(path).append(AbortedTxn(9, 40, 41, 42))  # an entry the log lacks
    assert TransactionIndex(path).entries() != expected
    _open(tmp_path).close()
    assert TransactionIndex(path).entries() == expected
