"""broker.security.zk_client_security: the broker's ZooKeeper credentials from KAFKA_OPTS and a
JAAS file, and Kafka's refusal of zookeeper.set.acl without them."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.security.jaas import JaasConfigError, parse_jaas_file
from broker.security.zk_client_security import (
    ZkClientSecurityError,
    system_properties,
    zk_client_security,
)
from zk.zk_security import ZkSaslCredentials

CLIENT_SECTION = """
// what Kafka's docs put in kafka_server_jaas.conf
KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin" password="admin-secret";
};
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="kafka"
    password="kafka-secret";
};
"""
KAFKA_SET_ACL_REFUSAL = (
    "zookeeper.set.acl is true, but ZooKeeper client TLS configuration identifying at least "
    "zookeeper.ssl.client.enable, zookeeper.clientCnxnSocket, and "
    "zookeeper.ssl.keystore.location was not present and the verification of the JAAS login "
    "file failed "
)


def _opts(tmp_path: Path, text: str, extra: str = "") -> dict[str, str]:
    path = tmp_path / "jaas.conf"
    path.write_text(text)
    return {"KAFKA_OPTS": f"-Xmx1g -Djava.security.auth.login.config={path} {extra}"}


def test_system_properties_are_the_d_options_of_kafka_opts() -> None:
    environ = {"KAFKA_OPTS": "-Xmx1g -Da=1 -Db '-Dc=x y' -D -Dd=e=f"}
    assert system_properties(environ) == {"a": "1", "b": "", "c": "x y", "d": "e=f"}
    assert system_properties({}) == {}


def test_client_section_gives_digest_credentials(tmp_path: Path) -> None:
    credentials, secure = zk_client_security(True, _opts(tmp_path, CLIENT_SECTION))
    assert credentials == ZkSaslCredentials("kafka", "kafka-secret", "zookeeper")
    assert secure
    assert "kafka-secret" not in repr(credentials)


def test_context_name_and_service_name_come_from_their_properties(tmp_path: Path) -> None:
    text = CLIENT_SECTION.replace("Client {", "ZkClient {")
    extra = "-Dzookeeper.sasl.clientconfig=ZkClient -Dzookeeper.sasl.client.username=zk"
    credentials, secure = zk_client_security(False, _opts(tmp_path, text, extra))
    assert credentials == ZkSaslCredentials("kafka", "kafka-secret", "zk")
    assert not secure  # authenticated, but the znodes stay open, as in Kafka


def test_set_acl_without_credentials_is_refused_with_kafkas_message(tmp_path: Path) -> None:
    with pytest.raises(ZkClientSecurityError) as refused:
        zk_client_security(True, {})
    assert str(refused.value) == KAFKA_SET_ACL_REFUSAL + (
        "[java.security.auth.login.config=null, zookeeper.sasl.client=default:true, "
        "zookeeper.sasl.clientconfig=default:Client]"
    )
    no_client_section = CLIENT_SECTION.replace("Client {", "Other {")
    with pytest.raises(ZkClientSecurityError, match="zookeeper.set.acl is true"):
        zk_client_security(True, _opts(tmp_path, no_client_section))
    assert zk_client_security(False, {}) == (None, False)


def test_sasl_client_false_with_a_client_section_is_an_error(tmp_path: Path) -> None:
    environ = _opts(tmp_path, CLIENT_SECTION, "-Dzookeeper.sasl.client=false")
    with pytest.raises(ZkClientSecurityError, match="zookeeper.sasl.client is set to false"):
        zk_client_security(False, environ)


def test_missing_or_broken_jaas_file_and_other_modules_are_errors(tmp_path: Path) -> None:
    missing = {"KAFKA_OPTS": f"-Djava.security.auth.login.config={tmp_path / 'none.conf'}"}
    with pytest.raises(ZkClientSecurityError, match="Exception while loading Zookeeper JAAS"):
        zk_client_security(False, missing)
    with pytest.raises(ZkClientSecurityError, match="Exception while loading Zookeeper JAAS"):
        zk_client_security(False, _opts(tmp_path, "Client { x required a=1 };"))
    kerberos = "Client { com.sun.security.auth.module.Krb5LoginModule required; };"
    with pytest.raises(ZkClientSecurityError, match="only .*DigestLoginModule"):
        zk_client_security(True, _opts(tmp_path, kerberos))


def test_parse_jaas_file_sections() -> None:
    sections = parse_jaas_file(CLIENT_SECTION + "Empty { };")
    assert sorted(sections) == ["Client", "Empty", "KafkaServer"]
    assert sections["Client"][0].options == {"username": "kafka", "password": "kafka-secret"}
    assert sections["Empty"] == []
    for broken in ("Client {", "Client { a required; }", "Client a required;", "{ };"):
        with pytest.raises(JaasConfigError):
            parse_jaas_file(broken)
    with pytest.raises(JaasConfigError, match="twice"):
        parse_jaas_file("A { };\nA { };")
