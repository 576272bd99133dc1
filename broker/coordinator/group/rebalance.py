"""The rebalancing part of GroupMembership: the registry of groups, preparing and completing
rebalances, the member/join/sync timers, loading and unloading groups, and ordered
persistence. The request-facing methods (JoinGroup, SyncGroup, ...) in `membership.py` call
it; it knows nothing of them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from broker.coordinator.group.group import (
    Group,
    GroupSnapshot,
)
from broker.coordinator.group.member import (
    UNKNOWN_MEMBER_ID,
    JoinResult,
    Member,
    SyncResult,
)
from broker.coordinator.group.membership_results import (
    GroupConfig,
)
from broker.coordinator.group.state import (
    GroupState,
    can_rebalance,
    check_invariant,
    transition,
)

logger = logging.getLogger(__name__)

Persist = Callable[[GroupSnapshot], Awaitable[ErrorCode]]

_S = GroupState
T = TypeVar("T")


def _always(_group_id: str) -> bool:
    return True


class GroupRebalancer:
    """The groups this coordinator holds, their rebalances and timers (Kafka's join, sync
    and heartbeat purgatories), loading and unloading, and ordered persistence: a part of
    `GroupMembership`, which serves the requests through it."""

    def __init__(
        self,
        persist: Persist,
        config: GroupConfig,
        now_ms: Callable[[], int],
    ) -> None:
        self._persist = persist
        self._config = config
        self._now_ms = now_ms
        self._groups: dict[str, Group] = {}
        # Writes of group records in flight; kept so they are not garbage-collected.
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def groups(self) -> Mapping[str, Group]:
        """The live groups by id (changed only through this part)."""
        return self._groups

    def get_group(self, group_id: str) -> Group | None:
        return self._groups.get(group_id)

    def reset_and_propagate_assignment_error(self, group: Group, error: ErrorCode) -> None:
        check_invariant(
            group.state is _S.COMPLETING_REBALANCE, f"group {group.group_id} is not completing"
        )
        for member in group.members.values():
            member.assignment = b""
        self.propagate_assignment(group, error)

    def propagate_assignment(self, group: Group, error: ErrorCode) -> None:
        ok = error is ErrorCode.none
        protocol_type = group.protocol_type if ok else None
        protocol_name = group.protocol_name if ok else None
        for member in group.members.values():
            result = SyncResult(error, protocol_type, protocol_name, member.assignment)
            if group.answer_sync(member, result):
                # Its session was not counted while it waited: it starts now.
                self.schedule_session_expiry(group, member, member.session_timeout_ms)

    # -- coordinator moves ----------------------------------------------------------------

    def load_group(self, snapshot: GroupSnapshot) -> None:
        """Restore a group from its latest record when this broker becomes its coordinator.
        Members must heartbeat within their session timeout or are removed."""
        existing = self._groups.get(snapshot.group_id)
        if existing is not None:
            self.unload(existing)
        group = Group.from_snapshot(snapshot, self._now_ms)
        self._groups[group.group_id] = group
        for member in group.members.values():
            self.schedule_session_expiry(group, member, member.session_timeout_ms)
        if len(group.members) > self._config.max_size:
            # group.max.size was lowered: rebalance so the members can commit and some leave.
            self.prepare_rebalance(
                group, f"loaded group is over capacity ({self._config.max_size})"
            )
        logger.info(
            "loaded group %s generation %d in state %s",
            group.group_id,
            group.generation_id,
            group.state.value,
        )

    def unload_groups(self, predicate: Callable[[str], bool]) -> int:
        """Forget the groups whose ids match (this broker no longer leads their partition);
        every parked JoinGroup and SyncGroup gets NOT_COORDINATOR."""
        doomed = [group for group_id, group in self._groups.items() if predicate(group_id)]
        for group in doomed:
            self.unload(group)
        return len(doomed)

    def unload_all(self) -> None:
        self.unload_groups(_always)

    async def wait_for_writes(self) -> None:
        """Wait for the group records being written now (for shutdown and tests)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def unload(self, group: Group) -> None:
        transition(group, _S.DEAD)
        for member in group.members.values():
            group.answer_join(
                member, JoinResult.failure(member.member_id, ErrorCode.not_coordinator)
            )
            group.answer_sync(member, SyncResult.failure(ErrorCode.not_coordinator))
        for handle in list(group.timers()):
            handle.cancel()
        group.join_timer = None
        group.sync_timer = None
        group.pending_members.clear()
        for member in group.members.values():
            member.session_timer = None
        del self._groups[group.group_id]

    # -- rebalancing ----------------------------------------------------------------------

    def maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if can_rebalance(group.state):
            self.prepare_rebalance(group, reason)

    def prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.state is _S.COMPLETING_REBALANCE:
            # Members waiting for an assignment of the old generation must rejoin.
            self.reset_and_propagate_assignment_error(group, ErrorCode.rebalance_in_progress)
        self._cancel_sync_expiry(group)
        if group.state is _S.EMPTY:
            # The first rebalance waits a little for more members (InitialDelayedJoin), so that
            # a consumer group starting up forms one generation, not one per member.
            delay_ms = self._config.initial_rebalance_delay_ms
            group.initial_join_delay_ms = delay_ms
            group.initial_join_remaining_ms = max(group.rebalance_timeout_ms - delay_ms, 0)
            group.new_member_added = False
        else:
            delay_ms = group.rebalance_timeout_ms
            group.initial_join_remaining_ms = None
        transition(group, _S.PREPARING_REBALANCE)
        self._schedule_join_expiry(group, delay_ms)
        logger.info(
            "preparing to rebalance group %s with old generation %d: %s",
            group.group_id,
            group.generation_id,
            reason,
        )

    def maybe_complete_join(self, group: Group) -> None:
        """Complete the rebalance when nobody is missing (except during the initial delay,
        which always runs its course)."""
        if (
            self.is_live(group)
            and group.state is _S.PREPARING_REBALANCE
            and group.initial_join_remaining_ms is None
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _on_join_expired(self, group: Group) -> None:
        group.join_timer = None
        if not self.is_live(group) or group.state is not _S.PREPARING_REBALANCE:
            return
        remaining_ms = group.initial_join_remaining_ms
        if remaining_ms is not None and group.new_member_added and remaining_ms > 0:
            # Members kept coming during the initial delay: wait once more, within the
            # rebalance timeout (Kafka's InitialDelayedJoin arithmetic).
            group.new_member_added = False
            delay_ms = min(self._config.initial_rebalance_delay_ms, remaining_ms)
            group.initial_join_remaining_ms = max(remaining_ms - group.initial_join_delay_ms, 0)
            group.initial_join_delay_ms = delay_ms
            self._schedule_join_expiry(group, delay_ms)
            return
        self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        self._cancel_join_expiry(group)
        group.initial_join_remaining_ms = None
        # Dynamic members that did not rejoin in time are gone; static ones keep their place.
        for member in group.not_yet_rejoined():
            if not member.is_static:
                self.drop_member(group, member)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members that did not rejoin remain: wait until they rejoin or their
            # sessions expire.
            logger.warning(
                "group %s: no member rejoined; waiting another rebalance timeout", group.group_id
            )
            self._schedule_join_expiry(group, group.rebalance_timeout_ms)
            return
        group.init_next_generation()
        if group.state is _S.EMPTY:
            logger.info("group %s generation %d is empty", group.group_id, group.generation_id)
            self.spawn(self._persist_empty(group, group.snapshot()))
            return
        logger.info(
            "group %s generation %d formed with %d members",
            group.group_id,
            group.generation_id,
            len(group.members),
        )
        for member in group.members.values():
            group.answer_join(member, group.current_generation_answer(member.member_id))
            self.schedule_session_expiry(group, member, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self._schedule_sync_expiry(group)

    async def _persist_empty(self, group: Group, snapshot: GroupSnapshot) -> None:
        error = await self.persist_in_order(group, snapshot)
        if error is not ErrorCode.none:
            # Harmless: if this coordinator fails, the previous generation comes back with no
            # live members and expires.
            logger.warning("could not persist empty group %s: %s", group.group_id, error.name)

    def remove_member_and_rebalance(self, group: Group, member: Member, reason: str) -> None:
        self.drop_member(group, member)
        if group.state is _S.STABLE or group.state is _S.COMPLETING_REBALANCE:
            self.maybe_prepare_rebalance(group, reason)

    def drop_member(self, group: Group, member: Member) -> None:
        # Whoever still waits for this member is told it is no longer one, and may rejoin.
        group.answer_join(
            member, JoinResult.failure(UNKNOWN_MEMBER_ID, ErrorCode.unknown_member_id)
        )
        group.answer_sync(member, SyncResult.failure(ErrorCode.unknown_member_id))
        group.remove(member.member_id)

    # -- timers -------------------------------------------------------------------------

    def schedule_session_expiry(self, group: Group, member: Member, timeout_ms: int) -> None:
        member.cancel_session_timer()
        member.heartbeat_deadline_ms = self._now_ms() + timeout_ms
        member.session_timer = asyncio.get_running_loop().call_later(
            timeout_ms / 1000, self._on_session_expired, group, member
        )

    def _on_session_expired(self, group: Group, member: Member) -> None:
        member.session_timer = None
        if not self.is_live(group) or group.members.get(member.member_id) is not member:
            return
        if member.has_live_session():
            # Parked in a join or sync: its session restarts when it is answered.
            return
        logger.info(
            "member %s of group %s failed (session expired)", member.member_id, group.group_id
        )
        self.remove_member_and_rebalance(
            group, member, f"member {member.member_id}'s session expired"
        )
        self.maybe_complete_join(group)

    def add_pending_member(self, group: Group, member_id: str, session_timeout_ms: int) -> None:
        """KIP-394: an id handed out, forgotten unless it rejoins within its session."""
        if len(group.pending_members) >= self._config.max_pending_members:
            oldest = group.oldest_pending_member()
            if oldest is not None:
                # Its rejoin will get UNKNOWN_MEMBER_ID and it will start over.
                group.remove(oldest)
        handle = asyncio.get_running_loop().call_later(
            session_timeout_ms / 1000, self._on_pending_member_expired, group, member_id
        )
        group.add_pending_member(member_id, handle)

    def _on_pending_member_expired(self, group: Group, member_id: str) -> None:
        if not self.is_live(group) or member_id not in group.pending_members:
            return
        group.pending_members[member_id] = None  # it fired; nothing left to cancel
        group.remove(member_id)
        self.maybe_complete_join(group)

    def _schedule_join_expiry(self, group: Group, delay_ms: int) -> None:
        self._cancel_join_expiry(group)
        group.join_timer = asyncio.get_running_loop().call_later(
            delay_ms / 1000, self._on_join_expired, group
        )

    def _cancel_join_expiry(self, group: Group) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None

    def _schedule_sync_expiry(self, group: Group) -> None:
        if group.sync_timer is not None:
            group.sync_timer.cancel()
        # Kafka waits the rebalance timeout for SyncGroups (the time a member may take between
        # its JoinGroup answer and its SyncGroup, e.g. to revoke partitions).
        group.sync_timer = asyncio.get_running_loop().call_later(
            group.rebalance_timeout_ms / 1000, self._on_sync_expired, group, group.generation_id
        )

    def _cancel_sync_expiry(self, group: Group) -> None:
        group.pending_sync_members.clear()
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def _on_sync_expired(self, group: Group, generation_id: int) -> None:
        group.sync_timer = None
        if not self.is_live(group) or group.generation_id != generation_id:
            return
        if (
            group.state not in (_S.COMPLETING_REBALANCE, _S.STABLE)
            or not group.pending_sync_members
        ):
            return
        laggards = sorted(group.pending_sync_members)
        for member_id in laggards:
            member = group.members.get(member_id)
            if member is not None:
                self.drop_member(group, member)
        self.prepare_rebalance(group, f"members {laggards} sent no SyncGroup")
        self.maybe_complete_join(group)

    # -- plumbing -----------------------------------------------------------------------

    def create_group(self, group_id: str) -> Group:
        group = Group(group_id=group_id, clock_ms=self._now_ms)
        self._groups[group_id] = group
        return group

    def forget_if_vacant(self, group: Group) -> None:
        """A join that failed before anything happened does not leave a new group behind."""
        vacant = (
            group.state is _S.EMPTY
            and group.generation_id == 0
            and not group.members
            and not group.pending_members
        )
        if vacant and self._groups.get(group.group_id) is group:
            self.unload(group)

    def is_live(self, group: Group) -> bool:
        return group.state is not _S.DEAD and self._groups.get(group.group_id) is group

    async def persist_in_order(self, group: Group, snapshot: GroupSnapshot) -> ErrorCode:
        async with group.persist_lock:
            try:
                return await self._persist(snapshot)
            except Exception:
                # Waiters must still be answered; the writer should have returned an error.
                logger.exception("persisting group %s failed", group.group_id)
                return ErrorCode.unknown_server_error

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._on_task_done)

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("group membership task failed", exc_info=task.exception())


def new_future(result_type: type[T]) -> asyncio.Future[T]:
    """A future for a parked request; `result_type` only tells mypy what it will hold."""
    return asyncio.get_running_loop().create_future()
