"""Record the request frames real clients send, through a recording TCP proxy.

One proxy port per broker forwards bytes both ways and keeps every client->broker request
frame. Clients connect to the brokers that metadata names, so the proxy rewrites broker
addresses in Metadata responses and coordinator addresses in FindCoordinator responses to its
own ports; everything else passes through untouched. The clients are driven by
`fuzz_clients.py`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import struct
import threading
from typing import Any

from kio.serial import entity_reader

from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.header import skip_tagged_fields
from broker.protocol.registry import is_flexible, response_class

from .fuzz_clients import Topics, confluent_steps, kafka_python_steps, kcat_steps, run_steps

PROXY_HOST = "127.0.0.1"
REWRITTEN_APIS = (ApiKey.METADATA, ApiKey.FIND_COORDINATOR)
START_TIMEOUT_S = 10.0
MAX_FRAME_BYTES = 256 * 1024 * 1024  # beyond this the stream is not Kafka: drop it
_SIZE = struct.Struct(">i")


def _moved(item: Any, ports: dict[int, int]) -> Any:
    """`item` (a broker or coordinator entry) pointed at its proxy port, if we proxy it."""
    port = ports.get(int(item.node_id))
    if port is None:
        return item
    return dataclasses.replace(item, host=PROXY_HOST, port=port)


def _redirect(entity: Any, ports: dict[int, int]) -> Any:
    changes: dict[str, Any] = {}
    if hasattr(entity, "brokers"):  # Metadata
        changes["brokers"] = tuple(_moved(b, ports) for b in entity.brokers)
    if hasattr(entity, "coordinators"):  # FindCoordinator v4+
        changes["coordinators"] = tuple(_moved(c, ports) for c in entity.coordinators)
    if hasattr(entity, "node_id") and hasattr(entity, "port"):  # FindCoordinator v0-v3
        return _moved(entity, ports)
    return dataclasses.replace(entity, **changes)


def rewrite_addresses(payload: bytes, api_key: int, version: int, ports: dict[int, int]) -> bytes:
    """A Metadata or FindCoordinator response payload with broker addresses moved."""
    offset = 4  # correlation id; flexible versions add a tagged-field section (header v1)
    if is_flexible(api_key, version) and api_key != ApiKey.API_VERSIONS:
        offset = skip_tagged_fields(payload, offset)
    entity: Any
    entity, _size = entity_reader(response_class(api_key, version))(payload, offset)
    return payload[:offset] + adapter.encode(_redirect(entity, ports))


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    try:
        (size,) = _SIZE.unpack(await reader.readexactly(_SIZE.size))
        if not 0 <= size <= MAX_FRAME_BYTES:
            return None
        return await reader.readexactly(size)
    except (OSError, asyncio.IncompleteReadError):
        return None


class RecordingProxy:
    """Runs its own event loop in a thread, so synchronous clients can use it."""

    def __init__(self, brokers: dict[int, str]) -> None:
        self.brokers = brokers
        self.ports: dict[int, int] = {}
        self.frames: list[bytes] = []
        self.errors: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fuzz-proxy")
        self._servers: list[asyncio.Server] = []

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{PROXY_HOST}:{port}" for port in self.ports.values())

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(START_TIMEOUT_S)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(START_TIMEOUT_S)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    async def _listen(self) -> None:
        for node_id, address in sorted(self.brokers.items()):
            serve = functools.partial(self._serve, address)
            server = await asyncio.start_server(serve, PROXY_HOST, 0)
            self._servers.append(server)
            self.ports[node_id] = int(server.sockets[0].getsockname()[1])

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _serve(
        self, upstream: str, client: asyncio.StreamReader, client_out: asyncio.StreamWriter
    ) -> None:
        host, port = upstream.rsplit(":", 1)
        try:
            broker, broker_out = await asyncio.open_connection(host, int(port))
        except OSError as error:
            self.errors.append(f"proxy could not reach {upstream}: {error!r}")
            client_out.close()
            return
        pending: dict[bytes, tuple[int, int]] = {}  # correlation id -> (api key, version)
        pumps = [
            asyncio.ensure_future(self._requests(client, broker_out, pending)),
            asyncio.ensure_future(self._responses(broker, client_out, pending)),
        ]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            client_out.close()
            broker_out.close()

    async def _requests(
        self,
        client: asyncio.StreamReader,
        broker_out: asyncio.StreamWriter,
        pending: dict[bytes, tuple[int, int]],
    ) -> None:
        while (payload := await _read_frame(client)) is not None:
            self.frames.append(payload)
            if len(payload) >= 8:
                api_key, version = struct.unpack_from(">hh", payload, 0)
                pending[payload[4:8]] = (api_key, version)
            broker_out.write(_SIZE.pack(len(payload)) + payload)
            await broker_out.drain()

    async def _responses(
        self,
        broker: asyncio.StreamReader,
        client_out: asyncio.StreamWriter,
        pending: dict[bytes, tuple[int, int]],
    ) -> None:
        while (payload := await _read_frame(broker)) is not None:
            api_key, version = pending.pop(payload[:4], (-1, -1))
            if api_key in REWRITTEN_APIS:
                payload = self._rewritten(payload, api_key, version)
            client_out.write(_SIZE.pack(len(payload)) + payload)
            await client_out.drain()

    def _rewritten(self, payload: bytes, api_key: int, version: int) -> bytes:
        try:
            return rewrite_addresses(payload, api_key, version, self.ports)
        except Exception as error:  # kio raises a range of decode errors
            # Passing it on unchanged would send the client around the proxy: say so.
            self.errors.append(f"could not rewrite api {api_key} v{version}: {error!r}")
            return payload


# ---- a recording run ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Recording:
    frames: list[bytes]  # distinct request payloads, in the order first seen
    failures: list[str]  # client steps that failed and proxy errors
    topics: list[str]


def _distinct(frames: list[bytes]) -> list[bytes]:
    """Drop repeats that differ only in their correlation id (consumers poll the same Fetch)."""
    seen: set[bytes] = set()
    distinct = []
    for payload in frames:
        key = payload[:4] + payload[8:]
        if key not in seen:
            seen.add(key)
            distinct.append(payload)
    return distinct


def record(brokers: dict[int, str], tag: str) -> Recording:
    topics = Topics.for_run(tag)
    with RecordingProxy(brokers) as proxy:
        bootstrap = proxy.bootstrap
        steps = kafka_python_steps(bootstrap, topics) + confluent_steps(bootstrap, topics)
        failures = run_steps(steps + kcat_steps(bootstrap, topics.confluent))
    return Recording(_distinct(proxy.frames), failures + proxy.errors, topics.names())
