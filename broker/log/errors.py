"""Errors raised by the log layer, carrying Kafka's error codes where a client sees them."""

from __future__ import annotations

# Kafka's error codes (the numbers clients know); only the ones the log layer raises.
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
RECORD_LIST_TOO_LARGE = 18
UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87
INVALID_TIMESTAMP = 32
OFFSET_OUT_OF_RANGE = 1


class RecordError(Exception):
    """A record batch the broker must refuse; `error_code` is what the client is told."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class OffsetOutOfRangeError(Exception):
    """A read asked for an offset outside [log_start_offset, log_end_offset]."""

    error_code = OFFSET_OUT_OF_RANGE


class LogCorruptError(Exception):
    """On-disk state that recovery cannot repair (e.g. overlapping segments)."""


class UnexpectedAppendOffsetError(Exception):
    """A replicated append whose first offset is below the log end offset."""

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class RecordValidationError(RecordError):
    """Records of a batch that fail a per-record check (KIP-467): the whole batch is refused
    and each failing record is named by its index in the batch, with a message."""

    def __init__(self, error_code: int, record_errors: list[tuple[int, str]]) -> None:
        shown = "; ".join(f"record {index}: {message}" for index, message in record_errors[:3])
        super().__init__(
            error_code, f"{len(record_errors)} record(s) rejected, the first ones: {shown}"
        )
        self.record_errors = record_errors
