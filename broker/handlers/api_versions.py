"""ApiVersions: v0-v4. Built from the registry, so advertised and implemented cannot drift.

v4 only lets a broker list supported features whose minimum version is 0 (KAFKA-17011); like
Kafka 3.9 in ZooKeeper mode, we list no supported features at any version. v3+ reports the
finalized features of /feature and its znode version as their epoch
(broker.cluster.finalized_features), as Kafka's ZooKeeper-mode brokers do.
"""

from __future__ import annotations

from typing import Any

from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import Registry, response_class


def _api_keys(registry: Registry) -> list[dict[str, int]]:
    return [
        {"api_key": s.api_key, "min_version": s.min_version, "max_version": s.max_version}
        for s in registry.all()
    ]


def unsupported_version_response(registry: Registry) -> Any:
    return adapter.build(
        ApiVersionsResponseV0,
        {"error_code": ErrorCode.unsupported_version, "api_keys": _api_keys(registry)},
    )


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.API_VERSIONS, context.api_version)
    finalized = context.services.finalized_features
    return adapter.build(
        cls,
        {
            "error_code": ErrorCode.none,
            "api_keys": _api_keys(context.services.registry),
            "throttle_time": 0,
            "finalized_features_epoch": finalized.epoch,
            # Kafka leaves out features finalized at level 0.
            "finalized_features": [
                {"name": name, "min_version_level": level, "max_version_level": level}
                for name, level in finalized.features.items()
                if level != 0
            ],
        },
    )
