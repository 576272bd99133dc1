"""Preferred and unclean leader elections on request (ElectLeaders, the
/admin/preferred_replica_election znode) and the auto leader rebalance check, on the in-memory
ZooKeeper: who leads afterwards, what each partition's result says, and what is written."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest

from broker.config.kafka_config import ConfigError, build_config
from controller import controller as controller_module
from controller.auto_rebalance import partitions_to_rebalance
from controller.config import ControllerConfig
from controller.context import ControllerContext
from controller.election import elect_preferred_leader
from controller.errors import (
    ELECTION_NOT_NEEDED,
    ELIGIBLE_LEADERS_NOT_AVAILABLE,
    NONE,
    NOT_CONTROLLER,
    PREFERRED_LEADER_NOT_AVAILABLE,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from controller.preferred_election import ElectionRequest, ElectionType, election_requests
from controller.state_change_log import LOGGER_NAME
from tests.unit.controller.fake_zk import FakeZkStore
from tests.unit.controller.harness import Cluster, add_topic, start_cluster, state, wait_until
from zk.znodes import PreferredReplicaElectionZNode, TopicAssignment

NO_AUTO_REBALANCE = ControllerConfig(auto_leader_rebalance_enable=False)


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(scenario())  # type: ignore[arg-type]


def leader_of(store: FakeZkStore, topic: str, partition: int) -> int:
    return store.partition_states[(topic, partition)][0].leader


async def moved_leadership_cluster(config: ControllerConfig = NO_AUTO_REBALANCE) -> Cluster:
    """t-0 prefers broker 1 but broker 2 leads it (as after 1 failed and came back); t-1 is
    led by its preferred replica 2."""
    store = FakeZkStore()
    add_topic(
        store,
        "t",
        {0: [1, 2, 3], 1: [2, 3, 1]},
        {0: state(2, [2, 3, 1], leader_epoch=4), 1: state(2, [2, 3, 1])},
    )
    cluster = await start_cluster(store, [1, 2, 3], config)
    assert cluster.active().broker_id == 1
    return cluster


# ---------------------------------------------------------------- pure rules


def test_preferred_election_picks_first_replica_when_alive_and_in_isr() -> None:
    decision = elect_preferred_leader([1, 2, 3], [2, 3, 1], {1, 2, 3})
    assert decision is not None
    assert (decision.leader, decision.isr, decision.unclean) == (1, [2, 3, 1], False)


def test_preferred_election_refuses_a_preferred_replica_outside_the_isr() -> None:
    assert elect_preferred_leader([1, 2, 3], [2, 3], {1, 2, 3}) is None


def test_preferred_election_refuses_a_dead_preferred_replica() -> None:
    assert elect_preferred_leader([1, 2, 3], [1, 2, 3], {2, 3}) is None


def test_preferred_election_refuses_a_preferred_replica_in_controlled_shutdown() -> None:
    assert elect_preferred_leader([1, 2, 3], [1, 2, 3], {1, 2, 3}, shutting_down={1}) is None


def imbalanced_context(isr_of_p1: list[int]) -> ControllerContext:
    """Broker 1 prefers four partitions and leads one of them (ratio 0.75); broker 2 prefers
    one and leads it (ratio 0)."""
    context = ControllerContext(epoch=1, epoch_zk_version=0, live_brokers={1, 2})
    replicas = {0: [1, 2], 1: [1, 2], 2: [1, 2], 3: [1, 2], 4: [2, 1]}
    context.assignments["t"] = TopicAssignment(topic_id="x", partitions=replicas)
    leaders = {0: 1, 1: 2, 2: 2, 3: 2, 4: 2}
    for partition, leader in leaders.items():
        isr = isr_of_p1 if partition == 1 else [1, 2]
        context.partition_states[("t", partition)] = (state(leader, isr), 0)
    return context


def test_rebalance_elects_partitions_of_a_broker_over_the_imbalance_percentage() -> None:
    context = imbalanced_context(isr_of_p1=[1, 2])
    assert partitions_to_rebalance(context, 10) == [("t", 1), ("t", 2), ("t", 3)]


def test_rebalance_leaves_a_broker_within_the_imbalance_percentage() -> None:
    assert partitions_to_rebalance(imbalanced_context(isr_of_p1=[1, 2]), 75) == []


def test_rebalance_skips_partitions_whose_preferred_replica_is_out_of_the_isr() -> None:
    context = imbalanced_context(isr_of_p1=[2])
    assert partitions_to_rebalance(context, 10) == [("t", 2), ("t", 3)]


def test_rebalance_skips_topics_queued_for_deletion() -> None:
    context = imbalanced_context(isr_of_p1=[1, 2])
    context.topics_queued_for_deletion.add("t")
    assert partitions_to_rebalance(context, 10) == []


# ---------------------------------------------------------------- ElectLeaders


def test_preferred_election_request_moves_leadership_back_keeping_the_isr(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        cluster = await moved_leadership_cluster()
        with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
            results = await cluster.active().elect_leaders([("t", 0)], ElectionType.PREFERRED)
        assert results[("t", 0)].error_code == NONE
        assert results[("t", 0)].leader == 1
        written, _ = cluster.store.partition_states[("t", 0)]
        assert (written.leader, written.isr, written.leader_epoch) == (1, [2, 3, 1], 5)
        assert "t-0" in caplog.text and "reason: preferred leader election" in caplog.text
        await cluster.stop()

    run(scenario)


def test_preferred_election_request_reports_each_partition_outcome() -> None:
    async def scenario() -> None:
        cluster = await moved_leadership_cluster()
        store = cluster.store
        # u-0 prefers broker 3, which is not in its ISR.
        store.topics["u"] = TopicAssignment(topic_id="y", partitions={0: [3, 1]})
        store.partition_states[("u", 0)] = (state(1, [1]), 0)
        store.fire("children", "/brokers/topics")
        await cluster.settle()
        writes_before = len(store.state_writes)
        requested = [("t", 1), ("u", 0), ("nope", 0), ("t", 9)]
        results = await cluster.active().elect_leaders(requested, ElectionType.PREFERRED)
        codes = {tp: result.error_code for tp, result in results.items()}
        assert codes == {
            ("t", 1): ELECTION_NOT_NEEDED,
            ("u", 0): PREFERRED_LEADER_NOT_AVAILABLE,
            ("nope", 0): UNKNOWN_TOPIC_OR_PARTITION,
            ("t", 9): UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert results[("u", 0)].message == (
            "Failed to elect leader for partition u-0 under strategy "
            "PreferredReplicaPartitionLeaderElectionStrategy"
        )
        assert len(store.state_writes) == writes_before, "nothing to write"
        await cluster.stop()

    run(scenario)


def test_unclean_election_request_elects_a_live_replica_outside_the_isr(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        # The only ISR member, broker 1, is dead; broker 2 is alive but out of the ISR.
        add_topic(store, "t", {0: [1, 2]}, {0: state(-1, [1], leader_epoch=3)})
        add_topic(store, "led", {0: [2, 3]}, {0: state(2, [2, 3])})
        cluster = await start_cluster(store, [2, 3], NO_AUTO_REBALANCE)
        assert leader_of(store, "t", 0) == -1, "no clean election is possible"
        with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
            results = await cluster.active().elect_leaders(
                [("t", 0), ("led", 0)], ElectionType.UNCLEAN
            )
        assert results[("t", 0)].error_code == NONE
        assert results[("led", 0)].error_code == ELECTION_NOT_NEEDED
        written, _ = store.partition_states[("t", 0)]
        assert (written.leader, written.isr, written.leader_epoch) == (2, [2], 4)
        assert "reason: unclean leader election" in caplog.text
        await cluster.stop()

    run(scenario)


def test_unclean_election_request_fails_without_any_live_replica() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1]}, {0: state(-1, [1])})
        cluster = await start_cluster(store, [2, 3], NO_AUTO_REBALANCE)
        results = await cluster.active().elect_leaders([("t", 0)], ElectionType.UNCLEAN)
        assert results[("t", 0)].error_code == ELIGIBLE_LEADERS_NOT_AVAILABLE
        await cluster.stop()

    run(scenario)


def test_a_broker_that_is_not_controller_answers_not_controller() -> None:
    async def scenario() -> None:
        cluster = await moved_leadership_cluster()
        results = await cluster.controller(2).elect_leaders([("t", 0)], ElectionType.PREFERRED)
        assert results[("t", 0)].error_code == NOT_CONTROLLER
        assert leader_of(cluster.store, "t", 0) == 2
        await cluster.stop()

    run(scenario)


def test_waiting_requests_are_answered_not_controller_on_resignation() -> None:
    async def scenario() -> None:
        requests = election_requests()
        future = requests.add(ElectionRequest([("t", 0), ("t", 1)], ElectionType.PREFERRED))
        assert future is not None
        requests.fail_all(NOT_CONTROLLER)
        assert {r.error_code for r in (await future).values()} == {NOT_CONTROLLER}

    run(scenario)


# ---------------------------------------------------------------- /admin/preferred_replica_election


def test_znode_request_elects_the_preferred_replica_and_is_deleted() -> None:
    async def scenario() -> None:
        cluster = await moved_leadership_cluster()
        store = cluster.store
        store.request_preferred_replica_election(
            PreferredReplicaElectionZNode.encode([("t", 0), ("gone", 0)])
        )
        await wait_until(lambda: store.preferred_replica_election is None, "znode deleted")
        assert leader_of(store, "t", 0) == 1
        await cluster.stop()

    run(scenario)


def test_znode_written_while_there_was_no_controller_is_handled_at_failover() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2]}, {0: state(2, [2, 1])})
        store.preferred_replica_election = (PreferredReplicaElectionZNode.encode([("t", 0)]), 0)
        cluster = await start_cluster(store, [1, 2], NO_AUTO_REBALANCE)
        await wait_until(lambda: store.preferred_replica_election is None, "znode deleted")
        assert leader_of(store, "t", 0) == 1
        await cluster.stop()

    run(scenario)


def test_malformed_znode_is_deleted_without_elections() -> None:
    async def scenario() -> None:
        cluster = await moved_leadership_cluster()
        store = cluster.store
        store.request_preferred_replica_election(b'{"version":1,"partitions":"t"}')
        await wait_until(lambda: store.preferred_replica_election is None, "znode deleted")
        assert leader_of(store, "t", 0) == 2
        await cluster.stop()

    run(scenario)


# ---------------------------------------------------------------- auto rebalance


def test_auto_rebalance_check_runs_after_failover(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(controller_module, "FIRST_CHECK_DELAY_S", 0.01)

    async def scenario() -> None:
        cluster = await moved_leadership_cluster(ControllerConfig())
        await wait_until(lambda: leader_of(cluster.store, "t", 0) == 1, "leadership rebalanced")
        await cluster.stop()

    run(scenario)


def test_auto_rebalance_disabled_leaves_leadership(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(controller_module, "FIRST_CHECK_DELAY_S", 0.01)

    async def scenario() -> None:
        cluster = await moved_leadership_cluster(NO_AUTO_REBALANCE)
        await asyncio.sleep(0.1)  # ten times the first-check delay: it would have run
        await cluster.settle()
        assert leader_of(cluster.store, "t", 0) == 2
        await cluster.stop()

    run(scenario)


# ---------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("leader.imbalance.per.broker.percentage", "-1"),
        ("leader.imbalance.per.broker.percentage", "101"),
        ("leader.imbalance.check.interval.seconds", "0"),
        ("auto.leader.rebalance.enable", "maybe"),
    ],
)
def test_invalid_rebalance_settings_are_start_up_errors(key: str, value: str) -> None:
    raw = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", key: value}
    with pytest.raises(ConfigError, match=key):
        build_config(raw)


def test_rebalance_settings_default_to_kafkas() -> None:
    config = build_config({"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181"})
    assert config["auto.leader.rebalance.enable"] is True
    assert config["leader.imbalance.per.broker.percentage"] == 10
    assert config["leader.imbalance.check.interval.seconds"] == 300
