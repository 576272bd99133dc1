from pathlib import Path

import pytest

from broker.config.dynamic import (
    DynamicOverrides,
    check_passwords,
    check_update,
    effective_config,
)
from broker.config.entries import (
    DEFAULT_CONFIG_SOURCE,
    DYNAMIC_BROKER_CONFIG_SOURCE,
    DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE,
    STATIC_BROKER_CONFIG_SOURCE,
    broker_entries,
    cluster_default_entries,
    topic_entries,
)
from broker.config.kafka_config import ConfigError, build_config
from scripts._cluster import tls_material
from tests.unit.broker.ssl_configs import ssl_config

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


def test_listener_security_configs_are_dynamic_per_broker_only() -> None:
    kerberos = {"sasl.kerberos.min.time.before.relogin": "58000"}
    check_update(STATIC, DynamicOverrides(broker=kerberos), True)
    assert (
        effective_config(STATIC, DynamicOverrides(broker=kerberos))[
            "sasl.kerberos.min.time.before.relogin"
        ]
        == 58000
    )
    with pytest.raises(ConfigError, match=r"broker id must be specified: Set\(sasl.kerberos"):
        check_update(STATIC, DynamicOverrides(default=kerberos), False)
    prefixed = {"listener.name.plaintext.ssl.keystore.type": "PEM"}
    with pytest.raises(ConfigError, match=r"broker id must be specified: Set\(listener.name"):
        check_update(STATIC, DynamicOverrides(default=prefixed), False)
    entries = {e.name: e for e in broker_entries(effective_config(STATIC, DynamicOverrides()))}
    relogin = entries["sasl.kerberos.min.time.before.relogin"]
    assert (relogin.value, relogin.read_only) == ("60000", False)


def test_key_and_trust_material_is_dynamic_only_per_listener() -> None:
    with pytest.raises(ConfigError, match=r"only per-listener using the listener prefix: Set\("):
        check_update(STATIC, DynamicOverrides(broker={"ssl.keystore.location": "/k.pem"}), True)


def test_other_listener_settings_of_an_existing_listener_cannot_change() -> None:
    changed = {"listener.name.plaintext.sasl.enabled.mechanisms": "PLAIN"}
    with pytest.raises(ConfigError, match="^Invalid dynamic configuration$"):
        check_update(STATIC, DynamicOverrides(broker=changed), True)
    # A listener the broker does not have yet may be configured ahead of time.
    ahead = {"listener.name.external.sasl.enabled.mechanisms": "PLAIN"}
    check_update(STATIC, DynamicOverrides(broker=ahead), True)


def test_password_configs_need_the_encoder_secret_kafka_would_use() -> None:
    check_passwords({"sasl.kerberos.kinit.cmd": "kinit"}, True)
    with pytest.raises(ConfigError, match="^Password encoder secret not configured$"):
        check_passwords({"listener.name.ssl.ssl.keystore.password": "secret"}, True)
    with pytest.raises(ConfigError, match="^Password config can be defined only at broker"):
        check_passwords({"sasl.jaas.config": "x"}, False)


@pytest.fixture(scope="module")
def two_keystores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    first, second = tmp_path_factory.mktemp("first"), tmp_path_factory.mktemp("second")
    tls_material.make(first, [1])
    tls_material.make(second, [1, 2])
    return first, second


def test_a_new_keystore_must_keep_the_certificate_names(two_keystores: tuple[Path, Path]) -> None:
    first, second = two_keystores
    static = ssl_config(first)
    key = "listener.name.ssl.ssl.keystore.location"
    same_names = {key: str(tls_material.broker_keystore(second, 1))}
    check_update(static, DynamicOverrides(broker=same_names), True)
    other_names = {key: str(tls_material.broker_keystore(second, 2))}
    with pytest.raises(ConfigError, match="^Invalid dynamic configuration$"):
        check_update(static, DynamicOverrides(broker=other_names), True)
    with pytest.raises(ConfigError, match="cannot load the keystore"):
        check_update(static, DynamicOverrides(broker={key: str(first / "missing.pem")}), True)
