"""The controller's request planning (controller/broker_requests.py): what each live broker is
sent after an event, compared with what it was last sent, in Kafka's terms."""

from __future__ import annotations

import asyncio

from controller.broker_requests import (
    EPOCH_DURING_DELETE,
    LEADER_DURING_DELETE,
    BrokerRequests,
    Endpoint,
    RequestPlanner,
    RequestRound,
    StopReplicaPartition,
)
from controller.context import ControllerContext
from zk.znodes import BrokerRegistration, PartitionState, TopicAssignment

TOPIC_ID = "XxwtPkpbTG2Of5oLHC0-Tw"


def registration(broker_id: int) -> BrokerRegistration:
    return BrokerRegistration.create(
        broker_id,
        [f"PLAINTEXT://127.0.0.1:{9000 + broker_id}", f"INTERNAL://127.0.0.1:{9100 + broker_id}"],
        {"PLAINTEXT": "PLAINTEXT", "INTERNAL": "SASL_SSL"},
        0,
        rack=f"rack-{broker_id}",
    )


def context(brokers: dict[int, int] | None = None) -> ControllerContext:
    """Brokers 1-3 (broker id -> broker epoch), topic t with partitions led by 1 and 2."""
    epochs = brokers or {1: 101, 2: 102, 3: 103}
    ctx = ControllerContext(
        epoch=5,
        epoch_zk_version=4,
        live_brokers=set(epochs),
        broker_epochs=dict(epochs),
        broker_registrations={b: registration(b) for b in epochs},
    )
    ctx.add_topic(
        "t",
        TopicAssignment(TOPIC_ID, {0: [1, 2], 1: [2, 3]}),
        {
            0: (PartitionState(1, 7, [1, 2], 5), 11),
            1: (PartitionState(2, 3, [2, 3], 4), 12),
        },
    )
    return ctx


def run_plan(planner: RequestPlanner, ctx: ControllerContext) -> RequestRound | None:
    return asyncio.run(planner.plan(ctx))


def by_broker(round_: RequestRound | None) -> dict[int, BrokerRequests]:
    assert round_ is not None
    return {requests.broker_id: requests for requests in round_.requests}


def leader_and_isr_keys(requests: BrokerRequests) -> list[tuple[str, int]]:
    return [p.info.key for p in requests.leader_and_isr]


def metadata_keys(requests: BrokerRequests) -> list[tuple[str, int]]:
    assert requests.update_metadata is not None
    return [info.key for info in requests.update_metadata]


def test_after_a_failover_every_live_broker_gets_all_metadata_then_its_replicas() -> None:
    round_ = run_plan(RequestPlanner(controller_id=1), context())
    assert round_ is not None
    assert (round_.controller_id, round_.controller_epoch) == (1, 5)
    sent = by_broker(round_)
    assert sorted(sent) == [1, 2, 3]
    for broker_id, requests in sent.items():
        assert requests.broker_epoch == 100 + broker_id
        assert metadata_keys(requests) == [("t", 0), ("t", 1)]
        assert not requests.stop_replica
    assert leader_and_isr_keys(sent[1]) == [("t", 0)]
    assert leader_and_isr_keys(sent[2]) == [("t", 0), ("t", 1)]
    assert leader_and_isr_keys(sent[3]) == [("t", 1)]
    state = sent[2].leader_and_isr[0]
    assert not state.is_new  # known before this controller's term
    info = state.info
    assert (info.leader, info.leader_epoch, info.isr, info.zk_version) == (1, 7, (1, 2), 11)
    assert (info.replicas, info.controller_epoch, info.topic_id) == ((1, 2), 5, TOPIC_ID)


def test_live_brokers_carry_every_endpoint_with_kafkas_security_protocol_id_and_rack() -> None:
    round_ = run_plan(RequestPlanner(1), context())
    assert round_ is not None
    assert [b.broker_id for b in round_.live_brokers] == [1, 2, 3]
    broker = round_.live_brokers[1]
    assert broker.broker_epoch == 102 and broker.rack == "rack-2"
    assert broker.endpoints == (
        Endpoint("PLAINTEXT", "127.0.0.1", 9002, 0),
        Endpoint("INTERNAL", "127.0.0.1", 9102, 3),
    )
    assert broker.endpoint("INTERNAL") == Endpoint("INTERNAL", "127.0.0.1", 9102, 3)


