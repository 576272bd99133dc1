"""The controller hands its request rounds to the channel (controller/broker_requests.py through
`Controller(channel=...)`): after its failover, after a broker dies, after a topic deletion, and
it closes the channel when it resigns."""

from __future__ import annotations

import asyncio
import random

from controller.broker_requests import (
    EPOCH_DURING_DELETE,
    LEADER_DURING_DELETE,
    AnsweredRequest,
    AnswerHandler,
    BrokerAnswer,
    RequestRound,
)
from controller.config import ControllerConfig
from controller.controller import Controller
from controller.errors import NONE
from tests.unit.controller.fake_zk import FakeKafkaZk, FakeZkStore
from tests.unit.controller.harness import Cluster, add_topic, no_sleep, state, wait_until


class RecordingChannel:
    """Shared by every controller of a test: each hands it its answer handler, and `answer`
    gives an answer to all of them (only the active one acts on it)."""

    def __init__(self) -> None:
        self.rounds: list[RequestRound] = []
        self.closed = 0
        self.handlers: list[AnswerHandler] = []

    def send(self, requests: RequestRound) -> None:
        self.rounds.append(requests)

    def close_all(self) -> None:
        self.closed += 1

    def set_answer_handler(self, handler: AnswerHandler | None) -> None:
        if handler is not None:
            self.handlers.append(handler)

    def answer(self, answer: BrokerAnswer) -> None:
        for handler in self.handlers:
            handler(answer)


async def start(store: FakeZkStore, broker_ids: list[int]) -> tuple[Cluster, RecordingChannel]:
    """Brokers in order (the first wins), each controller with the same recording channel."""
    channel = RecordingChannel()
    cluster = Cluster(store, [], {})
    for broker_id in broker_ids:
        kafka_zk = FakeKafkaZk(store)
        controller = Controller(
            kafka_zk,
            broker_id,
            ControllerConfig(),
            rng=random.Random(broker_id),
            sleep=no_sleep,
            channel=channel,
        )
        store.register_broker(broker_id, kafka_zk.session_id)
        cluster.controllers.append(controller)
        cluster.sessions[broker_id] = kafka_zk
    for controller in cluster.controllers:
        await controller.start()
    await wait_until(lambda: any(c.is_active for c in cluster.controllers), "an election")
    await cluster.settle()
    return cluster, channel


def test_failover_sends_every_broker_all_metadata_and_its_leader_and_isr() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2], 1: [2, 3]}, {0: state(1, [1, 2]), 1: state(2, [2, 3])})
        cluster, channel = await start(store, [1, 2, 3])
        [failover] = channel.rounds
        assert (failover.controller_id, failover.controller_epoch) == (1, 1)
        assert [b.broker_id for b in failover.live_brokers] == [1, 2, 3]
        sent = {r.broker_id: r for r in failover.requests}
        assert sorted(sent) == [1, 2, 3]
        for broker_id, requests in sent.items():
            assert requests.broker_epoch == store.broker_epochs[broker_id]
            assert requests.update_metadata is not None
            assert sorted(i.key for i in requests.update_metadata) == [("t", 0), ("t", 1)]
        assert [p.info.key for p in sent[3].leader_and_isr] == [("t", 1)]
        await cluster.stop()

    asyncio.run(scenario())


def test_a_dead_leader_moves_and_the_survivors_are_told() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [3, 2]}, {0: state(3, [3, 2], leader_epoch=4)})
        cluster, channel = await start(store, [1, 2, 3])
        channel.rounds.clear()
        store.kill_broker(3)
        await cluster.settle()
        [after] = channel.rounds
        assert [b.broker_id for b in after.live_brokers] == [1, 2]
        sent = {r.broker_id: r for r in after.requests}
        assert sorted(sent) == [1, 2]
        [moved] = sent[2].leader_and_isr
        assert (moved.info.leader, moved.info.leader_epoch, moved.info.isr) == (2, 5, (2,))
        assert moved.info.offline_replicas == (3,)
        assert not sent[1].leader_and_isr  # not a replica
        await cluster.stop()

    asyncio.run(scenario())


def test_a_deleted_topic_is_announced_gone_and_its_replicas_deleted() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "gone", {0: [1, 2]}, {0: state(1, [1, 2])})
        cluster, channel = await start(store, [1, 2])
        channel.rounds.clear()
        assert await cluster.active().delete_topics(["gone"]) == {"gone": NONE}
        await cluster.settle()
        stops = {
            r.broker_id: [(s.key, s.leader_epoch, s.delete_partition) for s in r.stop_replica]
            for rnd in channel.rounds
            for r in rnd.requests
            if r.stop_replica
        }
        assert stops == {
            1: [(("gone", 0), EPOCH_DURING_DELETE, True)],
            2: [(("gone", 0), EPOCH_DURING_DELETE, True)],
        }
        for broker_id in (1, 2):
            channel.answer(
                BrokerAnswer(
                    AnsweredRequest.STOP_REPLICA,
                    broker_id,
                    store.broker_epochs[broker_id],
                    cluster.active().epoch,
                    0,
                    (("gone", 0, 0),),
                )
            )
        await wait_until(lambda: "gone" not in store.topics, "topic znodes deleted")
        await cluster.settle()
        last = {r.broker_id: r for r in channel.rounds[-1].requests}
        for requests in last.values():
            assert requests.update_metadata is not None
            assert [i.leader for i in requests.update_metadata] == [LEADER_DURING_DELETE]
        await cluster.stop()

    asyncio.run(scenario())


def test_resigning_closes_the_channel_and_the_next_controller_sends_everything() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2]}, {0: state(1, [1, 2])})
        cluster, channel = await start(store, [1, 2])
        closed_before = channel.closed
        await cluster.controller(1).stop()
        await cluster.settle()
        assert channel.closed > closed_before
        await wait_until(lambda: cluster.controller(2).is_active, "broker 2 to take over")
        await cluster.settle()
        takeover = channel.rounds[-1]
        assert (takeover.controller_id, takeover.controller_epoch) == (2, 2)
        sent = {r.broker_id: r for r in takeover.requests}
        assert sent[2].update_metadata is not None and len(sent[2].update_metadata) == 1
        assert [p.info.key for p in sent[2].leader_and_isr] == [("t", 0)]
        await cluster.stop()

    asyncio.run(scenario())
