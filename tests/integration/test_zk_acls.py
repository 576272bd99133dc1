"""`zookeeper.set.acl=true` (`scripts/cluster up --set zookeeper.set.acl=true`): the brokers log
in to ZooKeeper with SASL DIGEST-MD5 (the JAAS `Client` section that KAFKA_OPTS names) and
create every znode with Kafka's ACLs: `sasl:kafka` may do everything, everyone else may read,
except under /config/users (SCRAM credentials), which only `sasl:kafka` may read; /consumers
stays open. zkCli's getAcl shows exactly that; a client without credentials can write none of
it; produce and consume work; a restarted broker logs in again; a broker told to set ACLs
without credentials refuses to start with Kafka's message. The reference test runs the same
operations on Apache Kafka 3.9 with the same ZooKeeper security and compares every ACL."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, ConnectionClosedError, NoAuthError
from kazoo.protocol.states import KeeperState

from scripts._cluster.errors import ClusterError
from scripts._cluster.zookeeper import find_installation
from tests.integration.conftest import REPO_ROOT, ClusterFactory, ClusterHandle, wait_until
from tests.integration.jvm_tools import FAST_START_JVM_OPTS
from tests.integration.secure_round_trips import confluent_round_trip
from tests.integration.tool_cli import add_scram_user, ok, run_cluster_tool

# The fixture that runs `make reference` (shared with tests/reference/).
from tests.reference.conftest import reference_lib as reference_lib

CONSUMER_CONFIG = "--consumer.config"  # the console consumer's --command-config
ZK_USER, ZK_PASSWORD = "kafka", "kafka-secret"  # scripts/_cluster/zk_sasl_material.py
CLIENT_JAAS = "kafka_server_jaas.conf"
OVERRIDES = {
    "zookeeper.set.acl": "true",
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
}
TOPIC = "zk-acl-topic"
USER = "zk-acl-user"
PARTITIONS = 2
TIMEOUT_S = 90.0
ZKCLI_TIMEOUT_S = 120.0

ALL, READ = 31, 1
BROKERS_ONLY = [("sasl", ZK_USER, ALL)]
BROKERS_AND_WORLD_READ = [("sasl", ZK_USER, ALL), ("world", "anyone", READ)]
OPEN = [("world", "anyone", ALL)]
# What Kafka's ZkData.defaultAcls gives each path; `<seq>` is the first child of a
# notification queue.
EXPECTED: dict[str, list[tuple[str, str, int]]] = {
    "/brokers/ids/1": BROKERS_AND_WORLD_READ,
    f"/brokers/topics/{TOPIC}": BROKERS_AND_WORLD_READ,
    f"/brokers/topics/{TOPIC}/partitions/0/state": BROKERS_AND_WORLD_READ,
    "/brokers/topics/__consumer_offsets": BROKERS_AND_WORLD_READ,
    "/controller": BROKERS_AND_WORLD_READ,
    "/controller_epoch": BROKERS_AND_WORLD_READ,
    "/cluster/id": BROKERS_AND_WORLD_READ,
    "/config": BROKERS_AND_WORLD_READ,
    f"/config/topics/{TOPIC}": BROKERS_AND_WORLD_READ,
    "/config/changes/<seq>": BROKERS_AND_WORLD_READ,
    "/config/users": BROKERS_ONLY,
    "/config/users/admin": BROKERS_ONLY,
    f"/config/users/{USER}": BROKERS_ONLY,
    "/config/brokers": BROKERS_ONLY,
    f"/kafka-acl/Topic/{TOPIC}": BROKERS_AND_WORLD_READ,
    "/kafka-acl-changes/<seq>": BROKERS_AND_WORLD_READ,
    f"/kafka-acl-extended/prefixed/Topic/{TOPIC}": BROKERS_AND_WORLD_READ,
    "/kafka-acl-extended-changes/<seq>": BROKERS_AND_WORLD_READ,
    "/consumers": OPEN,
}


def _librdkafka(cluster: ClusterHandle) -> dict[str, str]:
    return {
        "bootstrap.servers": cluster.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "admin",
        "sasl.password": "admin-secret",
    }


def _create_topic(
    cluster: ClusterHandle, topic: str, partitions: int, configs: dict[str, str]
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(_librdkafka(cluster))
    new_topic = NewTopic(topic, partitions, replication_factor=-1, config=configs)
    admin.create_topics([new_topic])[topic].result(TIMEOUT_S)


def _wait_for_controller(cluster: ClusterHandle) -> None:
    """Until Metadata names the controller: a broker just registered may not know it yet, and
    librdkafka's admin client would wait for its next metadata refresh (minutes)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    def known() -> bool:
        try:
            metadata = AdminClient(_librdkafka(cluster)).list_topics(timeout=10)
        except KafkaException:  # its listener not open yet
            return False
        return metadata.controller_id >= 0

    wait_until(known, TIMEOUT_S, "the cluster's Metadata to name a controller")


