"""BrokerClient against a live broker: the exchanges a follower's fetcher will make (version
negotiation, Metadata, then Produce and Fetch of one batch, compared byte for byte)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from broker.handlers import build_registry
from broker.log.record_codec import SimpleRecord, build_batch
from broker.network.broker_client import BrokerClient, highest_common_version
from broker.protocol import adapter
from broker.protocol.registry import request_class
from tests.integration.conftest import ClusterFactory
from tests.integration.requests import (
    CREATE_TOPICS,
    FETCH,
    METADATA,
    PRODUCE,
    create_topics_request,
    fetch_request,
    metadata_request,
    produce_request,
    topic_spec,
)

API_VERSIONS = 18
NONE = 0
BROKER_ID = 1
SCENARIO_TIMEOUT_S = 120.0
LEADER_WAIT_S = 30.0
BASE_TIMESTAMP_MS = 1_700_000_000_000


def request(api_key: int, version: int, fields: dict[str, Any]) -> Any:
    return adapter.build(request_class(api_key, version), fields)


async def wait_for_leader_epoch(client: BrokerClient, topic: str) -> int:
    """The leader epoch of `topic`-0 once this broker reports itself its leader."""
    deadline = asyncio.get_running_loop().time() + LEADER_WAIT_S
    while True:
        response = await client.send(request(METADATA, 9, metadata_request([topic])))
        partitions = response.topics[0].partitions if response.topics else ()
        if partitions and partitions[0].leader_id == BROKER_ID:
            return int(partitions[0].leader_epoch)
        assert asyncio.get_running_loop().time() < deadline, f"no leader for {topic}-0"
        await asyncio.sleep(0.1)


async def negotiate_and_describe(client: BrokerClient, port: int) -> None:
    versions = await client.api_versions()
    assert versions[API_VERSIONS] == (0, 4)  # Kafka 3.9
    fetch_spec = build_registry().get(FETCH)
    assert fetch_spec is not None
    assert highest_common_version(fetch_spec, versions) == 17
    response = await client.send(request(METADATA, 9, metadata_request(None)))
    assert [(b.node_id, b.port) for b in response.brokers] == [(BROKER_ID, port)]
    assert response.controller_id == BROKER_ID  # so CreateTopics goes to this connection


async def create_topic(client: BrokerClient, topic: str) -> None:
    fields = create_topics_request([topic_spec(topic, partitions=1, replication_factor=1)])
    response = await client.send(request(CREATE_TOPICS, 7, fields))
    assert response.topics[0].error_code == NONE, response


async def produce_then_fetch(
    client: BrokerClient, topic: str, batch: bytes, record_count: int
) -> None:
    produced = await client.send(request(PRODUCE, 8, produce_request(topic, 0, batch, acks=1)))
    result = produced.responses[0].partition_responses[0]
    assert (result.error_code, result.base_offset) == (NONE, 0), result
    fetched = await client.send(request(FETCH, 12, fetch_request(topic, 0, 0)))
    partition = fetched.responses[0].partitions[0]
    assert (partition.error_code, partition.high_watermark) == (NONE, record_count), partition
    assert partition.records == batch


async def scenario(port: int) -> None:
    topic = f"broker-client-{uuid.uuid4().hex[:8]}"
    async with BrokerClient("127.0.0.1", port, "broker-client-test") as client:
        await negotiate_and_describe(client, port)
        await create_topic(client, topic)
        leader_epoch = await wait_for_leader_epoch(client, topic)
        # The leader stamps its epoch into the batch header (outside the CRC); build the batch
        # with that epoch and offset 0 so the fetched bytes must equal the produced ones.
        records = [SimpleRecord(b"key", b"value-%d" % n, (), BASE_TIMESTAMP_MS) for n in range(3)]
        batch = build_batch(records, base_offset=0, partition_leader_epoch=leader_epoch)
        await produce_then_fetch(client, topic, batch, len(records))


def test_broker_client_produces_and_fetches_a_batch_byte_for_byte(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(brokers=1)
    port = cluster.broker_port(BROKER_ID)
    asyncio.run(asyncio.wait_for(scenario(port), SCENARIO_TIMEOUT_S))
