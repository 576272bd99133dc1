"""The AlterPartition, AllocateProducerIds and Envelope handlers, on a controller over the fake
ZooKeeper: requests as a Kafka broker encodes them (each AlterPartition version, topics by name
before v2 and by id from v2), answers that encode and decode again at the request's version."""

from __future__ import annotations

import asyncio
import io
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from broker.handlers import allocate_producer_ids, alter_partition, envelope
from broker.network.context import RequestContext
from broker.network.errors import CloseConnectionError
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.header import RequestHeader
from broker.protocol.registry import request_class, response_class
from controller.controller import Controller
from tests.unit.controller.fake_zk import FakeZkStore
from tests.unit.controller.harness import add_topic, start_cluster, state
from zk.znodes import TopicAssignment, kafka_string_to_uuid

TOPIC_ID_STRING = "AAAAAAAAAAAAAAAAAAAAAQ"
TOPIC_ID = kafka_string_to_uuid(TOPIC_ID_STRING)


def _context(controller: Controller, api_key: ApiKey, version: int) -> RequestContext:
    header = RequestHeader(api_key=api_key, api_version=version, correlation_id=7, client_id="c")
    services = SimpleNamespace(controller=controller, authorizer=None)
    return RequestContext(header, "127.0.0.1", "PLAINTEXT", services)  # type: ignore[arg-type]


def _round_trip(entity: Any) -> Any:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    decoded, size = entity_reader(type(entity))(memoryview(buffer.getvalue()), 0)
    assert size == len(buffer.getvalue())
    return decoded


def _alter_partition_request(version: int, broker_epoch: int, isr: list[int]) -> Any:
    partition: dict[str, Any] = {"partition_index": 0, "leader_epoch": 2, "partition_epoch": 0}
    if version >= 3:
        partition["new_isr_with_epochs"] = [{"broker_id": b, "broker_epoch": -1} for b in isr]
    else:
        partition["new_isr"] = isr
    if version >= 1:
        partition["leader_recovery_state"] = 0
    topic: dict[str, Any] = {"partitions": [partition]}
    if version >= 2:
        topic["topic_id"] = TOPIC_ID
    else:
        topic["topic_name"] = "t"
    request = adapter.build(
        request_class(ApiKey.ALTER_PARTITION, version),
        {"broker_id": 1, "broker_epoch": broker_epoch, "topics": [topic]},
    )
    return _round_trip(request)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_alter_partition_each_version_shrinks_the_isr(version: int) -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        add_topic(store, "t", {0: [1, 2, 3]}, {0: state(1, [1, 2, 3], leader_epoch=2)})
        # kio reads the all-zero id as None: a real one.
        store.topics["t"] = TopicAssignment(TOPIC_ID_STRING, store.topics["t"].partitions)
        cluster = await start_cluster(store, [1, 2, 3])
        active = cluster.active()
        request = _alter_partition_request(version, store.broker_epochs[1], [1, 2])
        context = _context(active, ApiKey.ALTER_PARTITION, version)
        response = _round_trip(await alter_partition.handle(context, request))
        expected_class: Any = response_class(ApiKey.ALTER_PARTITION, version)
        assert type(response) is expected_class
        assert response.error_code == ErrorCode.none
        [topic] = response.topics
        if version >= 2:
            assert topic.topic_id == TOPIC_ID
        else:
            assert topic.topic_name == "t"
        [partition] = topic.partitions
        assert partition.error_code == ErrorCode.none
        assert (partition.leader_id, partition.leader_epoch) == (1, 2)
        assert (list(partition.isr), partition.partition_epoch) == ([1, 2], 1)
        assert store.partition_states[("t", 0)][0].isr == [1, 2]
        # A request from another broker: NOT_CONTROLLER at the top, as Kafka's brokers answer.
        other = next(c for c in cluster.controllers if c is not active)
        refused = await alter_partition.handle(
            _context(other, ApiKey.ALTER_PARTITION, version), request
        )
        assert _round_trip(refused).error_code == ErrorCode.not_controller
        await cluster.stop()

    asyncio.run(scenario())


def test_alter_partition_unknown_topic_id_is_answered_with_the_id_asked_for() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2])
        active = cluster.active()
        unknown = uuid.UUID(int=5)
        request = adapter.build(
            request_class(ApiKey.ALTER_PARTITION, 3),
            {
                "broker_id": 1,
                "broker_epoch": store.broker_epochs[1],
                "topics": [
                    {
                        "topic_id": unknown,
                        "partitions": [
                            {
                                "partition_index": 3,
                                "leader_epoch": 0,
                                "new_isr_with_epochs": [{"broker_id": 1}],
                                "partition_epoch": 0,
                            }
                        ],
                    }
                ],
            },
        )
        response = await alter_partition.handle(
            _context(active, ApiKey.ALTER_PARTITION, 3), request
        )
        [topic] = _round_trip(response).topics
        assert topic.topic_id == unknown
        assert [(p.partition_index, p.error_code) for p in topic.partitions] == [
            (3, ErrorCode.unknown_topic_id)
        ]
        await cluster.stop()

    asyncio.run(scenario())


def test_allocate_producer_ids_answers_consecutive_blocks_and_refusals() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2])
        active = cluster.active()
        context = _context(active, ApiKey.ALLOCATE_PRODUCER_IDS, 0)
        cls = request_class(ApiKey.ALLOCATE_PRODUCER_IDS, 0)

        async def ask(broker_id: int, broker_epoch: int) -> tuple[int, int, int]:
            request = cls(broker_id=broker_id, broker_epoch=broker_epoch)
            response = _round_trip(await allocate_producer_ids.handle(context, request))
            return (response.error_code, response.producer_id_start, response.producer_id_len)

        epoch = store.broker_epochs[2]
        assert await ask(2, epoch) == (ErrorCode.none, 0, 1000)
        assert await ask(2, epoch) == (ErrorCode.none, 1000, 1000)
        assert await ask(2, epoch - 1) == (ErrorCode.stale_broker_epoch, 0, 0)
        assert await ask(7, 1) == (ErrorCode.broker_id_not_registered, 0, 0)
        await cluster.stop()

    asyncio.run(scenario())


def test_envelope_closes_the_connection_as_kafka_without_forwarding_does() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1])
        context = _context(cluster.active(), ApiKey.ENVELOPE, 0)
        with pytest.raises(CloseConnectionError, match="forwarding is not enabled"):
            await envelope.handle(context, object())
        await cluster.stop()

    asyncio.run(scenario())