def _scenario(cluster: ClusterHandle) -> None:
    """What leaves a znode of each kind: a topic with a config, a SCRAM user, a literal and a
    prefixed ACL, and a consumer group (so __consumer_offsets)."""
    _wait_for_controller(cluster)
    _create_topic(cluster, TOPIC, PARTITIONS, {"retention.ms": "86400000"})
    add_scram_user(cluster, USER, "SCRAM-SHA-256")
    grant = ("--add", "--allow-principal", f"User:{USER}", "--topic", TOPIC)
    ok(run_cluster_tool(cluster, "kafka-acls", *grant, "--operation", "Read"))
    prefixed = ("--resource-pattern-type", "prefixed")
    ok(run_cluster_tool(cluster, "kafka-acls", *grant, "--operation", "Write", *prefixed))
    values = [f"zk-acl-{i}".encode() for i in range(10)]
    seen = confluent_round_trip(_librdkafka(cluster), TOPIC, values, PARTITIONS)
    assert sorted(seen) == sorted(values)
    consume = ["--topic", TOPIC, "--group", "zk-acl-group", "--from-beginning"]
    consume += ["--max-messages", "1"]
    ok(run_cluster_tool(cluster, "kafka-console-consumer", *consume, config_flag=CONSUMER_CONFIG))


def _kazoo(cluster: ClusterHandle, password: str | None = ZK_PASSWORD) -> KazooClient:
    sasl = None
    if password is not None:
        sasl = {"mechanism": "DIGEST-MD5", "username": ZK_USER, "password": password}
    client = KazooClient(hosts=cluster.zk_connect, sasl_options=sasl)
    client.start(timeout=30)
    return client


@pytest.fixture(scope="module")
def cluster(make_cluster_module: ClusterFactory) -> ClusterHandle:
    handle = make_cluster_module(brokers=2, security="sasl_plaintext", overrides=OVERRIDES)
    _scenario(handle)
    return handle


@pytest.fixture
def brokers_zk(cluster: ClusterHandle) -> Iterator[KazooClient]:
    """A ZooKeeper session logged in as the brokers are."""
    client = _kazoo(cluster)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def anonymous_zk(cluster: ClusterHandle) -> Iterator[KazooClient]:
    client = _kazoo(cluster, password=None)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def _resolve(client: KazooClient, path: str) -> str:
    """`<seq>` -> the first child of that notification queue."""
    if not path.endswith("/<seq>"):
        return path
    parent = path.removesuffix("/<seq>")
    children = sorted(client.get_children(parent))
    assert children, f"{parent} has no notification"
    return f"{parent}/{children[0]}"


def _acl(client: KazooClient, path: str) -> list[tuple[str, str, int]]:
    acls, _ = client.get_acls(path)
    return [(acl.id.scheme, acl.id.id, acl.perms) for acl in acls]


def _acls_of(client: KazooClient) -> dict[str, list[tuple[str, str, int]]]:
    return {path: _acl(client, _resolve(client, path)) for path in EXPECTED}


def test_every_znode_kind_has_kafkas_acls(brokers_zk: KazooClient) -> None:
    assert _acls_of(brokers_zk) == EXPECTED


def test_no_znode_of_kafkas_is_left_open(brokers_zk: KazooClient) -> None:
    """The whole tree: nothing the brokers created is writable by others."""
    open_paths: list[str] = []
    stack = ["/"]
    while stack:
        path = stack.pop()
        for child in brokers_zk.get_children(path):
            child_path = f"{path.rstrip('/')}/{child}"
            if child_path == "/zookeeper":
                continue  # ZooKeeper's own
            acl = _acl(brokers_zk, child_path)
            if acl not in (BROKERS_AND_WORLD_READ, BROKERS_ONLY):
                open_paths.append(f"{child_path}: {acl}")
            stack.append(child_path)
    assert open_paths == ["/consumers: [('world', 'anyone', 31)]"]


