"""Which error a SyncGroup, OffsetCommit or TxnOffsetCommit gets in its group's current state
(Kafka's GroupCoordinator checks, in its order): pure functions of the group and the request."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.coordinator.group.group import Group, validate_current_member
from broker.coordinator.group.member import UNKNOWN_MEMBER_ID
from broker.coordinator.group.state import GroupState as _S


def txn_offset_commit_error(
    group: Group, member_id: str, group_instance_id: str | None, generation_id: int
) -> ErrorCode:
    """Kafka's `doTxnCommitOffsets` checks: a producer that names no member and no generation
    (TxnOffsetCommit v0-v2) commits for any group; one that names them must match (KIP-447)."""
    if group.state is _S.DEAD:
        return ErrorCode.coordinator_not_available
    if member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
        error = validate_current_member(group, member_id, group_instance_id)
        if error is not ErrorCode.none:
            return error
    if generation_id >= 0 and generation_id != group.generation_id:
        return ErrorCode.illegal_generation
    return ErrorCode.none


def sync_error(
    group: Group,
    generation_id: int,
    member_id: str,
    group_instance_id: str | None,
    protocol_type: str | None,
    protocol_name: str | None,
) -> ErrorCode:
    """Why this SyncGroup cannot be served in the group's current state, or NONE."""
    if group.state is _S.DEAD:
        return ErrorCode.coordinator_not_available
    error = validate_current_member(group, member_id, group_instance_id)
    if error is not ErrorCode.none:
        return error
    if generation_id != group.generation_id:
        return ErrorCode.illegal_generation
    if protocol_type is not None and protocol_type != group.protocol_type:
        return ErrorCode.inconsistent_group_protocol
    if protocol_name is not None and protocol_name != group.protocol_name:
        return ErrorCode.inconsistent_group_protocol
    if group.state is _S.EMPTY:
        return ErrorCode.unknown_member_id
    if group.state is _S.PREPARING_REBALANCE:
        return ErrorCode.rebalance_in_progress
    return ErrorCode.none


def offset_commit_error(
    group: Group, member_id: str, group_instance_id: str | None, generation_id: int
) -> ErrorCode:
    if group.state is _S.DEAD:
        return ErrorCode.coordinator_not_available
    if generation_id < 0 and group.state is _S.EMPTY:
        # The admin client, or a consumer without group management.
        return ErrorCode.none
    if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
        error = validate_current_member(group, member_id, group_instance_id)
        if error is not ErrorCode.none:
            return error
        return (
            ErrorCode.illegal_generation if generation_id != group.generation_id else ErrorCode.none
        )
    # An active group takes commits only from its members.
    return ErrorCode.unknown_member_id
