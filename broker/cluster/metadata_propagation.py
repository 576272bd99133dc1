"""Wait until the other live brokers show the leaders of partitions just created.

Kafka's controller sends one UpdateMetadata to every broker at once, so when CreateTopics or
CreatePartitions is answered (the receiving broker's cache has the new leaders) the other
brokers have them within a moment. Ours each learn from ZooKeeper on their own, tens of
milliseconds apart and more on a loaded machine; a client that creates a topic and then asks
another broker may hear that the topic does not exist, and some do not ask again for minutes
(aiokafka's group leader then assigns nothing). So those answers also wait until every other
live broker's Metadata shows the leaders, within the request's timeout and at most
PEER_WAIT_MAX_S: a broker that cannot answer only delays the answer, never fails it.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from broker.network.broker_client import BrokerClient, BrokerClientError
from broker.network.sasl import SaslClientConfig
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import request_class

log = logging.getLogger(__name__)

PEER_WAIT_MAX_S = 5.0
PEER_POLL_INTERVAL_S = 0.02
# v4: the first version that can ask not to auto-create a topic.
METADATA_VERSION = 4


class Peers(Protocol):
    inter_broker_ssl: ssl.SSLContext | None
    inter_broker_sasl: SaslClientConfig | None

    def peer_broker_ids(self) -> list[int]: ...

    def inter_broker_address(self, broker_id: int) -> tuple[str, int] | None: ...


async def wait_for_peers(peers: Peers, partition_counts: dict[str, int], timeout_s: float) -> None:
    """Return once every other live broker answers each topic with at least its count of
    partitions, all led, or when the wait's bound passes (logged)."""
    if not partition_counts:
        return
    wait_s = min(timeout_s, PEER_WAIT_MAX_S)
    deadline = asyncio.get_running_loop().time() + wait_s
    broker_ids = peers.peer_broker_ids()
    shown = await asyncio.gather(
        *(_peer_shows(peers, broker_id, partition_counts, deadline) for broker_id in broker_ids)
    )
    behind = [broker_id for broker_id, ok in zip(broker_ids, shown, strict=True) if not ok]
    if behind:
        log.warning(
            "brokers %s did not show the leaders of %s within %.1f s",
            behind,
            sorted(partition_counts),
            wait_s,
        )


async def _peer_shows(
    peers: Peers, broker_id: int, partition_counts: dict[str, int], deadline: float
) -> bool:
    address = peers.inter_broker_address(broker_id)
    if address is None:
        return False
    remaining_s = deadline - asyncio.get_running_loop().time()
    timeout_ms = max(1, int(remaining_s * 1000))
    client = BrokerClient(
        address[0],
        address[1],
        client_id="metadata-propagation",
        connect_timeout_ms=timeout_ms,
        request_timeout_ms=timeout_ms,
        ssl_context=peers.inter_broker_ssl,
        sasl=peers.inter_broker_sasl,
    )
    try:
        return await asyncio.wait_for(_poll(client, partition_counts), remaining_s)
    except (BrokerClientError, TimeoutError):
        return False
    finally:
        await client.close()


async def _poll(client: BrokerClient, partition_counts: dict[str, int]) -> bool:
    request = adapter.build(
        request_class(ApiKey.METADATA, METADATA_VERSION),
        {
            "topics": [{"name": topic} for topic in sorted(partition_counts)],
            "allow_auto_topic_creation": False,
        },
    )
    while not _all_led(await client.send(request), partition_counts):
        await asyncio.sleep(PEER_POLL_INTERVAL_S)
    return True


def _all_led(response: Any, partition_counts: dict[str, int]) -> bool:
    answered = {topic.name: topic for topic in response.topics}
    for name, count in partition_counts.items():
        topic = answered.get(name)
        if topic is None or topic.error_code != ErrorCode.none or len(topic.partitions) < count:
            return False
        if any(p.error_code != ErrorCode.none or p.leader_id < 0 for p in topic.partitions):
            return False
    return True
