"""How scripts/fuzz reaches a cluster whose listeners need TLS or SASL (`--command-config`).

The client properties Kafka's tools take (`security.protocol`, `sasl.mechanism`,
`sasl.jaas.config`, `ssl.truststore.location`; the `client.properties` that `scripts/cluster up
--security` writes) become librdkafka settings for the witness producer and the checks, a TLS
context, and the SASL exchange (SaslHandshake v1, then SaslAuthenticate v2 until the mechanism
is done) that the fuzzer's own connections perform before their first frame, or leave out on
purpose (frames before authentication).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

import scramp
from kio.schema.errors import ErrorCode

from broker.network.sasl import SASL_PROTOCOLS, SaslClientConfig, SaslClientExchange
from broker.protocol.api_keys import ApiKey
from kafka_cli._client import load_properties, translate_java_sasl, translate_java_tls

from .fuzz_check import decode_response, encode_request, read_exactly

TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
SASL_HANDSHAKE_VERSION = 1
SASL_AUTHENTICATE_VERSION = 2
SASL_MAX_ROUNDS = 8  # SCRAM needs two; a broker asking for more is misbehaving
CLIENT_ID = b"fuzz-auth"
MAX_RESPONSE_BYTES = 1024 * 1024
_SIZE = struct.Struct(">i")
# The exchange: each request frame sent, the response payload it gets back.
Exchange = Generator[bytes, bytes, None]


class SecurityConfigError(ValueError):
    """--command-config names a setting the fuzzer cannot use."""


class AuthenticationError(ConnectionError):
    """The broker refused the fuzzer's own SASL login."""


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    librdkafka: Mapping[str, Any] = field(default_factory=dict)  # without bootstrap.servers
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslClientConfig | None = None

    @property
    def authenticates(self) -> bool:
        return self.sasl is not None

    @classmethod
    def load(cls, path: str | None) -> ClientSecurity:
        """From a Kafka client properties file; plaintext without one."""
        if path is None:
            return cls()
        config: dict[str, Any] = dict(load_properties(path))
        translate_java_tls(config)
        translate_java_sasl(config)
        protocol = str(config.get("security.protocol", "PLAINTEXT")).upper()
        context = _tls_context(config) if protocol in TLS_PROTOCOLS else None
        sasl = _sasl_config(config) if protocol in SASL_PROTOCOLS else None
        return cls(protocol, config, context, sasl)

    def client_config(self, bootstrap: str, **settings: Any) -> dict[str, Any]:
        """librdkafka settings for a client of the cluster."""
        return {**self.librdkafka, **settings, "bootstrap.servers": bootstrap}

    async def open(
        self, address: str, authenticate: bool, timeout_s: float
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection (TLS when the protocol has it), logged in when `authenticate` and the
        protocol has SASL. Raises OSError or TimeoutError when it cannot be had."""
        host, port = address.rsplit(":", 1)
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(
                host,
                int(port),
                ssl=self.ssl_context,
                server_hostname=host if self.ssl_context else None,
            ),
            timeout_s,
        )
        if authenticate and self.sasl is not None:
            try:
                await asyncio.wait_for(_login_async(reader, writer, self.sasl), timeout_s)
            except BaseException:
                writer.transport.abort()
                raise
        return reader, writer

    def open_sync(self, address: str, timeout_s: float) -> socket.socket:
        """A blocking connection, logged in (the checks' requests)."""
        host, port = address.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        try:
            if self.ssl_context is not None:
                sock = self.ssl_context.wrap_socket(sock, server_hostname=host)
            if self.sasl is not None:
                _login_sync(sock, self.sasl)
        except BaseException:
            sock.close()
            raise
        return sock


def _tls_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=config.get("ssl.ca.location"))
    if "ssl.certificate.location" in config:
        context.load_cert_chain(str(config["ssl.certificate.location"]))
    if config.get("ssl.endpoint.identification.algorithm") == "none":
        context.check_hostname = False
    return context


def _sasl_config(config: Mapping[str, Any]) -> SaslClientConfig:
    try:
        return SaslClientConfig(
            str(config["sasl.mechanism"]),
            str(config["sasl.username"]),
            str(config["sasl.password"]),
        )
    except KeyError as missing:
        raise SecurityConfigError(f"--command-config: SASL needs {missing.args[0]}") from None


def _exchange(sasl: SaslClientConfig) -> Exchange:
    """The login as frames: yields each request frame, is sent each response payload."""
    fields: dict[str, Any] = {"mechanism": sasl.mechanism}
    payload = encode_request(ApiKey.SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION, 1, fields, CLIENT_ID)
    response = yield _SIZE.pack(len(payload)) + payload
    handshake = decode_response(ApiKey.SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION, response)
    if handshake.error_code != ErrorCode.none:
        raise AuthenticationError(f"SaslHandshake {sasl.mechanism}: {handshake.error_code.name}")
    client = SaslClientExchange(sasl)
    token: bytes | None = client.first()
    for round_number in range(2, 2 + SASL_MAX_ROUNDS):
        if token is None:
            return
        fields = {"auth_bytes": token}
        payload = encode_request(
            ApiKey.SASL_AUTHENTICATE, SASL_AUTHENTICATE_VERSION, round_number, fields, CLIENT_ID
        )
        response = yield _SIZE.pack(len(payload)) + payload
        answer = decode_response(ApiKey.SASL_AUTHENTICATE, SASL_AUTHENTICATE_VERSION, response)
        if answer.error_code != ErrorCode.none:
            raise AuthenticationError(
                f"SaslAuthenticate as {sasl.username}: {answer.error_message}"
            )
        try:
            token = client.answer(bytes(answer.auth_bytes))
        except (ValueError, scramp.ScramException) as error:
            raise AuthenticationError(f"{sasl.mechanism}: the broker's answer: {error}") from None
    raise AuthenticationError(f"{sasl.mechanism} took more than {SASL_MAX_ROUNDS} rounds")


async def _login_async(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, sasl: SaslClientConfig
) -> None:
    steps = _exchange(sasl)
    request = next(steps)
    while True:
        writer.write(request)
        await writer.drain()
        (size,) = _SIZE.unpack(await reader.readexactly(_SIZE.size))
        if not 4 <= size <= MAX_RESPONSE_BYTES:
            raise AuthenticationError(f"a SASL response of {size} bytes")
        try:
            request = steps.send(await reader.readexactly(size))
        except StopIteration:
            return


def _login_sync(sock: socket.socket, sasl: SaslClientConfig) -> None:
    steps = _exchange(sasl)
    request = next(steps)
    while True:
        sock.sendall(request)
        (size,) = _SIZE.unpack(read_exactly(sock, _SIZE.size, "SASL authentication"))
        if not 4 <= size <= MAX_RESPONSE_BYTES:
            raise AuthenticationError(f"a SASL response of {size} bytes")
        try:
            request = steps.send(read_exactly(sock, size, "SASL authentication"))
        except StopIteration:
            return
