"""The controller channel's broker side (broker/cluster/controller_channel.py): requests encoded
at every version decode back to what was planned (through the schemas our brokers serve them
with), versions are negotiated from ApiVersions, and pending requests merge per partition."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from broker.cluster.controller_channel import (
    MAX_PARTITIONS_PER_REQUEST,
    ChannelConfig,
    _BrokerSender,
    _PendingRequests,
    broker_answer,
    encode,
    request_items,
    usable_versions,
)
from broker.handlers import leader_and_isr, stop_replica
from broker.handlers.leader_and_isr import requested_states
from broker.handlers.stop_replica import requested_stops
from broker.protocol.adapter import EncodedRequest
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import request_class
from controller.broker_requests import (
    AnsweredRequest,
    BrokerRequests,
    LeaderAndIsrPartition,
    RequestPlanner,
    RequestRound,
    StopReplicaPartition,
)
from tests.unit.controller.test_broker_requests import TOPIC_ID, context, run_plan
from zk.znodes import PartitionState, TopicAssignment, uuid_to_kafka_string

STORAGE = int(ErrorCode.kafka_storage_error)


def first_round() -> RequestRound:
    round_ = run_plan(RequestPlanner(controller_id=1), context())
    assert round_ is not None
    return round_


def pending_for(broker_id: int) -> _PendingRequests:
    round_ = first_round()
    pending = _PendingRequests()
    for requests in round_.requests:
        if requests.broker_id == broker_id:
            pending.add(round_, requests)
    return pending


def decode(request: EncodedRequest) -> Any:
    cls = request_class(request.api_key, request.version)
    decoded: Any
    decoded, size = entity_reader(cls)(request.body, 0)
    assert size == len(request.body)
    return decoded


@pytest.mark.parametrize("version", range(8))
def test_leader_and_isr_decodes_as_planned_at_every_version(version: int) -> None:
    pending = pending_for(2)
    items = list(pending.leader_and_isr.values())
    [request] = encode(ApiKey.LEADER_AND_ISR, version, pending, 102, items, "INTERNAL")
    decoded = decode(request)
    assert decoded.controller_id == 1 and decoded.controller_epoch == 5
    if version >= 2:
        assert decoded.broker_epoch == 102
    states = requested_states(decoded)
    assert [(s.topic, s.partition, s.leader, s.leader_epoch) for s in states] == [
        ("t", 0, 1, 7),
        ("t", 1, 2, 3),
    ]
    assert states[0].isr == (1, 2) and states[0].zk_version == 11
    assert states[0].replicas == (1, 2)
    if version >= 5:
        assert states[0].topic_id == TOPIC_ID
    leaders = {(b.broker_id, b.host_name, b.port) for b in decoded.live_leaders}
    assert leaders == {(1, "127.0.0.1", 9101), (2, "127.0.0.1", 9102)}


@pytest.mark.parametrize("version", range(9))
def test_update_metadata_decodes_as_planned_at_every_version(version: int) -> None:
    pending = pending_for(3)
    assert pending.metadata is not None
    items = list(pending.metadata.values())
    [request] = encode(ApiKey.UPDATE_METADATA, version, pending, 103, items, "INTERNAL")
    decoded = decode(request)
    brokers = decoded.live_brokers
    assert [b.id for b in brokers] == [1, 2, 3]
    if version >= 1:
        assert [(e.host, e.port, e.security_protocol) for e in brokers[0].endpoints] == [
            ("127.0.0.1", 9001, 0),
            ("127.0.0.1", 9101, 3),
        ]
    if version >= 3:
        assert brokers[0].endpoints[1].listener == "INTERNAL"
    if version >= 5:
        [topic] = decoded.topic_states
        states = topic.partition_states
        assert topic.topic_name == "t"
        if version >= 7:
            assert uuid_to_kafka_string(topic.topic_id) == TOPIC_ID
    else:
        states = decoded.ungrouped_partition_states
    assert [(s.partition_index, s.leader, s.zk_version) for s in states] == [(0, 1, 11), (1, 2, 12)]


@pytest.mark.parametrize("version", range(5))
def test_stop_replica_decodes_as_planned_at_every_version(version: int) -> None:
    pending = _PendingRequests(controller_id=1, controller_epoch=5)
    stops = [StopReplicaPartition("t", 0, -2, True), StopReplicaPartition("t", 1, 4, False)]
    requests = encode(ApiKey.STOP_REPLICA, version, pending, 102, stops, "INTERNAL")
    decoded = [requested_stops(decode(request)) for request in requests]
    if version >= 3:
        assert decoded == [[("t", 0, -2, True), ("t", 1, 4, False)]]
    else:  # the delete flag is request-wide: one request per flag, without leader epochs
        assert decoded == [[("t", 1, -1, False)], [("t", 0, -1, True)]]


def test_the_version_is_the_highest_both_sides_serve() -> None:
    kafka_39 = {4: (0, 7), 5: (0, 4), 6: (0, 8), 18: (0, 4)}
    assert usable_versions(kafka_39) == {4: 7, 5: 4, 6: 8}
    assert usable_versions({4: (0, 5), 6: (0, 99)}) == {4: 5, 6: 8}
    assert usable_versions({4: (9, 10)}) == {}


def test_pending_requests_merge_per_partition_keeping_the_newest() -> None:
    round_ = first_round()
    [_, share, _] = round_.requests
    pending = _PendingRequests()
    pending.add(round_, share)
    newer = share.leader_and_isr[0].info
    newer_state = LeaderAndIsrPartition(newer._replace(leader_epoch=newer.leader_epoch + 1), False)
    pending.add(round_, BrokerRequests(2, 102, (newer_state.info,), (newer_state,)))
    assert pending.metadata is not None and len(pending.metadata) == 2
    assert pending.metadata[("t", 0)].leader_epoch == 8
    assert pending.leader_and_isr[("t", 0)].info.leader_epoch == 8
    # A delete drops the pending LeaderAndIsr; hosting it again drops the pending delete.
    pending.add(
        round_, BrokerRequests(2, 102, stop_replica=(StopReplicaPartition("t", 0, -2, True),))
    )
    assert ("t", 0) not in pending.leader_and_isr and ("t", 0) in pending.stop_replica
    pending.add(round_, BrokerRequests(2, 102, leader_and_isr=(newer_state,)))
    assert ("t", 0) in pending.leader_and_isr and ("t", 0) not in pending.stop_replica


def test_a_large_request_is_split_into_requests_of_at_most_max_partitions() -> None:
    ctx = context()
    count = 2 * MAX_PARTITIONS_PER_REQUEST + 500
    ctx.add_topic(
        "big",
        TopicAssignment(TOPIC_ID, {p: [1, 2] for p in range(count)}),
        {p: (PartitionState(1, 1, [1, 2], 5), 1) for p in range(count)},
    )
    round_ = run_plan(RequestPlanner(1), ctx)
    assert round_ is not None
    pending = _PendingRequests()
    pending.add(round_, next(r for r in round_.requests if r.broker_id == 1))
    items = list(pending.leader_and_isr.values())
    requests = encode(ApiKey.LEADER_AND_ISR, 7, pending, 101, items, "INTERNAL")
    decoded = [requested_states(decode(request)) for request in requests]
    assert [len(states) for states in decoded] == [1000, 1000, 501]
    keys = [state.key for states in decoded for state in states]
    assert keys == [p.info.key for p in items]
    assert pending.metadata is not None
    metadata = encode(
        ApiKey.UPDATE_METADATA, 8, pending, 101, list(pending.metadata.values()), "INTERNAL"
    )
    assert len(metadata) == 3
    assert all(len(decode(request).live_brokers) == 3 for request in metadata)
    # The live brokers alone still make one request.
    assert len(encode(ApiKey.UPDATE_METADATA, 8, pending, 101, [], "INTERNAL")) == 1


def test_a_delete_is_not_sent_for_a_replica_a_later_round_hosts_again() -> None:
    """A topic deleted and created again under its name: the old topic's pending delete must
    not reach the broker after the new topic's replica was created there."""

    round_ = first_round()

    async def scenario() -> list[StopReplicaPartition]:
        share = next(r for r in round_.requests if r.broker_id == 2)
        config = ChannelConfig(broker_id=1, listener_name=lambda: "INTERNAL", socket_timeout_ms=100)
        broker = round_.live_brokers[1]
        sender = _BrokerSender(config, broker, ("127.0.0.1", 9))
        try:
            sender._pending.add(
                round_, BrokerRequests(2, 102, leader_and_isr=share.leader_and_isr[:1])
            )
            stops = [
                StopReplicaPartition("t", 0, -2, True),  # hosted again by the pending round
                StopReplicaPartition("t", 1, -2, True),
                StopReplicaPartition("t", 0, 3, False),  # not a delete: still sent
            ]
            return sender._not_superseded(stops)
        finally:
            await sender.close()

    kept = asyncio.run(scenario())
    assert kept == [StopReplicaPartition("t", 1, -2, True), StopReplicaPartition("t", 0, 3, False)]


