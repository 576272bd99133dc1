"""The controller acts on the brokers' answers (controller/broker_answers.py,
controller/topic_deletion.py): a topic's znodes go only once every replica answered its
deleting StopReplica, a halted deletion resumes when the broker comes back or a new controller
takes over, and LeaderAndIsr answered with KAFKA_STORAGE_ERROR takes those replicas offline
until their broker registers again."""

from __future__ import annotations

import asyncio

from kio.schema.errors import ErrorCode

from controller.broker_requests import (
    EPOCH_DURING_DELETE,
    LEADER_DURING_DELETE,
    AnsweredRequest,
    BrokerAnswer,
    RequestRound,
)
from controller.config import ControllerConfig
from controller.controller import Controller
from controller.errors import NONE
from controller.topic_deletion import ReplicaDeletion
from tests.unit.controller.fake_zk import FakeZkStore
from tests.unit.controller.harness import Cluster, add_topic, start_cluster, state, wait_until
from tests.unit.controller.test_controller_channel_rounds import RecordingChannel, start

STORAGE = int(ErrorCode.kafka_storage_error)


def deletion_stops(rounds: list[RequestRound]) -> dict[int, list[tuple[str, int]]]:
    """Per broker, the partitions it was told to delete with the topic deletion epoch."""
    found: dict[int, list[tuple[str, int]]] = {}
    for round_ in rounds:
        for requests in round_.requests:
            for stop in requests.stop_replica:
                if stop.delete_partition and stop.leader_epoch == EPOCH_DURING_DELETE:
                    found.setdefault(requests.broker_id, []).append(stop.key)
    return found


def answer(
    cluster: Cluster,
    channel: RecordingChannel,
    request: AnsweredRequest,
    broker_id: int,
    errors: list[tuple[str, int, int]],
    error_code: int = 0,
) -> None:
    """The broker's answer, as the channel hands it over, under the current epochs."""
    channel.answer(
        BrokerAnswer(
            request,
            broker_id,
            cluster.store.broker_epochs[broker_id],
            cluster.active().epoch,
            error_code,
            tuple(errors),
        )
    )


def context_of(controller: Controller):  # type: ignore[no-untyped-def]
    context = controller.context
    assert context is not None
    return context


def test_znodes_go_only_once_every_replica_answered_its_stop_replica() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "gone", {0: [1, 2], 1: [2, 3]}, {0: state(1, [1, 2]), 1: state(2, [2, 3])})
        store.delete_markers.add("other")  # a marker of a topic that does not exist
        cluster, channel = await start(store, [1, 2, 3])
        assert "other" not in store.delete_markers
        channel.rounds.clear()
        assert await cluster.active().delete_topics(["gone"]) == {"gone": NONE}
        await cluster.settle()
        assert deletion_stops(channel.rounds) == {
            1: [("gone", 0)],
            2: [("gone", 0), ("gone", 1)],
            3: [("gone", 1)],
        }
        announced = [
            info.leader
            for round_ in channel.rounds
            for r in round_.requests
            if r.broker_id == 1 and r.update_metadata
            for info in r.update_metadata
        ]
        assert announced == [LEADER_DURING_DELETE, LEADER_DURING_DELETE]
        # Offline, not re-elected by later events while the answers are awaited.
        assert {s.leader for (t, _), (s, _) in store.partition_states.items() if t == "gone"} == {
            -1
        }
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 1, [("gone", 0, 0)])
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 2, [("gone", 0, 0), ("gone", 1, 0)])
        await cluster.settle()
        assert "gone" in store.topics and "gone" in store.delete_markers
        channel.rounds.clear()
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 3, [("gone", 1, 0)])
        await wait_until(lambda: "gone" not in store.topics, "topic znodes deleted")
        await cluster.settle()
        assert "gone" not in store.delete_markers and "gone" not in store.topic_configs
        assert "gone" not in context_of(cluster.active()).assignments
        # Announced with leader -2 when the deletion started: not again, no second stop.
        assert not deletion_stops(channel.rounds)
        assert all(not r.update_metadata for round_ in channel.rounds for r in round_.requests)
        await cluster.stop()

    asyncio.run(scenario())


