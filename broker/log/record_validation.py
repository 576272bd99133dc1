"""Per-record checks on a producer's batch, where Kafka looks inside a batch on append.

A compacted log refuses records without a key (the cleaner could never retire them), and a
log with timestamp bounds (message.timestamp.before/after.max.ms, KIP-937) refuses CreateTime
records stamped too far from the broker's clock. The batch is then refused whole, with
INVALID_TIMESTAMP if any timestamp failed and INVALID_RECORD otherwise, every failing record
named (KIP-467). The records' offset deltas must also count 0, 1, 2 ... as the batch header
promises. Only logs that need a look inside pay for this walk: batches of other logs stay
opaque.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.log.batch import BatchHeader, read_batch_header
from broker.log.config import LogConfig
from broker.log.errors import INVALID_RECORD, INVALID_TIMESTAMP, RecordError, RecordValidationError
from broker.log.record_codec import _records_payload, decode_varint

Buffer = bytes | bytearray | memoryview
NO_TIMESTAMP = -1


@dataclass(frozen=True, slots=True)
class RecordChecks:
    """What an append checks in each record; `timestamp_bounds_ms` is (before, after)."""

    keys_required: bool
    timestamp_bounds_ms: tuple[int, int] | None
    now_ms: int

    @classmethod
    def for_log(cls, config: LogConfig, now_ms: int) -> RecordChecks | None:
        """None when the log needs no look inside its batches."""
        if not config.checks_records:
            return None
        return cls(config.compact, config.timestamp_bounds_ms, now_ms)


def check_records(
    data: Buffer, checks: RecordChecks, max_decompressed_bytes: int, where: str
) -> None:
    """Refuse `data` (a producer's batches) if any record fails `checks`; `where` names the
    partition in the messages."""
    position = 0
    while position < len(data):
        header = read_batch_header(data, position)
        failures = _failing_records(data, position, header, checks, max_decompressed_bytes)
        if failures:
            code = INVALID_RECORD
            if any(error == INVALID_TIMESTAMP for _, error, _ in failures):
                code = INVALID_TIMESTAMP
            messages = [(index, f"{message} ({where})") for index, _, message in failures]
            raise RecordValidationError(code, messages)
        position += header.size_bytes


def _failing_records(
    data: Buffer,
    position: int,
    header: BatchHeader,
    checks: RecordChecks,
    max_decompressed_bytes: int,
) -> list[tuple[int, int, str]]:
    """(index, error code, message) of each record failing a check; a key error comes
    first, as in Kafka, so a keyless record is not also judged by its timestamp."""
    payload = _records_payload(data, position, header, max_decompressed_bytes)
    failures: list[tuple[int, int, str]] = []
    offset = 0
    for index in range(header.records_count):
        length, offset = decode_varint(payload, offset)
        end = offset + length
        if length < 0 or end > len(payload):
            raise RecordError(INVALID_RECORD, f"record {index} runs past the end of its batch")
        timestamp_delta, field = decode_varint(payload, offset + 1)  # after attributes
        offset_delta, field = decode_varint(payload, field)
        if offset_delta != index:
            raise RecordError(
                INVALID_RECORD, f"record {index} has offset delta {offset_delta}, not {index}"
            )
        key_length, _ = decode_varint(payload, field)
        if checks.keys_required and key_length < 0:
            failures.append(
                (index, INVALID_RECORD, "a compacted topic takes records with keys only")
            )
        elif checks.timestamp_bounds_ms is not None:
            timestamp_ms = header.base_timestamp + timestamp_delta
            problem = _timestamp_problem(timestamp_ms, checks.now_ms, checks.timestamp_bounds_ms)
            if problem:
                failures.append((index, INVALID_TIMESTAMP, problem))
        offset = end
    return failures


def _timestamp_problem(timestamp_ms: int, now_ms: int, bounds_ms: tuple[int, int]) -> str:
    if timestamp_ms == NO_TIMESTAMP:
        return ""  # records converted from message format v0 carry none
    before_ms, after_ms = bounds_ms
    if now_ms - timestamp_ms > before_ms or timestamp_ms - now_ms > after_ms:
        return (
            f"timestamp {timestamp_ms} is outside [{now_ms - before_ms}, {now_ms + after_ms}]"
            " (message.timestamp.before.max.ms / after.max.ms)"
        )
    return ""
