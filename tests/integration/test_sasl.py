"""SASL_SSL listeners (`scripts/cluster up --security sasl_ssl`): the brokers authenticate to
each other with SCRAM-SHA-512 and replicate; confluent-kafka, kafka-python and aiokafka produce
and consume as the launcher's `admin` with SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN; a user
added with kafka-configs can authenticate on every broker at once; a wrong password, an
unknown mechanism and a request before authentication are refused (Kafka's errors, a closed
connection, a log line), and the broker keeps serving. Delegation tokens: Kafka 3.9's
kafka-delegation-tokens creates, describes, renews and expires one; Kafka's Java client and
ours authenticate with it (SCRAM, tokenauth=true) as its owner, and a token login may not ask
for tokens."""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.network.broker_client import BrokerClient, BrokerClientError
from broker.network.sasl import SaslClientConfig
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import request_class
from tests.integration.conftest import ClusterHandle, wait_until, zk_session
from tests.integration.secure_round_trips import (
    aiokafka_round_trip,
    confluent_round_trip,
    kafka_python_round_trip,
)

TIMEOUT_S = 60
RECORDS = 10
PARTITIONS = 3
ADMIN = ("admin", "admin-secret")
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")
REPO_ROOT = Path(__file__).resolve().parents[2]


DELEGATION_TOKEN_SECRET = "delegation-token-test-secret"


@pytest.fixture(scope="module")
def sasl_cluster(make_cluster_module: Any) -> ClusterHandle:
    overrides = {"delegation.token.secret.key": DELEGATION_TOKEN_SECRET}
    handle: ClusterHandle = make_cluster_module(security="sasl_ssl", overrides=overrides)
    return handle


def _ca(cluster: ClusterHandle) -> str:
    return str(cluster.dir / "tls" / "ca.pem")


def _librdkafka(
    cluster: ClusterHandle,
    mechanism: str = "SCRAM-SHA-512",
    user: tuple[str, str] = ADMIN,
    bootstrap: str | None = None,
) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap or cluster.bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": _ca(cluster),
        "sasl.mechanism": mechanism,
        "sasl.username": user[0],
        "sasl.password": user[1],
    }


def _new_topic(cluster: ClusterHandle) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(_librdkafka(cluster))
    admin.create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(TIMEOUT_S)
    return topic


def _values(label: str) -> list[bytes]:
    return [f"{label}-{i}".encode() for i in range(RECORDS)]


def _address(cluster: ClusterHandle, broker_id: int) -> tuple[str, int]:
    return "127.0.0.1", cluster.broker_port(broker_id)


def _tls_context(cluster: ClusterHandle) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=_ca(cluster))


def _log_count(cluster: ClusterHandle, text: str) -> int:
    return sum(
        cluster.broker_log(b).read_text(errors="replace").count(text) for b in cluster.broker_ids
    )


def test_replicas_follow_their_leaders_over_sasl_ssl(sasl_cluster: ClusterHandle) -> None:
    from confluent_kafka.admin import AdminClient

    topic = _new_topic(sasl_cluster)
    admin = AdminClient(_librdkafka(sasl_cluster))

    def full_isr() -> bool:
        described = admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
        return len(described.partitions) == PARTITIONS and all(
            len(p.isrs) == 3 for p in described.partitions.values()
        )

    wait_until(full_isr, TIMEOUT_S, f"every partition of {topic} with 3 replicas in its ISR")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_round_trip(sasl_cluster: ClusterHandle, mechanism: str) -> None:
    topic = _new_topic(sasl_cluster)
    config = _librdkafka(sasl_cluster, mechanism)
    seen = confluent_round_trip(config, topic, _values(mechanism), PARTITIONS)
    assert sorted(seen) == sorted(_values(mechanism))


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_round_trip(sasl_cluster: ClusterHandle, mechanism: str) -> None:
    topic = _new_topic(sasl_cluster)
    sasl = {
        "security_protocol": "SASL_SSL",
        "ssl_cafile": _ca(sasl_cluster),
        "sasl_mechanism": mechanism,
        "sasl_plain_username": ADMIN[0],
        "sasl_plain_password": ADMIN[1],
    }
    seen = kafka_python_round_trip(sasl_cluster.bootstrap, topic, _values(mechanism), sasl)
    assert sorted(seen) == sorted(_values(mechanism))


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_round_trip(sasl_cluster: ClusterHandle, mechanism: str) -> None:
    topic = _new_topic(sasl_cluster)
    sasl: dict[str, Any] = {
        "security_protocol": "SASL_SSL",
        "ssl_context": _tls_context(sasl_cluster),
        "sasl_mechanism": mechanism,
        "sasl_plain_username": ADMIN[0],
        "sasl_plain_password": ADMIN[1],
    }
    seen = aiokafka_round_trip(sasl_cluster.bootstrap, topic, _values(mechanism), sasl)
    assert sorted(seen) == sorted(_values(mechanism))


