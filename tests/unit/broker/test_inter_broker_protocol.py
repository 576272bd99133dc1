"""`inter.broker.protocol.version`: accepted in Kafka's forms, and the ISR path it chooses
(AlterPartition from 2.7-IV2 on, topic ids from 2.8-IV0 on, Kafka's MetadataVersion steps)."""

import pytest

from broker.config import inter_broker_protocol
from broker.config.kafka_config import ConfigError, build_config

BASE = {"broker.id": "1", "zookeeper.connect": "localhost:2181", "log.dirs": "/tmp/k"}


def test_the_default_is_kafka_39s_and_sends_alter_partition_with_topic_ids() -> None:
    value = build_config(BASE)["inter.broker.protocol.version"]
    assert value == "3.9-IV0"
    version = inter_broker_protocol.parse(value)
    assert inter_broker_protocol.sends_alter_partition(version)
    assert inter_broker_protocol.supports_topic_ids(version)


@pytest.mark.parametrize(
    ("text", "alter_partition", "topic_ids"),
    [
        ("2.6", False, False),
        ("2.7-IV1", False, False),
        ("0.10.2-IV0", False, False),
        ("2.7-IV2", True, False),
        ("2.7", True, False),  # a release alone means its last step
        ("2.8-IV0", True, True),
        ("3.3", True, True),
    ],
)
def test_each_version_chooses_the_isr_path_as_kafka_does(
    text: str, alter_partition: bool, topic_ids: bool
) -> None:
    config = build_config({**BASE, "inter.broker.protocol.version": text})
    version = inter_broker_protocol.parse(config["inter.broker.protocol.version"])
    assert inter_broker_protocol.sends_alter_partition(version) is alter_partition
    assert inter_broker_protocol.supports_topic_ids(version) is topic_ids


@pytest.mark.parametrize("text", ["3.10", "4.0", "latest", "2.7-IV", ""])
def test_a_version_kafka_39_would_not_take_is_refused_at_start_up(text: str) -> None:
    with pytest.raises(ConfigError, match="inter.broker.protocol.version"):
        build_config({**BASE, "inter.broker.protocol.version": text})