def test_nothing_changed_sends_nothing() -> None:
    planner, ctx = RequestPlanner(1), context()
    run_plan(planner, ctx)
    assert run_plan(planner, ctx) is None


def test_an_isr_change_without_a_new_leader_epoch_is_metadata_only() -> None:
    planner, ctx = RequestPlanner(1), context()
    run_plan(planner, ctx)
    ctx.partition_states[("t", 0)] = (PartitionState(1, 7, [1], 5), 12)
    sent = by_broker(run_plan(planner, ctx))
    assert sorted(sent) == [1, 2, 3]
    for requests in sent.values():
        assert metadata_keys(requests) == [("t", 0)]
        assert not requests.leader_and_isr
    assert sent[1].update_metadata is not None
    assert sent[1].update_metadata[0].isr == (1,)


def test_a_new_leader_goes_to_the_partitions_replicas_only() -> None:
    planner, ctx = RequestPlanner(1), context()
    run_plan(planner, ctx)
    ctx.partition_states[("t", 1)] = (PartitionState(3, 4, [3], 5), 13)
    sent = by_broker(run_plan(planner, ctx))
    assert leader_and_isr_keys(sent[2]) == [("t", 1)]
    assert leader_and_isr_keys(sent[3]) == [("t", 1)]
    assert not sent[1].leader_and_isr
    assert metadata_keys(sent[1]) == [("t", 1)]


def test_a_broker_that_starts_gets_everything_and_the_others_what_changed() -> None:
    planner, ctx = RequestPlanner(1), context({1: 101, 2: 102})
    run_plan(planner, ctx)
    ctx.live_brokers.add(3)
    ctx.broker_epochs[3] = 203
    ctx.broker_registrations[3] = registration(3)
    sent = by_broker(run_plan(planner, ctx))
    assert metadata_keys(sent[3]) == [("t", 0), ("t", 1)]
    assert leader_and_isr_keys(sent[3]) == [("t", 1)]
    # The others: the new broker list, and t-1 whose replica on broker 3 is online again.
    for broker_id in (1, 2):
        assert metadata_keys(sent[broker_id]) == [("t", 1)]
        assert sent[broker_id].update_metadata[0].offline_replicas == ()  # type: ignore[index]
        assert not sent[broker_id].leader_and_isr
    assert sent[1].leader_and_isr == ()


def test_a_restarted_broker_new_epoch_gets_everything_again() -> None:
    planner, ctx = RequestPlanner(1), context()
    run_plan(planner, ctx)
    ctx.broker_epochs[2] = 202
    sent = by_broker(run_plan(planner, ctx))
    assert sent[2].broker_epoch == 202
    assert metadata_keys(sent[2]) == [("t", 0), ("t", 1)]
    assert leader_and_isr_keys(sent[2]) == [("t", 0), ("t", 1)]
    assert not sent[1].leader_and_isr


def test_a_dead_brokers_replicas_are_listed_offline() -> None:
    planner, ctx = RequestPlanner(1), context()
    run_plan(planner, ctx)
    ctx.live_brokers.discard(3)
    del ctx.broker_epochs[3]
    sent = by_broker(run_plan(planner, ctx))
    assert sorted(sent) == [1, 2]
    requests = sent[1]
    assert requests.update_metadata is not None
    offline = {info.key: info.offline_replicas for info in requests.update_metadata}
    assert offline == {("t", 1): (3,)}


def test_only_the_live_brokers_changing_sends_metadata_with_no_partitions() -> None:
    planner, ctx = RequestPlanner(1), context()
    run_plan(planner, ctx)
    ctx.broker_registrations[3] = BrokerRegistration.create(
        3, ["PLAINTEXT://127.0.0.1:9999"], {"PLAINTEXT": "PLAINTEXT"}, 0
    )
    sent = by_broker(run_plan(planner, ctx))
    assert sorted(sent) == [1, 2, 3]
    assert all(requests.update_metadata == () for requests in sent.values())