def _kafka_configs(cluster: ClusterHandle, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(REPO_ROOT / ".venv" / "bin" / "kafka-configs")]
    command += ["--bootstrap-server", cluster.bootstrap]
    command += ["--command-config", str(cluster.dir / "client.properties"), *args]
    return subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def test_a_user_added_with_kafka_configs_authenticates_on_every_broker(
    sasl_cluster: ClusterHandle,
) -> None:
    from confluent_kafka.admin import AdminClient

    user = f"user-{uuid.uuid4().hex[:6]}"
    added = _kafka_configs(
        sasl_cluster,
        "--alter",
        "--add-config",
        f"SCRAM-SHA-256=[iterations=8192,password={user}-secret]",
        "--entity-type",
        "users",
        "--entity-name",
        user,
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == f"Completed updating config for user {user}."
    for broker_id in sasl_cluster.broker_ids:
        host, port = _address(sasl_cluster, broker_id)
        config = _librdkafka(
            sasl_cluster, "SCRAM-SHA-256", (user, f"{user}-secret"), f"{host}:{port}"
        )
        # librdkafka retries a failed authentication; a short timeout per attempt
        admin = AdminClient({**config, "socket.timeout.ms": "5000"})
        wait_until(
            lambda admin=admin: bool(admin.list_topics(timeout=5).brokers),
            15,
            f"{user} authenticated on broker {broker_id}",
        )
    described = _kafka_configs(
        sasl_cluster, "--describe", "--entity-type", "users", "--entity-name", user
    )
    assert described.stdout.strip() == (
        f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-256=iterations=8192"
    )


async def _open(cluster: ClusterHandle) -> BrokerClient:
    host, port = _address(cluster, 1)
    return BrokerClient(host, port, "test-sasl", ssl_context=_tls_context(cluster))


def _handshake(mechanism: str) -> Any:
    return request_class(ApiKey.SASL_HANDSHAKE, 1)(mechanism=mechanism)


def _authenticate(token: bytes) -> Any:
    return request_class(ApiKey.SASL_AUTHENTICATE, 2)(auth_bytes=token)


def _metadata() -> Any:
    return request_class(ApiKey.METADATA, 4)(topics=None, allow_auto_topic_creation=False)


def _still_serves(cluster: ClusterHandle) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(_librdkafka(cluster))
    assert len(admin.list_topics(timeout=TIMEOUT_S).brokers) == 3


def test_a_wrong_password_is_refused_and_the_connection_closed(
    sasl_cluster: ClusterHandle,
) -> None:
    async def attempt() -> tuple[Any, Any, bool]:
        client = await _open(sasl_cluster)
        try:
            handshake = await client.send(_handshake("PLAIN"))
            answer = await client.send(_authenticate(b"\x00admin\x00wrong"))
            try:
                await client.send(_metadata())
            except BrokerClientError:
                return handshake, answer, True
            return handshake, answer, False
        finally:
            await client.close()

    before = _log_count(sasl_cluster, "Invalid username or password")
    handshake, answer, closed = asyncio.run(attempt())
    assert handshake.error_code == ErrorCode.none
    assert answer.error_code == ErrorCode.sasl_authentication_failed
    assert answer.error_message == "Authentication failed: Invalid username or password"
    assert closed
    wait_until(
        lambda: _log_count(sasl_cluster, "Invalid username or password") > before,
        10,
        "a log line about the failed authentication",
    )
    _still_serves(sasl_cluster)


def test_an_unknown_mechanism_is_refused(sasl_cluster: ClusterHandle) -> None:
    async def attempt() -> Any:
        client = await _open(sasl_cluster)
        try:
            return await client.send(_handshake("GSSAPI"))
        finally:
            await client.close()

    answer = asyncio.run(attempt())
    assert answer.error_code == ErrorCode.unsupported_sasl_mechanism
    assert list(answer.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    _still_serves(sasl_cluster)


def test_a_request_before_authentication_closes_the_connection(
    sasl_cluster: ClusterHandle,
) -> None:
    before = _log_count(sasl_cluster, "unexpected Metadata request during SASL handshake")

    async def attempt() -> None:
        client = await _open(sasl_cluster)
        try:
            await client.send(_metadata())
        finally:
            await client.close()

    with pytest.raises(BrokerClientError):
        asyncio.run(attempt())
    wait_until(
        lambda: (
            _log_count(sasl_cluster, "unexpected Metadata request during SASL handshake") > before
        ),
        10,
        "a log line about the request before authentication",
    )
    _still_serves(sasl_cluster)


def test_a_malformed_credential_is_reported_without_its_value(sasl_cluster: ClusterHandle) -> None:
    """A credential znode Kafka's tools would not write: the brokers log that they ignore it
    and DescribeUserScramCredentials answers an error, neither showing the stored keys."""
    user = f"leaky-{uuid.uuid4().hex[:6]}"
    secret = f"c2VjcmV0{uuid.uuid4().hex[:8]}"  # valid base64, as a stored key is
    text = f"salt={secret},stored_key={secret},server_key={secret}"  # no iterations
    config = {"version": 1, "config": {"SCRAM-SHA-256": text}}
    notice = f"ignoring SCRAM-SHA-256 credential of user {user}"
    before = _log_count(sasl_cluster, notice)
    with zk_session(sasl_cluster) as zk:
        zk.create(f"/config/users/{user}", json.dumps(config).encode(), makepath=True)
        change = {"version": 2, "entity_path": f"users/{user}"}
        zk.create("/config/changes/config_change_", json.dumps(change).encode(), sequence=True)
    wait_until(
        lambda: _log_count(sasl_cluster, notice) >= before + len(sasl_cluster.broker_ids),
        TIMEOUT_S,
        "every broker's log line about the ignored credential",
    )

    async def describe() -> Any:
        host, port = _address(sasl_cluster, 1)
        async with BrokerClient(
            host,
            port,
            "test-sasl",
            ssl_context=_tls_context(sasl_cluster),
            sasl=SaslClientConfig("SCRAM-SHA-512", *ADMIN),
        ) as client:
            request_cls = request_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0)
            request = adapter.build(request_cls, {"users": [{"name": user}]})
            return await client.send(request)

    (result,) = asyncio.run(describe()).results
    assert result.error_code == ErrorCode.unknown_server_error
    assert result.error_message.startswith("credentials not valid")
    assert secret not in result.error_message
    assert _log_count(sasl_cluster, secret) == 0


def _token_tool(cluster: ClusterHandle, *args: str) -> str:
    from tests.integration.jvm_tools import run_jvm_tool

    config = str(cluster.dir / "client.properties")
    run = run_jvm_tool(
        "kafka-delegation-tokens", "--bootstrap-server", cluster.bootstrap,
        "--command-config", config, *args,
    )  # fmt: skip
    assert run.returncode == 0, f"{run.command}\n{run.stdout}\n{run.stderr}"
    return run.stdout


def _token_rows(output: str) -> dict[str, list[str]]:
    """kafka-delegation-tokens' table: token id -> [hmac, owner, requester, ...]."""
    lines = [line.split() for line in output.splitlines() if line.strip()]
    header = next(i for i, line in enumerate(lines) if line[:2] == ["TOKENID", "HMAC"])
    return {row[0]: row[1:] for row in lines[header + 1 :] if len(row) >= 4}


async def _token_login(
    cluster: ClusterHandle, token_id: str, token_hmac: str, broker_ids: list[int]
) -> list[int]:
    """Log in with the token on each broker; each answers a Metadata request, then refuses
    the token APIs to a token login (its error codes)."""
    codes = []
    for broker_id in broker_ids:
        host, port = _address(cluster, broker_id)
        sasl = SaslClientConfig("SCRAM-SHA-256", token_id, token_hmac, token_auth=True)
        client = BrokerClient(
            host, port, "token-test", ssl_context=_tls_context(cluster), sasl=sasl
        )
        try:
            metadata = await client.send(_metadata())
            assert len(metadata.brokers) == 3
            # (Describe: kio cannot read the -1 timestamps of the other token APIs' refusals.)
            describe = request_class(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3)(owners=None)
            codes.append(int((await client.send(describe)).error_code))
        finally:
            await client.close()
    return codes


def test_delegation_tokens_with_kafkas_tool_and_token_logins(
    sasl_cluster: ClusterHandle, tmp_path: Path
) -> None:
    from tests.reference.conftest import REFERENCE_LIB

    if not REFERENCE_LIB.exists():
        pytest.fail("Kafka 3.9's jars are missing: run `make reference`")
    created = _token_tool(sasl_cluster, "--create", "--max-life-time-period", "-1")
    assert "Created delegation token with tokenId : " in created
    ((token_id, row),) = _token_rows(created).items()
    token_hmac, owner, requester = row[0], row[1], row[2]
    assert (owner, requester) == ("User:admin", "User:admin")
    # The token is everywhere at once (the change notification): every broker takes it.
    codes = asyncio.run(_token_login(sasl_cluster, token_id, token_hmac, sasl_cluster.broker_ids))
    assert codes == [int(ErrorCode.delegation_token_request_not_allowed)] * 3
    # Kafka's Java client logs in with the token too.
    from tests.integration.jvm_tools import run_jvm_tool

    token_config = tmp_path / "token.properties"
    client_config = (sasl_cluster.dir / "client.properties").read_text().splitlines()
    token_config.write_text(
        "\n".join(line for line in client_config if not line.startswith("sasl.jaas.config"))
        + "\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required"
        f' username="{token_id}" password="{token_hmac}" tokenauth=true;\n'
    )
    listed = run_jvm_tool(
        "kafka-topics", "--bootstrap-server", sasl_cluster.bootstrap,
        "--command-config", str(token_config), "--list",
    )  # fmt: skip
    assert listed.returncode == 0, f"{listed.stdout}\n{listed.stderr}"
    # (Without --owner-principal Kafka 3.9's tool asks for an empty owner list: no token.)
    described = _token_tool(sasl_cluster, "--describe", "--owner-principal", "User:admin")
    assert token_id in _token_rows(described)
    renewed = _token_tool(
        sasl_cluster, "--renew", "--hmac", token_hmac, "--renew-time-period", "-1"
    )
    assert "Completed renew operation. New expiry date : " in renewed
    expired = _token_tool(
        sasl_cluster, "--expire", "--hmac", token_hmac, "--expiry-time-period", "-1"
    )
    assert "Completed expire operation." in expired
    # Gone from every broker: the login now fails.
    wait_until(
        lambda: _token_login_fails(sasl_cluster, token_id, token_hmac),
        15,
        "the expired token refused on every broker",
    )


def _token_login_fails(cluster: ClusterHandle, token_id: str, token_hmac: str) -> bool:
    for broker_id in cluster.broker_ids:
        try:
            asyncio.run(_token_login(cluster, token_id, token_hmac, [broker_id]))
        except (BrokerClientError, OSError):
            continue
        return False
    return True