def _zkcli_classpath() -> str:
    """The launcher's ZooKeeper classpath: the jars zkCli needs of pyspark's (a JVM that scans
    all ~280 of them spends three times the CPU starting up)."""
    try:
        return find_installation().classpath
    except ClusterError as error:
        pytest.fail(f"no ZooKeeper for zkCli: {error}")


def _zkcli(
    cluster: ClusterHandle, command: str, logged_in: bool
) -> subprocess.CompletedProcess[str]:
    """zkCli.sh's class, `-server <zk> <command>`; as the brokers with `logged_in`."""
    java = ["java", "-Xmx64m", *FAST_START_JVM_OPTS.split()]
    if logged_in:
        java.append(f"-Djava.security.auth.login.config={cluster.dir / CLIENT_JAAS}")
        # ZooKeeper 3.9's client refuses DIGEST-MD5 in its default FIPS mode (Kafka 3.9 ships
        # the 3.8 client, which has no such mode).
        java.append("-Dzookeeper.fips-mode=false")
    main = ["org.apache.zookeeper.ZooKeeperMain", "-server", cluster.zk_connect, *command.split()]
    return subprocess.run(
        [*java, "-cp", _zkcli_classpath(), *main],
        capture_output=True,
        text=True,
        timeout=ZKCLI_TIMEOUT_S,
        check=False,
    )


def _get_acl_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if re.match(r"^('|: )", line)]


def test_zkcli_get_acl_shows_what_kafka_sets(cluster: ClusterHandle) -> None:
    broker = _zkcli(cluster, "getAcl /brokers/ids/1", logged_in=False)
    assert _get_acl_lines(broker.stdout) == ["'sasl,'kafka", ": cdrwa", "'world,'anyone", ": r"]
    secret = _zkcli(cluster, f"getAcl /config/users/{USER}", logged_in=True)
    assert _get_acl_lines(secret.stdout) == ["'sasl,'kafka", ": cdrwa"], secret.stderr
    refused = _zkcli(cluster, f"getAcl /config/users/{USER}", logged_in=False)
    assert "Insufficient permission" in refused.stdout + refused.stderr


