"""A classic group's membership (Kafka's `GroupMetadata`, without offsets) and its snapshot.

`Group` is plain state plus the rules that only look at that state: adding, removing and
replacing members, the protocol vote, leader choice, and the next generation. Timers and
answers to waiting clients are `GroupMembership`'s business; the timer handles live here only
so that removing a member or a group can cancel them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from broker.coordinator.group.member import (
    JoinedMember,
    JoinResult,
    Member,
    SupportedProtocols,
    SyncResult,
)
from broker.coordinator.group.records import MemberValue
from broker.coordinator.group.state import (
    GroupInvariantError,
    GroupState,
    check_invariant,
    transition,
)

# One member as GroupMetadataValue v3 stores it: the record's own type, so persisting a group
# needs no field-by-field copy.
MemberSnapshot = MemberValue


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """What GroupMetadataValue v3 holds (plus the key's group id): enough to restore the group
    on another coordinator."""

    group_id: str
    protocol_type: str
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    # -1 when unknown (records written before v2).
    current_state_timestamp_ms: int
    members: tuple[MemberSnapshot, ...] = ()


@dataclass(eq=False)
class Group:
    group_id: str
    clock_ms: Callable[[], int]
    state: GroupState = GroupState.EMPTY
    current_state_timestamp_ms: int | None = None
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    # group.instance.id -> member id of the member currently holding it.
    static_members: dict[str, str] = field(default_factory=dict)
    # KIP-394: ids handed out with MEMBER_ID_REQUIRED, each with its expiry timer, oldest first.
    pending_members: dict[str, asyncio.TimerHandle | None] = field(default_factory=dict)
    # Members of this generation that have not sent SyncGroup yet.
    pending_sync_members: set[str] = field(default_factory=set)
    # The first rebalance waits for more members while new ones keep coming (Kafka's
    # InitialDelayedJoin): set while that delay runs, with the time it may still add.
    initial_join_remaining_ms: int | None = None
    initial_join_delay_ms: int = 0
    new_member_added: bool = False
    join_timer: asyncio.TimerHandle | None = field(default=None, repr=False)
    sync_timer: asyncio.TimerHandle | None = field(default=None, repr=False)
    # Serialises this group's writes so that they reach the log in the order they were made.
    persist_lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    _awaiting_join_count: int = 0
    _protocol_support: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        if self.current_state_timestamp_ms is None:
            self.current_state_timestamp_ms = self.clock_ms()

    # -- reading -----------------------------------------------------------------------

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    @property
    def awaiting_join_count(self) -> int:
        return self._awaiting_join_count

    @property
    def rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout of any member: how long a rebalance may wait."""
        return max((member.rebalance_timeout_ms for member in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self._awaiting_join_count and not self.pending_members

    def not_yet_rejoined(self) -> list[Member]:
        return [member for member in self.members.values() if not member.is_awaiting_join]

    def candidate_protocols(self) -> frozenset[str]:
        """Protocols every member supports."""
        count = len(self.members)
        return frozenset(
            name for name, supporters in self._protocol_support.items() if supporters == count
        )

    def supports_protocols(self, protocol_type: str, protocol_names: frozenset[str]) -> bool:
        """Whether a member with these protocols may join (else INCONSISTENT_GROUP_PROTOCOL)."""
        if self.state is GroupState.EMPTY:
            return protocol_type != "" and bool(protocol_names)
        count = len(self.members)
        return self.protocol_type == protocol_type and any(
            self._protocol_support[name] == count for name in protocol_names
        )

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol among those all members support;
        the most votes win (ties go to the protocol voted for first, in member order)."""
        check_invariant(
            bool(self.members), f"cannot select a protocol for empty group {self.group_id!r}"
        )
        candidates = self.candidate_protocols()
        votes = Counter(member.vote(candidates) for member in self.members.values())
        return votes.most_common(1)[0][0]

    def joined_members(self) -> tuple[JoinedMember, ...]:
        """Every member's metadata for the selected protocol, for the leader's JoinGroup answer."""
        protocol_name = self.protocol_name
        settled = self.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
        if not settled or protocol_name is None:
            raise GroupInvariantError(
                f"group {self.group_id!r} has no member metadata in state {self.state.value}"
            )
        return tuple(
            JoinedMember(member.member_id, member.group_instance_id, member.metadata(protocol_name))
            for member in self.members.values()
        )

    def current_generation_answer(self, member_id: str, leader_id: str | None = None) -> JoinResult:
        """The JoinGroup answer for the current generation, without rebalancing."""
        return JoinResult(
            error=ErrorCode.none,
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader_id=(leader_id if leader_id is not None else self.leader_id) or "",
            member_id=member_id,
            members=self.joined_members() if self.is_leader(member_id) else (),
        )

    def snapshot(self, assignments: dict[str, bytes] | None = None) -> GroupSnapshot:
        """The record to persist; `assignments` overrides the members' current ones (the
        leader's new assignment is written before it is handed out)."""
        check_invariant(
            self.protocol_name is not None or not self.members,
            f"group {self.group_id!r} has members but no protocol",
        )
        members: list[MemberSnapshot] = []
        for member in self.members.values():
            assignment = (
                member.assignment if assignments is None else assignments.get(member.member_id, b"")
            )
            members.append(
                MemberSnapshot(
                    member_id=member.member_id,
                    group_instance_id=member.group_instance_id,
                    client_id=member.client_id,
                    client_host=member.client_host,
                    rebalance_timeout_ms=member.rebalance_timeout_ms,
                    session_timeout_ms=member.session_timeout_ms,
                    subscription=member.metadata(self.protocol_name or ""),
                    assignment=assignment,
                )
            )
        timestamp_ms = self.current_state_timestamp_ms
        return GroupSnapshot(
            group_id=self.group_id,
            protocol_type=self.protocol_type or "",
            generation_id=self.generation_id,
            protocol_name=self.protocol_name,
            leader_id=self.leader_id,
            current_state_timestamp_ms=-1 if timestamp_ms is None else timestamp_ms,
            members=tuple(members),
        )

    def timers(self) -> Iterator[asyncio.TimerHandle]:
        for handle in (self.join_timer, self.sync_timer, *self.pending_members.values()):
            if handle is not None:
                yield handle
        for member in self.members.values():
            if member.session_timer is not None:
                yield member.session_timer

    # -- changing ----------------------------------------------------------------------

    def add(self, member: Member) -> None:
        check_invariant(
            member.member_id not in self.members,
            f"member {member.member_id!r} is already in the group",
        )
        check_invariant(member.awaiting_join is None, "a member is added before it awaits its join")
        if member.group_instance_id is not None:
            check_invariant(
                member.group_instance_id not in self.static_members,
                f"static member {member.group_instance_id!r} is already in group {self.group_id!r}",
            )
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        check_invariant(
            self.protocol_type == member.protocol_type
            and self.supports_protocols(member.protocol_type, member.protocol_names()),
            f"member {member.member_id!r} does not fit the protocols of group {self.group_id!r}",
        )
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._protocol_support.update(member.protocol_names())
        self._drop_pending(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        """Drop a member (or a pending member id). Waiters must have been answered."""
        self._drop_pending(member_id)
        self.pending_sync_members.discard(member_id)
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        check_invariant(
            not member.is_awaiting_join and not member.is_awaiting_sync,
            "removed member still waits",
        )
        member.cancel_session_timer()
        self._protocol_support.subtract(member.protocol_names())
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> Member:
        """A static member came back with a new member id: the old id is fenced, everything
        else stays (Kafka's `replaceStaticMember`)."""
        member = self.members.pop(old_member_id, None)
        if member is None:
            raise GroupInvariantError(f"cannot replace unknown member {old_member_id!r}")
        # Whoever still waits with the old id is a zombie of this instance: fence it.
        self.answer_join(member, JoinResult.failure(old_member_id, ErrorCode.fenced_instance_id))
        self.answer_sync(member, SyncResult.failure(ErrorCode.fenced_instance_id))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        self.static_members[group_instance_id] = new_member_id
        return member

    def update_member(
        self,
        member: Member,
        protocols: SupportedProtocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
    ) -> None:
        self._protocol_support.subtract(member.protocol_names())
        member.protocols = protocols
        self._protocol_support.update(member.protocol_names())
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms

    def add_pending_member(self, member_id: str, expiry: asyncio.TimerHandle | None) -> None:
        check_invariant(
            member_id not in self.members, f"pending member {member_id!r} is already a member"
        )
        self.pending_members[member_id] = expiry

    def _drop_pending(self, member_id: str) -> None:
        handle = self.pending_members.pop(member_id, None)
        if handle is not None:
            handle.cancel()

    def oldest_pending_member(self) -> str | None:
        return next(iter(self.pending_members), None)

    def await_join(self, member: Member, future: asyncio.Future[JoinResult]) -> None:
        """Park a member's JoinGroup. A JoinGroup it sent before (from a connection it gave up)
        is answered, so that no handler waits forever."""
        if member.awaiting_join is not None:
            self.answer_join(
                member, JoinResult.failure(member.member_id, ErrorCode.rebalance_in_progress)
            )
        member.awaiting_join = future
        self._awaiting_join_count += 1

    def answer_join(self, member: Member, result: JoinResult) -> bool:
        future = member.awaiting_join
        if future is None:
            return False
        member.awaiting_join = None
        self._awaiting_join_count -= 1
        check_invariant(
            self._awaiting_join_count >= 0, f"negative awaiting-join count in {self.group_id!r}"
        )
        if not future.done():
            future.set_result(result)
        return True

    def await_sync(self, member: Member, future: asyncio.Future[SyncResult]) -> None:
        if member.awaiting_sync is not None:
            self.answer_sync(member, SyncResult.failure(ErrorCode.rebalance_in_progress))
        member.awaiting_sync = future

    def answer_sync(self, member: Member, result: SyncResult) -> bool:
        future = member.awaiting_sync
        if future is None:
            return False
        member.awaiting_sync = None
        if not future.done():
            future.set_result(result)
        return True

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick any member that did. False when nobody
        rejoined (or the group has no leader): the generation cannot be formed."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def init_next_generation(self) -> None:
        self.generation_id += 1
        self.pending_sync_members.clear()
        if self.members:
            self.protocol_name = self.select_protocol()
            transition(self, GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            transition(self, GroupState.EMPTY)

    @classmethod
    def from_snapshot(cls, snapshot: GroupSnapshot, clock_ms: Callable[[], int]) -> Group:
        """A group as a coordinator finds it in the log: Stable with its members, or Empty."""
        if snapshot.members and not snapshot.protocol_name:
            raise ValueError(
                f"group {snapshot.group_id!r} has members but no protocol in its record"
            )
        group = cls(
            group_id=snapshot.group_id,
            clock_ms=clock_ms,
            state=GroupState.STABLE if snapshot.members else GroupState.EMPTY,
            current_state_timestamp_ms=(
                None
                if snapshot.current_state_timestamp_ms < 0
                else snapshot.current_state_timestamp_ms
            ),
            generation_id=snapshot.generation_id,
            protocol_type=snapshot.protocol_type or None,
            protocol_name=snapshot.protocol_name,
        )
        for record in snapshot.members:
            group.add(
                Member(
                    member_id=record.member_id,
                    group_instance_id=record.group_instance_id,
                    client_id=record.client_id,
                    client_host=record.client_host,
                    rebalance_timeout_ms=record.rebalance_timeout_ms,
                    session_timeout_ms=record.session_timeout_ms,
                    protocol_type=snapshot.protocol_type,
                    protocols=((snapshot.protocol_name or "", record.subscription),),
                    assignment=record.assignment,
                )
            )
        if snapshot.leader_id is not None and snapshot.leader_id in group.members:
            group.leader_id = snapshot.leader_id
        return group

    def check_invariants(self) -> None:
        """Every structural invariant, O(members): for tests and debugging."""
        name = self.group_id
        check_invariant(
            (self.leader_id is None) == (not self.members), f"{name}: leader iff members"
        )
        check_invariant(
            self.leader_id is None or self.leader_id in self.members, f"{name}: leader is a member"
        )
        check_invariant(
            self.state is not GroupState.EMPTY or not self.members, f"{name}: Empty has no members"
        )
        check_invariant(
            not (self.pending_members.keys() & self.members.keys()), f"{name}: pending not members"
        )
        check_invariant(
            self.pending_sync_members <= self.members.keys(), f"{name}: pending syncs are members"
        )
        awaiting = sum(1 for member in self.members.values() if member.is_awaiting_join)
        check_invariant(awaiting == self._awaiting_join_count, f"{name}: awaiting-join count")
        static = {
            m.group_instance_id: m.member_id
            for m in self.members.values()
            if m.group_instance_id is not None
        }
        check_invariant(static == self.static_members, f"{name}: static member map")
        support: Counter[str] = Counter()
        for member in self.members.values():
            support.update(member.protocol_names())
        check_invariant(+support == +self._protocol_support, f"{name}: protocol support counts")
        for member_id, member in self.members.items():
            check_invariant(member.member_id == member_id, f"{name}: member keyed by its id")


def validate_current_member(
    group: Group, member_id: str, group_instance_id: str | None
) -> ErrorCode:
    """Is this (member id, instance id) a current member? FENCED_INSTANCE_ID when the instance
    id now belongs to another member id (a newer incarnation replaced this one)."""
    if group_instance_id is not None:
        current = group.static_members.get(group_instance_id)
        if current is None:
            return ErrorCode.unknown_member_id
        if current != member_id:
            return ErrorCode.fenced_instance_id
        return ErrorCode.none
    return ErrorCode.none if member_id in group.members else ErrorCode.unknown_member_id


def accepts_joining_member(group: Group, member_id: str, max_size: int) -> bool:
    """Room for this member under group.max.size? While preparing a rebalance the members
    awaiting the join are counted (the group may hold more than the limit if it was lowered,
    and counting those who rejoined lets the last rejoiners be turned away); otherwise the
    members are."""
    if group.state in (GroupState.EMPTY, GroupState.DEAD):
        return True
    if group.state is GroupState.PREPARING_REBALANCE:
        member = group.members.get(member_id)
        if member is not None and member.is_awaiting_join:
            return True
        return group.awaiting_join_count < max_size
    return member_id in group.members or len(group.members) < max_size
