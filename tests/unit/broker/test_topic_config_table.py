"""The one table of topic configs (controller/topic_config_defs.py) and the views derived from
it: LogConfig's fields, defaults and parsing, DescribeConfigs' topic entries, the controller's
validation and the dynamic broker configs. The pinned sets are what the separate tables held
before they were derived, so a table edit that changes a view shows here."""

from __future__ import annotations

import dataclasses
import re

import pytest

from broker.config.dynamic import DYNAMIC_CONFIGS, LISTENER_SECURITY_CONFIGS, PER_BROKER_CONFIGS
from broker.config.entries import DEFAULT_CONFIG_SOURCE, topic_entries
from broker.config.kafka_config import CONFIG_DEFS, LONG_MAX, ConfigError, build_config
from broker.config.topic_defaults import default_log_config
from broker.log.config import TOPIC_CONFIG_FIELDS, LogConfig, log_value
from broker.network.tls import RECONFIGURABLE_CONFIGS
from controller.errors import INVALID_CONFIG, ApiError
from controller.topic_config_defs import TOPIC_CONFIGS, ConfigType, parse_config_value
from controller.topic_configs import validate_topic_config

BASE = {"broker.id": "1", "zookeeper.connect": "h:1"}
# Kafka's ConfigType codes as DescribeConfigs v3+ reports them.
TYPE_CODES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "LONG": 5, "DOUBLE": 6, "LIST": 7}
LOG_FIELDS = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "index.interval.bytes": "index_interval_bytes",
    "segment.index.bytes": "segment_index_bytes",
    "max.message.bytes": "max_message_bytes",
    "message.timestamp.type": "message_timestamp_type",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "cleanup.policy": "cleanup_policy",
    "delete.retention.ms": "delete_retention_ms",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "message.timestamp.difference.max.ms": "message_timestamp_difference_max_ms",
    "message.timestamp.before.max.ms": "message_timestamp_before_max_ms",
    "message.timestamp.after.max.ms": "message_timestamp_after_max_ms",
}
DYNAMIC = {
    "log.segment.bytes",
    "log.roll.ms",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "message.max.bytes",
    "log.message.timestamp.type",
    "log.message.timestamp.difference.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms",
    "log.retention.ms",
    "log.retention.bytes",
    "log.cleanup.policy",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms",
    "log.segment.delete.delay.ms",
    "min.insync.replicas",
    "compression.type",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.message.downconversion.enable",
    "log.preallocate",
    "log.roll.jitter.ms",
    "advertised.listeners",
    # The listeners' SSL and SASL keys (Kafka 3.9's two lists, see broker.config.dynamic).
    *LISTENER_SECURITY_CONFIGS,
    *RECONFIGURABLE_CONFIGS,
}
# A valid broker-level value for the broker default of each topic config a log applies, none
# of them the default.
BROKER_SETTINGS = {
    "log.segment.bytes": "2048",
    "log.roll.ms": "1234",
    "log.index.interval.bytes": "512",
    "log.index.size.max.bytes": "8192",
    "message.max.bytes": "5000",
    "log.message.timestamp.type": "LogAppendTime",
    "log.retention.ms": "3600000",
    "log.retention.bytes": "1000000",
    "log.cleanup.policy": "compact, delete",
    "log.cleaner.delete.retention.ms": "1000",
    "log.cleaner.min.cleanable.ratio": "0.25",
    "log.cleaner.min.compaction.lag.ms": "5",
    "log.cleaner.max.compaction.lag.ms": "600000",
    "log.segment.delete.delay.ms": "7",
    "log.message.timestamp.difference.max.ms": "100",
    "log.message.timestamp.before.max.ms": "200",
    "log.message.timestamp.after.max.ms": "300",
}


@pytest.mark.parametrize("name", sorted(TOPIC_CONFIGS))
def test_each_default_passes_validation(name: str) -> None:
    validate_topic_config(name, TOPIC_CONFIGS[name].default)