def _zookeeper_shell(
    cluster: ClusterHandle, path: str, logged_in: bool
) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "KAFKA_OPTS"}
    if logged_in:
        env["KAFKA_OPTS"] = f"-Djava.security.auth.login.config={cluster.dir / CLIENT_JAAS}"
    tool = str(REPO_ROOT / ".venv" / "bin" / "zookeeper-shell")
    return subprocess.run(
        [tool, cluster.zk_connect, "getAcl", path],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def test_zookeeper_shell_get_acl_prints_as_zkcli(cluster: ClusterHandle) -> None:
    broker = _zookeeper_shell(cluster, "/brokers/ids/1", logged_in=False)
    assert broker.stdout.splitlines() == ["'sasl,'kafka", ": cdrwa", "'world,'anyone", ": r"]
    secret = _zookeeper_shell(cluster, f"/config/users/{USER}", logged_in=True)
    assert secret.stdout.splitlines() == ["'sasl,'kafka", ": cdrwa"], secret.stderr
    refused = _zookeeper_shell(cluster, f"/config/users/{USER}", logged_in=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == f"Error: Insufficient permission : /config/users/{USER}"


def test_a_client_without_credentials_can_write_nothing(
    cluster: ClusterHandle, anonymous_zk: KazooClient
) -> None:
    data, _ = anonymous_zk.get("/brokers/ids/1")  # world-readable
    assert b'"endpoints"' in data
    attempts: dict[str, Any] = {
        "set topic": lambda: anonymous_zk.set(f"/brokers/topics/{TOPIC}", b"{}"),
        "add broker": lambda: anonymous_zk.create("/brokers/ids/99", b"{}", ephemeral=True),
        # Deleting is the parent's ACL's business (/controller's parent is ZooKeeper's root).
        "delete broker": lambda: anonymous_zk.delete("/brokers/ids/1"),
        "read credentials": lambda: anonymous_zk.get(f"/config/users/{USER}"),
        "add ACL": lambda: anonymous_zk.create("/kafka-acl/Topic/intruder", b"{}"),
        "change config": lambda: anonymous_zk.set(f"/config/topics/{TOPIC}", b"{}"),
    }
    refused = {}
    for what, attempt in attempts.items():
        try:
            attempt()
        except NoAuthError:
            refused[what] = True
        else:
            refused[what] = False
    assert refused == dict.fromkeys(attempts, True)
    wrong = KazooClient(
        hosts=cluster.zk_connect,
        sasl_options={"mechanism": "DIGEST-MD5", "username": ZK_USER, "password": "wrong"},
    )
    # kazoo passes through AUTH_FAILED on its way to CLOSED: its listeners see it.
    states: list[str] = []
    wrong.add_listener(lambda _: states.append(wrong.client_state))
    try:
        wrong.start_async()
        wait_until(
            lambda: KeeperState.AUTH_FAILED in states,
            TIMEOUT_S,
            lambda: f"ZooKeeper to refuse a wrong password (states {states})",
        )
        with pytest.raises((AuthFailedError, ConnectionClosedError)):
            wrong.get(f"/config/users/{USER}")
    finally:
        wrong.stop()
        wrong.close()


def test_a_restarted_broker_logs_in_again(cluster: ClusterHandle, brokers_zk: KazooClient) -> None:
    cluster.kill(2)
    cluster.start(2)  # returns once broker 2 is registered again
    assert _acl(brokers_zk, "/brokers/ids/2") == BROKERS_AND_WORLD_READ
    values = [f"after-restart-{i}".encode() for i in range(5)]
    topic = f"zk-acl-{uuid.uuid4().hex[:6]}"
    _create_topic(cluster, topic, 1, {})
    seen = confluent_round_trip(_librdkafka(cluster), topic, values, 1)
    assert sorted(seen) == sorted(values)
    assert _acl(brokers_zk, f"/brokers/topics/{topic}") == BROKERS_AND_WORLD_READ


def _lone_broker(cluster: ClusterHandle, tmp_path: Path, kafka_opts: str | None) -> str:
    """Start one more broker (id 99) on the cluster's ZooKeeper with zookeeper.set.acl=true;
    it must exit non-zero; returns its log."""
    properties = tmp_path / "server.properties"
    properties.write_text(
        "broker.id=99\nlisteners=PLAINTEXT://127.0.0.1:0\n"
        f"log.dirs={tmp_path / 'data'}\nzookeeper.connect={cluster.zk_connect}\n"
        "zookeeper.set.acl=true\nzookeeper.connection.timeout.ms=30000\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "KAFKA_OPTS"}
    if kafka_opts is not None:
        env["KAFKA_OPTS"] = kafka_opts
    result = subprocess.run(
        [sys.executable, "-m", "broker", str(properties)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    return result.stderr


def test_set_acl_without_credentials_refuses_to_start(
    cluster: ClusterHandle, tmp_path: Path
) -> None:
    log = _lone_broker(cluster, tmp_path, kafka_opts=None)
    assert (
        "Fatal error during KafkaServer startup. Prepare to shutdown: zookeeper.set.acl is "
        "true, but ZooKeeper client TLS configuration identifying at least "
        "zookeeper.ssl.client.enable, zookeeper.clientCnxnSocket, and "
        "zookeeper.ssl.keystore.location was not present and the verification of the JAAS "
        "login file failed [java.security.auth.login.config=null, "
        "zookeeper.sasl.client=default:true, zookeeper.sasl.clientconfig=default:Client]"
    ) in log


def test_wrong_zookeeper_password_refuses_to_start(cluster: ClusterHandle, tmp_path: Path) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text((cluster.dir / CLIENT_JAAS).read_text().replace(f'"{ZK_PASSWORD}"', '"not-it"'))
    log = _lone_broker(cluster, tmp_path, f"-Djava.security.auth.login.config={jaas}")
    assert "refused SASL (DIGEST-MD5) authentication as kafka" in log


@pytest.mark.reference
def test_acls_are_those_of_kafka(
    reference_lib: Path, make_cluster: ClusterFactory, brokers_zk: KazooClient
) -> None:
    """Apache Kafka 3.9 after the same operations, with the same ZooKeeper security."""
    kafka = make_cluster(brokers=1, impl="kafka", security="sasl_plaintext", overrides=OVERRIDES)
    _scenario(kafka)
    kafka_zk = _kazoo(kafka)
    try:
        wait_until(
            lambda: kafka_zk.exists(f"/config/users/{USER}") is not None,
            TIMEOUT_S,
            "Kafka to store the SCRAM user",
        )
        theirs = _acls_of(kafka_zk)
    finally:
        kafka_zk.stop()
        kafka_zk.close()
    assert _acls_of(brokers_zk) == theirs
