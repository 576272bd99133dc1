"""GroupMembership scenarios: JoinGroup/SyncGroup/Heartbeat/LeaveGroup over real asyncio timers
with tiny timeouts, and an in-memory `persist`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from broker.coordinator.group.group import GroupSnapshot
from broker.coordinator.group.member import JoinResult, SyncResult
from broker.coordinator.group.membership import GroupMembership
from broker.coordinator.group.membership_results import GroupConfig
from broker.coordinator.group.state import GroupState

T = TypeVar("T")

GROUP = "payments"
SESSION_MS = 1000
REBALANCE_MS = 2000
# Bound on any wait in these tests: a broken coordinator fails the test instead of hanging it.
WAIT_S = 3.0

FAST = GroupConfig(
    min_session_timeout_ms=10, max_session_timeout_ms=60_000, initial_rebalance_delay_ms=30
)
RANGE = (("range", b"topics:orders"),)


class Harness:
    """A GroupMembership with an in-memory log of persisted group records."""

    def __init__(self, config: GroupConfig = FAST) -> None:
        self.snapshots: list[GroupSnapshot] = []
        self.persist_error = ErrorCode.none
        self.membership = GroupMembership(self._persist, config=config)

    async def _persist(self, snapshot: GroupSnapshot) -> ErrorCode:
        self.snapshots.append(snapshot)
        return self.persist_error

    def join(
        self,
        member_id: str = "",
        *,
        instance_id: str | None = None,
        client_id: str = "consumer",
        session_timeout_ms: int = SESSION_MS,
        rebalance_timeout_ms: int = REBALANCE_MS,
        protocols: Sequence[tuple[str, bytes]] = RANGE,
        protocol_type: str = "consumer",
        require_known_member_id: bool = False,
        supports_skip_assignment: bool = False,
    ) -> asyncio.Task[JoinResult]:
        return asyncio.ensure_future(
            self.membership.join_group(
                GROUP,
                member_id,
                instance_id,
                client_id,
                "/10.0.0.7",
                session_timeout_ms,
                rebalance_timeout_ms,
                protocol_type,
                protocols,
                require_known_member_id,
                "test",
                supports_skip_assignment=supports_skip_assignment,
            )
        )

    def sync(
        self,
        result: JoinResult,
        assignments: dict[str, bytes] | None = None,
        instance_id: str | None = None,
    ) -> asyncio.Task[SyncResult]:
        return asyncio.ensure_future(
            self.membership.sync_group(
                GROUP,
                result.generation_id,
                result.member_id,
                instance_id,
                result.protocol_type,
                result.protocol_name,
                assignments or {},
            )
        )

    def heartbeat(self, result: JoinResult, instance_id: str | None = None) -> ErrorCode:
        return self.membership.heartbeat(GROUP, result.member_id, instance_id, result.generation_id)

    @property
    def state(self) -> GroupState:
        group = self.membership.get_group(GROUP)
        return GroupState.DEAD if group is None else group.state

    def check_invariants(self) -> None:
        group = self.membership.get_group(GROUP)
        if group is not None:
            group.check_invariants()


async def bounded(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, WAIT_S)


async def gather(*tasks: Awaitable[T]) -> list[T]:
    return await bounded(asyncio.gather(*tasks))


async def until(condition: Callable[[], bool]) -> None:
    """Wait (bounded) for a timer-driven change."""
    async with asyncio.timeout(WAIT_S):
        while not condition():
            await asyncio.sleep(0.005)


def run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(scenario())


async def stable_group(harness: Harness, count: int, **join_options: Any) -> list[JoinResult]:
    """`count` members joined, synced with assignments `b"<member id>"`, and Stable."""
    joined = await gather(*(harness.join(client_id=f"c{i}", **join_options) for i in range(count)))
    leader = next(result for result in joined if result.member_id == result.leader_id)
    assignments = {result.member_id: result.member_id.encode() for result in joined}
    await gather(
        *(harness.sync(result, assignments if result is leader else None) for result in joined)
    )
    assert harness.state is GroupState.STABLE
    return joined


def test_three_members_join_one_generation_and_only_the_leader_gets_all_metadata() -> None:
    async def scenario() -> None:
        harness = Harness()
        joined = await gather(
            harness.join(client_id="a", protocols=(("range", b"a-meta"),)),
            harness.join(client_id="b", protocols=(("range", b"b-meta"),)),
            harness.join(client_id="c", protocols=(("range", b"c-meta"),)),
        )
        assert {result.error for result in joined} == {ErrorCode.none}
        assert {result.generation_id for result in joined} == {1}
        assert {result.protocol_name for result in joined} == {"range"}
        assert {result.protocol_type for result in joined} == {"consumer"}
        leader_ids = {result.leader_id for result in joined}
        assert len(leader_ids) == 1
        [leader] = [result for result in joined if result.member_id in leader_ids]
        assert sorted(m.metadata for m in leader.members) == [b"a-meta", b"b-meta", b"c-meta"]
        assert {m.member_id for m in leader.members} == {r.member_id for r in joined}
        assert all(not r.members for r in joined if r is not leader)
        assert all(r.member_id.startswith(client) for r, client in zip(joined, "abc", strict=True))
        assert harness.state is GroupState.COMPLETING_REBALANCE
        harness.check_invariants()

    run(scenario)


def test_leader_sync_persists_the_group_and_distributes_assignments() -> None:
    async def scenario() -> None:
        harness = Harness()
        joined = await gather(harness.join(client_id="a"), harness.join(client_id="b"))
        leader = next(r for r in joined if r.member_id == r.leader_id)
        follower = next(r for r in joined if r is not leader)
        follower_sync = harness.sync(follower)
        await asyncio.sleep(0.01)
        assert not follower_sync.done()  # parked until the leader brings the assignment
        assignments = {leader.member_id: b"p0", follower.member_id: b"p1"}
        leader_result = await bounded(harness.sync(leader, assignments))
        follower_result = await bounded(follower_sync)
        assert leader_result == SyncResult(ErrorCode.none, "consumer", "range", b"p0")
        assert follower_result == SyncResult(ErrorCode.none, "consumer", "range", b"p1")
        assert harness.state is GroupState.STABLE
        [snapshot] = harness.snapshots
        assert snapshot.generation_id == 1
        assert snapshot.protocol_name == "range"
        assert snapshot.leader_id == leader.member_id
        assert {m.member_id: m.assignment for m in snapshot.members} == assignments
        assert {m.subscription for m in snapshot.members} == {b"topics:orders"}
        # A SyncGroup in a Stable group answers the current assignment at once.
        again = await bounded(harness.sync(follower))
        assert again.assignment == b"p1"
        harness.check_invariants()

    run(scenario)


def test_heartbeats_answer_none_when_stable_and_rebalance_in_progress_while_preparing() -> None:
    async def scenario() -> None:
        harness = Harness()
        first = await bounded(harness.join(client_id="a"))
        # Between the JoinGroup answer and the SyncGroup, heartbeats are fine (Kafka 2.8+).
        assert harness.state is GroupState.COMPLETING_REBALANCE
        assert harness.heartbeat(first) is ErrorCode.none
        await bounded(harness.sync(first, {first.member_id: b"p0"}))
        assert harness.heartbeat(first) is ErrorCode.none
        second = harness.join(client_id="b")
        await asyncio.sleep(0)
        assert harness.state is GroupState.PREPARING_REBALANCE
        assert harness.heartbeat(first) is ErrorCode.rebalance_in_progress
        rejoined = await bounded(harness.join(first.member_id))
        assert rejoined.generation_id == 2
        assert (await bounded(second)).generation_id == 2
        assert harness.heartbeat(first) is ErrorCode.illegal_generation  # still generation 1
        assert harness.heartbeat(rejoined) is ErrorCode.none
        stale = JoinResult.failure("nobody", ErrorCode.none)
        assert harness.heartbeat(stale) is ErrorCode.unknown_member_id

    run(scenario)


def test_member_whose_session_expires_is_removed_and_the_others_rebalance() -> None:
    async def scenario() -> None:
        harness = Harness()
        alive, silent = await stable_group(harness, 2, session_timeout_ms=120)

        async def keep_alive() -> None:
            while True:
                harness.heartbeat(alive)
                await asyncio.sleep(0.01)

        heartbeats = asyncio.ensure_future(keep_alive())
        try:
            group = harness.membership.get_group(GROUP)
            assert group is not None
            await until(lambda: silent.member_id not in group.members)
            assert harness.state is GroupState.PREPARING_REBALANCE
            assert harness.heartbeat(alive) is ErrorCode.rebalance_in_progress
            assert harness.heartbeat(silent) is ErrorCode.unknown_member_id
            rejoined = await bounded(harness.join(alive.member_id, session_timeout_ms=120))
        finally:
            heartbeats.cancel()
        assert rejoined.generation_id == 2
        assert rejoined.leader_id == alive.member_id
        assert [m.member_id for m in rejoined.members] == [alive.member_id]
        harness.check_invariants()

    run(scenario)


def test_leaving_member_triggers_a_rebalance_without_it() -> None:
    async def scenario() -> None:
        harness = Harness()
        first, second, third = await stable_group(harness, 3)
        result = harness.membership.leave_group(GROUP, [(second.member_id, None), ("ghost", None)])
        assert result.error is ErrorCode.none
        assert [m.error for m in result.members] == [ErrorCode.none, ErrorCode.unknown_member_id]
        assert harness.state is GroupState.PREPARING_REBALANCE
        rejoined = await gather(harness.join(first.member_id), harness.join(third.member_id))
        assert {r.generation_id for r in rejoined} == {2}
        leader = next(r for r in rejoined if r.member_id == r.leader_id)
        assert {m.member_id for m in leader.members} == {first.member_id, third.member_id}
        harness.check_invariants()

    run(scenario)


def test_last_member_leaving_empties_the_group_and_persists_it() -> None:
    async def scenario() -> None:
        harness = Harness()
        [only] = await stable_group(harness, 1)
        harness.membership.leave_group(GROUP, [(only.member_id, None)])
        assert harness.state is GroupState.EMPTY
        await bounded(harness.membership.wait_for_writes())
        empty = harness.snapshots[-1]
        assert (empty.generation_id, empty.members, empty.protocol_name) == (2, (), None)

    run(scenario)


def test_member_id_required_then_a_rejoin_with_that_id_joins() -> None:
    async def scenario() -> None:
        harness = Harness()
        first = await bounded(harness.join(client_id="app", require_known_member_id=True))
        assert first.error is ErrorCode.member_id_required
        assert first.member_id.startswith("app-")
        assert first.generation_id == -1
        assert harness.state is GroupState.EMPTY
        joined = await bounded(harness.join(first.member_id, require_known_member_id=True))
        assert joined.error is ErrorCode.none
        assert joined.member_id == first.member_id == joined.leader_id
        assert joined.generation_id == 1
        harness.check_invariants()

    run(scenario)


def test_pending_member_id_is_forgotten_when_it_does_not_rejoin_within_its_session() -> None:
    async def scenario() -> None:
        harness = Harness()
        first = await bounded(harness.join(require_known_member_id=True, session_timeout_ms=30))
        group = harness.membership.get_group(GROUP)
        assert group is not None
        assert first.member_id in group.pending_members
        await until(lambda: not group.pending_members)
        late = await bounded(harness.join(first.member_id, require_known_member_id=True))
        assert late.error is ErrorCode.unknown_member_id

    run(scenario)


def test_session_timeout_outside_the_configured_range_is_refused() -> None:
    async def scenario() -> None:
        harness = Harness(GroupConfig())
        for timeout_ms in (5999, 1_800_001):
            result = await bounded(harness.join(session_timeout_ms=timeout_ms))
            assert result.error is ErrorCode.invalid_session_timeout
        assert harness.membership.get_group(GROUP) is None

    run(scenario)


def test_inconsistent_protocols_are_refused() -> None:
    async def scenario() -> None:
        harness = Harness()
        await stable_group(harness, 1)
        other_type = await bounded(harness.join(protocol_type="connect"))
        assert other_type.error is ErrorCode.inconsistent_group_protocol
        no_common = await bounded(harness.join(protocols=(("roundrobin", b""),)))
        assert no_common.error is ErrorCode.inconsistent_group_protocol
        assert harness.state is GroupState.STABLE

    run(scenario)


def test_protocol_selection_follows_the_members_vote() -> None:
    async def scenario() -> None:
        harness = Harness()
        joined = await gather(
            harness.join(protocols=(("roundrobin", b"1"), ("range", b"1"))),
            harness.join(protocols=(("roundrobin", b"2"), ("range", b"2"))),
            harness.join(protocols=(("range", b"3"), ("roundrobin", b"3"))),
        )
        assert {r.protocol_name for r in joined} == {"roundrobin"}
        leader = next(r for r in joined if r.member_id == r.leader_id)
        assert sorted(m.metadata for m in leader.members) == [b"1", b"2", b"3"]

    run(scenario)


def test_static_member_rejoining_a_stable_group_fences_the_old_id_without_rebalancing() -> None:
    async def scenario() -> None:
        harness = Harness()
        joined = await gather(
            harness.join(instance_id="pod-0", client_id="c0"),
            harness.join(instance_id="pod-1", client_id="c1"),
        )
        by_instance = dict(zip(("pod-0", "pod-1"), joined, strict=True))
        leader = next(r for r in joined if r.member_id == r.leader_id)
        follower_instance = next(i for i, r in by_instance.items() if r is not leader)
        old = by_instance[follower_instance]
        assignments = {r.member_id: r.member_id.encode() for r in joined}
        await gather(
            harness.sync(
                leader,
                assignments,
                instance_id=next(i for i, r in by_instance.items() if r is leader),
            ),
            harness.sync(old, instance_id=follower_instance),
        )
        writes_before = len(harness.snapshots)

        # The follower restarts: same instance id, no member id.
        new = await bounded(harness.join(instance_id=follower_instance))
        assert new.error is ErrorCode.none
        assert new.member_id != old.member_id
        assert new.member_id.startswith(f"{follower_instance}-")
        assert new.generation_id == old.generation_id == 1
        assert new.leader_id == leader.member_id
        assert harness.state is GroupState.STABLE
        assert len(harness.snapshots) == writes_before + 1
        assert new.member_id in {m.member_id for m in harness.snapshots[-1].members}

        assert harness.heartbeat(old, instance_id=follower_instance) is ErrorCode.fenced_instance_id
        assert harness.heartbeat(new, instance_id=follower_instance) is ErrorCode.none
        fenced = await bounded(harness.sync(old, instance_id=follower_instance))
        assert fenced.error is ErrorCode.fenced_instance_id
        current = await bounded(harness.sync(new, instance_id=follower_instance))
        assert (
            current.assignment == old.member_id.encode()
        )  # the assignment stays with the instance
        harness.check_invariants()

    run(scenario)


def test_static_member_rejoin_is_undone_when_the_write_fails() -> None:
    async def scenario() -> None:
        harness = Harness()
        [old] = await stable_group(harness, 1, instance_id="pod-0")
        harness.persist_error = ErrorCode.not_coordinator
        failed = await bounded(harness.join(instance_id="pod-0"))
        assert failed.error is ErrorCode.not_coordinator
        assert harness.heartbeat(old, instance_id="pod-0") is ErrorCode.none
        harness.check_invariants()

    run(scenario)


def test_static_member_rejoin_during_completing_rebalance_fences_its_old_sync_and_rebalances() -> (
    None
):
    async def scenario() -> None:
        harness = Harness()
        joined = await gather(
            harness.join(instance_id="pod-0"),
            harness.join(instance_id="pod-1"),
        )
        by_instance = dict(zip(("pod-0", "pod-1"), joined, strict=True))
        leader_instance = next(i for i, r in by_instance.items() if r.member_id == r.leader_id)
        follower_instance = next(i for i in by_instance if i != leader_instance)
        old = by_instance[follower_instance]
        parked_sync = harness.sync(old, instance_id=follower_instance)
        await asyncio.sleep(0)
        assert not parked_sync.done()

        # The follower restarts before the leader sent the assignment.
        new_join = harness.join(instance_id=follower_instance)
        fenced = await bounded(parked_sync)
        assert fenced.error is ErrorCode.fenced_instance_id
        assert harness.state is GroupState.PREPARING_REBALANCE
        leader = by_instance[leader_instance]
        rejoined = await bounded(harness.join(leader.member_id, instance_id=leader_instance))
        new = await bounded(new_join)
        assert {rejoined.generation_id, new.generation_id} == {2}
        assert new.member_id not in (old.member_id, leader.member_id)
        assert {m.member_id for m in rejoined.members} == {leader.member_id, new.member_id}
        assert {m.group_instance_id for m in rejoined.members} == {"pod-0", "pod-1"}
        harness.check_invariants()

    run(scenario)


def test_deleting_a_non_empty_group_is_refused_and_an_empty_one_goes() -> None:
    async def scenario() -> None:
        harness = Harness()
        [only] = await stable_group(harness, 1)
        results = harness.membership.delete_groups([GROUP, "unknown"])
        assert results == {
            GROUP: ErrorCode.non_empty_group,
            "unknown": ErrorCode.group_id_not_found,
        }
        harness.membership.leave_group(GROUP, [(only.member_id, None)])
        assert harness.membership.delete_groups([GROUP]) == {GROUP: ErrorCode.none}
        assert harness.membership.get_group(GROUP) is None
        description = harness.membership.describe_group(GROUP)
        assert (description.error, description.state) == (ErrorCode.none, "Dead")

    run(scenario)


def test_initial_rebalance_delay_lets_three_quick_joins_form_one_generation() -> None:
    async def scenario() -> None:
        harness = Harness(
            GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=60),
        )
        first = harness.join(client_id="a")
        await asyncio.sleep(0.03)
        second = harness.join(client_id="b")
        await asyncio.sleep(0.03)
        # Past the first delay, but the second member's arrival extended it.
        assert harness.state is GroupState.PREPARING_REBALANCE
        third = harness.join(client_id="c")
        joined = await gather(first, second, third)
        assert {r.generation_id for r in joined} == {1}
        leader = next(r for r in joined if r.member_id == r.leader_id)
        assert len(leader.members) == 3

    run(scenario)


def test_initial_rebalance_delay_is_not_cut_short_when_everyone_joined() -> None:
    async def scenario() -> None:
        harness = Harness(GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=50))
        loop = asyncio.get_running_loop()
        started = loop.time()
        await bounded(harness.join())
        assert loop.time() - started >= 0.045

    run(scenario)


def test_member_that_never_syncs_is_removed_and_the_group_rebalances() -> None:
    async def scenario() -> None:
        harness = Harness()
        joined = await gather(
            harness.join(client_id="a", rebalance_timeout_ms=80),
            harness.join(client_id="b", rebalance_timeout_ms=80),
        )
        leader = next(r for r in joined if r.member_id == r.leader_id)
        laggard = next(r for r in joined if r is not leader)
        await bounded(harness.sync(leader, {leader.member_id: b"p0", laggard.member_id: b"p1"}))
        assert harness.state is GroupState.STABLE
        group = harness.membership.get_group(GROUP)
        assert group is not None
        await until(lambda: laggard.member_id not in group.members)
        assert harness.state is GroupState.PREPARING_REBALANCE
        assert harness.heartbeat(leader) is ErrorCode.rebalance_in_progress
        rejoined = await bounded(harness.join(leader.member_id, rebalance_timeout_ms=80))
        assert (rejoined.generation_id, len(rejoined.members)) == (2, 1)

    run(scenario)


def test_member_that_does_not_rejoin_in_time_is_dropped_from_the_next_generation() -> None:
    async def scenario() -> None:
        harness = Harness()
        first, second = await stable_group(harness, 2, rebalance_timeout_ms=80)
        leader = first if first.member_id == first.leader_id else second
        other = second if leader is first else first
        # Same metadata: the current generation, no rebalance.
        unchanged = await bounded(harness.join(other.member_id, rebalance_timeout_ms=80))
        assert (unchanged.generation_id, harness.state) == (1, GroupState.STABLE)
        # New subscription: a rebalance, which the leader never rejoins.
        rejoined = await bounded(
            harness.join(
                other.member_id, rebalance_timeout_ms=80, protocols=(("range", b"topics:refunds"),)
            )
        )
        assert rejoined.generation_id == 2
        assert rejoined.leader_id == other.member_id  # a member that rejoined leads now
        assert [m.member_id for m in rejoined.members] == [other.member_id]
        harness.check_invariants()

    run(scenario)


def test_sync_errors_for_wrong_generation_unknown_member_and_rebalance() -> None:
    async def scenario() -> None:
        harness = Harness()
        [member] = await stable_group(harness, 1)
        wrong_generation = await bounded(
            harness.membership.sync_group(GROUP, 7, member.member_id, None, None, None, {})
        )
        assert wrong_generation.error is ErrorCode.illegal_generation
        unknown = await bounded(
            harness.membership.sync_group(GROUP, 1, "ghost", None, None, None, {})
        )
        assert unknown.error is ErrorCode.unknown_member_id
        wrong_protocol = await bounded(
            harness.membership.sync_group(
                GROUP, 1, member.member_id, None, "consumer", "sticky", {}
            )
        )
        assert wrong_protocol.error is ErrorCode.inconsistent_group_protocol
        newcomer = harness.join()
        await asyncio.sleep(0)
        during = await bounded(harness.sync(member))
        assert during.error is ErrorCode.rebalance_in_progress
        await bounded(harness.join(member.member_id))
        await bounded(newcomer)

    run(scenario)


def test_failed_assignment_write_answers_every_sync_with_the_error_and_rebalances() -> None:
    async def scenario() -> None:
        harness = Harness()
        joined = await gather(harness.join(), harness.join())
        leader = next(r for r in joined if r.member_id == r.leader_id)
        harness.persist_error = ErrorCode.coordinator_not_available
        results = await gather(*(harness.sync(r, {} if r is leader else None) for r in joined))
        assert {r.error for r in results} == {ErrorCode.coordinator_not_available}
        assert harness.state is GroupState.PREPARING_REBALANCE
        harness.check_invariants()

    run(scenario)


def test_group_max_size_turns_away_the_member_beyond_it() -> None:
    async def scenario() -> None:
        harness = Harness(
            GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=30, max_size=2)
        )
        await stable_group(harness, 2)
        third = await bounded(harness.join())
        assert (third.error, third.member_id) == (ErrorCode.group_max_size_reached, "")
        assert harness.state is GroupState.STABLE

    run(scenario)


def test_not_coordinator_and_loading_are_decided_by_the_caller() -> None:
    async def scenario() -> None:
        loading = {"loading-group"}
        membership = GroupMembership(
            lambda snapshot: asyncio.sleep(0, ErrorCode.none),
            config=FAST,
            is_coordinator_for=lambda group_id: group_id != "elsewhere",
            loading=lambda group_id: group_id in loading,
        )

        async def join(group_id: str) -> JoinResult:
            return await bounded(
                membership.join_group(
                    group_id, "", None, "c", "h", SESSION_MS, REBALANCE_MS, "consumer", RANGE, False
                )
            )

        assert (await join("elsewhere")).error is ErrorCode.not_coordinator
        assert (await join("loading-group")).error is ErrorCode.coordinator_load_in_progress
        assert (await join("")).error is ErrorCode.invalid_group_id
        # Heartbeats while loading are answered blindly; syncs ask the member to rejoin.
        assert membership.heartbeat("loading-group", "m", None, 1) is ErrorCode.none
        sync = await bounded(membership.sync_group("loading-group", 1, "m", None, None, None, {}))
        assert sync.error is ErrorCode.rebalance_in_progress

    run(scenario)


def test_unloading_answers_parked_joins_with_not_coordinator() -> None:
    async def scenario() -> None:
        harness = Harness()
        parked = harness.join()
        await asyncio.sleep(0)
        assert harness.state is GroupState.PREPARING_REBALANCE
        harness.membership.unload_all()
        result = await bounded(parked)
        assert result.error is ErrorCode.not_coordinator
        assert harness.membership.get_group(GROUP) is None

    run(scenario)


def test_a_loaded_group_is_stable_and_its_members_carry_on() -> None:
    async def scenario() -> None:
        before = Harness()
        members = await stable_group(before, 2)
        snapshot = before.snapshots[-1]
        before.membership.unload_all()

        after = Harness()
        after.membership.load_group(snapshot)
        assert after.state is GroupState.STABLE
        for member in members:
            assert after.heartbeat(member) is ErrorCode.none
            synced = await bounded(after.sync(member))
            assert synced.assignment == member.member_id.encode()
        description = after.membership.describe_group(GROUP)
        assert description.state == "Stable"
        assert description.protocol_name == "range"
        assert {m.assignment for m in description.members} == {
            m.member_id.encode() for m in members
        }
        after.check_invariants()

    run(scenario)


def test_loaded_members_that_never_heartbeat_expire() -> None:
    async def scenario() -> None:
        before = Harness()
        await stable_group(before, 1, session_timeout_ms=40)
        after = Harness()
        after.membership.load_group(before.snapshots[-1])
        await until(lambda: after.state is GroupState.EMPTY)

    run(scenario)


def test_list_groups_filters_by_state_name() -> None:
    async def scenario() -> None:
        harness = Harness()
        await stable_group(harness, 1)
        listed = harness.membership.list_groups()
        assert [(g.group_id, g.protocol_type, g.state) for g in listed] == [
            (GROUP, "consumer", "Stable")
        ]
        assert harness.membership.list_groups(["stable"]) == listed
        assert harness.membership.list_groups(["Empty"]) == []

    run(scenario)


def test_offset_commit_validation_follows_the_generation() -> None:
    async def scenario() -> None:
        harness = Harness()
        [member] = await stable_group(harness, 1)
        validate = harness.membership.validate_offset_commit
        assert validate(GROUP, member.member_id, None, 1) is ErrorCode.none
        assert validate(GROUP, member.member_id, None, 0) is ErrorCode.illegal_generation
        assert validate(GROUP, "", None, -1) is ErrorCode.unknown_member_id  # not Empty
        assert validate("standalone", "", None, -1) is ErrorCode.none
        assert harness.membership.get_group("standalone") is not None
        assert validate("nobody-home", "m", None, 3) is ErrorCode.illegal_generation

    run(scenario)


def test_a_cancelled_join_caller_leaves_the_member_parked_and_others_answered() -> None:
    async def scenario() -> None:
        harness = Harness()
        impatient = harness.join(client_id="a")
        patient = harness.join(client_id="b")
        await asyncio.sleep(0)
        impatient.cancel()
        result = await bounded(patient)
        assert (result.error, result.generation_id) == (ErrorCode.none, 1)
        # As in Kafka, the member stays in the generation; its answer is simply dropped.
        group = harness.membership.get_group(GROUP)
        assert group is not None
        assert len(group.members) == 2
        harness.check_invariants()

    run(scenario)
