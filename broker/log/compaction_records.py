"""The cleaner's record filter: which records of a batch survive compaction, and the batch
rewritten with only those (pure functions over batch bytes).

Kafka's rules (LogCleaner.shouldRetainRecord, MemoryRecords.filterTo):
- a record past the offset map's coverage is kept (the map filled before reaching it);
- a keyed record is kept only if it is the key's latest (its offset >= the map's entry);
- a tombstone (null value) that is the latest for its key is kept only while its segment is
  younger than the delete horizon (`retain_deletes`);
- a batch that loses no record is copied byte for byte; one that loses some is rebuilt with
  the same base offset, last offset delta, producer id/epoch/base sequence, partition leader
  epoch, attributes and codec (re-compressed), holding the surviving records' bytes as they
  were (each keeps its offset and timestamp deltas, so its offset and timestamp);
- a batch that loses every record disappears, unless it is the latest batch of its producer:
  then it stays as an empty batch (header only, no records), which keeps the producer's
  sequence and epoch, so a retry or the next batch of an idempotent producer is judged
  correctly after a restart rebuilds producer state from the log.
- transactions follow `compaction_txn`: a marker is copied untouched or dropped whole, an
  aborted transaction's batch loses every record.
Deviation (DEVIATIONS.md): records without a key are kept, where Kafka drops them (produce
refuses them on a compacted topic, so only records from before the topic was compacted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from broker.log import compression
from broker.log.batch import (
    COMPRESSION_MASK,
    CURRENT_MAGIC,
    HEADER_SIZE_BYTES,
    HEADER_STRUCT,
    LOG_OVERHEAD_BYTES,
    MIN_RECORD_BYTES,
    BatchHeader,
    Buffer,
    compute_crc,
)
from broker.log.compaction_map import OffsetMap
from broker.log.compaction_txn import TxnCleaning
from broker.log.errors import CORRUPT_MESSAGE, RecordError
from broker.log.producer_state import NO_PRODUCER_ID
from broker.log.record_codec import decode_varint

CRC_SLICE = slice(17, 21)


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One record of a batch, located in the batch's (decompressed) records section."""

    offset: int
    timestamp_ms: int
    key: bytes | None
    has_value: bool
    start: int  # first byte of the record (its length varint) in the records section
    end: int  # one past its last byte


@dataclass(frozen=True, slots=True)
class FilteredBatch:
    data: bytes  # the batch to write; empty when the whole batch goes
    records_read: int
    records_kept: int


def records_section(batch: Buffer, header: BatchHeader, max_decompressed_bytes: int) -> Buffer:
    """The records of one batch (starting at position 0 of `batch`), decompressed if need be."""
    section = memoryview(batch)[HEADER_SIZE_BYTES : header.size_bytes]
    if header.compression_type == compression.NONE:
        return section
    return compression.decompress(header.compression_type, section, max_decompressed_bytes)


def parse_records(section: Buffer, header: BatchHeader) -> list[RawRecord]:
    """Locate each record without copying more than its key. Raises RecordError."""
    if header.records_count < 0 or header.records_count * MIN_RECORD_BYTES > len(section):
        raise RecordError(
            CORRUPT_MESSAGE,
            f"records count {header.records_count} does not fit {len(section)} bytes",
        )
    records: list[RawRecord] = []
    position = 0
    for _ in range(header.records_count):
        record = _parse_record(section, position, header)
        records.append(record)
        position = record.end
    return records


def _parse_record(section: Buffer, start: int, header: BatchHeader) -> RawRecord:
    length, position = decode_varint(section, start)
    end = position + length
    if length < 0 or end > len(section):
        raise RecordError(CORRUPT_MESSAGE, "record length runs past the end of the batch")
    position += 1  # attributes: unused in v2
    timestamp_delta, position = decode_varint(section, position)
    offset_delta, position = decode_varint(section, position)
    key_length, position = decode_varint(section, position)
    key = None
    if key_length >= 0:
        if position + key_length > end:
            raise RecordError(CORRUPT_MESSAGE, "record key runs past the record's length")
        key = bytes(section[position : position + key_length])
        position += key_length
    value_length, position = decode_varint(section, position)
    if position > end or (value_length > 0 and position + value_length > end):
        raise RecordError(CORRUPT_MESSAGE, "record fields run past the record's length")
    timestamp_ms = header.base_timestamp + timestamp_delta
    if header.timestamp_type == 1:  # LogAppendTime: every record carries the batch's time
        timestamp_ms = header.max_timestamp
    return RawRecord(
        header.base_offset + offset_delta, timestamp_ms, key, value_length >= 0, start, end
    )


