"""ZooKeeper operations for failed log dirs (KIP-112): a broker's offline replicas and its
log dir event notification, and the controller's reads and fenced deletes of them.

A mixin of `zk.kafka_zk.KafkaZk` (kept apart so that module stays about one area): it uses the
client and the controller-epoch fenced multi of its host class.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Sequence

from zk.client import DeleteOp, Op, OpResult, ZkClient
from zk.errors import NodeExistsError, NoNodeError
from zk.znodes import (
    LogDirEventNotificationSequenceZNode,
    LogDirEventNotificationZNode,
    OfflineReplicasZNode,
    ZnodeDecodeError,
)

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class LogDirZkMixin:
    client: ZkClient

    async def _fenced_multi(
        self, epoch_zk_version: int, ops: Sequence[Op]
    ) -> list[OpResult]:  # pragma: no cover - provided by KafkaZk
        raise NotImplementedError

    # -- the broker's side ------------------------------------------------------------------

    async def set_offline_replicas(
        self, broker_id: int, partitions: Iterable[TopicPartition]
    ) -> None:
        """Write this session's ephemeral list of the broker's offline replicas (replacing
        one an earlier session of the broker left)."""
        path = OfflineReplicasZNode.path(broker_id)
        data = OfflineReplicasZNode.encode(sorted(partitions))
        found = await self.client.get(path)
        if found is not None and found[1].ephemeral_owner == self.client.session_id:
            await self.client.set(path, data)
            return
        if found is not None:
            with contextlib.suppress(NoNodeError):
                await self.client.delete(path)
        with contextlib.suppress(NodeExistsError):
            await self.client.create(path, data, ephemeral=True, makepath=True)
            return
        await self.client.set(path, data)  # created by our own retried request

    async def propagate_log_dir_event(self, broker_id: int) -> str:
        """Tell the controller a log dir of `broker_id` failed (Kafka's propagateLogDirEvent)."""
        return await self.client.create(
            LogDirEventNotificationSequenceZNode.create_path(),
            LogDirEventNotificationSequenceZNode.encode(broker_id),
            sequence=True,
            makepath=True,
        )

    # -- the controller's side --------------------------------------------------------------

    async def get_log_dir_event_notifications(self) -> list[str]:
        """Names (log_dir_event_<seq>) of the pending notifications, oldest first."""
        children = await self.client.get_children(LogDirEventNotificationZNode.path()) or []
        return sorted(children)

    async def read_log_dir_event_brokers(self, names: Sequence[str]) -> list[int]:
        """The brokers the notifications `names` are about, in order, without repeats; a
        vanished or malformed notification is skipped with a warning (it can only be
        deleted)."""
        paths = [f"{LogDirEventNotificationZNode.path()}/{name}" for name in names]
        brokers: dict[int, None] = {}
        for path, item in zip(paths, await self.client.get_many(paths), strict=True):
            if item is None:
                continue
            try:
                brokers[LogDirEventNotificationSequenceZNode.decode(item[0])] = None
            except ZnodeDecodeError as error:
                log.warning("skipping malformed log dir event notification %s: %s", path, error)
        return list(brokers)

    async def delete_log_dir_event_notifications(
        self, epoch_zk_version: int, names: Iterable[str]
    ) -> None:
        """Fenced removal of processed notifications (Kafka's deleteLogDirEventNotifications
        is a controller write); already-missing ones are skipped."""
        paths = [f"{LogDirEventNotificationZNode.path()}/{name}" for name in names]
        outcomes = await asyncio.gather(
            *(self._fenced_multi(epoch_zk_version, [DeleteOp(path)]) for path in paths),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, NoNodeError):
                raise outcome

    async def get_offline_replicas(
        self, broker_ids: Iterable[int]
    ) -> dict[int, frozenset[TopicPartition]]:
        """Each broker's offline replicas (none when it wrote no list); batched reads. A list
        that does not decode counts as none, with a warning."""
        ids = list(broker_ids)
        paths = [OfflineReplicasZNode.path(b) for b in ids]
        found: dict[int, frozenset[TopicPartition]] = {}
        for broker_id, path, item in zip(
            ids, paths, await self.client.get_many(paths), strict=True
        ):
            if item is None:
                found[broker_id] = frozenset()
                continue
            try:
                found[broker_id] = frozenset(OfflineReplicasZNode.decode(item[0]))
            except ZnodeDecodeError as error:
                log.warning("ignoring malformed %s: %s", path, error)
                found[broker_id] = frozenset()
        return found