def test_a_deleted_topic_leaves_with_leader_during_delete_and_stop_replica_with_delete() -> None:
    planner, ctx = RequestPlanner(1), context()
    run_plan(planner, ctx)
    ctx.remove_topic("t")
    sent = by_broker(run_plan(planner, ctx))
    for requests in sent.values():
        assert requests.update_metadata is not None
        assert {info.leader for info in requests.update_metadata} == {LEADER_DURING_DELETE}
        assert metadata_keys(requests) == [("t", 0), ("t", 1)]
    assert sent[1].stop_replica == (StopReplicaPartition("t", 0, EPOCH_DURING_DELETE, True),)
    assert sent[3].stop_replica == (StopReplicaPartition("t", 1, EPOCH_DURING_DELETE, True),)
    assert {s.key for s in sent[2].stop_replica} == {("t", 0), ("t", 1)}
    assert run_plan(planner, ctx) is None  # told once


def test_a_replica_moved_away_is_deleted_with_the_partitions_leader_epoch() -> None:
    planner, ctx = RequestPlanner(1), context()
    run_plan(planner, ctx)
    ctx.assignments["t"] = TopicAssignment(TOPIC_ID, {0: [1, 3], 1: [2, 3]})
    ctx.partition_states[("t", 0)] = (PartitionState(1, 8, [1, 3], 5), 13)
    sent = by_broker(run_plan(planner, ctx))
    assert sent[2].stop_replica == (StopReplicaPartition("t", 0, 8, True),)
    assert leader_and_isr_keys(sent[3]) == [("t", 0)]
    assert sent[3].leader_and_isr[0].is_new


def test_a_partition_created_in_this_term_is_new() -> None:
    planner, ctx = RequestPlanner(1), context()
    run_plan(planner, ctx)
    ctx.add_topic("u", TopicAssignment(TOPIC_ID, {0: [3]}), {0: (PartitionState(3, 0, [3], 5), 0)})
    sent = by_broker(run_plan(planner, ctx))
    assert [(p.info.key, p.is_new) for p in sent[3].leader_and_isr] == [(("u", 0), True)]


def test_a_partition_without_a_leader_state_yet_is_left_out() -> None:
    planner, ctx = RequestPlanner(1), context()
    ctx.assignments["t"].partitions[2] = [1, 2]
    sent = by_broker(run_plan(planner, ctx))
    assert metadata_keys(sent[1]) == [("t", 0), ("t", 1)]


def test_a_broker_in_controlled_shutdown_stops_the_replicas_it_follows_once() -> None:
    planner, ctx = RequestPlanner(1), context()
    run_plan(planner, ctx)
    ctx.shutting_down_brokers.add(2)
    sent = by_broker(run_plan(planner, ctx))
    # Broker 2 leads t-1 (no other leader was possible) and follows t-0.
    assert sent[2].stop_replica == (StopReplicaPartition("t", 0, 7, False),)
    assert run_plan(planner, ctx) is None


def test_a_topic_being_deleted_is_announced_with_leader_during_delete_but_not_led() -> None:
    planner, ctx = RequestPlanner(1), context()
    run_plan(planner, ctx)
    ctx.topics_queued_for_deletion.add("t")
    ctx.broker_epochs[3] = 203  # restarted meanwhile: gets everything, but no LeaderAndIsr
    sent = by_broker(run_plan(planner, ctx))
    assert sent[3].update_metadata is not None
    assert {info.leader for info in sent[3].update_metadata} == {LEADER_DURING_DELETE}
    assert not sent[3].leader_and_isr


def test_a_5000_partition_failover_is_planned_whole_and_a_restart_reuses_its_states() -> None:
    """Speed is measured by `scripts/bench failover`, not here: this checks the work's shape.
    A failover tells each broker every partition; a quiet event plans nothing; a restarted
    broker's full round reuses the per-partition states already built (same objects)."""
    ctx = context()
    partitions = 5000
    assignment = {p: [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3] for p in range(partitions)}
    ctx.add_topic(
        "big",
        TopicAssignment(TOPIC_ID, assignment),
        {p: (PartitionState(1 + p % 3, 1, r, 5), 1) for p, r in assignment.items()},
    )
    planner = RequestPlanner(1)
    sent = by_broker(run_plan(planner, ctx))
    assert len(sent[1].leader_and_isr) == partitions + 1
    assert run_plan(planner, ctx) is None
    ctx.broker_epochs[2] += 1
    again = by_broker(run_plan(planner, ctx))
    first = {(s.info.topic, s.info.partition): s.info for s in sent[2].leader_and_isr}
    reused = [
        s for s in again[2].leader_and_isr if first.get((s.info.topic, s.info.partition)) is s.info
    ]
    assert len(reused) == len(again[2].leader_and_isr) == len(sent[2].leader_and_isr)
