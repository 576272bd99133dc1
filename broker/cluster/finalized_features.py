"""The finalized features this broker reports in ApiVersions v3+ (Kafka's ZkFinalizedFeatureCache
and FinalizedFeatureChangeListener): /feature's features and its znode version as the epoch,
read at start-up and again whenever the znode changes. An absent, unreadable or disabled
/feature clears them (epoch -1), as in Kafka.
"""

from __future__ import annotations

import asyncio
import logging

from zk.client import ZkClient
from zk.errors import ZkError
from zk.znodes import FeatureZNode, ZnodeDecodeError

log = logging.getLogger(__name__)
NO_EPOCH = -1


class FinalizedFeatures:
    def __init__(self, zk_client: ZkClient) -> None:
        self._zk_client = zk_client
        self.features: dict[str, int] = {}
        self.epoch = NO_EPOCH
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._zk_client.watch_data(FeatureZNode.path(), self._on_change)
        await self.refresh()

    def _on_change(self) -> None:
        task = asyncio.get_running_loop().create_task(self.refresh(), name="finalized-features")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def refresh(self) -> None:
        async with self._lock:
            try:
                found = await self._zk_client.get(FeatureZNode.path())
            except ZkError as error:
                log.warning("reading /feature failed: %s", error)
                return
            features: dict[str, int] = {}
            epoch = NO_EPOCH
            if found is not None:
                try:
                    _, status, decoded = FeatureZNode.decode(found[0])
                except ZnodeDecodeError as error:
                    log.error("Unable to deserialize feature ZK node at path: /feature: %s", error)
                else:
                    if status == FeatureZNode.STATUS_ENABLED:
                        features, epoch = decoded, found[1].version
            self.features, self.epoch = features, epoch
