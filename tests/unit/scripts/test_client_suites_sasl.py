"""scripts/client_suites --suite kafka-python-sasl prepares kafka-python's sdist: a plugin that
points its SASL broker fixture at our cluster, and the command-config template its
kafka-topics.sh calls render; the cluster knows kafka-python's user as a PLAIN user."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _tools import client_suites_sasl as sasl


def test_prepare_writes_a_plugin_and_the_command_config_template(tmp_path: Path) -> None:
    (tmp_path / "test").mkdir()
    sasl.prepare(tmp_path)
    plugin = (tmp_path / "test" / "pykafka_classic_sasl.py").read_text()
    compile(plugin, "pykafka_classic_sasl.py", "exec")
    assert f'os.environ["{sasl.BOOTSTRAP_VARIABLE}"]' in plugin
    assert "fixtures.KafkaFixture.instance = staticmethod(" in plugin
    template = tmp_path / "servers" / "resources" / "default" / "sasl_command.conf"
    rendered = template.read_text().format(
        transport="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256", jaas_config="M required;\n"
    )
    assert rendered.split("\n")[:3] == [
        "security.protocol=SASL_PLAINTEXT",
        "sasl.mechanism=SCRAM-SHA-256",
        "sasl.jaas.config=M required;",
    ]


def test_the_listener_knows_alice_and_admin_as_plain_users() -> None:
    ((key, value),) = sasl.broker_settings().items()
    assert key == "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    assert value.startswith("org.apache.kafka.common.security.plain.PlainLoginModule required")
    assert 'user_alice="alice-secret"' in value and 'user_admin="admin-secret"' in value
    assert value.endswith(";")
