"""TLS for SSL listeners and for this broker's own connections to other brokers.

Key and trust material is PEM (`ssl.keystore.type=PEM`, `ssl.truststore.type=PEM`, KIP-651):
files (`ssl.keystore.location` holds the private key and its certificate chain,
`ssl.truststore.location` the trusted CA certificates) or the PEM text itself
(`ssl.keystore.key` with `ssl.keystore.certificate.chain`, `ssl.truststore.certificates`).
Java key stores (JKS, PKCS12) are refused at start-up (DEVIATIONS.md, "Security").

`ssl.client.auth` asks clients for a certificate (requested) or insists on one (required); a
client's principal is then `User:` and its certificate's subject in RFC 2253 form (Kafka's
DEFAULT `ssl.principal.mapping.rules`), else `User:ANONYMOUS`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography import x509

from broker.config.kafka_config import TLS_PROTOCOLS

if TYPE_CHECKING:
    from broker.config.kafka_config import KafkaConfig

log = logging.getLogger(__name__)
ANONYMOUS = "User:ANONYMOUS"
PEM = "PEM"
_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# Kafka's SslConfigs.RECONFIGURABLE_CONFIGS: the key and trust material, which a listener
# reloads when they change dynamically (broker.config.dynamic).
RECONFIGURABLE_CONFIGS = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.certificates",
    }
)


class _LoggedHandshake(ssl.SSLObject):
    """The event loop's TLS layer drops a failed handshake silently (it logs OSErrors only
    in debug mode): a client that is refused here, a plaintext one for instance, gets a
    log line, as Kafka's SslTransportLayer writes one."""

    def do_handshake(self) -> None:
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise
        except ssl.SSLError as error:
            log.warning("closing connection: TLS handshake failed: %s", error)
            raise


class TlsConfigError(ValueError):
    """A listener's TLS settings cannot make a context; the message names the key."""


def server_context(config: KafkaConfig, listener_name: str) -> ssl.SSLContext:
    """The context an SSL listener accepts connections with."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.sslobject_class = _LoggedHandshake
    _apply_common(context, config, listener_name)
    _load_keystore(context, config, listener_name, required=True)
    client_auth = str(config.for_listener(listener_name, "ssl.client.auth")).lower()
    if client_auth not in _CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth must be none, requested or required: {client_auth}")
    context.verify_mode = _CLIENT_AUTH[client_auth]
    if context.verify_mode != ssl.CERT_NONE:
        _load_truststore(context, config, listener_name, ssl.Purpose.CLIENT_AUTH)
    return context


def inter_broker_client_context(config: KafkaConfig) -> ssl.SSLContext | None:
    """How this broker connects to the others' inter-broker listener: None for plaintext."""
    listener_name = config.inter_broker_listener_name
    if config.security_protocol(listener_name) not in TLS_PROTOCOLS:
        return None
    return client_context(config, listener_name)


def client_context(config: KafkaConfig, listener_name: str) -> ssl.SSLContext:
    """The context this broker connects to other brokers' `listener_name` with: it trusts
    the truststore, checks host names unless `ssl.endpoint.identification.algorithm` is
    empty, and shows its own certificate when a keystore is configured (mutual TLS)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _apply_common(context, config, listener_name)
    algorithm = config.for_listener(listener_name, "ssl.endpoint.identification.algorithm")
    context.check_hostname = bool(algorithm)
    context.verify_mode = ssl.CERT_REQUIRED
    _load_truststore(context, config, listener_name, ssl.Purpose.SERVER_AUTH)
    _load_keystore(context, config, listener_name, required=False)
    return context


def principal(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str:
    """The principal of a TLS peer: its certificate's subject, or ANONYMOUS."""
    if ssl_object is None:
        return ANONYMOUS
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return ANONYMOUS
    return "User:" + x509.load_der_x509_certificate(der).subject.rfc4514_string()


def keystore_identity(
    config: KafkaConfig, listener_name: str
) -> tuple[str, tuple[str, ...]] | None:
    """The subject (RFC 2253) and subject alternative names of the listener's own certificate
    (the first of its keystore's chain), or None without a readable keystore."""
    location = config.for_listener(listener_name, "ssl.keystore.location")
    try:
        text = Path(location).read_bytes() if location else None
    except OSError:
        return None
    if text is None:
        chain = config.for_listener(listener_name, "ssl.keystore.certificate.chain")
        text = str(chain).encode() if chain else None
    if text is None:
        return None
    try:
        certificate = x509.load_pem_x509_certificates(text)[0]
    except ValueError:
        return None
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        alternatives = tuple(str(name.value) for name in names.value)
    except x509.ExtensionNotFound:
        alternatives = ()
    return certificate.subject.rfc4514_string(), alternatives


def _apply_common(context: ssl.SSLContext, config: KafkaConfig, listener_name: str) -> None:
    enabled = config.for_listener(listener_name, "ssl.enabled.protocols")
    unknown = [name for name in enabled if name not in _TLS_VERSIONS]
    if unknown or not enabled:
        raise TlsConfigError(
            f"ssl.enabled.protocols: {', '.join(unknown) or 'none'}; supported: TLSv1.2, TLSv1.3"
        )
    versions = sorted(_TLS_VERSIONS[name] for name in enabled)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    rules = config.for_listener(listener_name, "ssl.principal.mapping.rules")
    if rules.strip() != "DEFAULT":
        raise TlsConfigError(f"ssl.principal.mapping.rules: only DEFAULT is supported, not {rules}")


def _load_keystore(
    context: ssl.SSLContext, config: KafkaConfig, listener_name: str, required: bool
) -> None:
    def setting(key: str) -> str | None:
        value = config.for_listener(listener_name, key)
        return str(value) if value else None

    location = setting("ssl.keystore.location")
    chain, key = setting("ssl.keystore.certificate.chain"), setting("ssl.keystore.key")
    if location is None and chain is None:
        if required:
            raise TlsConfigError(
                f"listener {listener_name}: set ssl.keystore.location, or "
                "ssl.keystore.certificate.chain and ssl.keystore.key"
            )
        return
    _require_pem(config, listener_name, "ssl.keystore.type")
    password = setting("ssl.key.password")
    try:
        if location is not None:
            context.load_cert_chain(location, password=password)
            return
        if key is None or chain is None:
            raise TlsConfigError("ssl.keystore.certificate.chain needs ssl.keystore.key")
        with _private_file(f"{key}\n{chain}") as path:
            context.load_cert_chain(path, password=password)
    except (OSError, ssl.SSLError) as error:
        message = f"listener {listener_name}: cannot load the keystore: {error}"
        raise TlsConfigError(message) from None


def _load_truststore(
    context: ssl.SSLContext, config: KafkaConfig, listener_name: str, purpose: ssl.Purpose
) -> None:
    """The CAs that peers' certificates must chain to (the system's when none is set)."""
    location = config.for_listener(listener_name, "ssl.truststore.location")
    certificates = config.for_listener(listener_name, "ssl.truststore.certificates")
    try:
        if location:
            _require_pem(config, listener_name, "ssl.truststore.type")
            context.load_verify_locations(cafile=location)
        elif certificates:
            _require_pem(config, listener_name, "ssl.truststore.type")
            context.load_verify_locations(cadata=certificates)
        else:
            context.load_default_certs(purpose)
    except (OSError, ssl.SSLError) as error:
        raise TlsConfigError(
            f"listener {listener_name}: cannot load the truststore: {error}"
        ) from None


def _require_pem(config: KafkaConfig, listener_name: str, key: str) -> None:
    store_type = str(config.for_listener(listener_name, key)).upper()
    if store_type != PEM:
        raise TlsConfigError(f"{key}={store_type}: only PEM is supported (set {key}=PEM)")


@contextlib.contextmanager
def _private_file(text: str) -> Iterator[str]:
    """`ssl` loads a key only from a file: PEM text goes to one only this user may read."""
    descriptor, name = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(text)
        yield name
    finally:
        Path(name).unlink(missing_ok=True)
