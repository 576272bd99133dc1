"""Follower fetching (KIP-392): Kafka's RackAwareReplicaSelector, the leader's candidates, and
the Fetch handler answering a consumer with a preferred read replica."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from broker.config.kafka_config import ConfigError, build_config
from broker.replication.partition import FollowerState
from broker.replication.replica_selector import (
    RACK_AWARE_REPLICA_SELECTOR,
    ReplicaView,
    preferred_read_replica,
    select_rack_aware,
)
from tests.unit.replication.test_delayed_fetch import (
    FOLLOWER,
    ME,
    WAIT_S,
    Broker,
    _responses_as_values,  # noqa: F401 - the fixture, used by the handler test
)

LEADER = ReplicaView(1, "a", 100, 0)


def test_no_client_rack_or_no_rack_match_or_leader_in_the_rack_picks_the_leader() -> None:
    follower = ReplicaView(2, "b", 100, 0)
    assert select_rack_aware("", LEADER, [LEADER, follower]) is LEADER
    assert select_rack_aware("c", LEADER, [LEADER, follower]) is LEADER
    also_a = ReplicaView(3, "a", 100, 0)
    assert select_rack_aware("a", LEADER, [LEADER, also_a]) is LEADER


def test_the_most_caught_up_same_rack_replica_wins_then_recent_then_highest_id() -> None:
    behind = ReplicaView(2, "b", 90, 0)
    ahead = ReplicaView(3, "b", 100, 50)
    assert select_rack_aware("b", LEADER, [LEADER, behind, ahead]) is ahead
    recent = ReplicaView(4, "b", 100, 10)
    assert select_rack_aware("b", LEADER, [LEADER, ahead, recent]) is recent
    twin = ReplicaView(5, "b", 100, 10)
    assert select_rack_aware("b", LEADER, [LEADER, recent, twin]) is twin


def test_candidates_are_live_in_sync_followers_whose_log_covers_the_fetch_offset(
    tmp_path: Path,
) -> None:
    broker = Broker(tmp_path, partitions=1, isr=[ME, FOLLOWER])
    leader = broker.partition(0)
    leader.followers[FOLLOWER] = FollowerState(log_end_offset=5, log_start_offset=0)
    racks = {ME: "a", FOLLOWER: "b"}
    assert preferred_read_replica(leader, "b", 5, 0, racks) == FOLLOWER
    assert preferred_read_replica(leader, "b", 6, 0, racks) is None  # past its log end
    assert preferred_read_replica(leader, "b", 5, 0, {ME: "a"}) is None  # not alive
    assert preferred_read_replica(leader, "a", 5, 0, racks) is None  # the leader's rack
    leader.isr = [ME]
    assert preferred_read_replica(leader, "b", 5, 0, racks) is None  # out of the ISR


def test_the_leader_answers_a_consumer_in_the_followers_rack_with_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path, partitions=1, isr=[ME, FOLLOWER])
        broker.append(0)
        # The follower fetches everything: in sync, and the high watermark moves to 1.
        broker.manager.read("t", 0, 1, 1024, True, replica_id=FOLLOWER, follower_log_start_offset=0)
        assert broker.partition(0).high_watermark == 1
        broker.manager.broker_racks = lambda: {ME: "a", FOLLOWER: "b"}
        # Without replica.selector.class the leader serves everyone itself.
        answer = await asyncio.wait_for(broker.fetch({0: 0}, rack_id="b"), WAIT_S)
        assert answer[0]["preferred_read_replica"] == -1
        assert answer[0]["records"] != b""
        broker.manager.replica_selector_enabled = True
        # Answered at once (no waiting for min_bytes), with no records.
        answer = await asyncio.wait_for(broker.fetch({0: 0}, rack_id="b"), WAIT_S)
        assert answer[0]["error_code"] == ErrorCode.none
        assert answer[0]["preferred_read_replica"] == FOLLOWER
        assert answer[0]["records"] == b""
        mine = await asyncio.wait_for(broker.fetch({0: 0}, max_wait_ms=0, rack_id="a"), WAIT_S)
        assert mine[0]["preferred_read_replica"] == -1
        assert mine[0]["records"] != b""

    asyncio.run(scenario())


def _raw(**extra: str) -> dict[str, str]:
    return {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", **extra}


def test_replica_selector_class_takes_kafkas_rack_aware_selector_only() -> None:
    config = build_config(_raw(**{"replica.selector.class": RACK_AWARE_REPLICA_SELECTOR}))
    assert config["replica.selector.class"] == RACK_AWARE_REPLICA_SELECTOR
    assert build_config(_raw())["replica.selector.class"] is None
    with pytest.raises(ConfigError, match="replica.selector.class"):
        build_config(_raw(**{"replica.selector.class": "com.example.MySelector"}))
