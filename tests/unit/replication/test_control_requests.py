"""The rules by which a broker takes a controller's requests (broker/replication/
control_requests.py): which LeaderAndIsr states are applied when the partition state znodes
may have delivered them first, how StopReplica is fenced by leader epoch, and how whole
requests are fenced by controller epoch and broker epoch (Kafka 3.9's answers)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.protocol.controller_apis import EPOCH_DURING_DELETE, NO_EPOCH, UNKNOWN_BROKER_EPOCH
from broker.replication.control_requests import (
    ALREADY_APPLIED,
    APPLY,
    STALE,
    AppliedState,
    ControllerFence,
    has_consistent_topic_id,
    is_broker_epoch_stale,
    leader_and_isr_decision,
    stop_replica_error,
)

APPLIED = AppliedState(leader_epoch=5, zk_version=9)


def test_a_partition_not_hosted_yet_takes_the_requested_state() -> None:
    assert leader_and_isr_decision(None, 0, 0) == APPLY


def test_a_newer_leader_epoch_is_applied_whatever_the_znode_version() -> None:
    assert leader_and_isr_decision(APPLIED, 6, 0) == APPLY


def test_an_older_leader_epoch_than_the_watch_applied_is_stale_controller_epoch() -> None:
    assert leader_and_isr_decision(APPLIED, 4, 20) == STALE
    assert STALE.error == ErrorCode.stale_controller_epoch


def test_the_state_the_watch_already_applied_answers_none_and_is_not_applied_again() -> None:
    assert leader_and_isr_decision(APPLIED, 5, 9) == ALREADY_APPLIED
    assert ALREADY_APPLIED.error == ErrorCode.none


def test_same_epoch_with_a_newer_znode_version_is_applied() -> None:
    # The controller rewrote the ISR without a new leader epoch.
    assert leader_and_isr_decision(APPLIED, 5, 10) == APPLY


def test_same_epoch_older_than_the_leaders_own_isr_write_is_stale() -> None:
    assert leader_and_isr_decision(APPLIED, 5, 8) == STALE


def test_an_older_controller_epoch_is_refused_and_a_newer_one_remembered() -> None:
    fence = ControllerFence()
    assert fence.accept_controller_epoch(3) == ErrorCode.none
    assert fence.controller_epoch == 3
    assert fence.accept_controller_epoch(2) == ErrorCode.stale_controller_epoch
    assert fence.controller_epoch == 3
    assert fence.accept_controller_epoch(3) == ErrorCode.none
    assert fence.accept_controller_epoch(4) == ErrorCode.none
    assert fence.controller_epoch == 4


def test_a_fresh_broker_takes_the_first_controller_epoch() -> None:
    assert ControllerFence().accept_controller_epoch(0) == ErrorCode.none


def test_a_broker_epoch_older_than_the_registration_is_stale() -> None:
    fence = ControllerFence()
    fence.broker_epoch = 100
    assert fence.broker_epoch_error(99) == ErrorCode.stale_broker_epoch
    assert fence.broker_epoch_error(100) == ErrorCode.none


def test_a_request_without_broker_epoch_or_with_a_newer_one_passes() -> None:
    # Newer: the controller saw the new registration before the broker's own create returned.
    assert not is_broker_epoch_stale(UNKNOWN_BROKER_EPOCH, 100)
    assert not is_broker_epoch_stale(101, 100)


def test_stop_replica_with_an_older_leader_epoch_is_fenced() -> None:
    assert stop_replica_error(5, 4) == ErrorCode.fenced_leader_epoch
    assert stop_replica_error(5, 5) == ErrorCode.none
    assert stop_replica_error(5, 6) == ErrorCode.none


def test_stop_replica_sentinels_and_unhosted_partitions_are_not_checked() -> None:
    assert stop_replica_error(5, NO_EPOCH) == ErrorCode.none
    assert stop_replica_error(5, EPOCH_DURING_DELETE) == ErrorCode.none
    assert stop_replica_error(None, 0) == ErrorCode.none


def test_topic_ids_conflict_only_when_both_are_known_and_differ() -> None:
    assert has_consistent_topic_id(None, "a")
    assert has_consistent_topic_id("a", None)
    assert has_consistent_topic_id("a", "a")
    assert not has_consistent_topic_id("a", "b")
