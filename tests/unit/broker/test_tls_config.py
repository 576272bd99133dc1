"""TLS settings (broker.network.tls): what a broker refuses at start-up, per-listener
overrides, the client principal taken from a certificate, and passwords never described."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from broker.config.entries import broker_entries, entry_fields
from broker.config.kafka_config import ConfigError, build_config
from broker.network import tls
from scripts._cluster import tls_material
from tests.unit.broker.ssl_configs import BASE, ssl_config


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tls")
    tls_material.make(directory, [1])
    return directory


def test_an_ssl_listener_builds_its_contexts(material: Path) -> None:
    config = ssl_config(material)
    server = tls.server_context(config, "SSL")
    assert server.verify_mode == ssl.CERT_NONE  # ssl.client.auth=none, Kafka's default
    client = tls.client_context(config, "SSL")
    assert client.verify_mode == ssl.CERT_REQUIRED and client.check_hostname


def test_an_ssl_listener_needs_a_keystore() -> None:
    with pytest.raises(ConfigError, match="ssl.keystore.location"):
        build_config(
            {**BASE, "listeners": "SSL://127.0.0.1:9093", "security.inter.broker.protocol": "SSL"}
        )


def test_java_key_stores_are_refused(material: Path) -> None:
    with pytest.raises(ConfigError, match="ssl.keystore.type=JKS: only PEM"):
        ssl_config(material, **{"ssl.keystore.type": "JKS"})


def test_unknown_client_auth_is_refused(material: Path) -> None:
    with pytest.raises(ConfigError, match="ssl.client.auth must be none, requested or required"):
        ssl_config(material, **{"ssl.client.auth": "always"})


def test_a_listener_prefixed_setting_overrides_for_that_listener_only(material: Path) -> None:
    config = ssl_config(
        material,
        **{
            "listeners": "SSL://127.0.0.1:9093,CLIENTS://127.0.0.1:9094",
            "listener.security.protocol.map": "SSL:SSL,CLIENTS:SSL",
            "listener.name.clients.ssl.client.auth": "required",
        },
    )
    assert tls.server_context(config, "CLIENTS").verify_mode == ssl.CERT_REQUIRED
    assert tls.server_context(config, "SSL").verify_mode == ssl.CERT_NONE


def test_an_unknown_listener_prefixed_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="listener.name.plaintext.no.such.key"):
        build_config({**BASE, "listener.name.plaintext.no.such.key": "1"})


def test_keystore_as_pem_text_in_the_config(material: Path) -> None:
    pem = tls_material.broker_keystore(material, 1).read_text()
    key_end = pem.index("-----END PRIVATE KEY-----") + len("-----END PRIVATE KEY-----")
    config = ssl_config(
        material,
        **{
            "ssl.keystore.location": "",
            "ssl.keystore.key": pem[:key_end],
            "ssl.keystore.certificate.chain": pem[key_end:].strip(),
        },
    )
    assert tls.server_context(config, "SSL").verify_mode == ssl.CERT_NONE


class _PeerCertificate:
    def __init__(self, der: bytes | None) -> None:
        self._der = der

    def getpeercert(self, binary_form: bool = False) -> bytes | None:
        return self._der


def test_the_principal_is_the_certificate_subject_in_rfc2253_form(material: Path) -> None:
    pem = tls_material.client_keystore(material).read_bytes()
    certificate = x509.load_pem_x509_certificate(pem[pem.index(b"-----BEGIN CERTIFICATE") :])
    der = certificate.public_bytes(serialization.Encoding.DER)
    peer = _PeerCertificate(der)
    assert tls.principal(peer) == (  # type: ignore[arg-type]
        f"User:CN=client,O={tls_material.ORGANIZATION}"
    )
    assert tls.principal(_PeerCertificate(None)) == tls.ANONYMOUS  # type: ignore[arg-type]
    assert tls.principal(None) == tls.ANONYMOUS


def test_passwords_are_described_without_their_value(material: Path) -> None:
    config = ssl_config(material, **{"ssl.key.password": "secret"})
    described = {e.name: entry_fields(e) for e in broker_entries(config)}
    assert described["ssl.key.password"]["is_sensitive"] is True
    assert described["ssl.key.password"]["value"] is None
    assert described["ssl.keystore.type"] == {
        **described["ssl.keystore.type"],
        "value": "PEM",
        "is_sensitive": False,
    }
