"""Requests to a cluster's brokers through the project's own broker client, for tools whose APIs
the client libraries do not offer (kafka-transactions: ListTransactions, DescribeTransactions,
DescribeProducers, WriteTxnMarkers). One connection per broker, opened on first use; the
cluster's brokers and partitions come from the first bootstrap server that answers Metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker.network.broker_client import BrokerClient, BrokerClientError
from broker.protocol import adapter
from broker.protocol.registry import request_class
from kafka_cli.common import ToolError

METADATA_VERSION = 1
REQUEST_TIMEOUT_MS = 60_000  # Kafka's admin client: default.api.timeout.ms


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]


def parse_address(server: str) -> tuple[str, int]:
    host, separator, port = server.strip().rpartition(":")
    if not separator or not host or not port.isdigit():
        raise ToolError(f"Invalid bootstrap server '{server}': expected host:port")
    return host.strip("[]"), int(port)


def build_request(api_key: int, version: int, fields: dict[str, Any]) -> Any:
    return adapter.build(request_class(api_key, version), fields)


class ClusterRequests:
    def __init__(self, bootstrap: str, client_id: str) -> None:
        self._bootstrap = [parse_address(s) for s in bootstrap.split(",") if s.strip()]
        self._client_id = client_id
        self._clients: dict[int, BrokerClient] = {}
        self.brokers: dict[int, tuple[str, int]] = {}
        self.partitions: dict[tuple[str, int], PartitionInfo] = {}

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()

    async def load_metadata(self) -> None:
        """Brokers, topics and partitions (internal topics included)."""
        failures = []
        for host, port in self._bootstrap:
            client = self._client(host, port)
            try:
                response = await client.send(build_request(3, METADATA_VERSION, {"topics": None}))
            except BrokerClientError as error:
                failures.append(f"{host}:{port}: {error}")
                continue
            finally:
                await client.close()
            self.brokers = {int(b.node_id): (b.host, int(b.port)) for b in response.brokers}
            self.partitions = {
                (t.name, int(p.partition_index)): PartitionInfo(
                    t.name, int(p.partition_index), int(p.leader_id), tuple(p.replica_nodes)
                )
                for t in response.topics
                for p in t.partitions
            }
            return
        raise ToolError(f"Could not reach any bootstrap server ({'; '.join(failures)})")

    def topic_partitions(self, topic: str) -> list[PartitionInfo]:
        found = [info for key, info in sorted(self.partitions.items()) if key[0] == topic]
        if not found:
            raise ToolError(f"Topic '{topic}' does not exist")
        return found

    def leader_of(self, topic: str, partition: int) -> int:
        info = self.partitions.get((topic, partition))
        if info is None:
            raise ToolError(f"Partition {topic}-{partition} does not exist")
        if info.leader < 0:
            raise ToolError(f"Partition {topic}-{partition} has no leader")
        return info.leader

    async def send(self, broker_id: int, request: Any) -> Any:
        if broker_id not in self.brokers:
            raise ToolError(f"Broker {broker_id} is not in the cluster")
        client = self._clients.get(broker_id)
        if client is None:
            client = self._clients[broker_id] = self._client(*self.brokers[broker_id])
        try:
            return await client.send(request)
        except BrokerClientError as error:
            raise ToolError(f"request to broker {broker_id} failed: {error}") from error

    async def send_to_any(self, request: Any) -> Any:
        """To the first broker that answers."""
        failures = []
        for broker_id in sorted(self.brokers):
            try:
                return await self.send(broker_id, request)
            except ToolError as error:
                failures.append(str(error))
        raise ToolError("; ".join(failures) or "no broker in the cluster")

    def _client(self, host: str, port: int) -> BrokerClient:
        return BrokerClient(host, port, self._client_id, request_timeout_ms=REQUEST_TIMEOUT_MS)
