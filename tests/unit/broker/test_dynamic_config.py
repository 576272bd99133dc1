import pytest

from broker.config import ConfigError, build_config
from broker.config_entries import (
    DEFAULT_CONFIG_SOURCE,
    DYNAMIC_BROKER_CONFIG_SOURCE,
    DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE,
    STATIC_BROKER_CONFIG_SOURCE,
    broker_entries,
    cluster_default_entries,
    topic_entries,
)
from broker.dynamic_config import DynamicOverrides, check_update, effective_config

STATIC = build_config({"broker.id": "1", "zookeeper.connect": "h:1", "log.retention.hours": "2"})


def test_per_broker_beats_default_beats_static() -> None:
    overrides = DynamicOverrides(
        default={"log.retention.ms": "7000", "message.max.bytes": "500"},
        broker={"log.retention.ms": "3000"},
    )
    config = effective_config(STATIC, overrides)
    assert config.log_retention_ms == 3000
    assert config["message.max.bytes"] == 500
    assert config.explicit_keys == STATIC.explicit_keys  # static keys stay told apart


def test_only_dynamic_keys_of_the_right_type_may_change() -> None:
    with pytest.raises(ConfigError, match=r"dynamically: Set\(broker.id, num.io.threads\)"):
        check_update(
            STATIC, DynamicOverrides(broker={"num.io.threads": "2", "broker.id": "3"}), True
        )
    with pytest.raises(ConfigError, match="log.segment.bytes"):
        check_update(STATIC, DynamicOverrides(default={"log.segment.bytes": "big"}), False)
    check_update(STATIC, DynamicOverrides(default={"log.segment.bytes": "2048"}), False)


def test_broker_entry_synonyms_follow_kafka_order_and_start_at_the_config() -> None:
    overrides = DynamicOverrides(
        default={"log.retention.ms": "7000"}, broker={"log.retention.ms": "3000"}
    )
    entries = {e.name: e for e in broker_entries(effective_config(STATIC, overrides), overrides)}
    retention_ms = entries["log.retention.ms"]
    assert (retention_ms.value, retention_ms.source) == ("3000", DYNAMIC_BROKER_CONFIG_SOURCE)
    assert [(s.source, s.name, s.value) for s in retention_ms.synonyms] == [
        (DYNAMIC_BROKER_CONFIG_SOURCE, "log.retention.ms", "3000"),
        (DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE, "log.retention.ms", "7000"),
        (STATIC_BROKER_CONFIG_SOURCE, "log.retention.hours", "2"),
        (DEFAULT_CONFIG_SOURCE, "log.retention.hours", "168"),
    ]
    assert not retention_ms.read_only
    hours = entries["log.retention.hours"]
    assert [(s.source, s.value) for s in hours.synonyms] == [
        (STATIC_BROKER_CONFIG_SOURCE, "2"),
        (DEFAULT_CONFIG_SOURCE, "168"),
    ]
    assert hours.read_only
    minutes = entries["log.retention.minutes"]
    assert (minutes.value, minutes.source, minutes.synonyms) == (None, DEFAULT_CONFIG_SOURCE, [])


def test_cluster_default_lists_only_the_dynamic_default_layer() -> None:
    overrides = DynamicOverrides(
        default={"log.retention.ms": "7000"}, broker={"log.retention.ms": "3000"}
    )
    (entry,) = cluster_default_entries(STATIC, overrides)
    assert (entry.name, entry.value, entry.source) == (
        "log.retention.ms",
        "7000",
        DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE,
    )
    assert [s.source for s in entry.synonyms] == [DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE]


def test_topic_defaults_come_from_the_dynamic_layers() -> None:
    overrides = DynamicOverrides(default={"log.segment.bytes": "4096"})
    entries = {e.name: e for e in topic_entries(STATIC, {}, overrides)}
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source) == ("4096", DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE)
