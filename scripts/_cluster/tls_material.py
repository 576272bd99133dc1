"""`up --security ssl`: a throwaway certificate authority and one certificate per broker,
PEM files under DIR/tls/, and DIR/client.properties for clients and console tools.

- `ca.pem`: the CA's certificate (every broker's and client's truststore);
- `broker-N.pem`: broker N's private key (PKCS#8, unencrypted) then its certificate, as
  `ssl.keystore.type=PEM` with `ssl.keystore.location` takes them (Kafka's KIP-651 too);
- `client.pem`: a client key and certificate (CN=client) for mutual TLS.

Certificates name 127.0.0.1 and localhost, so host-name checks pass on this machine.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

TLS_DIR = "tls"
CA_FILE = "ca.pem"
CLIENT_FILE = "client.pem"
CLIENT_PROPERTIES = "client.properties"
VALID_DAYS = 365
ORGANIZATION = "pykafka-classic local cluster"


def broker_keystore(directory: Path, broker_id: int) -> Path:
    return directory / TLS_DIR / f"broker-{broker_id}.pem"


def truststore(directory: Path) -> Path:
    return directory / TLS_DIR / CA_FILE


def client_keystore(directory: Path) -> Path:
    return directory / TLS_DIR / CLIENT_FILE


def make(directory: Path, broker_ids: list[int]) -> None:
    """Writes the CA and every certificate (again, if `up` runs again on the directory)."""
    tls_dir = directory / TLS_DIR
    tls_dir.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("pykafka-classic local CA")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    truststore(directory).write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    for broker_id in broker_ids:
        _write_leaf(broker_keystore(directory, broker_id), f"broker-{broker_id}", ca_key, ca_name)
    _write_leaf(client_keystore(directory), "client", ca_key, ca_name)


def write_client_properties(directory: Path, mutual: bool) -> Path:
    """Kafka's client keys for this cluster's TLS; with `mutual`, the client certificate."""
    lines = [
        "# Written by scripts/cluster up --security ssl",
        "security.protocol=SSL",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={truststore(directory)}",
    ]
    if mutual:
        lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={client_keystore(directory)}"]
    path = directory / CLIENT_PROPERTIES
    path.write_text("\n".join(lines) + "\n")
    return path


def _write_leaf(
    path: Path, common_name: str, ca_key: ec.EllipticCurvePrivateKey, ca_name: x509.Name
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        _builder(_name(common_name), ca_name, key.public_key())
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.write_bytes(key_pem + cert.public_bytes(serialization.Encoding.PEM))
    path.chmod(0o600)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
    )
