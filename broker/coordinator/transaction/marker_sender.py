"""Writing a transaction's markers to every partition it touched (Kafka's
TransactionMarkerChannelManager): one WriteTxnMarkers request per partition leader, retried
until every partition has its marker, across leader changes.

As in Kafka: retriable errors (no leader yet, not enough replicas, a timeout, a storage
error) are retried after a back-off; a partition whose topic is gone, or whose log cannot hold
markers, is dropped; a stale producer or coordinator epoch means the transaction was already
ended by someone newer, so sending stops; and so it does when this broker stops coordinating
the transactional id (the next coordinator finishes the transaction after loading it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from broker.network.broker_client import BrokerClient, BrokerClientError
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import request_class

if TYPE_CHECKING:
    from broker.cluster.metadata_cache import MetadataCache
    from broker.services import CurrentConfig, PeerBrokers

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_VERSION = 1
RETRY_BACKOFF_S = 0.1
MAX_RETRY_BACKOFF_S = 1.0
MAX_CONNECTIONS_PER_BROKER = 4

TopicPartition = tuple[str, int]

_DROPPED = frozenset({ErrorCode.unsupported_for_message_format, ErrorCode.unsupported_version})
_ENDED_ELSEWHERE = frozenset(
    {ErrorCode.invalid_producer_epoch, ErrorCode.transaction_coordinator_fenced}
)


@dataclass(frozen=True, slots=True)
class TxnEnd:
    """What every partition's marker says."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


class _Connections:
    """Idle connections to one broker, reused from one marker request to the next (Kafka keeps
    one channel per broker; a client here carries one request at a time, so markers of
    concurrent transactions use up to MAX_CONNECTIONS_PER_BROKER)."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.idle: list[BrokerClient] = []
        self.slots = asyncio.Semaphore(MAX_CONNECTIONS_PER_BROKER)


class TxnMarkerSender:
    def __init__(
        self,
        current_config: CurrentConfig,
        broker_id: int,
        metadata_cache: MetadataCache,
        peers: PeerBrokers,
    ) -> None:
        self._current_config = current_config
        self._broker_id = broker_id
        self._metadata_cache = metadata_cache
        self._peers = peers
        self._connections: dict[int, _Connections] = {}
        # The sends (one per transaction) with a partition whose leader is not live: Kafka's
        # marker channel queues those for the "unknown destination".
        self._awaiting_leader: set[object] = set()

    def transactions_awaiting_leader(self) -> int:
        return len(self._awaiting_leader)

    async def close(self) -> None:
        connections, self._connections = self._connections, {}
        for pool in connections.values():
            for client in pool.idle:
                await client.close()

    async def send(
        self,
        end: TxnEnd,
        partitions: Sequence[TopicPartition],
        still_coordinator: Callable[[], bool],
    ) -> bool:
        """True once every partition has the marker (or was dropped); False if sending
        stopped (no longer the coordinator, or the transaction was ended by a newer one)."""
        token = object()
        try:
            return await self._send(end, set(partitions), still_coordinator, token)
        finally:
            self._awaiting_leader.discard(token)

    async def _send(
        self,
        end: TxnEnd,
        pending: set[TopicPartition],
        still_coordinator: Callable[[], bool],
        token: object,
    ) -> bool:
        backoff_s = RETRY_BACKOFF_S
        while pending:
            if not still_coordinator():
                return False
            by_leader = self._by_leader(pending)
            if sum(map(len, by_leader.values())) < len(pending):
                self._awaiting_leader.add(token)
            else:
                self._awaiting_leader.discard(token)
            outcomes = await asyncio.gather(
                *(self._send_to(leader, end, tps) for leader, tps in by_leader.items())
            )
            errors = {tp: error for outcome in outcomes for tp, error in outcome.items()}
            if any(error in _ENDED_ELSEWHERE for error in errors.values()):
                log.info(
                    "markers of producer %d stopped: %s", end.producer_id, set(errors.values())
                )
                return False
            pending = {
                tp
                for tp in pending
                if errors.get(tp, ErrorCode.unknown_server_error) not in (ErrorCode.none, *_DROPPED)
                and self._topic_exists(tp[0])
            }
            if pending:
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, MAX_RETRY_BACKOFF_S)
        return True

    def _by_leader(self, partitions: set[TopicPartition]) -> dict[int, list[TopicPartition]]:
        by_leader: dict[int, list[TopicPartition]] = {}
        cache = self._metadata_cache
        for topic, partition in sorted(partitions):
            leader, _ = cache.leader_and_epoch(topic, partition)
            if cache.live_broker(leader) is not None:
                by_leader.setdefault(leader, []).append((topic, partition))
        return by_leader

    def _topic_exists(self, topic: str) -> bool:
        return self._metadata_cache.partitions(topic) is not None

    async def _send_to(
        self, leader: int, end: TxnEnd, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        address = self._peers.inter_broker_address(leader)
        if address is None:
            return {}
        request = adapter.build(
            request_class(ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION),
            {"markers": [_marker(end, partitions)]},
        )
        pool = self._connections.get(leader)
        if pool is None or pool.address != address:  # a broker back on another address
            stale = pool.idle if pool is not None else []
            pool = self._connections[leader] = _Connections(address)
            for client in stale:
                await client.close()
        async with pool.slots:
            client = pool.idle.pop() if pool.idle else self._client(address)
            try:
                response = await client.send(request)
            except BrokerClientError as error:
                log.info("markers to broker %d: %s", leader, error)
                await client.close()
                return {}
            pool.idle.append(client)
        return {
            (topic.name, int(p.partition_index)): ErrorCode(p.error_code)
            for marker in response.markers
            for topic in marker.topics
            for p in topic.partitions
        }

    def _client(self, address: tuple[str, int]) -> BrokerClient:
        timeout_ms = self._current_config.value["request.timeout.ms"]
        return BrokerClient(
            address[0],
            address[1],
            client_id=f"broker-{self._broker_id}-txn-markers",
            connect_timeout_ms=timeout_ms,
            request_timeout_ms=timeout_ms + 5_000,  # the leader waits for its ISR first
            ssl_context=self._peers.inter_broker_ssl,
            sasl=self._peers.inter_broker_sasl,
        )


def _marker(end: TxnEnd, partitions: list[TopicPartition]) -> dict[str, Any]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return {
        "producer_id": end.producer_id,
        "producer_epoch": end.producer_epoch,
        "transaction_result": end.commit,
        "topics": [
            {"name": topic, "partition_indexes": indexes} for topic, indexes in by_topic.items()
        ],
        "coordinator_epoch": end.coordinator_epoch,
    }
