"""Topic-level config validation (CreateTopics configs, /config/topics/<t>).

Names, types and allowed values come from the one table of topic configs
(controller/topic_config_defs.py). Values arrive as strings (as on the wire and in ZooKeeper);
a bad name, type or range raises INVALID_CONFIG with a message in Kafka's ConfigException
shape ("Invalid value X for configuration Y: why").
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.errors import INVALID_CONFIG, INVALID_REQUEST, ApiError
from controller.topic_config_defs import TOPIC_CONFIGS, parse_config_value


def reject_null_values(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Kafka refuses null topic config values on create (INVALID_REQUEST), before any other
    config check."""
    null_names = [name for name, value in configs.items() if value is None]
    if null_names:
        raise ApiError(
            INVALID_REQUEST,
            f"Null value not supported for topic configs: {','.join(null_names)}",
        )
    return {name: value for name, value in configs.items() if value is not None}


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Validate topic configs and return them (without None values).

    Null values are INVALID_REQUEST; an unknown name, a value of the wrong type or out of range
    is INVALID_CONFIG.
    """
    validated = reject_null_values(configs)
    for name, value in validated.items():
        validate_topic_config(name, value)
    return validated


def validate_topic_config(name: str, value: str) -> None:
    definition = TOPIC_CONFIGS.get(name)
    if definition is None:
        raise ApiError(INVALID_CONFIG, f"Unknown topic config name: {name}")
    try:
        parsed = parse_config_value(definition.config_type, value)
    except ValueError as error:
        raise ApiError(INVALID_CONFIG, _invalid_value(name, value, str(error))) from None
    reason = definition.check(parsed) if definition.check is not None else None
    if reason is not None:
        raise ApiError(INVALID_CONFIG, _invalid_value(name, value, reason))


def _invalid_value(name: str, value: str, reason: str) -> str:
    return f"Invalid value {value} for configuration {name}: {reason}"
