"""What ZooKeeper says about the cluster: registered brokers and the controller."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from zk.client import ZkClient

SESSION_TIMEOUT_MS = 10000
CONNECTION_TIMEOUT_MS = 3000
POLL_INTERVAL_S = 0.2
T = TypeVar("T")


def silence_kazoo() -> None:
    """kazoo logs every failed connection attempt; the launcher reports failures itself."""
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)


@dataclass(frozen=True, slots=True)
class ClusterView:
    # broker id -> session id that owns its ephemeral registration
    registered: dict[int, int]
    controller_id: int | None
    controller_epoch: int | None


async def read_view(client: ZkClient) -> ClusterView:
    ids = sorted(int(c) for c in await client.get_children("/brokers/ids") or [] if c.isdigit())
    registrations = await client.get_many([f"/brokers/ids/{i}" for i in ids])
    registered = {
        i: found[1].ephemeral_owner for i, found in zip(ids, registrations, strict=True) if found
    }
    controller = await client.get("/controller")
    epoch = await client.get("/controller_epoch")
    return ClusterView(
        registered,
        controller_id_of(controller[0]) if controller else None,
        controller_epoch_of(epoch[0]) if epoch else None,
    )


def controller_id_of(data: bytes) -> int | None:
    """The broker id in /controller's JSON, or None when it does not parse."""
    try:
        return int(json.loads(data)["brokerid"])
    except (ValueError, KeyError, TypeError):
        return None


def controller_epoch_of(data: bytes) -> int | None:
    """The number in /controller_epoch, or None when it does not parse."""
    try:
        return int(data.decode().strip())
    except ValueError:
        return None


async def connect(connect_string: str) -> ZkClient:
    """A started ZooKeeper session with the launcher's timeouts (closed again on failure)."""
    client = ZkClient(
        connect_string,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        connection_timeout_ms=CONNECTION_TIMEOUT_MS,
    )
    try:
        await client.start()
    except BaseException:
        await client.close()
        raise
    return client


def query(connect_string: str) -> ClusterView | None:
    """One snapshot, or None when ZooKeeper cannot be reached."""

    async def run() -> ClusterView | None:
        try:
            client = await connect(connect_string)
        except Exception:
            return None
        try:
            return await read_view(client)
        except Exception:
            return None
        finally:
            await client.close()

    return asyncio.run(run())


Condition = Callable[[ClusterView], bool]
Check = Callable[[], None]


def wait_for(
    connect_string: str, condition: Condition, check: Check, timeout_s: float
) -> ClusterView:
    """Poll ZooKeeper until `condition(view)` holds; `check()` runs every round and may raise
    (e.g. when the process being waited for has died). Raises TimeoutError with the last view
    (or None) as its argument."""

    async def run() -> ClusterView:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        client: ZkClient | None = None
        last_view: ClusterView | None = None
        try:
            while True:
                check()
                if client is None:
                    client = await _attempt(connect(connect_string))
                if client is not None:
                    last_view = await _attempt(read_view(client))
                    if last_view is not None and condition(last_view):
                        return last_view
                if loop.time() >= deadline:
                    raise TimeoutError(last_view)
                await asyncio.sleep(POLL_INTERVAL_S)
        finally:
            if client is not None:
                await client.close()

    return asyncio.run(run())


async def _attempt(operation: Awaitable[T]) -> T | None:
    try:
        return await operation
    except Exception:
        return None
