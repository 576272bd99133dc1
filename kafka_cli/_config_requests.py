"""The requests kafka-configs sends: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
DescribeClientQuotas, AlterClientQuotas and Metadata (for the broker and topic lists), through
the project's own broker client.

Neither librdkafka nor kafka-python accepts the resource name "" that Kafka uses for the
cluster-wide broker defaults (`--entity-default`), so the tool speaks the protocol itself. As
Kafka's admin client does, a request about one broker goes to that broker; the rest go to any
broker that answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from broker.config.protocol import ConfigResourceType
from broker.config.synonym import Synonym
from broker.network.broker_client import BrokerClient, BrokerClientError
from broker.protocol.api_keys import ApiKey
from kafka_cli._cluster_requests import build_request, parse_address
from kafka_cli.common import ToolError

# Versions every Kafka since 2.3 serves; v1 of DescribeConfigs is the first with synonyms.
METADATA = (ApiKey.METADATA, 1)
DESCRIBE_CONFIGS = (ApiKey.DESCRIBE_CONFIGS, 1)
ALTER_CONFIGS = (ApiKey.ALTER_CONFIGS, 0)
INCREMENTAL_ALTER_CONFIGS = (ApiKey.INCREMENTAL_ALTER_CONFIGS, 0)
DESCRIBE_CLIENT_QUOTAS = (ApiKey.DESCRIBE_CLIENT_QUOTAS, 0)
ALTER_CLIENT_QUOTAS = (ApiKey.ALTER_CLIENT_QUOTAS, 0)
REQUEST_TIMEOUT_MS = 60_000
CLIENT_ID = "kafka-configs"


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    value: str | None
    source: int
    sensitive: bool
    synonyms: tuple[Synonym, ...]


class ConfigAdmin:
    """Connections to the cluster's brokers, opened on first use."""

    def __init__(self, bootstrap: str) -> None:
        self._bootstrap = [parse_address(s) for s in bootstrap.split(",") if s.strip()]
        self._clients: dict[int, BrokerClient] = {}
        self._any: BrokerClient | None = None
        self.brokers: dict[int, tuple[str, int]] = {}
        self.topics: list[str] = []

    async def close(self) -> None:
        for client in [*self._clients.values(), *([self._any] if self._any else [])]:
            await client.close()

    async def load_cluster(self) -> None:
        """Brokers and topics, from the first bootstrap server that answers Metadata."""
        failures = []
        for host, port in self._bootstrap:
            client = BrokerClient(host, port, CLIENT_ID, request_timeout_ms=REQUEST_TIMEOUT_MS)
            try:
                response = await client.send(_request(METADATA, {"topics": None}))
            except BrokerClientError as error:
                failures.append(f"{host}:{port}: {error}")
                await client.close()
                continue
            self._any = client
            self.brokers = {int(b.node_id): (b.host, int(b.port)) for b in response.brokers}
            self.topics = sorted(t.name for t in response.topics)
            return
        raise ToolError(f"Could not reach any bootstrap server ({'; '.join(failures)})")

    def _client_for(self, resource_type: int, name: str) -> BrokerClient:
        if resource_type != ConfigResourceType.BROKER or not name:
            if self._any is None:
                raise ToolError("internal error: no connection to the cluster yet")
            return self._any
        broker_id = int(name)
        if broker_id not in self.brokers:
            raise ToolError(f"Broker {broker_id} is not in the cluster")
        if broker_id not in self._clients:
            host, port = self.brokers[broker_id]
            self._clients[broker_id] = BrokerClient(
                host, port, CLIENT_ID, request_timeout_ms=REQUEST_TIMEOUT_MS
            )
        return self._clients[broker_id]

    async def _send(self, resource_type: int, name: str, request: Any) -> Any:
        try:
            return await self._client_for(resource_type, name).send(request)
        except BrokerClientError as error:
            raise ToolError(f"request to the cluster failed: {error}") from error

    async def describe(self, resource_type: int, name: str) -> list[Entry]:
        resource = {"resource_type": resource_type, "resource_name": name}
        fields = {"resources": [{**resource, "configuration_keys": None}], "include_synonyms": True}
        response = await self._send(resource_type, name, _request(DESCRIBE_CONFIGS, fields))
        (result,) = response.results
        _check(result.error_code, result.error_message)
        return [_entry(config) for config in result.configs]

    async def alter(self, resource_type: int, name: str, configs: dict[str, str]) -> None:
        """AlterConfigs: `configs` becomes the whole set of the entity's dynamic configs."""
        entries = [{"name": key, "value": value} for key, value in configs.items()]
        resource = {"resource_type": resource_type, "resource_name": name, "configs": entries}
        fields = {"resources": [resource], "validate_only": False}
        response = await self._send(resource_type, name, _request(ALTER_CONFIGS, fields))
        (result,) = response.responses
        _check(result.error_code, result.error_message)

    async def alter_incrementally(
        self, resource_type: int, name: str, operations: list[tuple[str, int, str | None]]
    ) -> None:
        entries = [
            {"name": key, "config_operation": operation, "value": value}
            for key, operation, value in operations
        ]
        resource = {"resource_type": resource_type, "resource_name": name, "configs": entries}
        fields = {"resources": [resource], "validate_only": False}
        request = _request(INCREMENTAL_ALTER_CONFIGS, fields)
        response = await self._send(resource_type, name, request)
        (result,) = response.responses
        _check(result.error_code, result.error_message)

    async def describe_client_quotas(
        self, components: list[tuple[str, int, str | None]]
    ) -> list[tuple[dict[str, str | None], dict[str, float]]]:
        """Strict DescribeClientQuotas: (entity type, match type, match) components; each
        entity found (type -> name, None for the default) with its quota values."""
        fields = {
            "components": [
                {"entity_type": entity_type, "match_type": match_type, "match": match}
                for entity_type, match_type, match in components
            ],
            "strict": True,
        }
        response = await self._send(-1, "", _request(DESCRIBE_CLIENT_QUOTAS, fields))
        _check(response.error_code, response.error_message)
        return [
            (
                {e.entity_type: e.entity_name for e in entry.entity},
                {v.key: float(v.value) for v in entry.values},
            )
            for entry in response.entries or ()
        ]

    async def alter_client_quotas(
        self, entity: dict[str, str | None], ops: list[tuple[str, float | None]]
    ) -> None:
        fields = {
            "entries": [
                {
                    "entity": [
                        {"entity_type": entity_type, "entity_name": name}
                        for entity_type, name in entity.items()
                    ],
                    "ops": [
                        {"key": key, "value": value or 0.0, "remove": value is None}
                        for key, value in ops
                    ],
                }
            ],
            "validate_only": False,
        }
        response = await self._send(-1, "", _request(ALTER_CLIENT_QUOTAS, fields))
        for entry in response.entries:
            _check(entry.error_code, entry.error_message)


def _request(api: tuple[int, int], fields: dict[str, Any]) -> Any:
    return build_request(*api, fields)


def _check(error_code: ErrorCode, message: str | None) -> None:
    if error_code != ErrorCode.none:
        raise ToolError(message or error_code.name.upper())


def _entry(config: Any) -> Entry:
    synonyms = tuple(Synonym(s.name, s.value, int(s.source)) for s in config.synonyms)
    return Entry(
        config.name, config.value, int(config.config_source), bool(config.is_sensitive), synonyms
    )
