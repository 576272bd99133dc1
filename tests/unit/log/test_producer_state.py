from pathlib import Path

import pytest

from broker.log.config import LogConfig
from broker.log.errors import RecordError
from broker.log.log import Log
from broker.log.producer_state import INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER
from broker.log.record_codec import SimpleRecord, build_batch

INVALID_RECORD = 87


def _batch(producer_id: int, epoch: int, sequence: int, count: int = 2) -> bytearray:
    records = [SimpleRecord(None, f"v{sequence + i}".encode(), (), 1000 + i) for i in range(count)]
    return bytearray(
        build_batch(records, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)
    )


@pytest.fixture
def log(tmp_path: Path) -> Log:
    return Log.open(tmp_path / "t-0", LogConfig())


def test_in_sequence_batches_are_appended(log: Log) -> None:
    assert log.append_as_leader(_batch(7, 0, 0), 0, 1).first_offset == 0
    assert log.append_as_leader(_batch(7, 0, 2), 0, 1).first_offset == 2
    assert log.log_end_offset == 4


def test_retried_batch_returns_original_offsets_without_writing(log: Log) -> None:
    log.append_as_leader(_batch(7, 0, 0), 0, 1)
    log.append_as_leader(_batch(9, 0, 0), 0, 1)
    retry = log.append_as_leader(_batch(7, 0, 0), 0, 1)
    assert (retry.first_offset, retry.last_offset) == (0, 1)
    assert log.log_end_offset == 4


def test_sequence_gap_is_out_of_order(log: Log) -> None:
    log.append_as_leader(_batch(7, 0, 0), 0, 1)
    with pytest.raises(RecordError) as error:
        log.append_as_leader(_batch(7, 0, 5), 0, 1)
    assert error.value.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 2


def test_older_epoch_is_fenced(log: Log) -> None:
    log.append_as_leader(_batch(7, 3, 0), 0, 1)
    with pytest.raises(RecordError) as error:
        log.append_as_leader(_batch(7, 2, 2), 0, 1)
    assert error.value.error_code == INVALID_PRODUCER_EPOCH


def test_new_epoch_must_restart_at_sequence_zero(log: Log) -> None:
    log.append_as_leader(_batch(7, 0, 0), 0, 1)
    with pytest.raises(RecordError) as error:
        log.append_as_leader(_batch(7, 1, 4), 0, 1)
    assert error.value.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.append_as_leader(_batch(7, 1, 0), 0, 1).first_offset == 2


def test_unknown_producer_may_start_at_any_sequence(log: Log) -> None:
    assert log.append_as_leader(_batch(7, 0, 40), 0, 1).first_offset == 0


def test_sequence_wraps_at_int_max(log: Log) -> None:
    log.append_as_leader(_batch(7, 0, 2**31 - 2, count=1), 0, 1)
    log.append_as_leader(_batch(7, 0, 2**31 - 1, count=1), 0, 1)
    assert log.append_as_leader(_batch(7, 0, 0, count=1), 0, 1).first_offset == 2


def test_state_is_rebuilt_when_the_log_is_reopened(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig())
    log.append_as_leader(_batch(7, 0, 0), 0, 1)
    log.close()
    reopened = Log.open(tmp_path / "t-0", LogConfig())
    assert reopened.append_as_leader(_batch(7, 0, 0), 0, 1).first_offset == 0  # a retry
    with pytest.raises(RecordError):
        reopened.append_as_leader(_batch(7, 0, 9), 0, 1)
    assert reopened.append_as_leader(_batch(7, 0, 2), 0, 1).first_offset == 2


def test_produce_path_requires_exactly_one_batch(log: Log) -> None:
    two = bytes(_batch(-1, -1, -1)) + bytes(_batch(-1, -1, -1))
    with pytest.raises(RecordError) as error:
        log.append_as_leader(bytearray(two), 0, 1, require_single_batch=True)
    assert error.value.error_code == INVALID_RECORD
