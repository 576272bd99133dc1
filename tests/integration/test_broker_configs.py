"""Broker configs through real admin clients: DescribeConfigs reports each config's source
(DEFAULT_CONFIG, STATIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DYNAMIC_BROKER_CONFIG)
with Kafka's synonyms, and AlterConfigs / IncrementalAlterConfigs write /config/brokers/...
plus a change notification that every broker applies at once."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from kafka.admin import ConfigResource as KafkaPythonResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kazoo.client import KazooClient

from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, controller_address, create_topics, produce

# Broker configs, dynamic and default, are changed here.
pytestmark = pytest.mark.own_cluster

TIMEOUT_S = 30.0
MESSAGE_TOO_LARGE = 10
INVALID_REQUEST = 42
DESCRIBE_CONFIGS = 32
INCREMENTAL_ALTER_CONFIGS = 44


@pytest.fixture(scope="module")
def admin(cluster: ClusterHandle) -> Iterator[AdminClient]:
    yield AdminClient({"bootstrap.servers": cluster.bootstrap})


def _describe(admin: AdminClient, broker_id: int) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
    result: dict[str, ConfigEntry] = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    return result


def _set(admin: AdminClient, broker: str, name: str, value: str | None) -> None:
    operation = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    entry = ConfigEntry(name, value, incremental_operation=operation)
    resource = ConfigResource(ConfigResource.Type.BROKER, broker, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)


def test_static_and_default_sources(admin: AdminClient, cluster: ClusterHandle) -> None:
    configs = _describe(admin, 1)
    connect = configs["zookeeper.connect"]
    assert connect.value == cluster.zk_connect
    assert ConfigSource(connect.source) == ConfigSource.STATIC_BROKER_CONFIG
    assert connect.is_read_only and not connect.is_sensitive
    retention = configs["log.retention.hours"]
    assert retention.value == "168"
    assert ConfigSource(retention.source) == ConfigSource.DEFAULT_CONFIG
    assert not configs["log.retention.ms"].is_read_only  # dynamically updatable
    assert configs["broker.id"].value == "1"


def test_dynamic_configs_layer_per_broker_over_cluster_default(
    admin: AdminClient, cluster: ClusterHandle, zk: KazooClient
) -> None:
    _set(admin, "2", "log.retention.ms", "3600000")
    assert json.loads(zk.get("/config/brokers/2")[0]) == {
        "version": 1,
        "config": {"log.retention.ms": "3600000"},
    }
    changes = [
        json.loads(zk.get(f"/config/changes/{child}")[0])
        for child in zk.get_children("/config/changes")
    ]
    assert {"version": 2, "entity_path": "brokers/2"} in changes

    # The cluster-wide default as a tool writes it (librdkafka and kafka-python refuse the
    # resource name "", so kafka-configs' own requests are tested in test_tools_admin).
    default_layer = {"version": 1, "config": {"log.retention.ms": "7200000"}}
    zk.create("/config/brokers/<default>", json.dumps(default_layer).encode(), makepath=True)
    zk.create(
        "/config/changes/config_change_",
        json.dumps({"version": 2, "entity_path": "brokers/<default>"}).encode(),
        sequence=True,
    )

    def applied(broker_id: int, value: str) -> bool:
        return _describe(admin, broker_id)["log.retention.ms"].value == value

    wait_until(lambda: applied(1, "7200000"), TIMEOUT_S, "the dynamic default on broker 1")
    wait_until(lambda: applied(2, "3600000"), TIMEOUT_S, "broker 2's own setting")
    broker_2 = _describe(admin, 2)["log.retention.ms"]
    assert ConfigSource(broker_2.source) == ConfigSource.DYNAMIC_BROKER_CONFIG
    broker_1 = _describe(admin, 1)["log.retention.ms"]
    assert ConfigSource(broker_1.source) == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG

    # confluent-kafka keys synonyms by name, so the whole list is read with kafka-python.
    kafka_python = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        described = kafka_python.describe_configs(
            [KafkaPythonResource(ConfigResourceType.BROKER, "2")],
            include_synonyms=True,
            config_filter="all",
        )
        synonyms = described["broker"]["2"]["log.retention.ms"]["synonyms"]
        assert [(s["source"], s["name"], s["value"]) for s in synonyms] == [
            ("DYNAMIC_BROKER_CONFIG", "log.retention.ms", "3600000"),
            ("DYNAMIC_DEFAULT_BROKER_CONFIG", "log.retention.ms", "7200000"),
            ("DEFAULT_CONFIG", "log.retention.hours", "168"),
        ]
    finally:
        kafka_python.close()

    _set(admin, "2", "log.retention.ms", None)
    wait_until(lambda: applied(2, "7200000"), TIMEOUT_S, "broker 2 back on the default")
    assert json.loads(zk.get("/config/brokers/2")[0])["config"] == {}


def test_dynamic_default_applies_to_topics_without_override(
    admin: AdminClient, cluster: ClusterHandle, zk: KazooClient
) -> None:
    topic = "dynamic-max-message"
    with WireClient.to(controller_address(cluster)) as client:
        spec = topic_spec(topic, assignments={0: [1]})
        spec["num_partitions"] = spec["replication_factor"] = -1
        assert int(create_topics(client, [spec]).topics[0].error_code) == 0
    batch = build_batch([SimpleRecord(None, b"x" * 2000, (), 1_700_000_000_000)])
    address = f"127.0.0.1:{cluster.broker_port(1)}"
    layer = {"version": 1, "config": {"message.max.bytes": "1000"}}
    zk.create("/config/brokers/1", json.dumps(layer).encode(), makepath=True)
    zk.create(
        "/config/changes/config_change_",
        json.dumps({"version": 2, "entity_path": "brokers/1"}).encode(),
        sequence=True,
    )
    try:
        with WireClient.to(address) as client:

            def refused() -> bool:
                result = produce(client, topic, 0, batch)
                return int(result.error_code) == MESSAGE_TOO_LARGE

            wait_until(refused, TIMEOUT_S, "the dynamic message.max.bytes to apply")
    finally:
        _set(admin, "1", "message.max.bytes", None)
    with WireClient.to(address) as client:
        wait_until(
            lambda: int(produce(client, topic, 0, batch).error_code) == 0,
            TIMEOUT_S,
            "the static default back",
        )


def test_non_dynamic_and_invalid_updates_are_refused(admin: AdminClient) -> None:
    with pytest.raises(KafkaException, match=r"Cannot update these configs dynamically: Set\("):
        _set(admin, "1", "num.io.threads", "4")
    with pytest.raises(KafkaException, match="log.retention.ms"):
        _set(admin, "1", "log.retention.ms", "soon")


def test_describe_of_another_broker_id_is_an_invalid_request(cluster: ClusterHandle) -> None:
    # Clients route a broker's resource to that broker, so this takes the wire.
    resource = {"resource_type": 4, "resource_name": "2", "configuration_keys": None}
    fields = {"resources": [resource], "include_synonyms": False, "include_documentation": False}
    with WireClient.to(f"127.0.0.1:{cluster.broker_port(1)}") as client:
        (result,) = client.request(DESCRIBE_CONFIGS, 4, fields).results
    assert int(result.error_code) == INVALID_REQUEST
    assert result.error_message == (
        "Unexpected broker id, expected 1 or empty string, but received 2"
    )


def test_legacy_alter_configs_replaces_the_broker_set(admin: AdminClient, zk: KazooClient) -> None:
    resource = ConfigResource(
        ConfigResource.Type.BROKER, "3", set_config={"log.retention.bytes": "1048576"}
    )
    admin.alter_configs([resource])[resource].result(TIMEOUT_S)
    assert json.loads(zk.get("/config/brokers/3")[0])["config"] == {
        "log.retention.bytes": "1048576"
    }
    wait_until(
        lambda: _describe(admin, 3)["log.retention.bytes"].value == "1048576",
        TIMEOUT_S,
        "the new log.retention.bytes",
    )
    cleared = ConfigResource(ConfigResource.Type.BROKER, "3", set_config={})
    admin.alter_configs([cleared])[cleared].result(TIMEOUT_S)
    assert json.loads(zk.get("/config/brokers/3")[0])["config"] == {}


def _registered_endpoints(zk: KazooClient, broker_id: int) -> list[str]:
    endpoints: list[str] = json.loads(zk.get(f"/brokers/ids/{broker_id}")[0])["endpoints"]
    return endpoints


def test_advertised_listeners_change_per_broker_and_reach_the_registration(
    admin: AdminClient, cluster: ClusterHandle, zk: KazooClient
) -> None:
    port = cluster.broker_port(2)
    assert not _describe(admin, 2)["advertised.listeners"].is_read_only
    # The cluster-wide default takes the wire: librdkafka refuses the resource name "".
    config = {"name": "advertised.listeners", "config_operation": 0, "value": "PLAINTEXT://h:1"}
    resource = {"resource_type": 4, "resource_name": "", "configs": [config]}
    with WireClient.to(f"127.0.0.1:{cluster.broker_port(1)}") as client:
        fields = {"resources": [resource], "validate_only": False}
        (refused,) = client.request(INCREMENTAL_ALTER_CONFIGS, 0, fields).responses
    assert int(refused.error_code) == INVALID_REQUEST
    assert "broker id must be specified: Set(advertised.listeners)" in (refused.error_message or "")
    with pytest.raises(KafkaException, match="listeners does not define"):
        _set(admin, "2", "advertised.listeners", f"OTHER://localhost:{port}")

    _set(admin, "2", "advertised.listeners", f"PLAINTEXT://localhost:{port}")
    try:
        wait_until(
            lambda: _registered_endpoints(zk, 2) == [f"PLAINTEXT://localhost:{port}"],
            TIMEOUT_S,
            "broker 2's registration naming its new advertised listener",
        )
        wait_until(
            lambda: admin.list_topics(timeout=TIMEOUT_S).brokers[2].host == "localhost",
            TIMEOUT_S,
            "Metadata answering broker 2's new advertised host",
        )
        entry = _describe(admin, 2)["advertised.listeners"]
        assert ConfigSource(entry.source) == ConfigSource.DYNAMIC_BROKER_CONFIG
    finally:
        _set(admin, "2", "advertised.listeners", None)
    wait_until(
        lambda: _registered_endpoints(zk, 2) == [f"PLAINTEXT://127.0.0.1:{port}"],
        TIMEOUT_S,
        "broker 2's registration back to its static listener",
    )


def test_listener_security_configs_are_dynamic_per_broker(
    admin: AdminClient, zk: KazooClient
) -> None:
    """librdkafka's 0081_admin sets sasl.kerberos.min.time.before.relogin on a broker with
    AlterConfigs: dynamic per broker in Kafka (a listener config), stored in
    /config/brokers/<id>, without effect here (no GSSAPI)."""
    key = "sasl.kerberos.min.time.before.relogin"
    assert not _describe(admin, 3)[key].is_read_only
    resource = ConfigResource(ConfigResource.Type.BROKER, "3", set_config={key: "58000"})
    admin.alter_configs([resource])[resource].result(TIMEOUT_S)
    try:
        assert json.loads(zk.get("/config/brokers/3")[0])["config"] == {key: "58000"}
        wait_until(
            lambda: _describe(admin, 3)[key].value == "58000",
            TIMEOUT_S,
            f"broker 3 describing its dynamic {key}",
        )
        assert ConfigSource(_describe(admin, 3)[key].source) == ConfigSource.DYNAMIC_BROKER_CONFIG
        with pytest.raises(KafkaException, match="only per-listener using the listener prefix"):
            _set(admin, "3", "ssl.keystore.location", "/tmp/keystore.pem")
        with pytest.raises(KafkaException, match="Password encoder secret not configured"):
            _set(admin, "3", "listener.name.plaintext.ssl.keystore.password", "secret")
    finally:
        cleared = ConfigResource(ConfigResource.Type.BROKER, "3", set_config={})
        admin.alter_configs([cleared])[cleared].result(TIMEOUT_S)
