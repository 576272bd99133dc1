"""One member of a classic group (Kafka's `MemberMetadata`) and the answers it waits for.

Protocol metadata and assignments are opaque bytes: only the group leader (a client) reads
them. A member waits for at most one JoinGroup answer and one SyncGroup answer at a time,
each an asyncio future resolved by the coordinator.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from broker.coordinator.group.state import check_invariant

# JoinGroupRequest.UNKNOWN_MEMBER_ID: what a member sends before the coordinator named it.
UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1
NO_LEADER = ""

# (protocol name, protocol metadata), in the member's order of preference.
SupportedProtocols = tuple[tuple[str, bytes], ...]


def supported_protocols(protocols: Sequence[tuple[str, bytes]]) -> SupportedProtocols:
    return tuple((name, bytes(metadata)) for name, metadata in protocols)


@dataclass(frozen=True, slots=True)
class JoinedMember:
    """One entry of the member list a JoinGroup response gives the leader."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: ErrorCode
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str
    member_id: str
    # Every member's metadata for the selected protocol; only the leader gets it.
    members: tuple[JoinedMember, ...] = ()
    # JoinGroup v9+: the static leader rejoined a Stable group and must not run the assignor.
    skip_assignment: bool = False

    @classmethod
    def failure(cls, member_id: str, error: ErrorCode) -> JoinResult:
        return cls(error, NO_GENERATION, None, None, NO_LEADER, member_id)


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None
    protocol_name: str | None
    assignment: bytes

    @classmethod
    def failure(cls, error: ErrorCode) -> SyncResult:
        return cls(error, None, None, b"")


@dataclass(eq=False, slots=True)
class Member:
    member_id: str
    # Set for static members (KIP-345): the id survives restarts, the member id does not.
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: SupportedProtocols
    assignment: bytes = b""
    # Set and cleared only through Group, which counts the members awaiting a join.
    awaiting_join: asyncio.Future[JoinResult] | None = None
    awaiting_sync: asyncio.Future[SyncResult] | None = None
    # When the member's session ends unless it heartbeats (or is parked in a join or sync).
    heartbeat_deadline_ms: int | None = None
    session_timer: asyncio.TimerHandle | None = field(default=None, repr=False)
    # Joined but not yet answered with a generation: its session is the new-member join
    # timeout, and being parked in the join does not keep it alive.
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def protocol_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.protocols)

    def metadata(self, protocol_name: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol_name:
                return metadata
        raise KeyError(f"member {self.member_id!r} does not support protocol {protocol_name!r}")

    def vote(self, candidates: Collection[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        check_invariant(False, f"member {self.member_id!r} supports none of {sorted(candidates)}")
        raise AssertionError("unreachable")

    def matches(self, protocols: SupportedProtocols) -> bool:
        """Same protocols, same order, same metadata: a rejoin that changes nothing."""
        return self.protocols == protocols

    def has_live_session(self) -> bool:
        """Whether a session expiry now should be ignored (Kafka's `hasSatisfiedHeartbeat`
        at expiry): members parked in a join or sync are alive, except new ones, whose parked
        join must time out so that defunct joiners cannot pile up."""
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync

    def cancel_session_timer(self) -> None:
        if self.session_timer is not None:
            self.session_timer.cancel()
            self.session_timer = None
