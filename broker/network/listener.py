"""The listening socket: accepts connections within the connection quotas and serves each.

Like Kafka, a connection over `max.connections.per.ip` is closed at once with a log line. Over
`max.connections` Kafka's acceptor stops accepting until a slot frees; here the new connection
is closed instead (see DEVIATIONS.md), which bounds memory the same way.

An SSL listener counts the connection first, then runs the TLS handshake (a client that fails
it, such as a plaintext client, is closed, and `broker.network.tls` logs why); the client's
certificate, if it shows one, names the connection's principal. A SASL_SSL listener does the
same TLS first; on SASL_PLAINTEXT and SASL_SSL the connection then authenticates with SASL
(`broker.network.sasl`), whose user becomes the principal.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from typing import TYPE_CHECKING

from broker.network import tls
from broker.network.connection import Connection
from broker.network.quotas import ConnectionQuotas

if TYPE_CHECKING:
    from broker.config.kafka_config import Endpoint, KafkaConfig
    from broker.network.sasl import ListenerSasl
    from broker.services import HandlerServices

log = logging.getLogger(__name__)
# Kafka's socket.connection.setup.timeout.ms is the client's; a server bounds the handshake
# so that a silent client does not hold a half-open TLS connection.
TLS_HANDSHAKE_TIMEOUT_S = 10.0
BACKLOG = 512
ACCEPT_RETRY_S = 0.1
# At a stop, how long a connection in the middle of a request may take to answer it.
IN_FLIGHT_ANSWER_GRACE_S = 2.0


class Listener:
    def __init__(
        self,
        config: KafkaConfig,
        endpoint: Endpoint,
        quotas: ConnectionQuotas,
        sasl: ListenerSasl | None,
    ) -> None:
        """Built with the server, so that bad TLS settings stop the broker before it connects
        to ZooKeeper; it serves requests from `start` on."""
        self._endpoint = endpoint
        self._quotas = quotas
        self._sockets: list[socket.socket] = []
        self._acceptors: list[asyncio.Task[None]] = []
        self._connections: set[asyncio.Task[None]] = set()
        self._serving: dict[asyncio.Task[None], Connection] = {}
        protocol = config.security_protocol(endpoint.listener_name)
        self._protocol = protocol
        self._ssl: ssl.SSLContext | None = None
        if protocol in ("SSL", "SASL_SSL"):
            self._ssl = tls.server_context(config, endpoint.listener_name)
            # asyncio keeps the context it was given; each handshake switches to the current
            # one, so that reloaded key and trust material serve new connections.
            self._ssl.sni_callback = self._use_current_context
        self._current_ssl = self._ssl
        self._stores = self._store_settings(config)
        self._sasl = sasl

    def _store_settings(self, config: KafkaConfig) -> dict[str, object]:
        return {
            key: config.for_listener(self._endpoint.listener_name, key)
            for key in tls.RECONFIGURABLE_CONFIGS
        }

    def _use_current_context(
        self, ssl_object: ssl.SSLObject, server_name: str | None, context: ssl.SSLContext
    ) -> None:
        if self._current_ssl is not None and self._current_ssl is not context:
            ssl_object.context = self._current_ssl

    def reconfigure(self, config: KafkaConfig) -> None:
        """Dynamic broker configs changed: new key or trust material (Kafka's SslFactory
        reconfiguration) serves the connections accepted from now on."""
        stores = self._store_settings(config)
        if self._ssl is None or stores == self._stores:
            return
        try:
            context = tls.server_context(config, self._endpoint.listener_name)
        except tls.TlsConfigError as error:
            log.error("listener %s keeps its TLS material: %s", self._endpoint, error)
            return
        self._current_ssl, self._stores = context, stores
        log.info("listener %s reloaded its keystore and truststore", self._endpoint)

    async def start(self, services: HandlerServices) -> None:
        """Listen, and accept on each socket: Kafka's Acceptor, which counts a connection
        against the quotas as it is accepted, before any byte (a TLS handshake included).
        Each connection hands its requests' handlers `services` (Kafka's KafkaApis, built
        once the cluster id is known)."""
        host = self._endpoint.host or None
        loop = asyncio.get_running_loop()
        self._sockets = _listening_sockets(host, self._endpoint.port)
        self._acceptors = [
            loop.create_task(self._accept(sock, services), name=f"accept {self._endpoint}")
            for sock in self._sockets
        ]
        log.info("listening on %s (%s)", self._endpoint, self._protocol)

    async def _accept(self, sock: socket.socket, services: HandlerServices) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                connection, peer = await loop.sock_accept(sock)
            except OSError as error:  # out of file descriptors, for one: try again soon
                log.error("accepting on %s failed: %s", self._endpoint, error)
                await asyncio.sleep(ACCEPT_RETRY_S)
                continue
            host = str(peer[0])
            refusal = self._quotas.try_acquire(host)
            if refusal is not None:
                log.warning("refusing connection from %s:%s: %s", host, peer[1], refusal)
                connection.close()
                continue
            task = loop.create_task(
                self._on_client(connection, host, services), name=f"client {host}"
            )
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)

    async def _on_client(
        self, connection: socket.socket, host: str, services: HandlerServices
    ) -> None:
        writer: asyncio.StreamWriter | None = None
        try:
            opened = await self._open(connection)
            if opened is None:
                return
            reader, writer = opened
            principal = tls.principal(writer.get_extra_info("ssl_object"))
            client = Connection(
                services, self._endpoint.listener_name, reader, writer, principal, self._sasl
            )
            task = asyncio.current_task()
            if task is not None:
                self._serving[task] = client
            try:
                await client.serve()
            finally:
                if task is not None:
                    self._serving.pop(task, None)
        except asyncio.CancelledError:
            # Shutdown cancels connections mid-request (an acks=all produce may be waiting);
            # ending the task normally keeps asyncio from logging it as a failure.
            if writer is not None:
                writer.close()
        finally:
            self._quotas.release(host)

    async def _open(
        self, connection: socket.socket
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """The connection as streams; over TLS once the handshake is done (a failed one is
        logged by `tls`; one that never completes is dropped after TLS_HANDSHAKE_TIMEOUT_S)."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        protocol = asyncio.StreamReaderProtocol(reader)
        try:
            transport, _ = await loop.connect_accepted_socket(
                lambda: protocol,
                connection,
                ssl=self._ssl,
                ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S if self._ssl is not None else None,
            )
        except (OSError, TimeoutError):  # ssl.SSLError is an OSError
            connection.close()
            return None
        return reader, asyncio.StreamWriter(transport, protocol, reader, loop)

    async def stop(self) -> None:
        """Stop accepting; close idle connections at once, and let each one in the middle of a
        request answer it first (for up to IN_FLIGHT_ANSWER_GRACE_S), as Kafka's brokers have
        answered the requests whose partitions moved away before their sockets close."""
        for acceptor in self._acceptors:
            acceptor.cancel()
        for sock in self._sockets:
            sock.close()
        answering = []
        for task in list(self._connections):
            client = self._serving.get(task)
            if client is not None and client.busy:
                client.stop_after_current()
                answering.append(task)
            else:
                task.cancel()
        if answering:
            await asyncio.wait(answering, timeout=IN_FLIGHT_ANSWER_GRACE_S)
        for task in answering:
            task.cancel()
        if self._connections:
            await asyncio.wait(self._connections, timeout=5)


def _listening_sockets(host: str | None, port: int) -> list[socket.socket]:
    """Bound, listening, non-blocking sockets for `host` (None: every address, IPv4 and
    IPv6 apart), as asyncio's create_server makes them."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(found):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(BACKLOG)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets
