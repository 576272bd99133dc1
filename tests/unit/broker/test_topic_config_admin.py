from types import SimpleNamespace

import pytest

from broker.config.dynamic import DynamicOverrides
from broker.config.entries import (
    DEFAULT_CONFIG_SOURCE,
    DYNAMIC_BROKER_CONFIG_SOURCE,
    STATIC_BROKER_CONFIG_SOURCE,
    TOPIC_CONFIG_SOURCE,
    broker_entries,
    java_double_text,
    topic_entries,
)
from broker.config.kafka_config import build_config
from broker.config.protocol import AlterConfigOp
from broker.config.topic_admin import apply_operations
from controller.errors import ApiError
from controller.topic_configs import TOPIC_CONFIGS

BASE = {"broker.id": "1", "zookeeper.connect": "h:1"}
SET, DELETE = AlterConfigOp.SET, AlterConfigOp.DELETE
APPEND, SUBTRACT = AlterConfigOp.APPEND, AlterConfigOp.SUBTRACT


def _op(name: str, operation: int, value: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(name=name, config_operation=operation, value=value)


def test_incremental_operations() -> None:
    change = apply_operations(
        [
            _op("retention.ms", SET, "1000"),
            _op("segment.ms", DELETE),
            _op("cleanup.policy", APPEND, "compact"),
            _op("leader.replication.throttled.replicas", SUBTRACT, "0:1"),
        ]
    )
    current = {
        "segment.ms": "5",
        "cleanup.policy": "delete",
        "leader.replication.throttled.replicas": "0:1,1:2",
    }
    assert change(current) == {
        "retention.ms": "1000",
        "cleanup.policy": "delete,compact",
        "leader.replication.throttled.replicas": "1:2",
    }


def test_append_and_subtract_on_an_unset_config_start_from_its_default() -> None:
    # Kafka's ConfigAdminManager: the topic's value, else the config's static default.
    appended = apply_operations([_op("cleanup.policy", APPEND, "compact")])({})
    assert appended == {"cleanup.policy": "delete,compact"}
    subtracted = apply_operations([_op("cleanup.policy", SUBTRACT, "delete")])({})
    assert subtracted == {"cleanup.policy": ""}
    throttled = apply_operations([_op("leader.replication.throttled.replicas", APPEND, "0:1")])
    assert throttled({}) == {"leader.replication.throttled.replicas": "0:1"}


def test_append_to_a_non_list_config_is_invalid() -> None:
    with pytest.raises(ApiError) as error:
        apply_operations([_op("retention.ms", APPEND, "5")])({})
    assert error.value.error_code == 40


def test_topic_entries_show_override_then_broker_setting_then_default() -> None:
    config = build_config({**BASE, "log.segment.bytes": "2048"})
    entries = {e.name: e for e in topic_entries(config, {"retention.ms": "5000"})}
    assert set(entries) == set(TOPIC_CONFIGS)
    retention = entries["retention.ms"]
    assert (retention.value, retention.source) == ("5000", TOPIC_CONFIG_SOURCE)
    # Kafka lists broker layers only from log.retention.ms itself, which has no default
    # (log.retention.hours has): so only the override.
    assert [s.source for s in retention.synonyms] == [TOPIC_CONFIG_SOURCE]
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source) == ("2048", STATIC_BROKER_CONFIG_SOURCE)
    assert segment.synonyms[0].name == "log.segment.bytes"
    index = entries["segment.index.bytes"]
    assert (index.value, index.source) == ("10485760", DEFAULT_CONFIG_SOURCE)


def test_retention_hours_on_the_broker_show_in_retention_ms() -> None:
    config = build_config({**BASE, "log.retention.hours": "1"})
    entries = {e.name: e for e in topic_entries(config, {})}
    assert entries["retention.ms"].value == "3600000"
    # As Kafka: the value applies the hours, but only log.retention.ms itself would be a
    # synonym (and a source) of retention.ms.
    assert entries["retention.ms"].source == DEFAULT_CONFIG_SOURCE
    assert entries["retention.ms"].synonyms == []


def test_topic_synonyms_list_every_layer_of_the_broker_config() -> None:
    config = build_config({**BASE, "log.retention.ms": "5000", "log.segment.bytes": "2048"})
    overrides = DynamicOverrides(broker={"log.retention.ms": "3000"})
    entries = {e.name: e for e in topic_entries(config, {"segment.bytes": "4096"}, overrides)}
    assert [(s.name, s.value, s.source) for s in entries["retention.ms"].synonyms] == [
        ("log.retention.ms", "3000", DYNAMIC_BROKER_CONFIG_SOURCE),
        ("log.retention.ms", "5000", STATIC_BROKER_CONFIG_SOURCE),
        ("log.retention.hours", "168", DEFAULT_CONFIG_SOURCE),
    ]
    assert [(s.name, s.value, s.source) for s in entries["segment.bytes"].synonyms] == [
        ("segment.bytes", "4096", TOPIC_CONFIG_SOURCE),
        ("log.segment.bytes", "2048", STATIC_BROKER_CONFIG_SOURCE),
        ("log.segment.bytes", "1073741824", DEFAULT_CONFIG_SOURCE),
    ]
    # No broker default (log.roll.jitter.ms has none) and no broker config at all.
    assert entries["segment.jitter.ms"].synonyms == []
    throttled = entries["leader.replication.throttled.replicas"]
    assert (throttled.value, throttled.source, throttled.synonyms) == (
        "",
        DEFAULT_CONFIG_SOURCE,
        [],
    )


def test_broker_entries_carry_kafka_types_and_java_number_text() -> None:
    entries = {e.name: e for e in broker_entries(build_config(BASE))}
    ratio = entries["log.cleaner.io.max.bytes.per.second"]
    assert (ratio.value, ratio.config_type) == ("1.7976931348623157E308", 6)  # DOUBLE
    assert entries["log.retention.bytes"].config_type == 5  # LONG
    assert entries["offsets.topic.replication.factor"].config_type == 4  # SHORT
    assert entries["listeners"].config_type == 2  # STRING, as Kafka keeps it
    assert [(s.value, s.source) for s in entries["broker.id"].synonyms][-1] == (
        "-1",
        DEFAULT_CONFIG_SOURCE,
    )


def test_java_double_text() -> None:
    assert [java_double_text(v) for v in (0.5, 1.0, 1e7, 1e-4, 123.25, -2.5e10)] == [
        "0.5",
        "1.0",
        "1.0E7",
        "1.0E-4",
        "123.25",
        "-2.5E10",
    ]
