"""The listening socket: accepts connections up to `max.connections` and serves each."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from broker.network.connection import Connection

if TYPE_CHECKING:
    from broker.config import Endpoint
    from broker.server import KafkaServer

log = logging.getLogger(__name__)


class Listener:
    def __init__(self, server: KafkaServer, endpoint: Endpoint) -> None:
        self._server = server
        self._endpoint = endpoint
        self._asyncio_server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._max_connections: int = server.config["max.connections"]

    async def start(self) -> None:
        host = self._endpoint.host or None
        self._asyncio_server = await asyncio.start_server(
            self._on_client, host, self._endpoint.port, reuse_address=True, backlog=512
        )
        log.info("listening on %s", self._endpoint)

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._connections) >= self._max_connections:
            log.warning("refusing connection: max.connections=%d reached", self._max_connections)
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await Connection(self._server, self._endpoint.listener_name, reader, writer).serve()
        finally:
            self._connections.discard(task)

    async def stop(self) -> None:
        if self._asyncio_server is not None:
            self._asyncio_server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(self._connections, timeout=5)