@pytest.mark.parametrize(
    "name",
    sorted(
        n
        for n, d in TOPIC_CONFIGS.items()
        if d.config_type not in (ConfigType.STRING, ConfigType.LIST)
    ),
)
def test_each_typed_config_refuses_a_value_of_another_type(name: str) -> None:
    with pytest.raises(ApiError) as raised:
        validate_topic_config(name, "not-a-value")
    assert raised.value.error_code == INVALID_CONFIG


def test_a_range_check_given_a_non_number_raises_even_under_python_O() -> None:
    check = TOPIC_CONFIGS["retention.ms"].check
    assert check is not None
    with pytest.raises(TypeError):
        check("5")


def test_each_config_is_described_with_its_type_and_default() -> None:
    entries = {e.name: e for e in topic_entries(build_config(BASE), {})}
    assert set(entries) == set(TOPIC_CONFIGS)
    for name, definition in TOPIC_CONFIGS.items():
        entry = entries[name]
        assert entry.config_type == TYPE_CODES[definition.config_type.value], name
        # The table's default is what a broker left at Kafka's defaults gives a topic.
        assert (entry.value, entry.source) == (definition.default, DEFAULT_CONFIG_SOURCE), name


def test_each_broker_default_is_a_broker_config() -> None:
    for definition in TOPIC_CONFIGS.values():
        if definition.server_default is not None:
            assert definition.server_default in CONFIG_DEFS, definition.name


def test_dynamic_broker_configs_are_the_dynamic_broker_defaults_and_advertised_listeners() -> None:
    derived = {d.server_default for d in TOPIC_CONFIGS.values() if d.dynamic} - {None}
    assert derived | PER_BROKER_CONFIGS == DYNAMIC_CONFIGS
    assert DYNAMIC_CONFIGS == DYNAMIC


def test_log_fields_are_the_topic_configs_a_log_applies() -> None:
    assert TOPIC_CONFIG_FIELDS == LOG_FIELDS
    fields = {f.name for f in dataclasses.fields(LogConfig)}
    assert fields - set(TOPIC_CONFIG_FIELDS.values()) == {"max_decompressed_bytes"}


def test_log_config_defaults_are_the_table_defaults() -> None:
    defaults = LogConfig()
    for name, field_name in TOPIC_CONFIG_FIELDS.items():
        expected = log_value(name, TOPIC_CONFIGS[name].default)
        assert getattr(defaults, field_name) == expected, name
    assert defaults.cleanup_policy == "delete" and defaults.max_compaction_lag_ms == LONG_MAX


@pytest.mark.parametrize("name", sorted(LOG_FIELDS))
def test_each_override_reaches_its_log_field(name: str) -> None:
    definition = TOPIC_CONFIGS[name]
    text = {
        ConfigType.INT: " 12345 ",
        ConfigType.LONG: "54321",
        ConfigType.DOUBLE: "0.75",
        ConfigType.STRING: " LogAppendTime ",
        ConfigType.LIST: "compact, delete",
    }[definition.config_type]
    validate_topic_config(name, text)
    expected = log_value(name, text)
    assert getattr(LogConfig().with_overrides({name: text}), LOG_FIELDS[name]) == expected
    assert expected == _strictly_parsed(definition.config_type, text)


def _strictly_parsed(config_type: ConfigType, text: str) -> object:
    parsed = parse_config_value(config_type, text)
    return ",".join(parsed) if isinstance(parsed, list) else parsed


def test_default_log_config_of_a_default_broker_is_kafkas() -> None:
    assert default_log_config(build_config(BASE)) == LogConfig()


def test_default_log_config_takes_each_broker_default() -> None:
    """What the hand-written broker -> LogConfig mapping gave, field by field."""
    config = build_config({**BASE, **BROKER_SETTINGS, "message.max.decompressed.bytes": "999"})
    assert default_log_config(config) == LogConfig(
        segment_bytes=2048,
        segment_ms=1234,
        index_interval_bytes=512,
        segment_index_bytes=8192,
        max_message_bytes=5000,
        message_timestamp_type="LogAppendTime",
        message_timestamp_difference_max_ms=100,
        message_timestamp_before_max_ms=200,
        message_timestamp_after_max_ms=300,
        retention_ms=3600000,
        retention_bytes=1000000,
        max_decompressed_bytes=999,
        cleanup_policy="compact,delete",
        delete_retention_ms=1000,
        min_cleanable_dirty_ratio=0.25,
        min_compaction_lag_ms=5,
        max_compaction_lag_ms=600000,
        file_delete_delay_ms=7,
    )
    assert set(BROKER_SETTINGS) == {TOPIC_CONFIGS[name].server_default for name in LOG_FIELDS}


