"""The classic group coordinator's membership: states, members, groups and the coordinator
that runs JoinGroup/SyncGroup/Heartbeat/LeaveGroup over them (see membership.py)."""

from broker.coordinator.group.group import Group, GroupSnapshot, MemberSnapshot
from broker.coordinator.group.member import (
    NO_GENERATION,
    UNKNOWN_MEMBER_ID,
    JoinedMember,
    JoinResult,
    Member,
    SyncResult,
)
from broker.coordinator.group.membership import GroupMembership
from broker.coordinator.group.membership_results import (
    GroupConfig,
    GroupDescription,
    GroupOverview,
    LeaveResult,
    MemberDescription,
    MemberLeaveResult,
)
from broker.coordinator.group.rebalance import Persist
from broker.coordinator.group.state import GroupState, InvalidStateTransition, transition

__all__ = [
    "NO_GENERATION",
    "UNKNOWN_MEMBER_ID",
    "Group",
    "GroupConfig",
    "GroupDescription",
    "GroupMembership",
    "GroupOverview",
    "GroupSnapshot",
    "GroupState",
    "InvalidStateTransition",
    "JoinResult",
    "JoinedMember",
    "LeaveResult",
    "Member",
    "MemberDescription",
    "MemberLeaveResult",
    "MemberSnapshot",
    "Persist",
    "SyncResult",
    "transition",
]
