from types import SimpleNamespace

import pytest

from broker.config import build_config
from broker.config_entries import (
    DEFAULT_CONFIG_SOURCE,
    STATIC_BROKER_CONFIG_SOURCE,
    TOPIC_CONFIG_SOURCE,
    topic_entries,
)
from broker.topic_config_admin import APPEND, DELETE, SET, SUBTRACT, apply_operations
from controller.errors import ApiError
from controller.topic_configs import TOPIC_CONFIGS

BASE = {"broker.id": "1", "zookeeper.connect": "h:1"}


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
    assert [s.source for s in retention.synonyms] == [TOPIC_CONFIG_SOURCE, DEFAULT_CONFIG_SOURCE]
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source) == ("2048", STATIC_BROKER_CONFIG_SOURCE)
    assert segment.synonyms[0].name == "log.segment.bytes"
    index = entries["segment.index.bytes"]
    assert (index.value, index.source) == ("10485760", DEFAULT_CONFIG_SOURCE)


def test_retention_hours_on_the_broker_show_in_retention_ms() -> None:
    config = build_config({**BASE, "log.retention.hours": "1"})
    entries = {e.name: e for e in topic_entries(config, {})}
    assert entries["retention.ms"].value == "3600000"
    assert entries["retention.ms"].source == STATIC_BROKER_CONFIG_SOURCE
