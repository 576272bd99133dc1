"""TLS listeners with mutual authentication (`scripts/cluster up --security ssl`,
`ssl.client.auth=required`): the brokers replicate to each other over TLS, and real clients
(confluent-kafka, kafka-python, aiokafka, kcat and our console tools with Kafka's
`--command-config` properties) produce and consume with the launcher's client certificate,
large record sets included (copied: sendfile is for plaintext listeners).
A client without a certificate and a plaintext client are refused with a log line, and the
broker keeps serving."""

from __future__ import annotations

import socket
import ssl
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.secure_round_trips import (
    aiokafka_round_trip,
    confluent_round_trip,
    kafka_python_round_trip,
)

TIMEOUT_S = 60
RECORDS = 20
PARTITIONS = 3
REPO_ROOT = Path(__file__).resolve().parents[2]
HANDSHAKE_FAILED = "TLS handshake failed"


@pytest.fixture(scope="module")
def tls_cluster(make_cluster_module: Any) -> ClusterHandle:
    handle: ClusterHandle = make_cluster_module(
        security="ssl", overrides={"ssl.client.auth": "required"}
    )
    return handle


def _ca(cluster: ClusterHandle) -> str:
    return str(cluster.dir / "tls" / "ca.pem")


def _client_pem(cluster: ClusterHandle) -> str:
    return str(cluster.dir / "tls" / "client.pem")


def _librdkafka_tls(cluster: ClusterHandle, with_certificate: bool = True) -> dict[str, str]:
    config = {
        "bootstrap.servers": cluster.bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": _ca(cluster),
    }
    if with_certificate:
        config["ssl.certificate.location"] = _client_pem(cluster)
        config["ssl.key.location"] = _client_pem(cluster)
    return config


def _new_topic(cluster: ClusterHandle) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"tls-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(_librdkafka_tls(cluster))
    admin.create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(TIMEOUT_S)
    return topic


def _values(count: int, label: str) -> list[bytes]:
    return [f"{label}-{i}".encode() for i in range(count)]


def _handshake_failures(cluster: ClusterHandle) -> int:
    return sum(
        cluster.broker_log(b).read_text(errors="replace").count(HANDSHAKE_FAILED)
        for b in cluster.broker_ids
    )


def test_replicas_follow_their_leaders_over_tls(tls_cluster: ClusterHandle) -> None:
    from confluent_kafka.admin import AdminClient

    topic = _new_topic(tls_cluster)
    admin = AdminClient(_librdkafka_tls(tls_cluster))

    def full_isr() -> bool:
        described = admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
        return len(described.partitions) == PARTITIONS and all(
            len(p.isrs) == 3 for p in described.partitions.values()
        )

    wait_until(full_isr, TIMEOUT_S, f"every partition of {topic} with 3 replicas in its ISR")


def test_confluent_kafka_round_trip_with_a_client_certificate(tls_cluster: ClusterHandle) -> None:
    topic = _new_topic(tls_cluster)
    values = _values(RECORDS, "confluent")
    seen = confluent_round_trip(_librdkafka_tls(tls_cluster), topic, values, PARTITIONS)
    assert sorted(seen) == sorted(values)


def test_a_consumer_reads_large_record_sets_over_tls(tls_cluster: ClusterHandle) -> None:
    """Record sets large enough to go out with sendfile on a plaintext listener are copied
    through TLS here (its bytes are encrypted in user space)."""
    topic = _new_topic(tls_cluster)
    values = [(f"large-{i}-".encode() * 200)[:1000] for i in range(600)]
    seen = confluent_round_trip(_librdkafka_tls(tls_cluster), topic, values, PARTITIONS)
    assert sorted(seen) == sorted(values)


def test_kafka_python_round_trip(tls_cluster: ClusterHandle) -> None:
    topic = _new_topic(tls_cluster)
    tls = {
        "security_protocol": "SSL",
        "ssl_cafile": _ca(tls_cluster),
        "ssl_certfile": _client_pem(tls_cluster),
        "ssl_keyfile": _client_pem(tls_cluster),
    }
    values = _values(RECORDS, "kafka-python")
    assert sorted(kafka_python_round_trip(tls_cluster.bootstrap, topic, values, tls)) == sorted(
        values
    )


def test_aiokafka_round_trip(tls_cluster: ClusterHandle) -> None:
    topic = _new_topic(tls_cluster)
    context = ssl.create_default_context(cafile=_ca(tls_cluster))
    context.load_cert_chain(_client_pem(tls_cluster))
    tls: dict[str, Any] = {"security_protocol": "SSL", "ssl_context": context}
    values = _values(RECORDS, "aiokafka")
    assert sorted(aiokafka_round_trip(tls_cluster.bootstrap, topic, values, tls)) == sorted(values)


def test_kcat_and_console_tools_round_trip(tls_cluster: ClusterHandle) -> None:
    topic = _new_topic(tls_cluster)
    kcat_tls = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={_ca(tls_cluster)}"]
    kcat_tls += ["-X", f"ssl.certificate.location={_client_pem(tls_cluster)}"]
    kcat_tls += ["-X", f"ssl.key.location={_client_pem(tls_cluster)}"]
    values = "\n".join(v.decode() for v in _values(RECORDS, "kcat")) + "\n"
    produced = subprocess.run(
        ["kcat", "-P", "-b", tls_cluster.bootstrap, "-t", topic, *kcat_tls],
        input=values,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert produced.returncode == 0, produced.stderr
    console = REPO_ROOT / ".venv" / "bin" / "kafka-console-consumer"
    arguments = ["--bootstrap-server", tls_cluster.bootstrap, "--topic", topic]
    arguments += ["--from-beginning", "--max-messages", str(RECORDS)]
    arguments += ["--consumer.config", str(tls_cluster.dir / "client.properties")]
    consumed = subprocess.run(
        [str(console), *arguments],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S * 2,
    )
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.split()) == sorted(v.decode() for v in _values(RECORDS, "kcat"))


