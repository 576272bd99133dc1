"""What DescribeConfigs reports: each config's value, where it comes from, and its synonyms.

Synonyms follow Kafka's ConfigHelper. A broker config's are every layer (dynamic per-broker,
dynamic cluster default, static, Kafka's default) that sets the config or one of its synonyms
(`log.retention.minutes` / `.hours` for `log.retention.ms`), most important first, dropping
what comes before the config itself; the first names the source. A topic config's are its
override in /config/topics/<t>, if any, followed by the synonyms of the broker config that
supplies its default (`log.retention.ms` for `retention.ms`): so `retention.ms` lists no
broker layer unless `log.retention.ms` itself is set somewhere, as in Kafka. Its value is the
override, else the broker-level value the log runs with (hours and minutes applied).
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from broker.config.dynamic import DYNAMIC_CONFIGS, DynamicOverrides
from broker.config.kafka_config import BROKER_SYNONYMS, CONFIG_DEFS, KafkaConfig
from broker.config.protocol import ConfigSource
from broker.config.synonym import Synonym
from controller.topic_config_defs import TOPIC_CONFIGS

TOPIC_CONFIG_SOURCE = ConfigSource.DYNAMIC_TOPIC_CONFIG
DYNAMIC_BROKER_CONFIG_SOURCE = ConfigSource.DYNAMIC_BROKER_CONFIG
DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
STATIC_BROKER_CONFIG_SOURCE = ConfigSource.STATIC_BROKER_CONFIG
DEFAULT_CONFIG_SOURCE = ConfigSource.DEFAULT_CONFIG
# Kafka's ConfigType values (DescribeConfigs v3+), by ConfigDef.Type name.
_CONFIG_TYPE_CODES = {
    "BOOLEAN": 1,
    "STRING": 2,
    "INT": 3,
    "SHORT": 4,
    "LONG": 5,
    "DOUBLE": 6,
    "LIST": 7,
    "CLASS": 8,
    "PASSWORD": 9,
}
# Java prints a double in plain notation only within [10^-3, 10^7).
_JAVA_PLAIN_DOUBLE_RANGE = (1e-3, 1e7)


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    read_only: bool
    config_type: int
    synonyms: list[Synonym] = field(default_factory=list)

    @property
    def is_sensitive(self) -> bool:
        """Passwords and keys: described without their value, as Kafka does."""
        return self.config_type == _CONFIG_TYPE_CODES["PASSWORD"]


def entry_fields(entry: ConfigEntry) -> dict[str, Any]:
    """The fields DescribeConfigs and CreateTopics (v5+) both answer for a config."""
    return {
        "name": entry.name,
        "value": None if entry.is_sensitive else entry.value,
        "read_only": entry.read_only,
        "config_source": entry.source,
        "is_sensitive": entry.is_sensitive,
    }


def _text(value: object) -> str | None:
    """A value as Kafka's ConfigDef.convertToString writes it."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    if isinstance(value, float):
        return java_double_text(value)
    return str(value)


def java_double_text(value: float) -> str:
    """Java's Double.toString: plain within [10^-3, 10^7), else `d.dddE<n>`
    (1.7976931348623157E308 for Double.MAX_VALUE, where Python says 1.7976931348623157e+308)."""
    if math.isnan(value) or math.isinf(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    low, high = _JAVA_PLAIN_DOUBLE_RANGE
    if value == 0 or low <= abs(value) < high:
        return repr(value)  # the shortest digits, with ".0" for whole numbers, like Java
    sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    if not isinstance(exponent, int):  # "n", "N" or "F": NaN and infinities returned above
        raise ValueError(f"not a finite double: {value!r}")
    text = "".join(str(digit) for digit in digits)
    mantissa = f"{text[0]}.{text[1:] or '0'}"
    return f"{'-' if sign else ''}{mantissa}E{len(text) - 1 + exponent}"


def topic_entries(
    config: KafkaConfig, overrides: dict[str, str], dynamic: DynamicOverrides | None = None
) -> list[ConfigEntry]:
    dynamic = dynamic or DynamicOverrides()
    entries = []
    for name in sorted(TOPIC_CONFIGS):
        definition = TOPIC_CONFIGS[name]
        broker_name = definition.server_default
        synonyms = _broker_chain(config, dynamic, broker_name) if broker_name else []
        if synonyms:
            value: str | None = synonyms[0].value
        elif broker_name is not None:
            value = _text(config.with_synonyms(broker_name))
        else:
            value = None
        if value is None:
            value = definition.default
        if name in overrides:
            value = overrides[name]
            synonyms.insert(0, Synonym(name, value, TOPIC_CONFIG_SOURCE))
        source = synonyms[0].source if synonyms else DEFAULT_CONFIG_SOURCE
        code = _CONFIG_TYPE_CODES.get(definition.config_type.value, 0)
        entries.append(ConfigEntry(name, value, source, False, code, synonyms))
    return entries


_STATIC_DEFAULTS = {
    name: text
    for name, definition in CONFIG_DEFS.items()
    if (text := _text(definition.default)) is not None
}


def _broker_chain(config: KafkaConfig, dynamic: DynamicOverrides, name: str) -> list[Synonym]:
    names = [synonym for synonym, _ in BROKER_SYNONYMS.get(name, ((name, 1),))]
    layers: list[tuple[Mapping[str, str], int]] = [
        (dynamic.broker, DYNAMIC_BROKER_CONFIG_SOURCE),
        (dynamic.default, DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE),
        (config.originals, STATIC_BROKER_CONFIG_SOURCE),
        (_STATIC_DEFAULTS, DEFAULT_CONFIG_SOURCE),
    ]
    chain = [
        Synonym(synonym, layer[synonym], source)
        for layer, source in layers
        for synonym in names
        if synonym in layer
    ]
    # Kafka drops what precedes the config itself (log.retention.hours describes only itself).
    start = next((i for i, s in enumerate(chain) if s.name == name), len(chain))
    return chain[start:]


def _broker_entry(name: str, value: str | None, synonyms: list[Synonym]) -> ConfigEntry:
    source = synonyms[0].source if synonyms else DEFAULT_CONFIG_SOURCE
    definition = CONFIG_DEFS.get(name)
    code = 0 if definition is None else _CONFIG_TYPE_CODES[definition.config_type]
    return ConfigEntry(name, value, source, name not in DYNAMIC_CONFIGS, code, synonyms)


def broker_entries(
    config: KafkaConfig, dynamic: DynamicOverrides | None = None
) -> list[ConfigEntry]:
    """Every config of this broker with the value it runs with (`config` is the effective
    one; its `originals` are the static settings)."""
    dynamic = dynamic or DynamicOverrides()
    return [
        _broker_entry(name, _text(config[name]), _broker_chain(config, dynamic, name))
        for name, definition in sorted(CONFIG_DEFS.items())
        if definition.described
    ]


def cluster_default_entries(config: KafkaConfig, dynamic: DynamicOverrides) -> list[ConfigEntry]:
    """The resource name "": only the dynamic cluster-wide defaults, as Kafka answers."""
    entries = []
    for name, value in sorted(dynamic.default.items()):
        chain = _broker_chain(config, dynamic, name)
        synonyms = [s for s in chain if s.source == DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE]
        entries.append(_broker_entry(name, value, synonyms))
    return entries
