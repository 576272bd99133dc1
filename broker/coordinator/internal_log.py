"""Reading an internal topic's partition back into memory when its coordinator loads it."""

from __future__ import annotations

import asyncio

from broker.log.batch import walk_headers
from broker.log.log import Log
from broker.log.record_codec import decode_records

# Bytes read from the log per step while loading a partition.
LOAD_READ_BYTES = 1024 * 1024


async def read_keyed_records(replica_log: Log) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of every record in the log. Reads happen on the loop, where the segment
    list only changes between steps (retention, compaction swaps); decoding, the slow part,
    runs on a worker thread."""
    records: list[tuple[bytes, bytes | None]] = []
    offset, end = replica_log.log_start_offset, replica_log.log_end_offset
    while offset < min(end, replica_log.log_end_offset):
        data = replica_log.read(offset, LOAD_READ_BYTES, end, min_one_batch=True)
        if not data:
            break
        batch_end = next_offset(data)
        decoded = await asyncio.to_thread(decode_records, data)
        records += [(r.key, r.value) for r in decoded if r.key is not None]
        offset = max(batch_end, offset + 1)
    return records


def next_offset(data: bytes) -> int:
    """The offset after the last complete batch in `data` (empty batches included)."""
    entries, _ = walk_headers(data)
    return entries[-1][2] + 1 if entries else -1