def test_a_dead_broker_halts_the_deletion_until_it_registers_again() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "gone", {0: [1, 2]}, {0: state(1, [1, 2])})
        cluster, channel = await start(store, [1, 2])
        store.kill_broker(2)
        await cluster.settle()
        channel.rounds.clear()
        assert await cluster.active().delete_topics(["gone"]) == {"gone": NONE}
        await cluster.settle()
        assert deletion_stops(channel.rounds) == {1: [("gone", 0)]}
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 1, [("gone", 0, 0)])
        await cluster.settle()
        assert "gone" in store.topics  # marked for deletion, halted on broker 2's replica
        deletion = cluster.active()._deletion
        assert deletion is not None and deletion.is_halted("gone")
        assert deletion.state(("gone", 0, 1)) is ReplicaDeletion.SUCCESSFUL
        channel.rounds.clear()
        store.register_broker(2)
        await cluster.settle()
        assert deletion_stops(channel.rounds) == {2: [("gone", 0)]}  # not broker 1's again
        assert "gone" in store.topics
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 2, [("gone", 0, 0)])
        await wait_until(lambda: "gone" not in store.topics, "topic znodes deleted")
        await cluster.stop()

    asyncio.run(scenario())


def test_an_error_answer_halts_the_deletion_and_a_restart_retries_it() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "gone", {0: [1, 2]}, {0: state(1, [1, 2])})
        cluster, channel = await start(store, [1, 2])
        assert await cluster.active().delete_topics(["gone"]) == {"gone": NONE}
        await cluster.settle()
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 1, [("gone", 0, 0)])
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 2, [("gone", 0, STORAGE)])
        await cluster.settle()
        assert "gone" in store.topics
        channel.rounds.clear()
        store.bounce_broker(2)  # restarted: a death, then a start
        await cluster.settle()
        assert deletion_stops(channel.rounds) == {2: [("gone", 0)]}
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 2, [("gone", 0, 0)])
        await wait_until(lambda: "gone" not in store.topics, "topic znodes deleted")
        await cluster.stop()

    asyncio.run(scenario())


def test_a_new_controller_starts_a_deletion_again_and_ignores_old_answers() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "gone", {0: [1, 2]}, {0: state(1, [1, 2])})
        cluster, channel = await start(store, [1, 2])
        assert await cluster.active().delete_topics(["gone"]) == {"gone": NONE}
        await cluster.settle()
        old_epoch = cluster.active().epoch
        await cluster.controller(1).stop()
        await wait_until(lambda: cluster.controller(2).is_active, "broker 2 to take over")
        await cluster.settle()
        assert "gone" in store.topics and "gone" in store.delete_markers
        takeover = [r for r in channel.rounds if r.controller_epoch > old_epoch]
        assert deletion_stops(takeover) == {1: [("gone", 0)], 2: [("gone", 0)]}
        stale = BrokerAnswer(
            AnsweredRequest.STOP_REPLICA, 2, store.broker_epochs[2], old_epoch, 0, (("gone", 0, 0),)
        )
        channel.answer(stale)
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 1, [("gone", 0, 0)])
        await cluster.settle()
        assert "gone" in store.topics  # broker 2's answer was to the old controller
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 2, [("gone", 0, 0)])
        await wait_until(lambda: "gone" not in store.topics, "topic znodes deleted")
        await cluster.stop()

    asyncio.run(scenario())