def test_a_client_without_certificate_is_refused_and_the_broker_serves_on(
    tls_cluster: ClusterHandle,
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    before = _handshake_failures(tls_cluster)
    anonymous = AdminClient(_librdkafka_tls(tls_cluster, with_certificate=False))
    with pytest.raises(KafkaException) as refused:
        anonymous.list_topics(timeout=5)
    refusals = {KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._SSL}
    assert refused.value.args[0].code() in refusals, refused.value
    wait_until(
        lambda: _handshake_failures(tls_cluster) > before,
        TIMEOUT_S,
        f"a '{HANDSHAKE_FAILED}' line in a broker log",
    )
    test_replicas_follow_their_leaders_over_tls(tls_cluster)


def test_a_plaintext_client_is_refused_and_the_broker_serves_on(
    tls_cluster: ClusterHandle,
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    before = _handshake_failures(tls_cluster)
    plaintext = AdminClient({"bootstrap.servers": tls_cluster.bootstrap})
    with pytest.raises(KafkaException) as refused:
        plaintext.list_topics(timeout=5)
    assert refused.value.args[0].code() in {KafkaError._TRANSPORT, KafkaError._TIMED_OUT}, (
        refused.value
    )
    wait_until(
        lambda: _handshake_failures(tls_cluster) > before,
        TIMEOUT_S,
        f"a '{HANDSHAKE_FAILED}' line in a broker log",
    )
    test_replicas_follow_their_leaders_over_tls(tls_cluster)


def _served_certificate(cluster: ClusterHandle, broker_id: int) -> bytes:
    """The certificate a broker shows a new connection (not verified: the test compares it)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(_client_pem(cluster))
    address = ("127.0.0.1", cluster.broker_port(broker_id))
    with (
        socket.create_connection(address, timeout=TIMEOUT_S) as raw,
        context.wrap_socket(raw) as tls_socket,
    ):
        served = tls_socket.getpeercert(binary_form=True)
    if served is None:
        raise AssertionError(f"broker {broker_id} showed no certificate")
    return served


def _pem_certificate_der(path: Path) -> bytes:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    certificate = x509.load_pem_x509_certificates(path.read_bytes())[0]
    return certificate.public_bytes(serialization.Encoding.DER)


def test_a_listener_reloads_a_new_keystore_set_dynamically(
    tls_cluster: ClusterHandle, tmp_path: Path
) -> None:
    """Kafka's certificate rotation: `listener.name.ssl.ssl.keystore.location` altered per
    broker; new connections get the new certificate (same subject and names), and a keystore
    whose certificate names another subject is refused."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    from scripts._cluster import tls_material

    tls_material.make(tmp_path, [1, 2])
    admin = AdminClient(_librdkafka_tls(tls_cluster))
    key = "listener.name.ssl.ssl.keystore.location"

    def alter(value: str | None) -> None:
        operation = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
        entry = ConfigEntry(key, value, incremental_operation=operation)
        resource = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[entry])
        admin.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)

    with pytest.raises(KafkaException, match="Invalid dynamic configuration"):
        alter(str(tls_material.broker_keystore(tmp_path, 2)))
    new_keystore = tls_material.broker_keystore(tmp_path, 1)
    alter(str(new_keystore))
    try:
        wait_until(
            lambda: _served_certificate(tls_cluster, 1) == _pem_certificate_der(new_keystore),
            TIMEOUT_S,
            "broker 1 serving the certificate of its new keystore",
        )
    finally:
        alter(None)
    original = tls_cluster.dir / "tls" / "broker-1.pem"
    wait_until(
        lambda: _served_certificate(tls_cluster, 1) == _pem_certificate_der(original),
        TIMEOUT_S,
        "broker 1 serving its static keystore's certificate again",
    )
    test_replicas_follow_their_leaders_over_tls(tls_cluster)


PER_IP_LIMIT = 4


def test_pending_tls_handshakes_count_against_the_per_ip_limit(make_cluster: Any) -> None:
    """Kafka counts a connection at accept: clients that connect and never finish the TLS
    handshake fill `max.connections.per.ip` (the next connection is closed with Kafka's log
    line, before any handshake), and their slots come back when they close."""
    from confluent_kafka.admin import AdminClient

    cluster: ClusterHandle = make_cluster(
        brokers=1,
        security="ssl",
        overrides={"ssl.client.auth": "required", "max.connections.per.ip": str(PER_IP_LIMIT)},
    )
    reached = f"max.connections.per.ip={PER_IP_LIMIT} reached"
    address = ("127.0.0.1", cluster.broker_port(1))
    silent = [socket.create_connection(address, timeout=TIMEOUT_S) for _ in range(PER_IP_LIMIT + 1)]
    try:
        wait_until(
            lambda: reached in cluster.broker_log(1).read_text(errors="replace"),
            TIMEOUT_S,
            f"'{reached}' with {PER_IP_LIMIT + 1} handshakes pending",
        )
    finally:
        for connection in silent:
            connection.close()
    admin = AdminClient({**_librdkafka_tls(cluster), "socket.timeout.ms": "5000"})
    wait_until(
        lambda: bool(admin.list_topics(timeout=5).brokers),
        TIMEOUT_S,
        "a TLS client served once the silent connections closed",
    )
