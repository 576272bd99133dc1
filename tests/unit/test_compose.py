"""docker-compose.yml cannot be run here (no Docker engine); check it is valid and that every
broker's configuration, as the image assembles it, is one our broker accepts, the SASL_SSL
example's (profile sasl_ssl) with the TLS material its secure-tls service writes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from broker.config.kafka_config import build_config, read_properties

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> dict[str, Any]:
    document = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(document, dict)
    return document


def _image_properties() -> dict[str, str]:
    dockerfile = (ROOT / "Dockerfile").read_text()
    lines = re.findall(r"'([a-z.]+=[^']*)'", dockerfile)
    return read_properties("\n".join(lines))


def _broker_properties(service: dict[str, Any]) -> dict[str, str]:
    """The image's server.properties with the service's --override arguments applied."""
    arguments = service["command"]
    overrides = [arguments[i + 1] for i, a in enumerate(arguments) if a == "--override"]
    return _image_properties() | dict(o.split("=", 1) for o in overrides)


ZOOKEEPERS = ["zookeeper-1", "zookeeper-2", "zookeeper-3"]


def test_compose_has_a_three_server_ensemble_and_three_brokers() -> None:
    services = _compose()["services"]
    assert sorted(name for name in services if name.startswith("zookeeper-")) == ZOOKEEPERS
    brokers = sorted(name for name in services if name.startswith("broker-"))
    assert brokers == ["broker-1", "broker-2", "broker-3"]


def test_every_zookeeper_server_knows_the_whole_ensemble() -> None:
    services = _compose()["services"]
    expected = {f"server.{n}": f"zookeeper-{n}:2888:3888;2181" for n in (1, 2, 3)}
    for n, name in enumerate(ZOOKEEPERS, start=1):
        service = services[name]
        assert service["image"].startswith("zookeeper:")
        environment = service["environment"]
        assert int(environment["ZOO_MY_ID"]) == n
        servers = dict(entry.split("=", 1) for entry in environment["ZOO_SERVERS"].split())
        assert servers == expected, name
        assert service["hostname"] == name
        assert "zkServer.sh status" in " ".join(service["healthcheck"]["test"])


def test_brokers_wait_for_a_healthy_ensemble_and_have_health_checks() -> None:
    services = _compose()["services"]
    for name, service in services.items():
        if not name.startswith("broker-"):
            continue
        conditions = {dep: spec["condition"] for dep, spec in service["depends_on"].items()}
        assert conditions == dict.fromkeys(ZOOKEEPERS, "service_healthy"), name
        assert service["healthcheck"]["test"], name


def test_brokers_connect_to_every_zookeeper_server() -> None:
    config = build_config(_broker_properties(_compose()["services"]["broker-1"]))
    hosts = str(config["zookeeper.connect"]).split("/", 1)[0].split(",")
    assert sorted(hosts) == [f"{name}:2181" for name in ZOOKEEPERS]


def test_every_broker_config_is_valid_and_distinct() -> None:
    services = _compose()["services"]
    seen_ids = set()
    for name, service in services.items():
        if not name.startswith("broker-"):
            continue
        raw = _broker_properties(service)
        # build_config refuses unknown keys, so every key in the image and the overrides is
        # one the broker accepts.
        config = build_config(raw)
        assert config.broker_id not in seen_ids
        seen_ids.add(config.broker_id)
        assert config.inter_broker_listener_name == "INTERNAL"
        external = [e for e in config.advertised_listeners if e.listener_name == "EXTERNAL"]
        assert [f"{e.port}:{e.port}" for e in external] == service["ports"]


SECURE_BROKERS = ["secure-broker-1", "secure-broker-2", "secure-broker-3"]
SECRETS = "/etc/kafka/secrets"


def _secure_tls(tmp_path: Path) -> Path:
    """Run the secure-tls service's script as its container would, into `tmp_path`."""
    service = _compose()["services"]["secure-tls"]
    assert service["profiles"] == ["sasl_ssl"]
    assert service["entrypoint"] == ["python", "-c"]
    (script,) = service["command"]
    code = f"import sys\nsys.path.insert(0, {str(ROOT / 'scripts' / '_cluster')!r})\n"
    code += script.replace(SECRETS, str(tmp_path))
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return tmp_path


def _secure_broker_properties(service: dict[str, Any], secrets: Path) -> dict[str, str]:
    """The image's server.properties with the shared entrypoint's and the broker's own
    --override arguments, the secrets directory moved to `secrets`."""
    arguments = [*service["entrypoint"], *service["command"]]
    assert arguments[:4] == ["python", "-m", "broker", "/etc/kafka/server.properties"]
    overrides = [arguments[i + 1] for i, a in enumerate(arguments) if a == "--override"]
    properties = _image_properties() | dict(o.split("=", 1) for o in overrides)
    return {key: value.replace(SECRETS, str(secrets)) for key, value in properties.items()}


def test_the_sasl_ssl_example_brokers_take_the_material_secure_tls_makes(tmp_path: Path) -> None:
    secrets = _secure_tls(tmp_path)
    services = _compose()["services"]
    seen_ids = set()
    for name in SECURE_BROKERS:
        service = services[name]
        assert service["profiles"] == ["sasl_ssl"], name
        conditions = {dep: spec["condition"] for dep, spec in service["depends_on"].items()}
        expected = dict.fromkeys(ZOOKEEPERS, "service_healthy")
        assert conditions == expected | {"secure-tls": "service_completed_successfully"}, name
        # build_config also builds each SSL listener's TLS context and checks the SASL
        # settings, so the keystore secure-tls wrote must load.
        config = build_config(_secure_broker_properties(service, secrets))
        assert config.broker_id not in seen_ids
        seen_ids.add(config.broker_id)
        assert str(config["zookeeper.connect"]).endswith("/sasl_ssl")  # not the other cluster
        assert config.inter_broker_listener_name == "INTERNAL"
        assert config.security_protocol("INTERNAL") == "SASL_PLAINTEXT"
        assert config.security_protocol("EXTERNAL") == "SASL_SSL"
        external = [e for e in config.advertised_listeners if e.listener_name == "EXTERNAL"]
        assert [f"{e.port}:{e.port}" for e in external] == service["ports"]
        assert config["authorizer.class.name"] and config["super.users"] == "User:admin"


def test_the_sasl_ssl_example_writes_client_settings_for_the_host_and_secure_users(
    tmp_path: Path,
) -> None:
    secrets = _secure_tls(tmp_path)
    client = read_properties((secrets / "client.properties").read_text())
    assert client["security.protocol"] == "SASL_SSL"
    assert client["sasl.mechanism"] == "SCRAM-SHA-512"
    assert client["ssl.truststore.location"] == ".compose-sasl-ssl/tls/ca.pem"
    internal = read_properties((secrets / "internal.properties").read_text())
    assert (internal["security.protocol"], internal["sasl.mechanism"]) == (
        "SASL_PLAINTEXT",
        "PLAIN",
    )
    users = _compose()["services"]["secure-users"]
    assert users["entrypoint"] == ["kafka-configs"]
    command = users["command"]
    assert command[command.index("--command-config") + 1] == f"{SECRETS}/internal.properties"
    assert command[command.index("--entity-name") + 1] == "admin"
    assert set(users["depends_on"]) == set(SECURE_BROKERS)
