"""ZooKeeper operations for adding partitions and reassigning them: the topic znode read with
its zkVersion, and the legacy /admin/reassign_partitions request znode.

A mixin of `zk.kafka_zk.KafkaZk` (kept apart so that module stays about one area): it uses the
client and the controller-epoch fenced multi of its host class.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence

from zk.client import DeleteOp, Op, OpResult, SetDataOp, ZkClient
from zk.errors import NoNodeError
from zk.znodes import ReassignPartitionsZNode, TopicAssignment, TopicZNode, ZnodeDecodeError

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class ReassignmentZkMixin:
    client: ZkClient

    async def _fenced_multi(
        self, epoch_zk_version: int, ops: Sequence[Op]
    ) -> list[OpResult]:  # pragma: no cover - provided by KafkaZk
        raise NotImplementedError

    async def get_topic_assignment_and_version(
        self, topic: str
    ) -> tuple[TopicAssignment, int] | None:
        """/brokers/topics/<t> with its zkVersion (for a conditional rewrite), None if gone."""
        found = await self.client.get(TopicZNode.path(topic))
        if found is None:
            return None
        return TopicZNode.decode(topic, found[0]), found[1].version

    async def get_partition_reassignment(
        self,
    ) -> tuple[dict[TopicPartition, list[int]], int] | None:
        """The partitions /admin/reassign_partitions asks to move, with the znode's czxid (which
        tells a re-created request from a rewritten one); None when there is no request.
        A malformed request names nothing (with a warning): it can only be deleted."""
        path = ReassignPartitionsZNode.path()
        found = await self.client.get(path)
        if found is None:
            return None
        data, stat = found
        try:
            return ReassignPartitionsZNode.decode(data), stat.czxid
        except ZnodeDecodeError as exc:
            log.warning("ignoring malformed %s: %s", path, exc)
            return {}, stat.czxid

    async def set_partition_reassignment(
        self, epoch_zk_version: int, reassignment: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        """Fenced rewrite of /admin/reassign_partitions with the entries still pending."""
        data = ReassignPartitionsZNode.encode(reassignment)
        await self._fenced_multi(
            epoch_zk_version, [SetDataOp(ReassignPartitionsZNode.path(), data)]
        )

    async def delete_partition_reassignment(self, epoch_zk_version: int) -> None:
        """Fenced removal of /admin/reassign_partitions (already gone is fine)."""
        with contextlib.suppress(NoNodeError):
            await self._fenced_multi(epoch_zk_version, [DeleteOp(ReassignPartitionsZNode.path())])
