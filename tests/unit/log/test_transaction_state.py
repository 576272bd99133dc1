"""A partition's transactions: the last stable offset, aborted transactions for
read_committed fetches, and what truncation and retention do to them."""

from __future__ import annotations

from broker.log.transaction_state import AbortedTxn, CompletedTxn, TransactionTracker


def test_an_open_transaction_holds_the_lso_at_its_first_offset() -> None:
    txns = TransactionTracker()
    assert txns.last_stable_offset(high_watermark=10) == 10
    txns.on_transactional_batch(producer_id=1, first_offset=4)
    txns.on_transactional_batch(producer_id=1, first_offset=6)  # same transaction
    assert txns.first_unstable_offset() == 4
    assert txns.last_stable_offset(high_watermark=10) == 4
    assert txns.last_stable_offset(high_watermark=3) == 3


def test_a_completed_transaction_is_unstable_until_its_marker_is_replicated() -> None:
    txns = TransactionTracker()
    txns.on_transactional_batch(1, 4)
    completed = txns.on_marker(1, marker_offset=8, is_commit=True)
    assert completed == CompletedTxn(1, 4, 8, is_aborted=False)
    txns.on_high_watermark(8)  # the marker itself is not below the high watermark yet
    assert txns.last_stable_offset(high_watermark=8) == 4
    txns.on_high_watermark(9)
    assert txns.last_stable_offset(high_watermark=9) == 9


def test_an_abort_records_the_lso_of_its_time() -> None:
    txns = TransactionTracker()
    txns.on_transactional_batch(1, 0)
    txns.on_transactional_batch(2, 3)
    txns.on_marker(1, marker_offset=5, is_commit=False)
    txns.on_marker(2, marker_offset=9, is_commit=False)
    assert txns.aborted == [AbortedTxn(1, 0, 5, 3), AbortedTxn(2, 3, 9, 10)]


def test_an_abort_whose_marker_the_cleaner_removed_is_forgotten() -> None:
    txns = TransactionTracker()
    txns.on_transactional_batch(1, 0)
    txns.on_marker(1, marker_offset=5, is_commit=False)
    txns.on_transactional_batch(1, 6)
    txns.on_marker(1, marker_offset=8, is_commit=False)
    txns.forget_aborted({5})
    assert [t.last_offset for t in txns.aborted] == [8]
    assert [t.last_offset for t in txns.aborted_between(0, 9)] == [8]


def test_a_marker_without_an_open_transaction_completes_an_empty_one() -> None:
    txns = TransactionTracker()
    assert txns.on_marker(5, marker_offset=7, is_commit=False) == CompletedTxn(5, 7, 7, True)


def test_aborted_between_names_the_overlapping_aborts_only() -> None:
    txns = TransactionTracker()
    for producer_id, first, marker in ((1, 0, 2), (2, 3, 5), (3, 6, 8)):
        txns.on_transactional_batch(producer_id, first)
        txns.on_marker(producer_id, marker, is_commit=False)
    assert [t.producer_id for t in txns.aborted_between(0, 100)] == [1, 2, 3]
    assert [t.producer_id for t in txns.aborted_between(3, 6)] == [2]
    assert [t.producer_id for t in txns.aborted_between(2, 3)] == [1]
    assert txns.aborted_between(9, 100) == []


def test_truncation_reopens_a_transaction_whose_marker_went() -> None:
    txns = TransactionTracker()
    txns.on_transactional_batch(1, 2)
    txns.on_marker(1, marker_offset=6, is_commit=False)
    txns.on_transactional_batch(2, 7)
    txns.truncate_from(6)
    assert txns.ongoing == {1: 2}
    assert txns.aborted == []
    assert txns.last_stable_offset(high_watermark=6) == 2


def test_retention_forgets_aborts_below_the_log_start() -> None:
    txns = TransactionTracker()
    for producer_id, first, marker in ((1, 0, 2), (2, 3, 5)):
        txns.on_transactional_batch(producer_id, first)
        txns.on_marker(producer_id, marker, is_commit=False)
    txns.trim_below(3)
    assert [t.producer_id for t in txns.aborted] == [2]
