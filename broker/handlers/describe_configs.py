"""DescribeConfigs v0-v4; topics and this broker.

Topic configs show the override from /config/topics/<t> or the broker-level default it falls
back to, with its source (TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
STATIC_BROKER_CONFIG or DEFAULT_CONFIG) and, on request, the synonyms in precedence order.
A BROKER resource named by this broker's id lists all its configs the same way (read-only
unless dynamically updatable here); the name "" lists only the dynamic cluster-wide defaults,
as Kafka does. BROKER_LOGGER is not supported (INVALID_REQUEST).
v0 has no synonyms and answers `is_default` instead of a source: Kafka 2.8-3.9 never fill that
field in (their generated response leaves it false), and neither do we.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.config.entries import (
    ConfigEntry,
    broker_entries,
    cluster_default_entries,
    entry_fields,
    topic_entries,
)
from broker.config.protocol import ConfigResourceType
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    synonyms = bool(getattr(request, "include_synonyms", False))
    results = [await _describe(context, resource, synonyms) for resource in request.resources]
    cls = response_class(ApiKey.DESCRIBE_CONFIGS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "results": results})


async def _describe(context: RequestContext, resource: Any, synonyms: bool) -> dict[str, Any]:
    services = context.services
    if resource.resource_type == ConfigResourceType.TOPIC:
        if not services.metadata_cache.has_topic(resource.resource_name):
            return _error(resource, ErrorCode.unknown_topic_or_partition, "unknown topic")
        overrides = await services.kafka_zk.get_topic_configs(resource.resource_name)
        entries = topic_entries(services.config, overrides, services.dynamic_config.overrides)
    elif resource.resource_type == ConfigResourceType.BROKER:
        dynamic = services.dynamic_config.overrides
        if resource.resource_name == "":
            entries = cluster_default_entries(services.config, dynamic)
        elif resource.resource_name == str(services.broker_id):
            entries = broker_entries(services.config, dynamic)
        else:
            message = (
                f"Unexpected broker id, expected {services.broker_id} or empty string, but"
                f" received {resource.resource_name}"
            )
            return _error(resource, ErrorCode.invalid_request, message)
    else:
        return _error(resource, ErrorCode.invalid_request, "unsupported resource type")
    wanted = resource.configuration_keys
    if wanted is not None:
        entries = [e for e in entries if e.name in set(wanted)]
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "resource_type": resource.resource_type,
        "resource_name": resource.resource_name,
        "configs": [_entry(e, synonyms) for e in entries],
    }


def _entry(entry: ConfigEntry, synonyms: bool) -> dict[str, Any]:
    return {
        **entry_fields(entry),
        "synonyms": [
            {"name": s.name, "value": None if entry.is_sensitive else s.value, "source": s.source}
            for s in (entry.synonyms if synonyms else [])
        ],
        "config_type": entry.config_type,
        "documentation": None,
    }


def _error(resource: Any, error: ErrorCode, message: str) -> dict[str, Any]:
    return {
        "error_code": error,
        "error_message": message,
        "resource_type": resource.resource_type,
        "resource_name": resource.resource_name,
        "configs": [],
    }
