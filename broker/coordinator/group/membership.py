"""Group membership for the classic group protocol (Kafka's `GroupCoordinator`, without
offsets): JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups, ListGroups and
DeleteGroups, plus loading and unloading groups when this broker gains or loses a partition of
__consumer_offsets.

Transport-free: handlers call these methods and turn the plain results into responses.
Persistence-agnostic: the group record is written through the injected `persist`, which must
return the error the client should see (Kafka maps append errors, e.g. NOT_LEADER_OR_FOLLOWER
to NOT_COORDINATOR, before answering). Which groups this broker coordinates, and whether they
are still loading, is the caller's knowledge (`is_coordinator_for`, `loading`).

Delays are asyncio timers on the running loop (the purgatories of Kafka's coordinator):
- per member, its session: removed unless it heartbeats (or is parked in a join or sync);
- per pending member id (KIP-394), its session: forgotten unless it rejoins;
- per group, the join: the rebalance completes when every member rejoined or this fires;
- per group, the sync: members of a new generation that never send SyncGroup are removed
  when the rebalance timeout passes (KAFKA-12890, in Kafka 2.8.1+ and 3.x).

Every decision is made without awaiting between reading and changing a group; the only
awaits are on `persist`, after which the group is checked again (state and generation).
A member's waiting JoinGroup and SyncGroup are futures that are always answered: on
completion, failure, removal, replacement or unloading.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Final, TypeVar

from kio.schema.errors import ErrorCode

from broker.coordinator.group.group import (
    Group,
    GroupSnapshot,
    accepts_joining_member,
    validate_current_member,
)
from broker.coordinator.group.member import (
    UNKNOWN_MEMBER_ID,
    JoinResult,
    Member,
    SyncResult,
    supported_protocols,
)
from broker.coordinator.group.membership_results import (
    GroupConfig,
    GroupDescription,
    GroupOverview,
    JoinRequest,
    LeaveResult,
    MemberDescription,
    MemberLeaveResult,
    StaticRejoin,
)
from broker.coordinator.group.rebalance import GroupRebalancer, Persist, new_future
from broker.coordinator.group.request_errors import (
    offset_commit_error,
    sync_error,
    txn_offset_commit_error,
)
from broker.coordinator.group.state import (
    GroupInvariantError,
    GroupState,
    check_invariant,
    states_named,
    transition,
)

logger = logging.getLogger(__name__)

_S = GroupState
T = TypeVar("T")

# What a valid heartbeat from a current member hears, by group state (Kafka 2.8-3.x: members
# may heartbeat between their JoinGroup and SyncGroup answers, so CompletingRebalance is fine).
HEARTBEAT_ANSWER: Final[Mapping[GroupState, ErrorCode]] = MappingProxyType(
    {
        _S.EMPTY: ErrorCode.unknown_member_id,
        _S.PREPARING_REBALANCE: ErrorCode.rebalance_in_progress,
        _S.COMPLETING_REBALANCE: ErrorCode.none,
        _S.STABLE: ErrorCode.none,
    }
)


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


def _always(_group_id: str) -> bool:
    return True


def _never(_group_id: str) -> bool:
    return False


class GroupMembership:
    """The request-facing methods; the groups, their rebalances and timers are its
    `GroupRebalancer`'s."""

    def __init__(
        self,
        persist: Persist,
        *,
        config: GroupConfig | None = None,
        now_ms: Callable[[], int] = _wall_clock_ms,
        is_coordinator_for: Callable[[str], bool] = _always,
        loading: Callable[[str], bool] = _never,
    ) -> None:
        self._config = config if config is not None else GroupConfig()
        self._is_coordinator_for = is_coordinator_for
        self._loading = loading
        self._rebalancer = GroupRebalancer(persist, self._config, now_ms)

    @property
    def config(self) -> GroupConfig:
        return self._config

    def get_group(self, group_id: str) -> Group | None:
        """The live group, for inspection (tests, offset commit validation); do not mutate."""
        return self._rebalancer.get_group(group_id)

    def group_ids(self) -> list[str]:
        return list(self._rebalancer.groups)

    # -- coordinator moves ----------------------------------------------------------------

    def load_group(self, snapshot: GroupSnapshot) -> None:
        """Restore a group from its latest record when this broker becomes its coordinator.
        Members must heartbeat within their session timeout or are removed."""
        self._rebalancer.load_group(snapshot)

    def unload_groups(self, predicate: Callable[[str], bool]) -> int:
        """Forget the groups whose ids match (this broker no longer leads their partition);
        every parked JoinGroup and SyncGroup gets NOT_COORDINATOR."""
        return self._rebalancer.unload_groups(predicate)

    def unload_all(self) -> None:
        self._rebalancer.unload_all()

    async def wait_for_writes(self) -> None:
        """Wait for the group records being written now (for shutdown and tests)."""
        await self._rebalancer.wait_for_writes()

    def _status_error(self, group_id: str, *, empty_id_allowed: bool = False) -> ErrorCode:
        # DescribeGroups, DeleteGroups and OffsetCommit accept "" for compatibility, like Kafka.
        if not group_id and not empty_id_allowed:
            return ErrorCode.invalid_group_id
        if self._loading(group_id):
            return ErrorCode.coordinator_load_in_progress
        if not self._is_coordinator_for(group_id):
            return ErrorCode.not_coordinator
        return ErrorCode.none

    # -- JoinGroup ---------------------------------------------------------------------

    async def join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]],
        require_known_member_id: bool,
        reason: str | None = None,
        *,
        supports_skip_assignment: bool = False,
    ) -> JoinResult:
        """JoinGroup v0+. `require_known_member_id` is true from v4 (KIP-394);
        `supports_skip_assignment` from v9 (KIP-814). Returns when the rebalance completes,
        or at once for errors and for joins that change nothing."""
        request = JoinRequest(
            group_id=group_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            client_id=client_id,
            client_host=client_host,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            protocol_type=protocol_type,
            protocols=supported_protocols(protocols),
            require_known_member_id=require_known_member_id,
            reason=reason or "not provided",
            supports_skip_assignment=supports_skip_assignment,
        )
        outcome = self._join(request)
        if isinstance(outcome, JoinResult):
            return outcome
        # Shielded: if the caller is cancelled (its connection closed), the member stays parked
        # in the rebalance as in Kafka, and the answer is simply dropped.
        return await asyncio.shield(outcome)

    def _join(self, request: JoinRequest) -> JoinResult | asyncio.Future[JoinResult]:
        error = self._status_error(request.group_id)
        if error is not ErrorCode.none:
            return JoinResult.failure(request.member_id, error)
        config = self._config
        if (
            not config.min_session_timeout_ms
            <= request.session_timeout_ms
            <= config.max_session_timeout_ms
        ):
            return JoinResult.failure(request.member_id, ErrorCode.invalid_session_timeout)
        group = self._rebalancer.get_group(request.group_id)
        created = False
        if group is None:
            # Only a member without an id may create a group; an id for an unknown group is stale.
            if request.member_id != UNKNOWN_MEMBER_ID:
                return JoinResult.failure(request.member_id, ErrorCode.unknown_member_id)
            if len(self._rebalancer.groups) >= config.max_groups:
                return JoinResult.failure(request.member_id, ErrorCode.coordinator_not_available)
            group = self._rebalancer.create_group(request.group_id)
            created = True
        try:
            return self._join_group(group, request)
        finally:
            self._rebalancer.maybe_complete_join(group)
            if created:
                self._rebalancer.forget_if_vacant(group)

    def _join_group(
        self, group: Group, request: JoinRequest
    ) -> JoinResult | asyncio.Future[JoinResult]:
        if not accepts_joining_member(group, request.member_id, self._config.max_size):
            # It would not fit now or later: if it was a member, it is one no longer.
            self._evict(group, request.member_id)
            return JoinResult.failure(UNKNOWN_MEMBER_ID, ErrorCode.group_max_size_reached)
        if group.state is _S.DEAD:
            # Deleted or unloaded meanwhile: the client should find the coordinator again.
            return JoinResult.failure(request.member_id, ErrorCode.coordinator_not_available)
        if not group.supports_protocols(request.protocol_type, request.protocol_names):
            return JoinResult.failure(request.member_id, ErrorCode.inconsistent_group_protocol)
        if request.member_id == UNKNOWN_MEMBER_ID:
            return self._join_new_member(group, request)
        return self._join_known_member(group, request)

    def _join_new_member(
        self, group: Group, request: JoinRequest
    ) -> JoinResult | asyncio.Future[JoinResult]:
        instance_id = request.group_instance_id
        # Kafka prefixes a static member's id with its instance id, a dynamic one's with its
        # client id.
        new_member_id = (
            f"{instance_id if instance_id is not None else request.client_id}-{uuid.uuid4()}"
        )
        if instance_id is not None:
            old_member_id = group.static_members.get(instance_id)
            if old_member_id is not None:
                return self._rejoin_static_member(group, request, old_member_id, new_member_id)
            return self._add_member_and_rebalance(group, request, new_member_id)
        if request.require_known_member_id:
            # KIP-394: hand out the id and count on a second JoinGroup with it, so that a client
            # whose first JoinGroup timed out does not leave a member behind.
            self._rebalancer.add_pending_member(group, new_member_id, request.session_timeout_ms)
            return JoinResult.failure(new_member_id, ErrorCode.member_id_required)
        return self._add_member_and_rebalance(group, request, new_member_id)

    def _join_known_member(
        self, group: Group, request: JoinRequest
    ) -> JoinResult | asyncio.Future[JoinResult]:
        member_id = request.member_id
        if member_id in group.pending_members:
            if request.group_instance_id is not None:
                # Pending ids go to dynamic members only; Kafka fails this request with an
                # IllegalStateException, which the client sees as UNKNOWN_SERVER_ERROR.
                return JoinResult.failure(member_id, ErrorCode.unknown_server_error)
            return self._add_member_and_rebalance(group, request, member_id)
        error = validate_current_member(group, member_id, request.group_instance_id)
        if error is not ErrorCode.none:
            return JoinResult.failure(member_id, error)
        member = group.members[member_id]
        state = group.state
        if state is _S.PREPARING_REBALANCE:
            return self._update_member_and_rebalance(group, member, request)
        if state is _S.COMPLETING_REBALANCE or state is _S.STABLE:
            # The leader's join always rebalances: it may have seen metadata changes (new
            # partitions) that its members' subscriptions do not show.
            leader_rejoins_stable = state is _S.STABLE and group.is_leader(member_id)
            if leader_rejoins_stable or not member.matches(request.protocols):
                return self._update_member_and_rebalance(group, member, request)
            # Same metadata (perhaps it lost our answer): the current generation, unchanged.
            return group.current_generation_answer(member_id)
        # Empty groups have no members: unreachable unless the group is broken; make it rejoin.
        logger.warning(
            "member %s joins group %s in state %s", member_id, group.group_id, state.value
        )
        return JoinResult.failure(member_id, ErrorCode.unknown_member_id)

    def _add_member_and_rebalance(
        self, group: Group, request: JoinRequest, member_id: str
    ) -> asyncio.Future[JoinResult]:
        member = Member(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=request.protocols,
            is_new=True,
        )
        if group.state is _S.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        future = new_future(JoinResult)
        group.await_join(member, future)
        # A parked new member cannot heartbeat (it has no id yet): bound its wait instead.
        self._rebalancer.schedule_session_expiry(
            group, member, self._config.new_member_join_timeout_ms
        )
        self._rebalancer.maybe_prepare_rebalance(
            group, f"adding member {member_id} (reason: {request.reason})"
        )
        return future

    def _update_member_and_rebalance(
        self, group: Group, member: Member, request: JoinRequest
    ) -> asyncio.Future[JoinResult]:
        group.update_member(
            member, request.protocols, request.rebalance_timeout_ms, request.session_timeout_ms
        )
        future = new_future(JoinResult)
        group.await_join(member, future)
        self._rebalancer.maybe_prepare_rebalance(
            group, f"member {member.member_id} rejoins (reason: {request.reason})"
        )
        return future

    def _rejoin_static_member(
        self, group: Group, request: JoinRequest, old_member_id: str, new_member_id: str
    ) -> asyncio.Future[JoinResult]:
        """A static member restarted: its new id replaces the old one (which is fenced from now
        on). In a Stable group whose protocol choice does not change, no rebalance: the new id
        is persisted and the member gets the current generation."""
        instance_id = request.group_instance_id
        if instance_id is None:
            raise GroupInvariantError("only static members are replaced")
        previous_leader_id = group.leader_id
        member = group.replace_static_member(instance_id, old_member_id, new_member_id)
        undo = StaticRejoin(
            group_instance_id=instance_id,
            old_member_id=old_member_id,
            previous_leader_id=previous_leader_id,
            protocols=member.protocols,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            session_timeout_ms=member.session_timeout_ms,
            supports_skip_assignment=request.supports_skip_assignment,
        )
        self._rebalancer.schedule_session_expiry(group, member, member.session_timeout_ms)
        group.update_member(
            member, request.protocols, request.rebalance_timeout_ms, request.session_timeout_ms
        )
        future = new_future(JoinResult)
        group.await_join(member, future)
        reason = (
            f"static member {instance_id} rejoins as {new_member_id} (reason: {request.reason})"
        )
        if group.state is _S.STABLE:
            if group.select_protocol() == group.protocol_name:
                self._rebalancer.spawn(
                    self._persist_static_rejoin(group, member, group.snapshot(), undo)
                )
            else:
                self._rebalancer.prepare_rebalance(group, reason)
        elif group.state is _S.COMPLETING_REBALANCE:
            # The leader may be assigning to the old id: start over so the new id gets a share.
            self._rebalancer.prepare_rebalance(group, reason)
        else:
            check_invariant(
                group.state is _S.PREPARING_REBALANCE,
                f"static member {instance_id} rejoins {group.group_id} in {group.state.value}",
            )
        return future

    async def _persist_static_rejoin(
        self, group: Group, member: Member, snapshot: GroupSnapshot, undo: StaticRejoin
    ) -> None:
        error = await self._rebalancer.persist_in_order(group, snapshot)
        # Answered meanwhile (a rebalance completed, the group was unloaded, the instance was
        # replaced again), or a rebalance now runs with the member parked in it: nothing to do.
        if (
            not member.is_awaiting_join
            or group.state is not _S.STABLE
            or not self._rebalancer.is_live(group)
        ):
            return
        if error is not ErrorCode.none:
            logger.warning(
                "could not persist static member %s of group %s: %s",
                member.member_id,
                group.group_id,
                error,
            )
            self._undo_static_rejoin(group, member, undo, error)
            return
        is_leader = group.is_leader(member.member_id)
        if undo.supports_skip_assignment:
            # v9+: tell a static leader it leads, but that the assignment stands (KIP-814).
            result = group.current_generation_answer(member.member_id)
            result = JoinResult(
                result.error,
                result.generation_id,
                result.protocol_type,
                result.protocol_name,
                result.leader_id,
                result.member_id,
                result.members,
                skip_assignment=is_leader,
            )
        else:
            # Before v9, name the old leader id, so a rejoining static leader does not believe it
            # leads and run an assignment that a Stable group would never hand out.
            result = JoinResult(
                ErrorCode.none,
                group.generation_id,
                group.protocol_type,
                group.protocol_name,
                undo.previous_leader_id or "",
                member.member_id,
            )
        group.answer_join(member, result)

    def _undo_static_rejoin(
        self, group: Group, member: Member, undo: StaticRejoin, error: ErrorCode
    ) -> None:
        new_member_id = member.member_id
        group.update_member(
            member, undo.protocols, undo.rebalance_timeout_ms, undo.session_timeout_ms
        )
        group.answer_join(
            member,
            JoinResult(
                error,
                group.generation_id,
                group.protocol_type,
                group.protocol_name,
                undo.previous_leader_id or "",
                UNKNOWN_MEMBER_ID,
            ),
        )
        restored = group.replace_static_member(
            undo.group_instance_id, new_member_id, undo.old_member_id
        )
        self._rebalancer.schedule_session_expiry(group, restored, restored.session_timeout_ms)

    def _evict(self, group: Group, member_id: str) -> None:
        member = group.members.get(member_id)
        if member is not None:
            self._rebalancer.drop_member(group, member)
        else:
            group.remove(member_id)

    # -- SyncGroup ---------------------------------------------------------------------

    async def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
    ) -> SyncResult:
        """SyncGroup v0+ (`protocol_type`/`protocol_name` from v5, None before). The leader's
        call carries the assignment; everyone is answered once it is persisted."""
        outcome = self._sync(
            group_id, generation_id, member_id, group_instance_id, protocol_type, protocol_name
        )
        if isinstance(outcome, SyncResult):
            return outcome
        group, future = outcome
        if group.is_leader(member_id):
            self._store_assignment(group, assignments)
        return await asyncio.shield(future)

    def _sync(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> SyncResult | tuple[Group, asyncio.Future[SyncResult]]:
        error = self._status_error(group_id)
        if error is ErrorCode.coordinator_load_in_progress:
            # The rebalance state is lost with a move of the coordinator: have the member rejoin
            # (older clients do not expect COORDINATOR_LOAD_IN_PROGRESS here).
            return SyncResult.failure(ErrorCode.rebalance_in_progress)
        if error is not ErrorCode.none:
            return SyncResult.failure(error)
        group = self._rebalancer.get_group(group_id)
        if group is None:
            return SyncResult.failure(ErrorCode.unknown_member_id)
        error = sync_error(
            group, generation_id, member_id, group_instance_id, protocol_type, protocol_name
        )
        if error is not ErrorCode.none:
            return SyncResult.failure(error)
        member = group.members[member_id]
        self._note_synced(group, member_id)
        if group.state is _S.STABLE:
            self._rebalancer.schedule_session_expiry(group, member, member.session_timeout_ms)
            return SyncResult(
                ErrorCode.none, group.protocol_type, group.protocol_name, member.assignment
            )
        future = new_future(SyncResult)
        group.await_sync(member, future)
        return group, future

    def _note_synced(self, group: Group, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members and group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def _store_assignment(self, group: Group, assignments: Mapping[str, bytes]) -> None:
        # Members the leader left out get an empty assignment; ids that are not members are ignored.
        assignment = {
            member_id: bytes(assignments.get(member_id, b"")) for member_id in group.members
        }
        missing = [member_id for member_id in group.members if member_id not in assignments]
        if missing:
            logger.warning(
                "group %s generation %d: no assignment for %s",
                group.group_id,
                group.generation_id,
                missing,
            )
        snapshot = group.snapshot(assignment)
        self._rebalancer.spawn(
            self._persist_assignment(group, group.generation_id, snapshot, assignment)
        )

    async def _persist_assignment(
        self,
        group: Group,
        generation_id: int,
        snapshot: GroupSnapshot,
        assignment: dict[str, bytes],
    ) -> None:
        error = await self._rebalancer.persist_in_order(group, snapshot)
        # Another member may have joined (or the group moved) while we wrote: then this
        # generation is over and its waiters were already answered.
        if not self._rebalancer.is_live(group) or group.state is not _S.COMPLETING_REBALANCE:
            return
        if group.generation_id != generation_id:
            return
        if error is not ErrorCode.none:
            self._rebalancer.reset_and_propagate_assignment_error(group, error)
            self._rebalancer.maybe_prepare_rebalance(
                group, f"error {error.name} persisting the assignment"
            )
            self._rebalancer.maybe_complete_join(group)
            return
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
        self._rebalancer.propagate_assignment(group, ErrorCode.none)
        transition(group, _S.STABLE)
        logger.info("group %s generation %d is stable", group.group_id, group.generation_id)

    # -- Heartbeat and LeaveGroup --------------------------------------------------------

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        error = self._status_error(group_id)
        if error is ErrorCode.coordinator_load_in_progress:
            # Kafka answers blindly while loading; the member learns of trouble on its next call.
            return ErrorCode.none
        if error is not ErrorCode.none:
            return error
        group = self._rebalancer.get_group(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        if group.state is _S.DEAD:
            return ErrorCode.coordinator_not_available
        error = validate_current_member(group, member_id, group_instance_id)
        if error is not ErrorCode.none:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        answer = HEARTBEAT_ANSWER[group.state]
        member = group.members.get(member_id)
        if member is not None:
            self._rebalancer.schedule_session_expiry(group, member, member.session_timeout_ms)
        return answer

    def leave_group(
        self,
        group_id: str,
        members: Sequence[tuple[str, str | None]],
        reasons: Sequence[str | None] = (),
    ) -> LeaveResult:
        """LeaveGroup: v0-v2 name one member id; v3+ a batch of (member id, instance id),
        where an empty member id with an instance id removes that static member (admin).
        `reasons[i]` is the client's reason for `members[i]` leaving (v5+, KIP-800), logged."""
        error = self._status_error(group_id)
        if error is not ErrorCode.none:
            return LeaveResult(error)
        group = self._rebalancer.get_group(group_id)
        if group is None:
            return LeaveResult(
                ErrorCode.none,
                tuple(MemberLeaveResult(m, i, ErrorCode.unknown_member_id) for m, i in members),
            )
        if group.state is _S.DEAD:
            return LeaveResult(ErrorCode.coordinator_not_available)
        given_reasons = list(reasons) + [None] * (len(members) - len(reasons))
        results = tuple(
            MemberLeaveResult(
                member_id,
                instance_id,
                self._leave_one(group, member_id, instance_id, reason or "not provided"),
            )
            for (member_id, instance_id), reason in zip(members, given_reasons, strict=False)
        )
        self._rebalancer.maybe_complete_join(group)
        return LeaveResult(ErrorCode.none, results)

    def _leave_one(
        self, group: Group, member_id: str, group_instance_id: str | None, reason: str
    ) -> ErrorCode:
        if member_id == UNKNOWN_MEMBER_ID:
            current = (
                None if group_instance_id is None else group.static_members.get(group_instance_id)
            )
            if current is None:
                return ErrorCode.unknown_member_id
            member_id = current
        elif member_id in group.pending_members:
            group.remove(member_id)
            return ErrorCode.none
        else:
            error = validate_current_member(group, member_id, group_instance_id)
            if error is not ErrorCode.none:
                return error
        logger.info(
            "member %s leaves group %s; client reason: %s", member_id, group.group_id, reason
        )
        self._rebalancer.remove_member_and_rebalance(
            group, group.members[member_id], f"member {member_id} left; client reason: {reason}"
        )
        return ErrorCode.none

    # -- DescribeGroups, ListGroups, DeleteGroups -----------------------------------------

    def describe_group(self, group_id: str) -> GroupDescription:
        error = self._status_error(group_id, empty_id_allowed=True)
        if error is not ErrorCode.none:
            return GroupDescription(error, group_id, "", "", "")
        group = self._rebalancer.get_group(group_id)
        if group is None:
            return GroupDescription(ErrorCode.none, group_id, _S.DEAD.value, "", "")
        stable = group.state is _S.STABLE and group.protocol_name is not None
        protocol_name = group.protocol_name if stable and group.protocol_name is not None else ""
        members = tuple(
            MemberDescription(
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                client_id=member.client_id,
                client_host=member.client_host,
                metadata=member.metadata(protocol_name) if stable else b"",
                assignment=member.assignment if stable else b"",
            )
            for member in group.members.values()
        )
        return GroupDescription(
            ErrorCode.none,
            group_id,
            group.state.value,
            group.protocol_type or "",
            protocol_name,
            members,
        )

    def list_groups(self, states_filter: Collection[str] = ()) -> list[GroupOverview]:
        """ListGroups; `states_filter` (v4+) matches state names case-insensitively, and an
        empty filter matches every state. Whether the answer carries
        COORDINATOR_LOAD_IN_PROGRESS is the caller's call (it knows what is loading)."""
        wanted = states_named(states_filter) if states_filter else frozenset(GroupState)
        return [
            GroupOverview(group.group_id, group.protocol_type or "", group.state.value)
            for group in self._rebalancer.groups.values()
            if group.state in wanted
        ]

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        """DeleteGroups: only Empty groups go (NON_EMPTY_GROUP otherwise). NONE means the
        membership is gone; writing the group's tombstone and deleting its offsets is the
        caller's part (as is answering for a group known only by its committed offsets)."""
        results: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            error = self._status_error(group_id, empty_id_allowed=True)
            if error is ErrorCode.none:
                error = self._delete_group(group_id)
            results[group_id] = error
        return results

    def _delete_group(self, group_id: str) -> ErrorCode:
        group = self._rebalancer.get_group(group_id)
        if group is None or group.state is _S.DEAD:
            return ErrorCode.group_id_not_found
        if group.state is not _S.EMPTY:
            return ErrorCode.non_empty_group
        self._rebalancer.unload(group)
        return ErrorCode.none

    def remove_group_if_empty(self, group_id: str) -> bool:
        """For offset expiration: an Empty group without offsets is forgotten (Kafka's
        cleanupGroupMetadata). The caller writes the tombstone."""
        group = self._rebalancer.get_group(group_id)
        if group is None or group.state is not _S.EMPTY:
            return False
        self._rebalancer.unload(group)
        return True

    # -- offset commits -----------------------------------------------------------------

    def validate_offset_commit(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        """May this OffsetCommit go ahead? (Kafka's `validateOffsetCommit` plus the group
        checks of `doCommitOffsets`.) A commit with generation -1 to an unknown group creates
        an Empty group, as Kafka does for consumers without group management. A commit by a
        current member extends its session."""
        error = self._status_error(group_id, empty_id_allowed=True)
        if error is not ErrorCode.none:
            return error
        group = self._rebalancer.get_group(group_id)
        if group is None:
            if generation_id >= 0:
                return ErrorCode.illegal_generation
            if len(self._rebalancer.groups) >= self._config.max_groups:
                return ErrorCode.coordinator_not_available
            self._rebalancer.create_group(group_id)
            return ErrorCode.none
        error = offset_commit_error(group, member_id, group_instance_id, generation_id)
        if error is not ErrorCode.none:
            return error
        if group.state is _S.COMPLETING_REBALANCE:
            # It has its JoinGroup answer but not its assignment: commit after the sync.
            return ErrorCode.rebalance_in_progress
        member = group.members.get(member_id)
        if member is not None:
            self._rebalancer.schedule_session_expiry(group, member, member.session_timeout_ms)
        return ErrorCode.none

    def validate_txn_offset_commit(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        """May this TxnOffsetCommit go ahead? An unknown group is created Empty, as Kafka
        does."""
        error = self._status_error(group_id, empty_id_allowed=True)
        if error is not ErrorCode.none:
            return error
        group = self._rebalancer.get_group(group_id)
        if group is None:
            if len(self._rebalancer.groups) >= self._config.max_groups:
                return ErrorCode.coordinator_not_available
            self._rebalancer.create_group(group_id)
            return ErrorCode.none
        return txn_offset_commit_error(group, member_id, group_instance_id, generation_id)
