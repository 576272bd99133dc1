"""kafka-python's SASL integration tests for `scripts/client_suites --suite kafka-python-sasl`.

kafka-python's `test/integration/test_sasl_integration.py` (PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512, each through an admin client, a producer and consumer, and its network client)
cannot run against an external broker as its plaintext tests do: the module skips itself when
`KAFKA_URI` is set, and its `sasl_kafka` fixture asks `KafkaFixture.instance` for a broker of
its own (SASL_PLAINTEXT, the mechanism, user `alice` / `alice-secret`), which it would spawn
from a Kafka installation and watch for Kafka's log lines. So the suite runs that module
without `KAFKA_URI`, and a small pytest plugin (written next to the tests, loaded with `-p`)
makes `KafkaFixture.instance` answer with an external fixture on this project's SASL_PLAINTEXT
cluster instead, keeping the fixture's own client settings (`_enrich_client_params`) and JAAS
text. The cluster knows alice as kafka-python's broker fixture makes her known: a PLAIN user
of the listener's JAAS config, and SCRAM credentials added with `kafka-configs`. The test
bodies run unmodified; `get_topic_names` runs `$KAFKA_ROOT/bin/kafka-topics.sh --list` with
the fixture's `sasl_command.conf`, a template the sdist lacks, written here (our own text).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

SASL_MODULE = "test/integration/test_sasl_integration.py"
USER = "alice"  # kafka-python's KafkaFixture.broker_user / broker_password
PASSWORD = "alice-secret"
SECURITY = "sasl_plaintext"
# The launcher's super user (`scripts/cluster up --security`, CLUSTER_CONTRACT.md).
ADMIN_USER = "admin"
ADMIN_PASSWORD = "admin-secret"
LISTENER_PREFIX = "listener.name.sasl_plaintext"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
BOOTSTRAP_VARIABLE = "PYKAFKA_CLASSIC_SASL_BOOTSTRAP"
PLUGIN_MODULE = "test.pykafka_classic_sasl"
TOOL_TIMEOUT_S = 120.0


class SaslSuiteError(Exception):
    """The SASL cluster could not be made ready for kafka-python's tests."""


_PLUGIN = f'''"""Written by scripts/client_suites --suite kafka-python-sasl; not kafka-python's.

KafkaFixture.instance, asked for a SASL broker, answers with an external fixture on the cluster
at ${BOOTSTRAP_VARIABLE} rather than spawning a Kafka of its own.
"""

import os

import py

from test.integration import fixtures


def _external_sasl_broker(broker_id, transport="PLAINTEXT", sasl_mechanism=None,
                          replicas=1, partitions=4, **_ignored):
    if sasl_mechanism is None:
        raise RuntimeError("this run serves kafka-python's SASL fixtures only")
    host, port = os.environ["{BOOTSTRAP_VARIABLE}"].rsplit(":", 1)
    fixture = fixtures.KafkaFixture(
        host, int(port), broker_id, transport=transport, sasl_mechanism=sasl_mechanism,
        replicas=replicas, partitions=partitions, external=True,
        tmp_dir=py.path.local.mkdtemp(),
    )
    # What open() would have set before spawning: the client side of kafka-topics.sh.
    fixture.jaas_config = fixture._jaas_config()
    return fixture


fixtures.KafkaFixture.instance = staticmethod(_external_sasl_broker)
'''

# kafka-python's fixture renders this with its own attributes for kafka-topics.sh.
_SASL_COMMAND_CONF = """security.protocol={transport}
sasl.mechanism={sasl_mechanism}
sasl.jaas.config={jaas_config}
"""


def prepare(tree: Path) -> None:
    """The plugin and the command-config template, into the sdist's tree."""
    (tree / "test" / "pykafka_classic_sasl.py").write_text(_PLUGIN)
    resources = tree / "servers" / "resources" / "default"
    resources.mkdir(parents=True, exist_ok=True)
    (resources / "sasl_command.conf").write_text(_SASL_COMMAND_CONF)


def broker_settings() -> dict[str, str]:
    """alice as a PLAIN user of the listener, beside the launcher's admin."""
    users = f'user_{ADMIN_USER}="{ADMIN_PASSWORD}" user_{USER}="{PASSWORD}"'
    credentials = f'username="{ADMIN_USER}" password="{ADMIN_PASSWORD}"'
    return {f"{LISTENER_PREFIX}.plain.sasl.jaas.config": f"{PLAIN_MODULE} required"
            f" {credentials} {users};"}  # fmt: skip


def add_scram_user(tool: Path, bootstrap: str, command_config: Path) -> None:
    """alice's SCRAM-SHA-256 and SCRAM-SHA-512 credentials, as kafka-configs writes them."""
    mechanisms = f"SCRAM-SHA-256=[password={PASSWORD}],SCRAM-SHA-512=[password={PASSWORD}]"
    command = [str(tool), "--bootstrap-server", bootstrap, "--command-config", str(command_config)]
    command += ["--alter", "--add-config", mechanisms, "--entity-type", "users"]
    command += ["--entity-name", USER]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False
    )
    if result.returncode != 0:
        raise SaslSuiteError(f"kafka-configs could not add {USER}: {result.stderr.strip()}")