def should_retain(record: RawRecord, offset_map: OffsetMap, retain_deletes: bool) -> bool:
    if record.offset > offset_map.latest_offset:
        return True  # beyond what the map covers: nothing is known to supersede it
    if record.key is None:
        return True  # deviation: Kafka drops keyless records (see the module docstring)
    if record.offset < offset_map.get(record.key):
        return False  # a later record has the same key
    return record.has_value or retain_deletes


def filter_batch(
    batch: Buffer,
    header: BatchHeader,
    offset_map: OffsetMap,
    retain_deletes: bool,
    producer_last_offsets: Mapping[int, int],
    max_decompressed_bytes: int,
    txns: TxnCleaning,
) -> FilteredBatch:
    """The batch (at position 0 of `batch`) as compaction leaves it; batches must come in
    offset order (`txns` follows the transactions)."""
    if header.is_control:
        if txns.on_marker(header, retain_deletes):
            return FilteredBatch(b"", header.records_count, 0)
        return FilteredBatch(bytes(batch), header.records_count, header.records_count)
    aborted = txns.on_data_batch(header)
    section = records_section(batch, header, max_decompressed_bytes)
    records = parse_records(section, header)
    kept = [] if aborted else [r for r in records if should_retain(r, offset_map, retain_deletes)]
    if len(kept) == len(records):
        data = bytes(batch)
    elif kept:
        data = rebuild_batch(header, section, kept)
    elif _is_latest_of_producer(header, producer_last_offsets):
        data = empty_batch(header)
    else:
        data = b""
    return FilteredBatch(data, len(records), len(kept))


def _is_latest_of_producer(header: BatchHeader, producer_last_offsets: Mapping[int, int]) -> bool:
    if header.producer_id == NO_PRODUCER_ID:
        return False
    return producer_last_offsets.get(header.producer_id) == header.last_offset


def rebuild_batch(header: BatchHeader, section: Buffer, kept: Sequence[RawRecord]) -> bytes:
    """A batch like `header`'s holding only `kept` (records of `section`, in order)."""
    view = memoryview(section)
    body = b"".join(view[record.start : record.end] for record in kept)
    records = compression.compress(header.compression_type, body)
    max_timestamp = header.max_timestamp
    if header.timestamp_type == 0:
        max_timestamp = max(record.timestamp_ms for record in kept)
    return _encode_batch(
        header, header.attributes, max_timestamp, header.base_timestamp, records, len(kept)
    )


def empty_batch(header: BatchHeader) -> bytes:
    """Kafka's empty batch (DefaultRecordBatch.writeEmptyHeader): no records, uncompressed,
    both timestamps the original max timestamp, every other header field kept."""
    attributes = header.attributes & ~COMPRESSION_MASK
    return _encode_batch(header, attributes, header.max_timestamp, header.max_timestamp, b"", 0)


def _encode_batch(
    header: BatchHeader,
    attributes: int,
    max_timestamp: int,
    base_timestamp: int,
    records: bytes,
    records_count: int,
) -> bytes:
    batch = bytearray(HEADER_SIZE_BYTES + len(records))
    HEADER_STRUCT.pack_into(
        batch,
        0,
        header.base_offset,
        len(batch) - LOG_OVERHEAD_BYTES,
        header.partition_leader_epoch,
        CURRENT_MAGIC,
        0,  # CRC, computed below over attributes..end
        attributes,
        header.last_offset_delta,
        base_timestamp,
        max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        records_count,
    )
    batch[HEADER_SIZE_BYTES:] = records
    batch[CRC_SLICE] = compute_crc(batch, 0, len(batch)).to_bytes(4, "big")
    return bytes(batch)