def test_storage_error_in_leader_and_isr_answer_moves_leaders_until_reregistration() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(
            store,
            "t",
            {0: [2, 1], 1: [1, 2]},
            {0: state(2, [2, 1], leader_epoch=3), 1: state(1, [1, 2], leader_epoch=3)},
        )
        cluster, channel = await start(store, [1, 2])
        # A Kafka broker's log dir failed: it writes only the notification (no
        # /brokers/offline_replicas); the controller asks it with LeaderAndIsr for all.
        store.log_dir_events["log_dir_event_0000000000"] = 2
        channel.rounds.clear()
        store.fire("children", "/log_dir_event_notification")
        await wait_until(lambda: not store.log_dir_events, "notification handled")
        await cluster.settle()
        [asked] = [r for round_ in channel.rounds for r in round_.requests if r.broker_id == 2]
        assert sorted(p.info.key for p in asked.leader_and_isr) == [("t", 0), ("t", 1)]
        answer(
            cluster,
            channel,
            AnsweredRequest.LEADER_AND_ISR,
            2,
            [("t", 0, STORAGE), ("t", 1, int(ErrorCode.stale_controller_epoch))],
        )
        await wait_until(lambda: store.partition_states[("t", 0)][0].leader == 1, "new leader")
        await cluster.settle()
        moved, _ = store.partition_states[("t", 0)]
        assert (moved.leader, moved.isr, moved.leader_epoch) == (1, [1], 4)
        assert store.partition_states[("t", 1)][0].isr == [1, 2]  # still online there
        assert context_of(cluster.active()).offline_replicas == {2: frozenset({("t", 0)})}
        # A top-level error changes nothing; an answer NONE brings a replica back online.
        answer(
            cluster,
            channel,
            AnsweredRequest.LEADER_AND_ISR,
            2,
            [],
            int(ErrorCode.stale_broker_epoch),
        )
        await cluster.settle()
        assert context_of(cluster.active()).offline_replicas == {2: frozenset({("t", 0)})}
        store.bounce_broker(2)
        await cluster.settle()
        assert context_of(cluster.active()).offline_replicas == {}
        await cluster.stop()

    asyncio.run(scenario())


def test_storage_error_fails_the_replica_deletion_there() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "gone", {0: [1, 2]}, {0: state(1, [1, 2])})
        cluster, channel = await start(store, [1, 2])
        answer(cluster, channel, AnsweredRequest.LEADER_AND_ISR, 2, [("gone", 0, STORAGE)])
        await cluster.settle()
        channel.rounds.clear()
        assert await cluster.active().delete_topics(["gone"]) == {"gone": NONE}
        await cluster.settle()
        assert deletion_stops(channel.rounds) == {1: [("gone", 0)]}
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 1, [("gone", 0, 0)])
        await cluster.settle()
        assert "gone" in store.topics
        store.bounce_broker(2)  # its log dir is back after the restart
        await cluster.settle()
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 2, [("gone", 0, 0)])
        await wait_until(lambda: "gone" not in store.topics, "topic znodes deleted")
        await cluster.stop()

    asyncio.run(scenario())


def test_a_replica_deleted_before_its_broker_died_counts_as_deleted() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "gone", {0: [1, 2, 3]}, {0: state(1, [1, 2, 3])})
        cluster, channel = await start(store, [1, 2, 3])
        assert await cluster.active().delete_topics(["gone"]) == {"gone": NONE}
        await cluster.settle()
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 3, [("gone", 0, 0)])
        await cluster.settle()
        store.kill_broker(3)
        await cluster.settle()
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 1, [("gone", 0, 0)])
        answer(cluster, channel, AnsweredRequest.STOP_REPLICA, 2, [("gone", 0, 0)])
        await wait_until(lambda: "gone" not in store.topics, "topic znodes deleted")
        await cluster.stop()

    asyncio.run(scenario())


def test_without_a_channel_deletion_completes_at_once_and_disabled_removes_markers() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "gone", {0: [1, 2]}, {0: state(1, [1, 2])})
        cluster = await start_cluster(store, [1, 2])
        assert await cluster.active().delete_topics(["gone"]) == {"gone": NONE}
        await wait_until(lambda: "gone" not in store.topics, "topic znodes deleted")
        await cluster.stop()
        store = FakeZkStore()
        add_topic(store, "kept", {0: [1]}, {0: state(1, [1])})
        store.delete_markers.add("kept")
        cluster = await start_cluster(store, [1], ControllerConfig(delete_topic_enable=False))
        assert "kept" in store.topics and not store.delete_markers
        await cluster.stop()

    asyncio.run(scenario())
