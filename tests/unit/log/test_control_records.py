"""Transaction markers are control batches in Kafka's layout, and read back as written."""

from __future__ import annotations

import pytest

from broker.log.batch import read_batch_header
from broker.log.control_records import (
    ControlType,
    EndTxnMarker,
    build_marker_batch,
    read_marker,
)
from broker.log.errors import RecordError
from broker.log.record_codec import SimpleRecord, build_batch, decode_records


def test_a_commit_marker_has_kafkas_layout() -> None:
    batch = build_marker_batch(42, 3, EndTxnMarker(ControlType.COMMIT, 7), timestamp_ms=1_000)
    header = read_batch_header(batch, 0)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, -1)
    assert header.records_count == 1
    [record] = decode_records(batch)
    assert record.key == b"\x00\x00\x00\x01"  # version 0, type COMMIT
    assert record.value == b"\x00\x00\x00\x00\x00\x07"  # version 0, coordinator epoch 7
    assert record.timestamp_ms == 1_000


@pytest.mark.parametrize("control_type", list(ControlType))
def test_markers_read_back_as_written(control_type: ControlType) -> None:
    marker = EndTxnMarker(control_type, 12)
    batch = build_marker_batch(1, 0, marker, timestamp_ms=5)
    assert read_marker(batch, read_batch_header(batch, 0)) == marker
    assert marker.is_commit == (control_type == ControlType.COMMIT)


def test_a_control_batch_of_an_unknown_type_is_refused() -> None:
    record = SimpleRecord(b"\x00\x00\x00\x09", b"\x00\x00\x00\x00\x00\x01")
    batch = build_batch([record], producer_id=1, producer_epoch=0, is_control=True)
    with pytest.raises(RecordError, match="unknown control record type 9"):
        read_marker(batch, read_batch_header(batch, 0))


def test_a_data_batch_is_not_a_marker() -> None:
    batch = build_batch([SimpleRecord(b"k", b"v")], producer_id=1, producer_epoch=0)
    with pytest.raises(RecordError, match="not a control batch"):
        read_marker(batch, read_batch_header(batch, 0))