def test_default_log_config_applies_coarser_broker_synonyms() -> None:
    config = build_config({**BASE, "log.roll.hours": "2", "log.retention.minutes": "3"})
    log_config = default_log_config(config)
    assert (log_config.segment_ms, log_config.retention_ms) == (7200000, 180000)


# The broker configs supplying a topic config's default that Kafka leaves unset (null), so
# that a coarser synonym (log.retention.hours, log.roll.hours...) applies.
UNSET_BROKER_DEFAULTS = {
    "log.retention.ms",
    "log.roll.ms",
    "log.roll.jitter.ms",
    "log.flush.interval.ms",
}
# What the broker refuses at start-up: each the minimum it checked before the minimums came
# from the topic config table.
BROKER_MINIMUMS = {
    "min.insync.replicas": 1,
    "log.segment.bytes": 14,
    "log.index.interval.bytes": 0,
    "log.index.size.max.bytes": 4,
    "message.max.bytes": 0,
    "log.message.timestamp.difference.max.ms": 0,
    "log.message.timestamp.before.max.ms": 0,
    "log.message.timestamp.after.max.ms": 0,
}


@pytest.mark.parametrize(
    "name",
    sorted(
        n
        for n, d in TOPIC_CONFIGS.items()
        if d.server_default is not None and d.server_default not in UNSET_BROKER_DEFAULTS
    ),
)
def test_each_broker_default_has_its_topic_configs_type_and_default(name: str) -> None:
    definition = TOPIC_CONFIGS[name]
    assert definition.server_default is not None
    broker_def = CONFIG_DEFS[definition.server_default]
    assert broker_def.config_type == definition.config_type.value
    assert broker_def.parse(definition.default) == broker_def.default


def test_unset_broker_defaults_are_unset() -> None:
    for name in UNSET_BROKER_DEFAULTS:
        assert CONFIG_DEFS[name].default is None, name


@pytest.mark.parametrize(("name", "minimum"), sorted(BROKER_MINIMUMS.items()))
def test_start_up_refuses_a_broker_default_below_its_topic_minimum(name: str, minimum: int) -> None:
    build_config({**BASE, name: str(minimum)})
    expected = f"{name} must be at least {minimum}, got {minimum - 1}"
    with pytest.raises(ConfigError, match=f"^{re.escape(expected)}$"):
        build_config({**BASE, name: str(minimum - 1)})


def test_start_up_refuses_a_timestamp_type_the_topic_config_refuses() -> None:
    expected = "log.message.timestamp.type must be CreateTime or LogAppendTime"
    with pytest.raises(ConfigError, match=f"^{re.escape(expected)}$"):
        build_config({**BASE, "log.message.timestamp.type": "createtime"})


def test_unset_broker_defaults_fall_back_to_their_coarser_synonyms() -> None:
    config = build_config(
        {
            **BASE,
            "log.roll.jitter.hours": "3",
            "log.flush.scheduler.interval.ms": "500",
            "log.retention.minutes": "3",
        }
    )
    assert config.with_synonyms("log.roll.jitter.ms") == 3 * 3600000
    assert config.with_synonyms("log.flush.interval.ms") == 500
    assert config.with_synonyms("log.retention.ms") == 180000
    assert config.with_synonyms("log.roll.ms") == 168 * 3600000
    # A coarser synonym is read as itself.
    assert config.with_synonyms("log.retention.hours") == 168
    entries = {e.name: e for e in topic_entries(config, {})}
    assert entries["segment.jitter.ms"].value == str(3 * 3600000)
    assert entries["flush.ms"].value == "500"
