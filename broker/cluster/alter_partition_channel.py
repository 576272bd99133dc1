"""AlterPartition to whichever broker is controller, ours or an Apache Kafka broker (Kafka's
NodeToControllerChannelManager for the "alter-partition" channel).

The controller is found in this broker's metadata view, as for ControlledShutdown
(controlled_shutdown.py), and reached on the inter-broker listener. One connection is kept
while the controller stays the same; its ApiVersions answer, asked once per connection, bounds
the version: the highest both sides serve, at most 1 when a topic has no id or the
inter-broker protocol predates topic ids (Kafka's AlterPartitionRequest.Builder). Members of
the new ISR go without broker epochs (-1) in v3, as a ZooKeeper-mode Kafka broker sends them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import uuid
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.broker_client import BrokerClient, BrokerClientError
from broker.network.sasl import SaslClientConfig
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import request_class
from broker.replication.alter_partition_manager import (
    AlterPartitionAnswer,
    AlterPartitionEntry,
    ControllerUnreachableError,
    PartitionAnswer,
)
from zk.cluster_watch import ClusterView
from zk.znodes import kafka_string_to_uuid, uuid_to_kafka_string

log = logging.getLogger(__name__)

LATEST_VERSION = 3
LAST_VERSION_WITHOUT_TOPIC_IDS = 1
FIRST_VERSION_WITH_TOPIC_IDS = 2
FIRST_VERSION_WITH_BROKER_EPOCHS = 3
FIRST_VERSION_WITH_RECOVERY_STATE = 1
NO_BROKER_EPOCH = -1
RECOVERED = 0

# How often a request in flight checks that its controller is still the controller.
CONTROLLER_CHECK_INTERVAL_S = 0.1

AddressOf = Callable[[int], tuple[str, int] | None]


def choose_version(advertised: dict[int, tuple[int, int]], use_topic_ids: bool) -> int:
    """The highest AlterPartition version both sides serve, within what the request can be."""
    theirs = advertised.get(int(ApiKey.ALTER_PARTITION))
    if theirs is None:
        raise ControllerUnreachableError("the controller does not serve AlterPartition")
    ours = LATEST_VERSION if use_topic_ids else LAST_VERSION_WITHOUT_TOPIC_IDS
    version = min(ours, theirs[1])
    if version < theirs[0]:
        raise ControllerUnreachableError(
            f"the controller serves AlterPartition v{theirs[0]}-v{theirs[1]}, we need v0-v{ours}"
        )
    return version


def build_request(
    broker_id: int, broker_epoch: int, entries: list[AlterPartitionEntry], version: int
) -> Any:
    by_topic: dict[str, list[AlterPartitionEntry]] = {}
    for entry in entries:
        by_topic.setdefault(entry.topic, []).append(entry)
    topics = []
    for topic, grouped in by_topic.items():
        data: dict[str, Any] = {"partitions": [_partition(e, version) for e in grouped]}
        if version >= FIRST_VERSION_WITH_TOPIC_IDS:
            topic_id = grouped[0].topic_id
            if topic_id is None:
                raise ValueError(f"AlterPartition v{version} needs the topic id of {topic}")
            data["topic_id"] = kafka_string_to_uuid(topic_id)
        else:
            data["topic_name"] = topic
        topics.append(data)
    return adapter.build(
        request_class(ApiKey.ALTER_PARTITION, version),
        {"broker_id": broker_id, "broker_epoch": broker_epoch, "topics": topics},
    )


def _partition(entry: AlterPartitionEntry, version: int) -> dict[str, Any]:
    data: dict[str, Any] = {
        "partition_index": entry.partition,
        "leader_epoch": entry.leader_epoch,
        "partition_epoch": entry.partition_epoch,
    }
    if version >= FIRST_VERSION_WITH_BROKER_EPOCHS:
        data["new_isr_with_epochs"] = [
            {"broker_id": member, "broker_epoch": NO_BROKER_EPOCH} for member in entry.isr
        ]
    else:
        data["new_isr"] = list(entry.isr)
    if version >= FIRST_VERSION_WITH_RECOVERY_STATE:
        data["leader_recovery_state"] = RECOVERED
    return data


def read_answer(
    response: Any, version: int, entries: list[AlterPartitionEntry]
) -> AlterPartitionAnswer:
    """The answer per (topic, partition); topics named by id map back through what was sent
    (an id this broker did not send is logged and left out)."""
    error_code = ErrorCode(response.error_code)
    if error_code != ErrorCode.none:
        return AlterPartitionAnswer(error_code)
    names_by_id = {e.topic_id: e.topic for e in entries if e.topic_id is not None}
    partitions: dict[tuple[str, int], PartitionAnswer] = {}
    for topic in response.topics:
        if version >= FIRST_VERSION_WITH_TOPIC_IDS:
            raw_id: uuid.UUID | None = topic.topic_id
            name = names_by_id.get(uuid_to_kafka_string(raw_id or uuid.UUID(int=0)))
        else:
            name = str(topic.topic_name)
        if not name:
            log.error("AlterPartition answer names a topic not asked for: %s", topic)
            continue
        for partition in topic.partitions:
            partitions[(name, int(partition.partition_index))] = PartitionAnswer(
                ErrorCode(partition.error_code),
                int(partition.leader_epoch),
                tuple(int(member) for member in partition.isr),
                int(partition.partition_epoch),
            )
    return AlterPartitionAnswer(ErrorCode.none, partitions)


class AlterPartitionChannel:
    """`AlterPartitionSender` over the network."""

    def __init__(
        self,
        broker_id: int,
        view: Callable[[], ClusterView],
        address_of: AddressOf,
        socket_timeout_ms: int,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslClientConfig | None = None,
    ) -> None:
        self._broker_id = broker_id
        self._view = view
        self._address_of = address_of
        self._socket_timeout_ms = socket_timeout_ms
        self._ssl_context = ssl_context
        self._sasl = sasl
        self._client: BrokerClient | None = None
        self._client_for: tuple[int, tuple[str, int]] | None = None
        self._versions: dict[int, tuple[int, int]] | None = None

    async def send(
        self, broker_epoch: int, entries: list[AlterPartitionEntry], use_topic_ids: bool
    ) -> AlterPartitionAnswer:
        controller_id = self._view().controller_id
        if controller_id is None:
            raise ControllerUnreachableError("no controller in the metadata view")
        address = self._address_of(controller_id)
        if address is None:
            raise ControllerUnreachableError(f"controller {controller_id} is not registered")
        client = await self._connect(controller_id, address)
        try:
            if self._versions is None:
                self._versions = await client.api_versions()
            version = choose_version(self._versions, use_topic_ids)
            request = build_request(self._broker_id, broker_epoch, entries, version)
            response = await self._send_unless_moved(client, request, controller_id)
        except BrokerClientError as error:
            await self._disconnect()
            raise ControllerUnreachableError(f"controller {controller_id}: {error}") from error
        answer = read_answer(response, version, entries)
        if answer.error_code == ErrorCode.not_controller:
            await self._disconnect()  # the next attempt asks the metadata view again
        return answer

    async def _send_unless_moved(
        self, client: BrokerClient, request: Any, controller_id: int
    ) -> Any:
        """The answer; ControllerUnreachableError as soon as the metadata view names another
        controller (a stopped or cut-off controller would hold the request until the socket
        timeout, and every ISR change of this broker with it)."""
        sending = asyncio.ensure_future(client.send(request))
        try:
            while True:
                done, _ = await asyncio.wait({sending}, timeout=CONTROLLER_CHECK_INTERVAL_S)
                if done:
                    return sending.result()
                if self._view().controller_id != controller_id:
                    raise ControllerUnreachableError(f"controller {controller_id} moved")
        finally:
            if not sending.done():
                sending.cancel()
                with contextlib.suppress(asyncio.CancelledError, BrokerClientError):
                    await sending
                await self._disconnect()

    async def _connect(self, controller_id: int, address: tuple[str, int]) -> BrokerClient:
        if self._client is not None and self._client_for == (controller_id, address):
            return self._client
        await self._disconnect()
        self._client = BrokerClient(
            address[0],
            address[1],
            client_id=f"broker-{self._broker_id}-alter-partition",
            connect_timeout_ms=self._socket_timeout_ms,
            request_timeout_ms=self._socket_timeout_ms,
            ssl_context=self._ssl_context,
            sasl=self._sasl,
        )
        self._client_for = (controller_id, address)
        return self._client

    async def _disconnect(self) -> None:
        client, self._client, self._client_for, self._versions = self._client, None, None, None
        if client is not None:
            await client.close()

    async def close(self) -> None:
        await self._disconnect()
