from pathlib import Path

import pytest

from broker.config.kafka_config import ConfigError, build_config, load_config, read_properties

BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181"}


def test_defaults_follow_kafka() -> None:
    config = build_config(BASE)
    assert config["num.partitions"] == 1
    assert config["default.replication.factor"] == 1
    assert config["auto.create.topics.enable"] is True
    assert config["log.segment.bytes"] == 1073741824
    assert config["message.max.bytes"] == 1048588
    assert config["socket.request.max.bytes"] == 104857600
    assert config["zookeeper.session.timeout.ms"] == 18000
    assert config.log_roll_ms == 168 * 3600 * 1000
    assert [str(e) for e in config.listeners] == ["PLAINTEXT://:9092"]
    assert config.log_dirs == [Path("/tmp/kafka-logs")]


def test_unknown_key_is_rejected_with_its_name() -> None:
    with pytest.raises(ConfigError, match="log.segmnet.bytes"):
        build_config({**BASE, "log.segmnet.bytes": "1000"})


def test_invalid_value_names_the_key() -> None:
    with pytest.raises(ConfigError, match="num.partitions"):
        build_config({**BASE, "num.partitions": "many"})
    with pytest.raises(ConfigError, match="num.partitions must be at least 1"):
        build_config({**BASE, "num.partitions": "0"})
    with pytest.raises(ConfigError, match="auto.create.topics.enable"):
        build_config({**BASE, "auto.create.topics.enable": "yes"})


def test_missing_required_keys() -> None:
    with pytest.raises(ConfigError, match="broker.id"):
        build_config({"zookeeper.connect": "x:1"})
    with pytest.raises(ConfigError, match="zookeeper.connect"):
        build_config({"broker.id": "0"})


def test_bad_listener_is_rejected() -> None:
    with pytest.raises(ConfigError, match="listener"):
        build_config({**BASE, "listeners": "127.0.0.1:9092"})


def test_advertised_listeners_default_to_listeners() -> None:
    config = build_config({**BASE, "listeners": "PLAINTEXT://127.0.0.1:9093"})
    assert [(e.host, e.port) for e in config.advertised_listeners] == [("127.0.0.1", 9093)]


def test_log_roll_ms_overrides_hours() -> None:
    assert build_config({**BASE, "log.roll.ms": "1000"}).log_roll_ms == 1000
    assert build_config({**BASE, "log.roll.hours": "2"}).log_roll_ms == 7200000


def test_properties_syntax() -> None:
    text = "# comment\n! other\nbroker.id=3\nlog.dirs = /a, /b\nzookeeper.connect: h:1/kafka\n"
    text += "listeners=PLAINTEXT://127.0.0.1:1\\\n  ,OTHER://127.0.0.1:2\n"
    raw = read_properties(text)
    assert raw["broker.id"] == "3"
    assert raw["log.dirs"] == "/a, /b"
    assert raw["zookeeper.connect"] == "h:1/kafka"
    assert raw["listeners"] == "PLAINTEXT://127.0.0.1:1,OTHER://127.0.0.1:2"


def test_overrides_win_over_file(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("broker.id=1\nzookeeper.connect=h:1\nnum.partitions=2\n")
    config = load_config(path, ["num.partitions=6", "log.dirs=/x"])
    assert config["num.partitions"] == 6
    assert config.log_dirs == [Path("/x")]
    with pytest.raises(ConfigError, match="key=value"):
        load_config(path, ["num.partitions"])


def test_named_listeners_map_to_protocols() -> None:
    config = build_config(
        {
            **BASE,
            "listeners": "INTERNAL://127.0.0.1:19092,EXTERNAL://127.0.0.1:9092",
            "advertised.listeners": "INTERNAL://kafka1:19092,EXTERNAL://localhost:9092",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
        }
    )
    assert config.listener_security_protocol_map == {
        "INTERNAL": "PLAINTEXT",
        "EXTERNAL": "PLAINTEXT",
    }
    assert [str(e) for e in config.advertised_listeners] == [
        "INTERNAL://kafka1:19092",
        "EXTERNAL://localhost:9092",
    ]
    assert config.inter_broker_listener_name == "INTERNAL"


def test_listener_without_protocol_mapping_is_rejected() -> None:
    with pytest.raises(ConfigError, match="no entry in listener.security.protocol.map"):
        build_config({**BASE, "listeners": "CLIENT://127.0.0.1:9092"})


def test_unknown_security_protocol_is_rejected() -> None:
    with pytest.raises(ConfigError, match="uses KERBEROS; supported: PLAINTEXT, SASL_PLAINTEXT"):
        build_config(
            {
                **BASE,
                "listeners": "CLIENT://127.0.0.1:9093",
                "listener.security.protocol.map": "CLIENT:KERBEROS",
                "inter.broker.listener.name": "CLIENT",
            }
        )


def test_empty_advertised_host_means_this_machine() -> None:
    config = build_config(BASE)
    assert config.advertised_listeners[0].host != ""
    assert config.inter_broker_listener_name == "PLAINTEXT"


def test_retention_precedence_ms_over_minutes_over_hours() -> None:
    assert build_config(BASE).log_retention_ms == 168 * 3600000
    assert build_config({**BASE, "log.retention.hours": "1"}).log_retention_ms == 3600000
    with_minutes = {**BASE, "log.retention.hours": "1", "log.retention.minutes": "2"}
    assert build_config(with_minutes).log_retention_ms == 120000
    assert build_config({**with_minutes, "log.retention.ms": "-1"}).log_retention_ms == -1


def test_keys_accepted_but_not_acted_on_are_reported() -> None:
    config = build_config({**BASE, "num.network.threads": "8", "num.partitions": "3"})
    assert config.ignored_keys == ("num.network.threads",)
