"""Transaction markers: the control batches that end a transaction in a partition (KIP-98).

A marker is a batch with the control and transactional attribute bits set, the producer's id
and epoch, no sequence (-1) and one record whose key is ControlRecordType (version i16 = 0,
type i16: 0 ABORT, 1 COMMIT) and whose value is EndTransactionMarker (version i16 = 0,
coordinator epoch i32), as Kafka writes them. The partition leader appends them when the
transaction coordinator sends WriteTxnMarkers; clients never produce them.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from broker.log.batch import BatchHeader, Buffer
from broker.log.errors import CORRUPT_MESSAGE, RecordError
from broker.log.record_codec import SimpleRecord, build_batch, decode_records

CONTROL_RECORD_VERSION = 0
END_TXN_MARKER_VERSION = 0
NO_SEQUENCE = -1
_KEY = struct.Struct(">hh")  # version, type
_VALUE = struct.Struct(">hi")  # version, coordinator epoch


class ControlType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    control_type: ControlType
    coordinator_epoch: int

    @property
    def is_commit(self) -> bool:
        return self.control_type == ControlType.COMMIT


def build_marker_batch(
    producer_id: int, producer_epoch: int, marker: EndTxnMarker, timestamp_ms: int
) -> bytes:
    """The control batch for `marker` (offsets and leader epoch are assigned on append)."""
    record = SimpleRecord(
        key=_KEY.pack(CONTROL_RECORD_VERSION, marker.control_type),
        value=_VALUE.pack(END_TXN_MARKER_VERSION, marker.coordinator_epoch),
        timestamp_ms=timestamp_ms,
    )
    return build_batch(
        [record],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        is_transactional=True,
        is_control=True,
    )


def read_marker(batch: Buffer, header: BatchHeader) -> EndTxnMarker:
    """The marker carried by the control batch `batch` (its bytes alone). Raises
    RecordError for a control batch that is not a transaction marker of a known version."""
    if not header.is_control:
        raise RecordError(CORRUPT_MESSAGE, f"batch at {header.base_offset} is not a control batch")
    records = decode_records(batch)
    if len(records) != 1 or records[0].key is None or records[0].value is None:
        raise RecordError(CORRUPT_MESSAGE, f"control batch at {header.base_offset} is malformed")
    key, value = records[0].key, records[0].value
    if len(key) < _KEY.size or len(value) < _VALUE.size:
        raise RecordError(CORRUPT_MESSAGE, f"control record at {header.base_offset} is too short")
    _, control_type = _KEY.unpack_from(key)
    _, coordinator_epoch = _VALUE.unpack_from(value)
    if control_type not in (ControlType.ABORT, ControlType.COMMIT):
        raise RecordError(
            CORRUPT_MESSAGE, f"unknown control record type {control_type} at {header.base_offset}"
        )
    return EndTxnMarker(ControlType(control_type), coordinator_epoch)
