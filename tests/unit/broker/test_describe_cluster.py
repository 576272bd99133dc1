"""DescribeCluster and the KIP-848 group APIs against fake broker services: the live brokers on
the request's listener with their racks, the controller id (-1 when it is not among them), the
cluster operations only when asked, the refusals of other endpoint types, and UNSUPPORTED_VERSION
for KIP-848 groups (Kafka 3.9's answers in ZooKeeper mode)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import consumer_group_describe, consumer_group_heartbeat, describe_cluster
from broker.handlers.authorized_operations import OMITTED
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.header import RequestHeader
from broker.protocol.registry import request_class


@dataclass
class _Broker:
    broker_id: int
    endpoints: dict[str, tuple[str, int]]
    rack: str | None

    def endpoint_for(self, listener: str) -> tuple[str, int] | None:
        return self.endpoints.get(listener)


def _services(controller_id: int) -> Any:
    brokers = {
        1: _Broker(1, {"PLAINTEXT": ("h1", 9091), "SSL": ("h1", 9191)}, "az-a"),
        2: _Broker(2, {"PLAINTEXT": ("h2", 9092)}, None),
        3: _Broker(3, {"SSL": ("h3", 9193)}, "az-c"),
    }
    cache = SimpleNamespace(live_brokers=lambda: brokers, controller_id=controller_id)
    return SimpleNamespace(metadata_cache=cache, cluster_id="c-id", authorizer=None)


def _handle(
    module: Any, api_key: ApiKey, version: int, fields: dict[str, Any], services: Any
) -> Any:
    header = RequestHeader(api_key=api_key, api_version=version, correlation_id=1, client_id=None)
    context = RequestContext(header, "127.0.0.1", "PLAINTEXT", services)
    request = adapter.build(request_class(api_key, version), fields)
    response = asyncio.run(module.handle(context, request))
    adapter.encode(response)  # every answer must encode at its version
    return response


def _describe(version: int, services: Any, **fields: Any) -> Any:
    values = {"include_cluster_authorized_operations": False, **fields}
    return _handle(describe_cluster, ApiKey.DESCRIBE_CLUSTER, version, values, services)


def test_brokers_on_the_request_listener_with_racks_and_the_controller() -> None:
    for version in (0, 1):
        response = _describe(version, _services(controller_id=2))
        assert response.error_code == ErrorCode.none
        assert response.cluster_id == "c-id"
        assert response.controller_id == 2
        assert [(b.broker_id, b.host, b.port, b.rack) for b in response.brokers] == [
            (1, "h1", 9091, "az-a"),
            (2, "h2", 9092, None),
        ]
        assert response.cluster_authorized_operations == OMITTED


def test_a_controller_not_listed_on_this_listener_is_minus_one() -> None:
    assert _describe(1, _services(controller_id=3)).controller_id == -1
    assert _describe(1, _services(controller_id=-1)).controller_id == -1


def test_cluster_operations_when_asked_without_an_authorizer_are_all_supported() -> None:
    response = _describe(1, _services(1), include_cluster_authorized_operations=True)
    # CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE
    assert response.cluster_authorized_operations == sum(1 << op for op in (5, 9, 10, 11, 12, 7, 8))


def test_other_endpoint_types_are_refused_as_kafka_brokers_do() -> None:
    mismatched = _describe(1, _services(1), endpoint_type=2)
    assert mismatched.error_code == ErrorCode.mismatched_endpoint_type
    assert mismatched.error_message == (
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type"
        " CONTROLLER"
    )
    assert mismatched.brokers == ()
    unknown = _describe(1, _services(1), endpoint_type=7)
    assert unknown.error_code == ErrorCode.unsupported_endpoint_type
    assert unknown.error_message == "Unsupported endpoint type 7"


def test_kip_848_heartbeat_is_unsupported() -> None:
    fields = {
        "group_id": "g",
        "member_id": "m",
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 300000,
        "subscribed_topic_names": ["t"],
        "server_assignor": None,
        "topic_partitions": [],
    }
    response = _handle(
        consumer_group_heartbeat, ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, fields, _services(1)
    )
    assert response.error_code == ErrorCode.unsupported_version
    assert response.member_epoch == 0


def test_kip_848_describe_answers_each_group_unsupported() -> None:
    fields = {"group_ids": ["a", "b"], "include_authorized_operations": True}
    response = _handle(
        consumer_group_describe, ApiKey.CONSUMER_GROUP_DESCRIBE, 0, fields, _services(1)
    )
    assert [(g.group_id, g.error_code) for g in response.groups] == [
        ("a", ErrorCode.unsupported_version),
        ("b", ErrorCode.unsupported_version),
    ]
