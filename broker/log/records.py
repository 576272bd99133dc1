"""RecordBatch v2 (magic 2): the public face of batch handling for the rest of the broker.

On the hot path a batch is opaque bytes: its header is decoded and its CRC-32C checked, its
base offset and leader epoch are patched in place; records are never touched. The pieces live
in `batch` (headers, validation, patching), `record_codec` (records, building, decoding) and
`compression` (codecs); this module gathers them under the names the broker uses.
"""

from __future__ import annotations

from broker.log.batch import (
    HEADER_SIZE_BYTES,
    LOG_OVERHEAD_BYTES,
    BatchHeader,
    assign_offsets,
    read_batch_header,
    set_log_append_time,
    validate_batches,
)
from broker.log.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD
from broker.log.errors import RecordError
from broker.log.record_codec import DecodedRecord, SimpleRecord, build_batch, decode_records

__all__ = [
    "GZIP",
    "HEADER_SIZE_BYTES",
    "LOG_OVERHEAD_BYTES",
    "LZ4",
    "NONE",
    "SNAPPY",
    "ZSTD",
    "BatchHeader",
    "DecodedRecord",
    "RecordError",
    "SimpleRecord",
    "assign_offsets",
    "build_batch",
    "decode_records",
    "read_batch_header",
    "set_log_append_time",
    "validate_batches",
]
