"""Reading an internal topic's partition back into memory when its coordinator loads it:
batch by batch, so transactional writes (TxnOffsetCommit's offsets) can be told apart and
resolved by the markers that follow them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from broker.log.batch import read_batch_header, walk_headers
from broker.log.control_records import EndTxnMarker, read_marker
from broker.log.errors import RecordError
from broker.log.log import Log
from broker.log.record_codec import decode_records

# Bytes read from the log per step while loading a partition.
LOAD_READ_BYTES = 1024 * 1024

KeyedRecord = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class LoggedBatch:
    producer_id: int
    transactional: bool
    marker: EndTxnMarker | None  # a control batch's
    records: list[KeyedRecord]  # a data batch's records that have a key


async def read_logged_batches(replica_log: Log) -> list[LoggedBatch]:
    """Every batch of the log. Reads happen on the loop, where the segment list only changes
    between steps (retention, compaction swaps); decoding, the slow part, runs on a worker
    thread."""
    batches: list[LoggedBatch] = []
    offset, end = replica_log.log_start_offset, replica_log.log_end_offset
    while offset < min(end, replica_log.log_end_offset):
        data = replica_log.read(offset, LOAD_READ_BYTES, end, min_one_batch=True)
        if not data:
            break
        entries, _ = walk_headers(data)
        batches += await asyncio.to_thread(_decode, data, entries)
        offset = max(entries[-1][2] + 1 if entries else -1, offset + 1)
    return batches


async def read_keyed_records(replica_log: Log) -> list[KeyedRecord]:
    """(key, value) of every record outside transactions, in log order."""
    return [
        record
        for batch in await read_logged_batches(replica_log)
        if not batch.transactional
        for record in batch.records
    ]


def _decode(data: bytes, entries: list[tuple[int, int, int, int]]) -> list[LoggedBatch]:
    decoded = []
    for position, _, _, size_bytes in entries:
        chunk = data[position : position + size_bytes]
        header = read_batch_header(chunk, 0)
        if header.is_control:
            try:
                marker = read_marker(chunk, header)
            except RecordError:
                continue  # not a transaction marker: nothing for a coordinator
            decoded.append(LoggedBatch(header.producer_id, True, marker, []))
            continue
        records = [(r.key, r.value) for r in decode_records(chunk) if r.key is not None]
        decoded.append(LoggedBatch(header.producer_id, header.is_transactional, None, records))
    return decoded
