"""Reading `.log` segments for kafka-dump-log, in Kafka's DumpLogSegments output format.

Batch line (RecordBatch v2):
    baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1
    producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false
    deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 95
    magic: 2 compresscodec: none crc: 123 isvalid: true      (all on one line, as Kafka 3.9)
Record line (--deep-iteration / --print-data-log):
    | offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 sequence: -1
    headerKeys: [h] key: k payload: v                        (all on one line)

Batches are read one at a time with positioned reads, so a segment of any size is dumped in
bounded memory. A tail that is not a whole batch is reported as invalid bytes, as Kafka does.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from broker.coordinator.record_io import RecordFormatError
from broker.coordinator.transaction.records import decode_key, decode_value
from broker.log.batch import (
    HEADER_SIZE_BYTES,
    HEADER_STRUCT,
    LOG_OVERHEAD_BYTES,
    BatchHeader,
    compute_crc,
)
from broker.log.compression import CODEC_NAMES
from broker.log.errors import RecordError
from broker.log.record_codec import DecodedRecord, decode_records

DELETE_HORIZON_MASK = 0x40  # batch attribute bit 6 (KIP-534)
RECORD_INDENT = "|"
TIMESTAMP_TYPE_NAMES = {0: "CreateTime", 1: "LogAppendTime"}
SEQUENCE_MAX = 2**31 - 1  # sequences wrap at Integer.MAX_VALUE
NO_SEQUENCE = -1
# Kafka's control record types (the key's second i16).
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_END_TXN_VALUE = struct.Struct(">hi")  # version, coordinator epoch
# Batch decoding reads at most this much decompressed data per batch.
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024


@dataclass
class LogDumpReport:
    """What DumpLogSegments reports on standard error after all files."""

    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


def _sequence_after(base_sequence: int, delta: int) -> int:
    if base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    return (base_sequence + delta) % (SEQUENCE_MAX + 1)


def read_batches(path: Path, with_data: bool = True) -> Iterator[tuple[int, BatchHeader, bytes]]:
    """(position, header, whole batch bytes) of each complete batch, from the start; with
    `with_data=False` only headers are read (the bytes are empty)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        position = 0
        while size - position >= HEADER_SIZE_BYTES:
            header = BatchHeader(*HEADER_STRUCT.unpack(os.pread(fd, HEADER_SIZE_BYTES, position)))
            batch_bytes = header.batch_length + LOG_OVERHEAD_BYTES
            if header.batch_length < HEADER_SIZE_BYTES - LOG_OVERHEAD_BYTES:
                return
            if batch_bytes > size - position:
                return
            data = os.pread(fd, batch_bytes, position) if with_data else b""
            yield position, header, data
            position += batch_bytes
    finally:
        os.close(fd)


def batch_line(position: int, header: BatchHeader, data: bytes) -> str:
    valid = compute_crc(data, 0, len(data)) == header.crc
    timestamp_type = TIMESTAMP_TYPE_NAMES[header.timestamp_type]
    codec = CODEC_NAMES.get(header.compression_type, str(header.compression_type))
    return (
        f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
        f"count: {header.records_count} baseSequence: {header.base_sequence} "
        f"lastSequence: {_sequence_after(header.base_sequence, header.last_offset_delta)} "
        f"producerId: {header.producer_id} producerEpoch: {header.producer_epoch} "
        f"partitionLeaderEpoch: {header.partition_leader_epoch} "
        f"isTransactional: {_bool(header.is_transactional)} "
        f"isControl: {_bool(header.is_control)} deleteHorizonMs: {_delete_horizon(header)} "
        f"position: {position} "
        f"{timestamp_type}: {header.max_timestamp} size: {len(data)} magic: {header.magic} "
        f"compresscodec: {codec} crc: {header.crc} isvalid: {_bool(valid)}"
    )


def _delete_horizon(header: BatchHeader) -> str:
    """Java's OptionalLong: the base timestamp when the batch carries a delete horizon
    (attribute bit 6, KIP-534), else empty."""
    if header.attributes & DELETE_HORIZON_MASK:
        return f"OptionalLong[{header.base_timestamp}]"
    return "OptionalLong.empty"


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


