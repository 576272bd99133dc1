"""Kafka error codes the controller answers with, and the exception carrying one.

The numbers are Kafka's (the wire protocol's); the controller cannot import the broker's
protocol package (layering), so it keeps the few it needs here.
"""

from __future__ import annotations

from dataclasses import dataclass

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
NOT_CONTROLLER = 41
INVALID_REQUEST = 42
REASSIGNMENT_IN_PROGRESS = 60
TOPIC_DELETION_DISABLED = 73
PREFERRED_LEADER_NOT_AVAILABLE = 80
ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
ELECTION_NOT_NEEDED = 84
NO_REASSIGNMENT_IN_PROGRESS = 85
UNKNOWN_SERVER_ERROR = -1


@dataclass(frozen=True, slots=True)
class TopicError:
    """Per-topic outcome of an admin request: a Kafka error code and an optional message."""

    error_code: int
    message: str | None = None


class ApiError(Exception):
    """A validation failure that maps onto one Kafka error code."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    def to_topic_error(self) -> TopicError:
        return TopicError(self.error_code, self.message)
