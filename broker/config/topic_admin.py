"""Changing topic configs for AlterConfigs and IncrementalAlterConfigs.

As in ZooKeeper-mode Kafka, the broker that receives the request validates the new config
set, writes /config/topics/<t> and a /config/changes notification; every broker (itself
included) then re-reads the topic's config.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from broker.config.dynamic import alter_broker_config
from broker.config.protocol import AlterConfigOp, ConfigResourceType
from controller.errors import INVALID_CONFIG, INVALID_REQUEST, ApiError
from controller.topic_config_defs import TOPIC_CONFIGS, ConfigType
from controller.topic_configs import validate_topic_configs

if TYPE_CHECKING:
    from broker.services import HandlerServices

ConfigChange = Callable[[dict[str, str]], dict[str, str | None]]


@dataclass(frozen=True, slots=True)
class AlterResult:
    error_code: ErrorCode
    message: str | None = None

    def response(self, resource: Any) -> dict[str, Any]:
        return {
            "error_code": self.error_code,
            "error_message": self.message,
            "resource_type": resource.resource_type,
            "resource_name": resource.resource_name,
        }


async def alter_resource(
    services: HandlerServices, resource: Any, change: ConfigChange, validate_only: bool
) -> AlterResult:
    if resource.resource_type == ConfigResourceType.BROKER:
        error_code, message = await alter_broker_config(
            services.zk_client,
            services.dynamic_config.static,
            resource.resource_name,
            change,
            validate_only,
        )
        return AlterResult(error_code, message)
    if resource.resource_type != ConfigResourceType.TOPIC:
        return AlterResult(ErrorCode.invalid_request, "unsupported resource type")
    topic = resource.resource_name
    if not services.metadata_cache.has_topic(topic):
        return AlterResult(ErrorCode.unknown_topic_or_partition, f"unknown topic {topic}")
    current = await services.kafka_zk.get_topic_configs(topic)
    try:
        updated = validate_topic_configs(change(dict(current)))
    except ApiError as error:
        return AlterResult(error.error_code, error.message)
    if not validate_only:
        await services.kafka_zk.change_topic_configs(topic, updated)
    return AlterResult(ErrorCode.none)


async def alter_resources(
    services: HandlerServices,
    resources: Sequence[Any],
    change_for: Callable[[Sequence[Any]], ConfigChange],
    validate_only: bool,
) -> list[dict[str, Any]]:
    """One response entry per resource; `change_for(resource.configs)` says how to change."""
    responses = []
    for resource in resources:
        result = await alter_resource(
            services, resource, change_for(resource.configs), validate_only
        )
        responses.append(result.response(resource))
    return responses


def replace_all(configs: Sequence[Any]) -> ConfigChange:
    """AlterConfigs: the request's set replaces every override."""
    return lambda _current: {c.name: c.value for c in configs}


def apply_operations(configs: Sequence[Any]) -> ConfigChange:
    """IncrementalAlterConfigs: SET, DELETE, APPEND or SUBTRACT one config at a time."""

    def change(current: dict[str, str]) -> dict[str, str | None]:
        updated: dict[str, str | None] = dict(current)
        for config in configs:
            _apply(updated, config.name, config.config_operation, config.value)
        return updated

    return change


def _apply(configs: dict[str, str | None], name: str, operation: int, value: str | None) -> None:
    if operation == AlterConfigOp.SET:
        configs[name] = value
    elif operation == AlterConfigOp.DELETE:
        configs.pop(name, None)
    elif operation in (AlterConfigOp.APPEND, AlterConfigOp.SUBTRACT):
        definition = TOPIC_CONFIGS.get(name)
        if definition is None or definition.config_type is not ConfigType.LIST:
            raise ApiError(INVALID_CONFIG, f"Config value append is not allowed for config {name}")
        # Kafka starts from the topic's own value, else from the config's static default
        # (not the broker's `server_default`): APPEND compact to an unset cleanup.policy
        # gives "delete,compact".
        current = configs.get(name)
        items = [i for i in (definition.default if current is None else current).split(",") if i]
        given = [i.strip() for i in (value or "").split(",") if i.strip()]
        if operation == AlterConfigOp.APPEND:
            items += [i for i in given if i not in items]
        else:
            items = [i for i in items if i not in given]
        configs[name] = ",".join(items)
    else:
        raise ApiError(INVALID_REQUEST, f"unknown config operation {operation}")
