"""A transactional id's decisions at its coordinator: epochs, fencing, the partitions of a
transaction, ending it, and Kafka's error codes for requests that do not fit its state."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.coordinator.transaction.metadata import MAX_PRODUCER_EPOCH, TxnMetadata, TxnRefused
from broker.coordinator.transaction.state import TxnState

NOW = 1_000


def _initialised() -> TxnMetadata:
    metadata = TxnMetadata("app", producer_id=40)
    metadata.apply(metadata.prepare_init(60_000, NOW))
    return metadata


def _ongoing() -> TxnMetadata:
    metadata = _initialised()
    metadata.apply(metadata.prepare_add_partitions(40, 0, [("out", 0)], NOW + 1))  # type: ignore[arg-type]
    return metadata


def _refused(error: ErrorCode, decide: object, *args: object) -> None:
    with pytest.raises(TxnRefused) as refused:
        decide(*args)  # type: ignore[operator]
    assert refused.value.error == error


def test_initialising_a_new_id_starts_at_epoch_0_and_empty() -> None:
    metadata = _initialised()
    assert (metadata.producer_id, metadata.producer_epoch, metadata.state) == (
        40,
        0,
        TxnState.EMPTY,
    )
    metadata.apply(metadata.prepare_init(60_000, NOW))
    assert metadata.producer_epoch == 1


def test_an_exhausted_epoch_moves_to_a_new_producer_id() -> None:
    metadata = _initialised()
    metadata.producer_epoch = MAX_PRODUCER_EPOCH
    metadata.apply(metadata.prepare_init(60_000, NOW, new_producer_id=41))
    assert (metadata.producer_id, metadata.producer_epoch) == (41, 0)


def test_a_producer_naming_another_epoch_is_fenced_on_init() -> None:
    metadata = _initialised()
    _refused(ErrorCode.producer_fenced, metadata.prepare_init, 60_000, NOW, None, (40, 5))
    metadata.apply(metadata.prepare_init(60_000, NOW, expected=(40, 0)))
    assert metadata.producer_epoch == 1


def test_adding_partitions_opens_and_grows_the_transaction() -> None:
    metadata = _ongoing()
    assert metadata.state == TxnState.ONGOING and metadata.start_timestamp_ms == NOW + 1
    assert metadata.prepare_add_partitions(40, 0, [("out", 0)], NOW + 2) is None  # already in
    metadata.apply(metadata.prepare_add_partitions(40, 0, [("out", 1)], NOW + 3))  # type: ignore[arg-type]
    assert metadata.partitions == {("out", 0), ("out", 1)}
    assert metadata.start_timestamp_ms == NOW + 1


def test_requests_of_another_producer_id_or_epoch_are_refused() -> None:
    metadata = _ongoing()
    _refused(ErrorCode.invalid_producer_id_mapping, metadata.prepare_add_partitions, 7, 0, [], NOW)
    _refused(ErrorCode.producer_fenced, metadata.prepare_add_partitions, 40, 1, [], NOW)
    _refused(ErrorCode.producer_fenced, metadata.prepare_end, 40, 1, True, NOW)


def test_ending_prepares_then_completes_and_a_retry_is_answered() -> None:
    metadata = _ongoing()
    metadata.apply(metadata.prepare_end(40, 0, commit=True, now_ms=NOW + 5))  # type: ignore[arg-type]
    assert metadata.state == TxnState.PREPARE_COMMIT
    _refused(ErrorCode.concurrent_transactions, metadata.prepare_end, 40, 0, True, NOW)
    _refused(ErrorCode.invalid_txn_state, metadata.prepare_end, 40, 0, False, NOW)
    _refused(ErrorCode.concurrent_transactions, metadata.prepare_add_partitions, 40, 0, [], NOW)
    metadata.apply(metadata.prepare_complete(NOW + 6))
    assert metadata.state == TxnState.COMPLETE_COMMIT
    assert metadata.prepare_end(40, 0, commit=True, now_ms=NOW + 7) is None
    _refused(ErrorCode.invalid_txn_state, metadata.prepare_end, 40, 0, False, NOW)


def test_ending_with_nothing_open_is_an_invalid_state() -> None:
    metadata = _initialised()
    _refused(ErrorCode.invalid_txn_state, metadata.prepare_end, 40, 0, True, NOW)


def test_a_write_in_flight_makes_other_requests_wait() -> None:
    metadata = _initialised()
    metadata.prepare_add_partitions(40, 0, [("out", 0)], NOW)  # written, not yet applied
    _refused(ErrorCode.concurrent_transactions, metadata.prepare_end, 40, 0, True, NOW)


def test_fencing_an_open_transaction_aborts_it_with_a_bumped_epoch() -> None:
    metadata = _ongoing()
    _refused(ErrorCode.concurrent_transactions, metadata.prepare_init, 60_000, NOW)
    metadata.apply(metadata.prepare_fence(NOW + 9))
    assert (metadata.state, metadata.producer_epoch) == (TxnState.PREPARE_ABORT, 1)
    assert metadata.partitions == {("out", 0)}  # the markers go to them
    _refused(ErrorCode.producer_fenced, metadata.prepare_add_partitions, 40, 0, [], NOW)


def test_only_idle_ids_expire_after_the_expiration_time() -> None:
    idle = _initialised()  # last changed at NOW
    assert not idle.expired(horizon_ms=NOW)
    assert idle.expired(horizon_ms=NOW + 1)
    ongoing = _ongoing()
    assert not ongoing.expired(horizon_ms=NOW + 10**9)  # an open transaction never expires
    ongoing.apply(ongoing.prepare_end(40, 0, True, NOW + 2))
    assert ongoing.state == TxnState.PREPARE_COMMIT
    assert not ongoing.expired(horizon_ms=NOW + 10**9)  # nor one whose markers are pending


def test_removing_an_expired_id_makes_other_requests_wait() -> None:
    metadata = _initialised()
    dead = metadata.prepare_dead(NOW + 5)
    assert dead.state == TxnState.DEAD
    assert not metadata.expired(horizon_ms=NOW + 10**9)  # the removal is in flight
    _refused(ErrorCode.concurrent_transactions, metadata.prepare_init, 60_000, NOW + 6)
