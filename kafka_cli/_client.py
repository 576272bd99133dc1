"""What the client-based tools share: property parsing, a fail-fast reachability check, and
librdkafka clients whose errors surface as one-line ToolErrors.

Kafka's tools take Java client property names (`--command-config`, `--producer-property`,
`--consumer-property`); librdkafka understands most of them under the same names. The
Java-only ones that only choose (de)serializers are dropped: the tools always move bytes.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from broker.security import jaas
from kafka_cli.common import ToolError, bootstrap_servers

T = TypeVar("T")

# Kafka's admin client gives up on a call after default.api.timeout.ms (60 s).
ADMIN_TIMEOUT_S = 60.0
# How long to try a TCP connection to each bootstrap server before calling it unreachable.
CONNECT_TIMEOUT_S = 5.0
# syslog severities, as librdkafka's log_level takes them.
LIBRDKAFKA_LOG_LEVEL_WARNING = 4
# Java properties that pick serializer classes; librdkafka would refuse them as unknown.
JAVA_ONLY_PROPERTIES = frozenset(
    {
        "key.serializer",
        "value.serializer",
        "key.deserializer",
        "value.deserializer",
        "default.api.timeout.ms",
    }
)


# Java TLS properties (PEM stores, KIP-651) and librdkafka's names for the same thing; a PEM
# keystore file holds the key and the certificate chain, which librdkafka reads as two files.
JAVA_TLS_PROPERTIES = {
    "ssl.truststore.location": ("ssl.ca.location",),
    "ssl.truststore.certificates": ("ssl.ca.pem",),
    "ssl.keystore.location": ("ssl.certificate.location", "ssl.key.location"),
    "ssl.keystore.certificate.chain": ("ssl.certificate.pem",),
    "ssl.keystore.key": ("ssl.key.pem",),
}


def parse_key_values(items: Iterable[str], flag: str) -> dict[str, str]:
    """`key=value` arguments (Kafka's CommandLineUtils.parseKeyValueArgs): split at the first
    `=`; a key without `=` is an error."""
    properties: dict[str, str] = {}
    for item in items:
        key, separator, value = item.partition("=")
        if not separator or not key.strip():
            raise ToolError(f"Invalid {flag} '{item}': expected key=value")
        properties[key.strip()] = value
    return properties


def load_properties(path: str | None) -> dict[str, str]:
    """A Java-style .properties file: `key=value` (or `key: value`) lines, `#`/`!` comments."""
    if path is None:
        return {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ToolError(f"cannot read {path}: {error.strerror}") from error
    properties: dict[str, str] = {}
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line[0] in "#!":
            continue
        separator_at = min((at for at in (line.find("="), line.find(":")) if at >= 0), default=-1)
        if separator_at < 0:
            properties[line] = ""
            continue
        properties[line[:separator_at].strip()] = line[separator_at + 1 :].strip()
    return properties


ClientConfig = dict[str, str | int | float | bool]


def client_config(bootstrap: str | None, *layers: Mapping[str, str]) -> ClientConfig:
    """librdkafka config from property layers (later wins), with the bootstrap servers."""
    # librdkafka logs at info level by default (e.g. "Purging 1 unserved events" at exit);
    # Kafka's tools print warnings and errors only. A user's own log_level still wins.
    config: ClientConfig = {"log_level": LIBRDKAFKA_LOG_LEVEL_WARNING}
    for layer in layers:
        config.update(layer)
    for key in JAVA_ONLY_PROPERTIES:
        config.pop(key, None)
    translate_java_tls(config)
    translate_java_sasl(config)
    config["bootstrap.servers"] = bootstrap_servers(bootstrap)
    return config


def translate_java_tls(config: ClientConfig) -> None:
    """The Java client's PEM key and trust store properties, under librdkafka's names."""
    for store_type in ("ssl.truststore.type", "ssl.keystore.type"):
        kind = str(config.pop(store_type, "PEM")).upper()
        if kind != "PEM":
            raise ToolError(f"{store_type}={kind}: only PEM stores are supported")
    for java_key, librdkafka_keys in JAVA_TLS_PROPERTIES.items():
        if java_key in config:
            value = config.pop(java_key)
            for key in librdkafka_keys:
                config.setdefault(key, value)
    if config.get("ssl.endpoint.identification.algorithm") == "":
        config["ssl.endpoint.identification.algorithm"] = "none"


def translate_java_sasl(config: ClientConfig) -> None:
    """The Java client's `sasl.jaas.config` (a PlainLoginModule or ScramLoginModule with
    username and password options) as librdkafka's sasl.username and sasl.password;
    `sasl.mechanism` and `security.protocol` librdkafka reads under Kafka's names."""
    text = config.pop("sasl.jaas.config", None)
    if text is None:
        return
    try:
        modules = jaas.parse_jaas_config(str(text))
    except jaas.JaasConfigError as error:
        raise ToolError(f"sasl.jaas.config: {error}") from None
    options = modules[0].options
    if "username" not in options or "password" not in options:
        raise ToolError("sasl.jaas.config: only username and password login modules are supported")
    config.setdefault("sasl.username", options["username"])
    config.setdefault("sasl.password", options["password"])


def _host_and_port(server: str) -> tuple[str, int]:
    host, separator, port_text = server.strip().rpartition(":")
    if not separator or not host or not port_text.isdigit():
        raise ToolError(f"Invalid bootstrap server '{server}': expected host:port")
    return host.strip("[]"), int(port_text)


def ensure_reachable(bootstrap: str) -> None:
    """Fail at once, with one line, when no bootstrap server accepts a TCP connection.

    Kafka's tools retry until their API timeout instead; a plain connect keeps a mistyped
    address from hanging a shell for a minute."""
    servers = [_host_and_port(server) for server in bootstrap.split(",") if server.strip()]
    if not servers:
        raise ToolError("--bootstrap-server is required (host:port[,host:port...])")
    for host, port in servers:
        try:
            with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
                return
        except OSError:
            continue
    raise ToolError(f"Could not connect to any of the bootstrap servers {bootstrap}")


def admin_client(bootstrap: str | None, command_config: str | None = None) -> AdminClient:
    config = client_config(bootstrap, load_properties(command_config))
    ensure_reachable(str(config["bootstrap.servers"]))
    return AdminClient(config)


def kafka_error_message(error: BaseException) -> str:
    """The text of a client failure: the broker's error message when it sent one."""
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        kafka_error: KafkaError = error.args[0]
        return str(kafka_error.str())
    return str(error) or type(error).__name__


def error_code(error: BaseException) -> int | None:
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        code: int = error.args[0].code()
        return code
    return None


def result_of(future: Future[T], what: str = "") -> T:
    """Wait for one admin call; any failure becomes a ToolError (prefixed with `what`)."""
    prefix = f"{what}: " if what else ""
    try:
        return future.result(timeout=ADMIN_TIMEOUT_S)
    except TimeoutError as error:
        raise ToolError(f"{prefix}timed out after {ADMIN_TIMEOUT_S:.0f} s") from error
    except KafkaException as error:
        raise ToolError(f"{prefix}{kafka_error_message(error)}") from error
