"""Follow /config/changes: when a notification names a topic, re-read that topic's config;
when it names `brokers/<id>` or `brokers/<default>`, the dynamic broker configs; when it names
`users/<user>`, that user's SCRAM credentials.

Tools write the new config to /config/topics/<t> and then a sequential
`/config/changes/config_change_<n>` naming `topics/<t>` (as Kafka's AdminZkClient does). Each
broker remembers the last notification it processed, so every one is handled once, and
deletes notifications older than 15 minutes, as Kafka's brokers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from zk.client import ZkClient
from zk.errors import NoNodeError, ZkError
from zk.znodes import (
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ZnodeDecodeError,
)

log = logging.getLogger(__name__)
TOPICS_ENTITY = "topics/"
BROKERS_ENTITY = "brokers/"
USERS_ENTITY = "users/"
NOTIFICATION_EXPIRY_MS = 15 * 60 * 1000  # Kafka's changeExpirationMs


class ConfigChangeListener:
    def __init__(
        self,
        zk_client: ZkClient,
        on_topic_changed: Callable[[str], None],
        on_broker_changed: Callable[[str], None] | None = None,
        on_user_changed: Callable[[str], None] | None = None,
    ) -> None:
        self._zk_client = zk_client
        self._on_topic_changed = on_topic_changed
        self._on_broker_changed = on_broker_changed
        self._on_user_changed = on_user_changed
        self._last_seen = ""  # notifications are named so that they sort in creation order
        self._lock = asyncio.Lock()  # one pass at a time, so each notification is seen once
        # A burst of N notifications fires N watch events; like Kafka's listener we queue a
        # pass only when none is waiting, so a burst costs two passes, not N.
        self._pass_queued = False
        self._pass_task: asyncio.Task[None] | None = None
        self._ctime_ms: dict[str, int] = {}  # creation times already read, for the purge

    async def start(self) -> None:
        """Skip the notifications that exist now (configs are read fresh at start-up)."""
        path = ConfigEntityChangeNotificationZNode.path()
        existing = await self._zk_client.get_children(path) or []
        self._last_seen = max(existing, default="")
        self._zk_client.watch_children(path, self._on_children_changed)

    def _on_children_changed(self) -> None:
        if self._pass_queued:
            return
        self._pass_queued = True
        loop = asyncio.get_running_loop()
        self._pass_task = loop.create_task(self._process_new(), name="config-changes")

    async def _process_new(self) -> None:
        path = ConfigEntityChangeNotificationZNode.path()
        async with self._lock:
            self._pass_queued = False  # changes from now on need another pass
            await self._process_since_last_seen(path)

    async def _process_since_last_seen(self, path: str) -> None:
        try:
            children = await self._zk_client.get_children(path) or []
            prefix = ConfigEntityChangeNotificationSequenceZNode.SEQUENCE_PREFIX
            names = sorted(c for c in children if c.startswith(prefix))
            for name in names:
                if name > self._last_seen:
                    await self._process(f"{path}/{name}")
                    self._last_seen = name
            await self._purge_expired([f"{path}/{name}" for name in names])
        except ZkError:
            log.warning("reading config change notifications failed", exc_info=True)

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

    async def _process(self, notification_path: str) -> None:
        found = await self._zk_client.get(notification_path)
        if found is None:
            return  # purged already; the config it announced is read on the next change
        self._ctime_ms[notification_path] = found[1].ctime_ms
        try:
            entity_path = ConfigEntityChangeNotificationSequenceZNode.decode(found[0])
        except ZnodeDecodeError as error:
            log.warning("ignoring malformed config change %s: %s", notification_path, error)
            return
        if entity_path.startswith(TOPICS_ENTITY):
            topic = entity_path[len(TOPICS_ENTITY) :]
            log.info("config of topic %s changed", topic)
            self._on_topic_changed(topic)
        elif entity_path.startswith(BROKERS_ENTITY) and self._on_broker_changed is not None:
            name = entity_path[len(BROKERS_ENTITY) :]
            log.info("dynamic config of brokers/%s changed", name)
            self._on_broker_changed(name)
        elif entity_path.startswith(USERS_ENTITY) and self._on_user_changed is not None:
            name = entity_path[len(USERS_ENTITY) :]
            log.info("config of users/%s changed", name)
            self._on_user_changed(name)
