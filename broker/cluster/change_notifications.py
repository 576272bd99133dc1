"""Kafka's ZkNodeChangeNotificationListener: follow a ZooKeeper directory of sequential change
notifications (`/config/changes`, `/kafka-acl-changes`, `/kafka-acl-extended-changes`).

Notifications are named so that they sort in creation order. The listener skips those that
exist when it starts (its owner reads the current state then), hands each later one to its
callback once and in order, and deletes notifications older than 15 minutes, as Kafka's brokers
do (any broker may). A burst of N notifications fires N watch events; like Kafka's listener,
a pass is queued only when none is waiting, so a burst costs two passes, not N. A pass that
fails (ZooKeeper unreachable, a read refused) is retried on a timer, with backoff, from the
first notification it did not finish: a change is never dropped until the next one comes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from zk.client import ZkClient
from zk.errors import NoNodeError

log = logging.getLogger(__name__)
NOTIFICATION_EXPIRY_MS = 15 * 60 * 1000  # Kafka's changeExpirationMs
FIRST_RETRY_S = 0.5
MAX_RETRY_S = 30.0

# (notification path, its data): what a notification announces is the callback's to read.
NotificationCallback = Callable[[str, bytes], Awaitable[None]]


class ChangeNotificationListener:
    def __init__(
        self,
        zk_client: ZkClient,
        path: str,
        sequence_prefix: str,
        on_notification: NotificationCallback,
        first_retry_s: float = FIRST_RETRY_S,
    ) -> None:
        self._zk_client = zk_client
        self._path = path
        self._prefix = sequence_prefix
        self._on_notification = on_notification
        self._last_seen = ""
        self._lock = asyncio.Lock()  # one pass at a time, so each notification is seen once
        self._pass_queued = False
        self._pass_task: asyncio.Task[None] | None = None
        self._first_retry_s = first_retry_s
        self._retry_s = first_retry_s
        self._retry: asyncio.TimerHandle | None = None
        self._ctime_ms: dict[str, int] = {}  # creation times already read, for the purge

    async def start(self) -> None:
        """Skip the notifications that exist now, then watch for new ones."""
        existing = await self._zk_client.get_children(self._path) or []
        self._last_seen = max((c for c in existing if c.startswith(self._prefix)), default="")
        self._zk_client.watch_children(self._path, self.on_children_changed)

    def on_children_changed(self) -> None:
        """Queue a pass, unless one is waiting already."""
        if self._pass_queued:
            return
        self._pass_queued = True
        task = asyncio.get_running_loop().create_task(self.process_pending(), name=self._path)
        self._pass_task = task

    async def process_pending(self) -> None:
        """One pass: every notification after the last one handled; on failure, another
        pass on a timer."""
        async with self._lock:
            self._pass_queued = False  # changes from now on need another pass
            try:
                await self._process_since_last_seen()
            except Exception:  # ZooKeeper errors above all; a callback's bug is retried too
                log.warning(
                    "reading change notifications under %s failed; retrying in %.1f s",
                    self._path,
                    self._retry_s,
                    exc_info=True,
                )
                self._retry_later()
                return
            self._retry_s = self._first_retry_s

    def _retry_later(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
        loop = asyncio.get_running_loop()
        self._retry = loop.call_later(self._retry_s, self.on_children_changed)
        self._retry_s = min(self._retry_s * 2, MAX_RETRY_S)

    async def _process_since_last_seen(self) -> None:
        children = await self._zk_client.get_children(self._path) or []
        names = sorted(c for c in children if c.startswith(self._prefix))
        for name in names:
            if name > self._last_seen:
                await self._process(f"{self._path}/{name}")
                self._last_seen = name
        await self._purge_expired([f"{self._path}/{name}" for name in names])

    async def _process(self, notification_path: str) -> None:
        found = await self._zk_client.get(notification_path)
        if found is None:
            return  # purged already; what it announced is read on the next change
        self._ctime_ms[notification_path] = found[1].ctime_ms
        await self._on_notification(notification_path, found[0])

    async def _purge_expired(self, paths: list[str]) -> None:
        """Delete notifications older than Kafka's 15-minute expiry (any broker may)."""
        present = set(paths)
        self._ctime_ms = {p: c for p, c in self._ctime_ms.items() if p in present}
        unknown = [p for p in paths if p not in self._ctime_ms]
        for notification_path, found in zip(
            unknown, await self._zk_client.get_many(unknown), strict=True
        ):
            if found is not None:
                self._ctime_ms[notification_path] = found[1].ctime_ms
        now_ms = int(time.time() * 1000)
        for notification_path, ctime_ms in list(self._ctime_ms.items()):
            if now_ms - ctime_ms > NOTIFICATION_EXPIRY_MS:
                del self._ctime_ms[notification_path]
                with contextlib.suppress(NoNodeError):  # another broker purged it first
                    await self._zk_client.delete(notification_path)

    async def stop(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
        task = self._pass_task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