@pytest.mark.parametrize("version", range(8))
def test_leader_and_isr_answers_reach_the_controller_by_topic_name(version: int) -> None:
    """The answer our broker's handler builds (by topic id from v5) names topics by name."""
    pending = pending_for(2)
    items = list(pending.leader_and_isr.values())
    [request] = encode(ApiKey.LEADER_AND_ISR, version, pending, 102, items, "INTERNAL")
    states = requested_states(decode(request))
    errors = {("t", 0): ErrorCode.kafka_storage_error, ("t", 1): ErrorCode.none}
    response = leader_and_isr.response(version, states, errors)
    answer = broker_answer(ApiKey.LEADER_AND_ISR, 2, 102, 5, items, response)
    assert answer is not None
    assert (answer.request, answer.broker_id, answer.broker_epoch) == (
        AnsweredRequest.LEADER_AND_ISR,
        2,
        102,
    )
    assert (answer.controller_epoch, answer.error_code) == (5, 0)
    assert sorted(answer.partition_errors) == [("t", 0, STORAGE), ("t", 1, 0)]


@pytest.mark.parametrize("version", [0, 4])
def test_stop_replica_answers_report_only_topic_deletions(version: int) -> None:
    pending = _PendingRequests(controller_id=1, controller_epoch=5)
    stops = [StopReplicaPartition("t", 0, -2, True), StopReplicaPartition("t", 1, 4, True)]
    errors = {("t", 0): ErrorCode.kafka_storage_error, ("t", 1): ErrorCode.none}
    answers = []
    for request, carried in zip(
        encode(ApiKey.STOP_REPLICA, version, pending, 102, stops, "INTERNAL"),
        request_items(ApiKey.STOP_REPLICA, version, stops),
        strict=True,
    ):
        asked = requested_stops(decode(request))
        response = stop_replica.response(version, asked, errors)
        answers.append(broker_answer(ApiKey.STOP_REPLICA, 2, 102, 5, carried, response))
    [answer] = answers
    assert answer is not None
    # A reassignment's delete (its leader epoch) is not the deletion manager's business.
    assert answer.partition_errors == (("t", 0, STORAGE),)
    refused = stop_replica.response(version, [], {}, ErrorCode.stale_controller_epoch)
    whole = broker_answer(ApiKey.STOP_REPLICA, 2, 102, 5, stops, refused)
    assert whole is not None
    assert whole.partition_errors == (("t", 0, int(ErrorCode.stale_controller_epoch)),)
    without = [StopReplicaPartition("t", 1, 4, False)]
    assert broker_answer(ApiKey.STOP_REPLICA, 2, 102, 5, without, refused) is None


