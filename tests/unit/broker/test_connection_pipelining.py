"""A connection whose client pipelines requests lets the loop run other work between them,
even when no request's handling ever has to wait: one busy client must not hold the loop."""

from __future__ import annotations

import asyncio
import itertools
import struct
from types import SimpleNamespace
from typing import Any

from kio.schema.api_versions.v0.request import ApiVersionsRequest
from kio.schema.api_versions.v0.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode

from broker.network.connection import Connection
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import ApiSpec

PIPELINED = 20


def _frame(correlation_id: int) -> bytes:
    header = struct.pack(">hhih", ApiKey.API_VERSIONS, 0, correlation_id, -1)
    body = adapter.encode(ApiVersionsRequest())
    return struct.pack(">i", len(header + body)) + header + body


async def _serve_pipelined() -> list[int]:
    """Serve PIPELINED requests sent at once; return, per request, how many times another
    task had run before it was handled."""
    ticks = 0
    seen: list[int] = []

    async def handler(_context: Any, _request: Any) -> Any:
        seen.append(ticks)  # never suspends, like most handlers on their fast path
        return ApiVersionsResponse(error_code=ErrorCode.none, api_keys=())

    spec = ApiSpec(ApiKey.API_VERSIONS, "ApiVersions", 0, 0, 0, handler)
    services = SimpleNamespace(
        config={"socket.request.max.bytes": 1 << 20, "connections.max.idle.ms": 10_000},
        registry={ApiKey.API_VERSIONS: spec},
        authorizer=None,
    )

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await Connection(services, "PLAINTEXT", reader, writer).serve()  # type: ignore[arg-type]

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0)
            ticks += 1

    listening = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    ticking = asyncio.create_task(ticker())
    try:
        # All in one write: the server reads them in one chunk, as from a pipelining client.
        writer.write(b"".join(_frame(i) for i in range(PIPELINED)))
        await writer.drain()
        for _ in range(PIPELINED):
            size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 10))[0]
            await asyncio.wait_for(reader.readexactly(size), 10)
    finally:
        ticking.cancel()
        writer.close()
        listening.close()
    return seen


def test_other_tasks_run_between_pipelined_requests() -> None:
    seen = asyncio.run(_serve_pipelined())
    assert len(seen) == PIPELINED
    # Handled in order, with the ticker running between every two of them.
    steps = [later - earlier for earlier, later in itertools.pairwise(seen)]
    assert all(step > 0 for step in steps), seen
