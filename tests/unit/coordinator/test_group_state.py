"""Pure group rules: the transition table, the protocol vote, member bookkeeping."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.coordinator.group.group import Group, accepts_joining_member, validate_current_member
from broker.coordinator.group.member import Member
from broker.coordinator.group.state import (
    VALID_PREVIOUS_STATES,
    GroupState,
    InvalidStateTransition,
    states_named,
    transition,
)


def _clock() -> int:
    return 1_000


def _member(member_id: str, *protocols: str, instance_id: str | None = None) -> Member:
    return Member(
        member_id=member_id,
        group_instance_id=instance_id,
        client_id="client",
        client_host="/10.0.0.1",
        rebalance_timeout_ms=1000,
        session_timeout_ms=1000,
        protocol_type="consumer",
        protocols=tuple((name, f"{member_id}:{name}".encode()) for name in protocols),
    )


def test_invalid_state_transition_is_refused_and_leaves_the_state_alone() -> None:
    group = Group("g", _clock)
    with pytest.raises(InvalidStateTransition, match="Stable"):
        transition(group, GroupState.STABLE)
    assert group.state is GroupState.EMPTY


def test_every_state_can_die_but_only_a_rebalance_leads_to_completing() -> None:
    assert all(state in VALID_PREVIOUS_STATES[GroupState.DEAD] for state in GroupState)
    assert VALID_PREVIOUS_STATES[GroupState.COMPLETING_REBALANCE] == {
        GroupState.PREPARING_REBALANCE
    }
    assert GroupState.DEAD not in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]


def test_valid_transition_stamps_the_state_time() -> None:
    now = [5]
    group = Group("g", lambda: now[0])
    now[0] = 42
    transition(group, GroupState.PREPARING_REBALANCE)
    assert group.state is GroupState.PREPARING_REBALANCE
    assert group.current_state_timestamp_ms == 42


def test_protocol_vote_picks_the_most_preferred_common_protocol_by_majority() -> None:
    group = Group("g", _clock)
    group.add(_member("a", "roundrobin", "range", "sticky"))
    transition(group, GroupState.PREPARING_REBALANCE)
    group.add(_member("b", "roundrobin", "range"))
    group.add(_member("c", "range", "roundrobin"))
    # "sticky" is not supported by everyone, so it cannot win even as a's first choice.
    assert group.candidate_protocols() == {"roundrobin", "range"}
    assert group.select_protocol() == "roundrobin"
    group.remove("a")
    group.add(_member("d", "range"))
    assert group.select_protocol() == "range"
    group.check_invariants()


def test_a_member_supporting_no_common_protocol_does_not_fit() -> None:
    group = Group("g", _clock)
    group.add(_member("a", "range"))
    transition(group, GroupState.PREPARING_REBALANCE)
    assert not group.supports_protocols("consumer", frozenset({"roundrobin"}))
    assert not group.supports_protocols("connect", frozenset({"range"}))
    assert group.supports_protocols("consumer", frozenset({"roundrobin", "range"}))


def test_removing_the_leader_hands_leadership_to_another_member() -> None:
    group = Group("g", _clock)
    group.add(_member("a", "range"))
    transition(group, GroupState.PREPARING_REBALANCE)
    group.add(_member("b", "range"))
    assert group.leader_id == "a"
    group.remove("a")
    assert group.leader_id == "b"
    group.remove("b")
    assert group.leader_id is None
    group.check_invariants()


def test_replacing_a_static_member_moves_its_id_and_leadership() -> None:
    group = Group("g", _clock)
    group.add(_member("old", "range", instance_id="instance-1"))
    transition(group, GroupState.PREPARING_REBALANCE)
    member = group.replace_static_member("instance-1", "old", "new")
    assert member.member_id == "new"
    assert group.leader_id == "new"
    assert group.static_members == {"instance-1": "new"}
    assert validate_current_member(group, "old", "instance-1") is ErrorCode.fenced_instance_id
    assert validate_current_member(group, "old", None) is ErrorCode.unknown_member_id
    assert validate_current_member(group, "new", "instance-1") is ErrorCode.none
    group.check_invariants()


def test_group_max_size_counts_rejoined_members_while_preparing() -> None:
    group = Group("g", _clock)
    group.add(_member("a", "range"))
    transition(group, GroupState.PREPARING_REBALANCE)
    group.add(_member("b", "range"))
    assert accepts_joining_member(group, "", max_size=1)  # nobody awaits the join yet
    assert not accepts_joining_member(group, "", max_size=0)
    transition(group, GroupState.COMPLETING_REBALANCE)
    assert accepts_joining_member(group, "a", max_size=1)  # a member is always accepted
    assert not accepts_joining_member(group, "", max_size=2)


def test_list_groups_state_filter_is_case_insensitive_and_ignores_unknown_names() -> None:
    assert states_named(["stable", "EMPTY", "nonsense"]) == {GroupState.STABLE, GroupState.EMPTY}
    assert states_named(["nonsense"]) == frozenset()
