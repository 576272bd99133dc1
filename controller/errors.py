"""Kafka error codes the controller answers with, and the exception carrying one.

The codes are kio's `ErrorCode` members (the one enum of Kafka's error codes), named here as
Kafka's Errors are for the controller's modules.
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.errors import ErrorCode

NONE = ErrorCode.none
UNKNOWN_TOPIC_OR_PARTITION = ErrorCode.unknown_topic_or_partition
INVALID_TOPIC_EXCEPTION = ErrorCode.invalid_topic_exception
TOPIC_ALREADY_EXISTS = ErrorCode.topic_already_exists
INVALID_PARTITIONS = ErrorCode.invalid_partitions
INVALID_REPLICATION_FACTOR = ErrorCode.invalid_replication_factor
INVALID_REPLICA_ASSIGNMENT = ErrorCode.invalid_replica_assignment
INVALID_CONFIG = ErrorCode.invalid_config
NOT_CONTROLLER = ErrorCode.not_controller
INVALID_REQUEST = ErrorCode.invalid_request
REASSIGNMENT_IN_PROGRESS = ErrorCode.reassignment_in_progress
TOPIC_DELETION_DISABLED = ErrorCode.topic_deletion_disabled
PREFERRED_LEADER_NOT_AVAILABLE = ErrorCode.preferred_leader_not_available
ELIGIBLE_LEADERS_NOT_AVAILABLE = ErrorCode.eligible_leaders_not_available
ELECTION_NOT_NEEDED = ErrorCode.election_not_needed
NO_REASSIGNMENT_IN_PROGRESS = ErrorCode.no_reassignment_in_progress
UNKNOWN_SERVER_ERROR = ErrorCode.unknown_server_error
BROKER_NOT_AVAILABLE = ErrorCode.broker_not_available
STALE_BROKER_EPOCH = ErrorCode.stale_broker_epoch
BROKER_ID_NOT_REGISTERED = ErrorCode.broker_id_not_registered
FENCED_LEADER_EPOCH = ErrorCode.fenced_leader_epoch
INELIGIBLE_REPLICA = ErrorCode.ineligible_replica
INVALID_UPDATE_VERSION = ErrorCode.invalid_update_version
NOT_LEADER_OR_FOLLOWER = ErrorCode.not_leader_or_follower
OPERATION_NOT_ATTEMPTED = ErrorCode.operation_not_attempted
UNKNOWN_TOPIC_ID = ErrorCode.unknown_topic_id


@dataclass(frozen=True, slots=True)
class TopicError:
    """Per-topic outcome of an admin request: a Kafka error code and an optional message."""

    error_code: ErrorCode
    message: str | None = None


class ApiError(Exception):
    """A validation failure that maps onto one Kafka error code."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    def to_topic_error(self) -> TopicError:
        # Kafka's ApiError.fromThrowable sends no message with UNKNOWN_SERVER_ERROR (its
        # AdminOperationExceptions, e.g. brokers partly without racks): nothing internal leaks.
        if self.error_code == UNKNOWN_SERVER_ERROR:
            return TopicError(self.error_code)
        return TopicError(self.error_code, self.message)
