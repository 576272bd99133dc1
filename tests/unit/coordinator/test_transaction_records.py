"""__transaction_state keys and values in Kafka's TransactionLogKey / TransactionLogValue
schemas, and the transaction states' table of transitions."""

from __future__ import annotations

import struct

import pytest

from broker.coordinator.record_io import RecordFormatError
from broker.coordinator.transaction.records import (
    TxnLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from broker.coordinator.transaction.state import InvalidTxnTransition, TxnState, check_transition


def _ongoing() -> TxnLogValue:
    return TxnLogValue(
        producer_id=4000,
        producer_epoch=3,
        transaction_timeout_ms=60_000,
        state=TxnState.ONGOING,
        partitions=frozenset({("out", 1), ("out", 0), ("__consumer_offsets", 7)}),
        last_update_timestamp_ms=1_700_000_000_500,
        start_timestamp_ms=1_700_000_000_000,
    )


def test_the_key_is_version_0_and_the_transactional_id() -> None:
    assert encode_key("app-1") == b"\x00\x00\x00\x05app-1"
    assert decode_key(encode_key("app-1")) == "app-1"


def test_a_value_has_kafkas_v0_layout() -> None:
    encoded = encode_value(_ongoing())
    expected = struct.pack(">hqhib", 0, 4000, 3, 60_000, 1)
    expected += struct.pack(">i", 2)  # topics, sorted by name
    expected += struct.pack(">h", 18) + b"__consumer_offsets" + struct.pack(">ii", 1, 7)
    expected += struct.pack(">h", 3) + b"out" + struct.pack(">iii", 2, 0, 1)
    expected += struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000)
    assert encoded == expected
    assert decode_value(encoded) == _ongoing()


def test_an_empty_transaction_writes_null_partitions() -> None:
    value = TxnLogValue(1, 0, 60_000, TxnState.EMPTY, frozenset(), 5, -1)
    encoded = encode_value(value)
    assert encoded[17:21] == struct.pack(">i", -1)
    assert decode_value(encoded) == value


def test_a_flexible_v1_value_is_read() -> None:
    flexible = struct.pack(">hqhib", 1, 9, 0, 1000, 2)
    flexible += bytes([2])  # one topic (compact count + 1)
    flexible += bytes([4]) + b"out" + bytes([3]) + struct.pack(">ii", 0, 5) + bytes([0])
    flexible += struct.pack(">qq", 20, 10) + bytes([1, 0, 1, 0xFF])  # one unknown tagged field
    value = decode_value(flexible)
    assert value.state == TxnState.PREPARE_COMMIT
    assert value.partitions == frozenset({("out", 0), ("out", 5)})
    assert (value.last_update_timestamp_ms, value.start_timestamp_ms) == (20, 10)


def test_an_unknown_status_or_version_is_refused() -> None:
    with pytest.raises(RecordFormatError, match="status 9"):
        decode_value(struct.pack(">hqhib", 0, 1, 0, 1, 9) + struct.pack(">iqq", -1, 0, 0))
    with pytest.raises(RecordFormatError, match="version 2"):
        decode_value(struct.pack(">h", 2))


def test_transactional_ids_spread_like_kafkas() -> None:
    # Java: Math.abs("my-txn".hashCode()) % 50
    java_hash = 0
    for char in "my-txn":
        java_hash = (31 * java_hash + ord(char)) & 0xFFFFFFFF
    signed = java_hash - (1 << 32) if java_hash >= 1 << 31 else java_hash
    assert partition_for("my-txn", 50) == abs(signed) % 50


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (TxnState.EMPTY, TxnState.ONGOING),
        (TxnState.ONGOING, TxnState.PREPARE_COMMIT),
        (TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT),
        (TxnState.COMPLETE_COMMIT, TxnState.ONGOING),
        (TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE),
        (TxnState.PREPARE_EPOCH_FENCE, TxnState.PREPARE_ABORT),
        (TxnState.COMPLETE_ABORT, TxnState.DEAD),
    ],
)
def test_kafkas_transitions_are_allowed(current: TxnState, target: TxnState) -> None:
    check_transition("t", current, target)


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (TxnState.EMPTY, TxnState.PREPARE_COMMIT),
        (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT),
        (TxnState.ONGOING, TxnState.COMPLETE_COMMIT),
        (TxnState.DEAD, TxnState.ONGOING),
    ],
)
def test_other_transitions_are_refused(current: TxnState, target: TxnState) -> None:
    with pytest.raises(InvalidTxnTransition, match=target.kafka_name):
        check_transition("t", current, target)
