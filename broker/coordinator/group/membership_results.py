"""What GroupMembership takes and answers: its config and the plain results handlers turn
into responses."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from broker.coordinator.group.member import (
    SupportedProtocols,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GroupConfig:
    # group.min.session.timeout.ms / group.max.session.timeout.ms
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    # group.initial.rebalance.delay.ms
    initial_rebalance_delay_ms: int = 3000
    # group.max.size
    max_size: int = 2147483647
    # Kafka's fixed GroupCoordinator.NewMemberJoinTimeoutMs: how long a new member's JoinGroup
    # may stay parked (a client that gave up and retried must not pile up defunct members).
    new_member_join_timeout_ms: int = 300_000
    # Bounds Kafka does not have: groups this coordinator holds, and member ids handed out with
    # MEMBER_ID_REQUIRED per group that have not rejoined yet (the oldest is forgotten).
    max_groups: int = 1_000_000
    max_pending_members: int = 10_000

    def __post_init__(self) -> None:
        if not 0 < self.min_session_timeout_ms <= self.max_session_timeout_ms:
            raise ValueError("need 0 < min_session_timeout_ms <= max_session_timeout_ms")
        if self.initial_rebalance_delay_ms < 0:
            raise ValueError("initial_rebalance_delay_ms must not be negative")
        for name in ("max_size", "new_member_join_timeout_ms", "max_groups", "max_pending_members"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive")


@dataclass(frozen=True, slots=True)
class MemberLeaveResult:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveResult:
    error: ErrorCode
    members: tuple[MemberLeaveResult, ...] = ()


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    # Both empty unless the group is Stable.
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    error: ErrorCode
    group_id: str
    # Kafka's state name; "" with an error, "Dead" for a group this coordinator does not know.
    state: str
    protocol_type: str
    # The selected protocol when Stable, else "".
    protocol_name: str
    members: tuple[MemberDescription, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: SupportedProtocols
    require_known_member_id: bool
    reason: str
    supports_skip_assignment: bool

    @property
    def protocol_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.protocols)


@dataclass(frozen=True, slots=True)
class StaticRejoin:
    """What a static member's rejoin into a Stable group changed, to undo it if the write
    fails."""

    group_instance_id: str
    old_member_id: str
    previous_leader_id: str | None
    protocols: SupportedProtocols
    rebalance_timeout_ms: int
    session_timeout_ms: int
    supports_skip_assignment: bool
