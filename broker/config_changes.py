"""Follow /config/changes: when a notification names a topic, re-read that topic's config.

Tools write the new config to /config/topics/<t> and then a sequential
`/config/changes/config_change_<n>` naming `topics/<t>` (as Kafka's AdminZkClient does). Each
broker remembers the last notification it processed, so every one is handled once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from zk.client import ZkClient
from zk.errors import ZkError
from zk.znodes import (
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ZnodeDecodeError,
)

log = logging.getLogger(__name__)
TOPICS_ENTITY = "topics/"


class ConfigChangeListener:
    def __init__(self, zk_client: ZkClient, on_topic_changed: Callable[[str], None]) -> None:
        self._zk_client = zk_client
        self._on_topic_changed = on_topic_changed
        self._last_seen = ""  # notifications are named so that they sort in creation order
        self._lock = asyncio.Lock()  # one pass at a time, so each notification is seen once

    async def start(self) -> None:
        """Skip the notifications that exist now (configs are read fresh at start-up)."""
        path = ConfigEntityChangeNotificationZNode.path()
        existing = await self._zk_client.get_children(path) or []
        self._last_seen = max(existing, default="")
        self._zk_client.watch_children(path, self._on_children_changed)

    def _on_children_changed(self) -> None:
        asyncio.get_running_loop().create_task(self._process_new(), name="config-changes")

    async def _process_new(self) -> None:
        path = ConfigEntityChangeNotificationZNode.path()
        async with self._lock:
            await self._process_since_last_seen(path)

    async def _process_since_last_seen(self, path: str) -> None:
        try:
            children = await self._zk_client.get_children(path) or []
            prefix = ConfigEntityChangeNotificationSequenceZNode.SEQUENCE_PREFIX
            for name in sorted(c for c in children if c.startswith(prefix)):
                if name <= self._last_seen:
                    continue
                await self._process(f"{path}/{name}")
                self._last_seen = name
        except ZkError:
            log.warning("reading config change notifications failed", exc_info=True)

    async def _process(self, notification_path: str) -> None:
        found = await self._zk_client.get(notification_path)
        if found is None:
            return  # purged already; the config it announced is read on the next change
        try:
            entity_path = ConfigEntityChangeNotificationSequenceZNode.decode(found[0])
        except ZnodeDecodeError as error:
            log.warning("ignoring malformed config change %s: %s", notification_path, error)
            return
        if entity_path.startswith(TOPICS_ENTITY):
            topic = entity_path[len(TOPICS_ENTITY) :]
            log.info("config of topic %s changed", topic)
            self._on_topic_changed(topic)
