"""Per-record checks on a producer's batch, where Kafka looks inside a batch on append.

A compacted log refuses records without a key (the cleaner could never retire them): the
batch is refused with INVALID_RECORD and every keyless record named (KIP-467). The records'
offset deltas must also count 0, 1, 2 ... as the batch header promises. Only logs that need a
look inside pay for this walk: batches of other logs stay opaque.
"""

from __future__ import annotations

from broker.log.batch import BatchHeader, read_batch_header
from broker.log.errors import INVALID_RECORD, RecordError, RecordValidationError
from broker.log.record_codec import _records_payload, decode_varint

Buffer = bytes | bytearray | memoryview


def check_keys_present(data: Buffer, max_decompressed_bytes: int, where: str) -> None:
    """Refuse `data` (a producer's batches) if any record has no key; `where` names the
    partition in the messages."""
    position = 0
    while position < len(data):
        header = read_batch_header(data, position)
        keyless = _keyless_records(data, position, header, max_decompressed_bytes)
        if keyless:
            message = f"a compacted topic takes records with keys only ({where})"
            raise RecordValidationError(INVALID_RECORD, [(i, message) for i in keyless])
        position += header.size_bytes


def _keyless_records(
    data: Buffer, position: int, header: BatchHeader, max_decompressed_bytes: int
) -> list[int]:
    payload = _records_payload(data, position, header, max_decompressed_bytes)
    keyless: list[int] = []
    offset = 0
    for index in range(header.records_count):
        length, offset = decode_varint(payload, offset)
        end = offset + length
        if length < 0 or end > len(payload):
            raise RecordError(INVALID_RECORD, f"record {index} runs past the end of its batch")
        field = offset + 1  # attributes
        _timestamp_delta, field = decode_varint(payload, field)
        offset_delta, field = decode_varint(payload, field)
        if offset_delta != index:
            raise RecordError(
                INVALID_RECORD, f"record {index} has offset delta {offset_delta}, not {index}"
            )
        key_length, _ = decode_varint(payload, field)
        if key_length < 0:
            keyless.append(index)
        offset = end
    return keyless
