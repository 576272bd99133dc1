"""Topic config changes made the way Kafka's tools make them (/config/topics/<t> plus a
/config/changes notification) take effect on the brokers without a restart."""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient

from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import topic_spec
from tests.integration.wire import (
    WireClient,
    controller_address,
    create_topics,
    leader_address,
    produce,
)

TOPIC = "config-changes"
MESSAGE_TOO_LARGE = 10


def _batch(value_bytes: int) -> bytes:
    return build_batch([SimpleRecord(None, b"x" * value_bytes, (), 1_700_000_000_000)])


def test_changed_max_message_bytes_applies_to_the_next_produce(
    cluster: ClusterHandle, zk: KazooClient
) -> None:
    with WireClient.to(controller_address(cluster)) as client:
        created = create_topics(client, [topic_spec(TOPIC)])
        assert int(created.topics[0].error_code) == 0
    with WireClient.to(leader_address(cluster, TOPIC)) as client:
        assert int(produce(client, TOPIC, 0, _batch(2000)).error_code) == 0

        zk.set(
            f"/config/topics/{TOPIC}",
            json.dumps({"version": 1, "config": {"max.message.bytes": "1000"}}).encode(),
        )
        zk.create(
            "/config/changes/config_change_",
            json.dumps({"version": 2, "entity_path": f"topics/{TOPIC}"}).encode(),
            sequence=True,
        )

        def refused() -> bool:
            return int(produce(client, TOPIC, 0, _batch(2000)).error_code) == MESSAGE_TOO_LARGE

        wait_until(refused, 30, "the new max.message.bytes to apply")
        assert int(produce(client, TOPIC, 0, _batch(100)).error_code) == 0


def _confluent_topic(cluster: ClusterHandle, name: str) -> None:
    with WireClient.to(controller_address(cluster)) as client:
        assert int(create_topics(client, [topic_spec(name)]).topics[0].error_code) == 0


def test_confluent_admin_alters_and_describes_topic_configs(
    cluster: ClusterHandle, zk: KazooClient
) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
    )

    topic = "admin-configs"
    _confluent_topic(cluster, topic)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)
    assert json.loads(zk.get(f"/config/topics/{topic}")[0]) == {
        "version": 1,
        "config": {"retention.ms": "3600000"},
    }
    notifications = [
        json.loads(zk.get(f"/config/changes/{child}")[0])
        for child in zk.get_children("/config/changes")
    ]
    assert {"version": 2, "entity_path": f"topics/{topic}"} in notifications

    described = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
    configs = next(iter(described.values())).result(timeout=30)
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value

    delete = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)
        ],
    )
    admin.incremental_alter_configs([delete])[delete].result(timeout=30)
    assert json.loads(zk.get(f"/config/topics/{topic}")[0])["config"] == {}

    bad = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    with pytest.raises(KafkaException, match="retention.ms"):
        admin.incremental_alter_configs([bad])[bad].result(timeout=30)


def test_kafka_python_admin_alter_configs_replaces_overrides(
    cluster: ClusterHandle, zk: KazooClient
) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    topic = "admin-configs-kafka-python"
    _confluent_topic(cluster, topic)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"cleanup.policy": "compact"})]
        )
        assert json.loads(zk.get(f"/config/topics/{topic}")[0])["config"] == {
            "cleanup.policy": "compact"
        }
        broker_id = str(cluster.broker_ids[0])
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, broker_id)], config_filter="all"
        )
        names = set(described["broker"][broker_id])
        assert {"num.partitions", "log.segment.bytes", "zookeeper.connect"} <= names
        topic_configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        assert set(topic_configs["topic"][topic]) == {"cleanup.policy"}, "only overrides"
    finally:
        admin.close()
