"""Errors raised by the log layer, carrying Kafka's error codes where a client sees them."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

# The Kafka error codes the log layer raises.
CORRUPT_MESSAGE = ErrorCode.corrupt_message
MESSAGE_TOO_LARGE = ErrorCode.message_too_large
RECORD_LIST_TOO_LARGE = ErrorCode.record_list_too_large
UNSUPPORTED_FOR_MESSAGE_FORMAT = ErrorCode.unsupported_for_message_format
UNSUPPORTED_COMPRESSION_TYPE = ErrorCode.unsupported_compression_type
INVALID_RECORD = ErrorCode.invalid_record
INVALID_TIMESTAMP = ErrorCode.invalid_timestamp
OFFSET_OUT_OF_RANGE = ErrorCode.offset_out_of_range
OUT_OF_ORDER_SEQUENCE_NUMBER = ErrorCode.out_of_order_sequence_number
INVALID_PRODUCER_EPOCH = ErrorCode.invalid_producer_epoch
TRANSACTION_COORDINATOR_FENCED = ErrorCode.transaction_coordinator_fenced


class RecordError(Exception):
    """A record batch the broker must refuse; `error_code` is what the client is told."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class OffsetOutOfRangeError(Exception):
    """A read asked for an offset outside [log_start_offset, log_end_offset]."""

    error_code = OFFSET_OUT_OF_RANGE


class LogCorruptError(Exception):
    """On-disk state that recovery cannot repair (e.g. overlapping segments)."""


class LogInvariantError(Exception):
    """A caller broke one of the log's invariants (e.g. a high watermark outside
    [log start, log end]): a bug to report, never to hide. Raised explicitly, so that
    `python -O` cannot strip the check."""


class UnexpectedAppendOffsetError(Exception):
    """A replicated append whose first offset is below the log end offset."""

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class RecordValidationError(RecordError):
    """Records of a batch that fail a per-record check (KIP-467): the whole batch is refused
    and each failing record is named by its index in the batch, with a message."""

    def __init__(self, error_code: ErrorCode, record_errors: list[tuple[int, str]]) -> None:
        shown = "; ".join(f"record {index}: {message}" for index, message in record_errors[:3])
        super().__init__(
            error_code, f"{len(record_errors)} record(s) rejected, the first ones: {shown}"
        )
        self.record_errors = record_errors