def test_leader_and_isr_goes_before_update_metadata_unless_the_broker_learns_of_brokers() -> None:
    """Kafka's order: a broker names a new leader in Metadata only after its own LeaderAndIsr
    (else a Kafka leader is sent a new producer's batches before it leads, refuses the first
    and takes the next as that producer's first: librdkafka acknowledges the refused ones).
    Metadata goes first after a failover and when a broker (re)starts, as Kafka's
    onControllerFailover and onBrokerStartup send it, so that followers find their leaders."""
    planner, ctx = RequestPlanner(1), context()
    rounds = [run_plan(planner, ctx)]
    ctx.partition_states[("t", 0)] = (PartitionState(2, 8, [1, 2], 5), 12)  # a new leader
    rounds.append(run_plan(planner, ctx))
    restarted = context({1: 101, 2: 102, 3: 203})  # broker 3 restarted, t-1 has a new leader
    restarted.partition_states[("t", 0)] = ctx.partition_states[("t", 0)]
    restarted.partition_states[("t", 1)] = (PartitionState(3, 4, [2, 3], 5), 13)
    rounds.append(run_plan(planner, restarted))

    async def scenario() -> list[list[ApiKey]]:
        config = ChannelConfig(broker_id=1, listener_name=lambda: "INTERNAL", socket_timeout_ms=100)
        first = rounds[0]
        assert first is not None
        sender = _BrokerSender(config, first.live_brokers[1], ("127.0.0.1", 9))
        sent: list[ApiKey] = []

        async def deliver(api_key: ApiKey, *_: Any) -> None:
            sent.append(api_key)

        sender._deliver = deliver  # type: ignore[method-assign, assignment]
        orders = []
        try:
            for round_ in rounds:
                assert round_ is not None
                pending = _PendingRequests()
                pending.add(round_, next(r for r in round_.requests if r.broker_id == 2))
                await sender._send_all(pending)
                orders.append(sent.copy())
                sent.clear()
        finally:
            await sender.close()
        return orders

    metadata, leader_and_isr = ApiKey.UPDATE_METADATA, ApiKey.LEADER_AND_ISR
    assert asyncio.run(scenario()) == [
        [metadata, leader_and_isr],  # after a failover
        [leader_and_isr, metadata],  # a new leader
        [metadata, leader_and_isr],  # a broker restarted
    ]