# How a record's key and payload are shown (--print-data-log): as text, or decoded.
RecordDecoder = Callable[[DecodedRecord], tuple[str | None, str | None]]


def plain_text(record: DecodedRecord) -> tuple[str | None, str | None]:
    key = None if record.key is None else _text(record.key)
    return key, None if record.value is None else _text(record.value)


def transaction_log_text(record: DecodedRecord) -> tuple[str | None, str | None]:
    """--transaction-log-decoder: a `__transaction_state` record as Kafka's TransactionLog
    formats it (a transaction's partitions sorted, where Kafka lists them in hash order)."""
    try:
        key = f"transaction_metadata::transactionalId={decode_key(record.key or b'')}"
        if record.value is None:
            return key, "<DELETE>"
        value = decode_value(record.value)
    except RecordFormatError:
        return plain_text(record)
    partitions = ",".join(f"{t}-{p}" for t, p in sorted(value.partitions))
    payload = (
        f"producerId:{value.producer_id},producerEpoch:{value.producer_epoch},"
        f"state={value.state.kafka_name},partitions=[{partitions}],"
        f"txnLastUpdateTimestamp={value.last_update_timestamp_ms},"
        f"txnTimeoutMs={value.transaction_timeout_ms}"
    )
    return key, payload


def record_line(
    header: BatchHeader,
    record: DecodedRecord,
    print_data: bool,
    skip_metadata: bool,
    decode: RecordDecoder = plain_text,
) -> str:
    parts: list[str] = []
    if not skip_metadata:
        timestamp_type = TIMESTAMP_TYPE_NAMES[header.timestamp_type]
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        sequence = _sequence_after(header.base_sequence, record.offset - header.base_offset)
        header_keys = ",".join(key for key, _ in record.headers)
        parts.append(
            f"offset: {record.offset} {timestamp_type}: {record.timestamp_ms} "
            f"keySize: {key_size} valueSize: {value_size} sequence: {sequence} "
            f"headerKeys: [{header_keys}]"
        )
        if header.is_control:
            parts.append(_control_text(record))
    if print_data and not header.is_control:
        key, payload = decode(record)
        if key is not None:
            parts.append(f"key: {key}")
        if payload is not None:
            parts.append(f"payload: {payload}")
    return f"{RECORD_INDENT} " + " ".join(parts)


def _control_text(record: DecodedRecord) -> str:
    if record.key is None or len(record.key) < _CONTROL_KEY.size:
        return "controlType: UNKNOWN(-1)"
    _, type_id = _CONTROL_KEY.unpack_from(record.key)
    name = CONTROL_TYPES.get(type_id)
    if name is None or record.value is None or len(record.value) < _END_TXN_VALUE.size:
        return f"controlType: {name or 'UNKNOWN'}({type_id})"
    _, coordinator_epoch = _END_TXN_VALUE.unpack_from(record.value)
    return f"endTxnMarker: {name} coordinatorEpoch: {coordinator_epoch}"


def dump_log(
    path: Path,
    print_data: bool,
    deep: bool,
    skip_metadata: bool,
    report: LogDumpReport,
    decode: RecordDecoder = plain_text,
) -> Iterator[str]:
    """The lines Kafka prints for one `.log` file (after `Dumping <file>`)."""
    yield f"Log starting offset: {int(path.name.split('.')[0])}"
    valid_bytes = 0
    last_offset = -1
    for position, header, data in read_batches(path):
        yield batch_line(position, header, data)
        if deep:
            try:
                records = decode_records(data, MAX_DECOMPRESSED_BYTES)
            except RecordError as error:
                yield f"{RECORD_INDENT} cannot decode the records of this batch: {error}"
                records = []
            for record in records:
                if last_offset != -1 and record.offset != last_offset + 1:
                    pairs = report.non_consecutive.setdefault(str(path.resolve()), [])
                    pairs.append((last_offset, record.offset))
                last_offset = record.offset
                yield record_line(header, record, print_data, skip_metadata, decode)
        valid_bytes += len(data)
    trailing_bytes = path.stat().st_size - valid_bytes
    if trailing_bytes > 0:
        yield f"Found {trailing_bytes} invalid bytes at the end of {path.name}"
