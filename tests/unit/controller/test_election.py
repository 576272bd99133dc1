"""Leader election decisions, one scenario per test (no ZooKeeper)."""

from __future__ import annotations

from controller.election import (
    NO_LEADER,
    LeaderAndIsr,
    elect_offline_leader,
    initial_leader_and_isr,
    leader_and_isr_after_broker_change,
    shrink_isr,
)


def test_offline_leader_is_first_live_isr_replica_in_assignment_order() -> None:
    decision = elect_offline_leader(
        [1, 2, 3], isr=[3, 2], live_brokers={2, 3}, unclean_enabled=False
    )
    assert decision == LeaderAndIsr(leader=2, isr=[3, 2])


def test_offline_leader_skips_live_replica_outside_isr_when_clean() -> None:
    decision = elect_offline_leader(
        [1, 2, 3], isr=[1, 3], live_brokers={2, 3}, unclean_enabled=False
    )
    assert decision == LeaderAndIsr(leader=3, isr=[3])


def test_offline_leader_none_when_last_isr_dead_and_unclean_disabled() -> None:
    decision = elect_offline_leader([1, 2, 3], isr=[1], live_brokers={2, 3}, unclean_enabled=False)
    assert decision is None


def test_offline_leader_when_last_isr_dead_and_unclean_enabled() -> None:
    decision = elect_offline_leader([1, 2, 3], isr=[1], live_brokers={2, 3}, unclean_enabled=True)
    assert decision == LeaderAndIsr(leader=2, isr=[2], unclean=True)


def test_offline_leader_prefers_clean_choice_even_when_unclean_enabled() -> None:
    decision = elect_offline_leader([1, 2, 3], isr=[3], live_brokers={2, 3}, unclean_enabled=True)
    assert decision == LeaderAndIsr(leader=3, isr=[3])


def test_offline_leader_none_when_no_replica_alive_and_unclean_enabled() -> None:
    decision = elect_offline_leader([1, 2], isr=[1, 2], live_brokers={5}, unclean_enabled=True)
    assert decision is None


def test_isr_shrink_drops_dead_members_and_keeps_order() -> None:
    assert shrink_isr([3, 1, 2], live_brokers={2, 3}) == [3, 2]


def test_isr_shrink_keeps_last_member_when_all_dead() -> None:
    assert shrink_isr([1, 2], live_brokers={3}) == [2]


def test_initial_state_leader_is_first_live_replica_and_isr_is_live_replicas() -> None:
    assert initial_leader_and_isr([2, 1, 3], live_brokers={1, 3}) == LeaderAndIsr(1, [1, 3])


def test_initial_state_none_when_no_replica_alive() -> None:
    assert initial_leader_and_isr([2, 1], live_brokers={3}) is None


def test_broker_death_of_follower_only_shrinks_isr() -> None:
    decision = leader_and_isr_after_broker_change(
        leader=1, isr=[1, 2, 3], assignment=[1, 2, 3], live_brokers={1, 3}, unclean_enabled=False
    )
    assert decision == LeaderAndIsr(leader=1, isr=[1, 3])


def test_broker_death_of_leader_moves_leadership_to_next_isr_replica() -> None:
    decision = leader_and_isr_after_broker_change(
        leader=1, isr=[1, 2, 3], assignment=[1, 2, 3], live_brokers={2, 3}, unclean_enabled=False
    )
    assert decision == LeaderAndIsr(leader=2, isr=[2, 3])


def test_broker_death_of_last_isr_member_leaves_partition_offline_with_isr_kept() -> None:
    decision = leader_and_isr_after_broker_change(
        leader=1, isr=[1], assignment=[1, 2], live_brokers={2}, unclean_enabled=False
    )
    assert decision == LeaderAndIsr(leader=NO_LEADER, isr=[1])


def test_no_change_when_all_replicas_alive() -> None:
    decision = leader_and_isr_after_broker_change(
        leader=1, isr=[1, 2], assignment=[1, 2], live_brokers={1, 2}, unclean_enabled=False
    )
    assert decision is None


def test_no_change_for_offline_partition_when_still_no_candidate() -> None:
    decision = leader_and_isr_after_broker_change(
        leader=NO_LEADER, isr=[1], assignment=[1, 2], live_brokers={3}, unclean_enabled=False
    )
    assert decision is None


def test_returning_last_isr_member_becomes_leader_again() -> None:
    decision = leader_and_isr_after_broker_change(
        leader=NO_LEADER, isr=[1], assignment=[2, 1], live_brokers={1, 2}, unclean_enabled=False
    )
    assert decision == LeaderAndIsr(leader=1, isr=[1])
