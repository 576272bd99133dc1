"""What DescribeConfigs reports: each config's value, where it comes from, and its synonyms.

A topic config's value is its override in /config/topics/<t> if there is one, else the
broker-level setting that supplies its default (`log.retention.ms` for `retention.ms`...,
dynamic per-broker, then dynamic cluster default, then static), else Kafka's default. A
broker config's synonyms follow Kafka's ConfigHelper: every layer that sets the config or one
of its synonyms (`log.retention.minutes` / `.hours` for `log.retention.ms`), most important
first, starting at the config itself; the first names the source.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.config import CONFIG_DEFS, KafkaConfig
from broker.config_synonym import Synonym
from broker.dynamic_config import DYNAMIC_CONFIGS, DynamicOverrides
from controller.topic_configs import TOPIC_CONFIGS, ConfigType

# Kafka's ConfigSource values (DescribeConfigs v1+).
TOPIC_CONFIG_SOURCE = 1
DYNAMIC_BROKER_CONFIG_SOURCE = 2
DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE = 3
STATIC_BROKER_CONFIG_SOURCE = 4
DEFAULT_CONFIG_SOURCE = 5
# Kafka's ConfigType values (DescribeConfigs v3+).
_CONFIG_TYPE_CODES = {
    ConfigType.BOOLEAN: 1,
    ConfigType.STRING: 2,
    ConfigType.INT: 3,
    ConfigType.LONG: 5,
    ConfigType.DOUBLE: 6,
    ConfigType.LIST: 7,
}
_LONG_MAX = str(2**63 - 1)

# topic config -> (broker config that sets its default, Kafka's default if that is unset)
TOPIC_DEFAULTS: dict[str, tuple[str, str]] = {
    "cleanup.policy": ("log.cleanup.policy", "delete"),
    "compression.type": ("compression.type", "producer"),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms", "86400000"),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms", "60000"),
    "flush.messages": ("log.flush.interval.messages", _LONG_MAX),
    "flush.ms": ("log.flush.interval.ms", _LONG_MAX),
    "index.interval.bytes": ("log.index.interval.bytes", "4096"),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms", _LONG_MAX),
    "max.message.bytes": ("message.max.bytes", "1048588"),
    "message.downconversion.enable": ("log.message.downconversion.enable", "true"),
    "message.format.version": ("log.message.format.version", "3.0-IV1"),
    "message.timestamp.difference.max.ms": (
        "log.message.timestamp.difference.max.ms",
        _LONG_MAX,
    ),
    "message.timestamp.type": ("log.message.timestamp.type", "CreateTime"),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio", "0.5"),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms", "0"),
    "min.insync.replicas": ("min.insync.replicas", "1"),
    "preallocate": ("log.preallocate", "false"),
    "retention.bytes": ("log.retention.bytes", "-1"),
    "retention.ms": ("log.retention.ms", "604800000"),
    "segment.bytes": ("log.segment.bytes", "1073741824"),
    "segment.index.bytes": ("log.index.size.max.bytes", "10485760"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "0"),
    "segment.ms": ("log.roll.ms", "604800000"),
    "unclean.leader.election.enable": ("unclean.leader.election.enable", "false"),
    "leader.replication.throttled.replicas": ("", ""),
    "follower.replication.throttled.replicas": ("", ""),
}


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    read_only: bool
    config_type: int
    synonyms: list[Synonym] = field(default_factory=list)


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


def _broker_value(config: KafkaConfig, name: str) -> str | None:
    """A broker-level default as the broker applies it (retention and roll have fallbacks)."""
    if name == "log.retention.ms":
        return str(config.log_retention_ms)
    if name == "log.roll.ms":
        return str(config.log_roll_ms)
    return _text(config[name])


def _broker_synonym(
    config: KafkaConfig, topic_config: str, dynamic: DynamicOverrides | None = None
) -> Synonym:
    broker_name, kafka_default = TOPIC_DEFAULTS[topic_config]
    if not broker_name:  # no broker-level synonym: Kafka's default applies
        return Synonym(topic_config, kafka_default, DEFAULT_CONFIG_SOURCE)
    if dynamic is not None and broker_name in dynamic.broker:
        return Synonym(broker_name, dynamic.broker[broker_name], DYNAMIC_BROKER_CONFIG_SOURCE)
    if dynamic is not None and broker_name in dynamic.default:
        value = dynamic.default[broker_name]
        return Synonym(broker_name, value, DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE)
    if broker_name in CONFIG_DEFS and broker_name in config.explicit_keys:
        return Synonym(broker_name, _broker_value(config, broker_name), STATIC_BROKER_CONFIG_SOURCE)
    if broker_name in ("log.retention.ms", "log.roll.ms") and config.explicit_keys & {
        "log.retention.minutes",
        "log.retention.hours",
        "log.roll.hours",
    }:
        return Synonym(broker_name, _broker_value(config, broker_name), STATIC_BROKER_CONFIG_SOURCE)
    return Synonym(broker_name, kafka_default, DEFAULT_CONFIG_SOURCE)


def topic_entries(
    config: KafkaConfig, overrides: dict[str, str], dynamic: DynamicOverrides | None = None
) -> list[ConfigEntry]:
    entries = []
    for name in sorted(TOPIC_CONFIGS):
        broker = _broker_synonym(config, name, dynamic)
        synonyms = [broker]
        value, source = broker.value, broker.source
        if name in overrides:
            value, source = overrides[name], TOPIC_CONFIG_SOURCE
            synonyms.insert(0, Synonym(name, value, source))
        code = _CONFIG_TYPE_CODES.get(TOPIC_CONFIGS[name].config_type, 0)
        entries.append(ConfigEntry(name, value, source, False, code, synonyms))
    return entries


# Kafka's DynamicBrokerConfig.brokerConfigSynonyms: configs one setting can come from.
_ROLL = ("log.roll.ms", "log.roll.hours")
_RETENTION = ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
_BROKER_SYNONYMS: dict[str, tuple[str, ...]] = {
    **{name: _ROLL for name in _ROLL},
    **{name: _RETENTION for name in _RETENTION},
    "log.flush.interval.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
}
_STATIC_DEFAULTS = {
    name: text
    for name, definition in CONFIG_DEFS.items()
    if (text := _text(definition.default)) is not None
}


def _broker_chain(config: KafkaConfig, dynamic: DynamicOverrides, name: str) -> list[Synonym]:
    names = _BROKER_SYNONYMS.get(name, (name,))
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
    return ConfigEntry(name, value, source, name not in DYNAMIC_CONFIGS, 0, synonyms)


def broker_entries(
    config: KafkaConfig, dynamic: DynamicOverrides | None = None
) -> list[ConfigEntry]:
    """Every config of this broker with the value it runs with (`config` is the effective
    one; its `originals` are the static settings)."""
    dynamic = dynamic or DynamicOverrides()
    return [
        _broker_entry(name, _text(config[name]), _broker_chain(config, dynamic, name))
        for name in sorted(CONFIG_DEFS)
    ]


def cluster_default_entries(config: KafkaConfig, dynamic: DynamicOverrides) -> list[ConfigEntry]:
    """The resource name "": only the dynamic cluster-wide defaults, as Kafka answers."""
    entries = []
    for name, value in sorted(dynamic.default.items()):
        chain = _broker_chain(config, dynamic, name)
        synonyms = [s for s in chain if s.source == DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE]
        entries.append(_broker_entry(name, value, synonyms))
    return entries
