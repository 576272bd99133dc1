"""Kafka's domain operations on ZooKeeper: broker registration, controller election, topics,
partition states, and the controller's fenced writes.

Fencing: the controller wins /controller_epoch at some zkVersion; every later controller write
is one multi that first checks /controller_epoch is still at that zkVersion. A deposed
("zombie") controller's write therefore fails as a whole and surfaces as ControllerMovedError.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from zk.client import CheckOp, CreateOp, DeleteOp, Op, OpResult, SetDataOp, ZkClient, ZnodeStat
from zk.delegation_token_znodes import (
    DelegationTokenChangeNotificationSequenceZNode,
    DelegationTokenInfo,
    DelegationTokenInfoZNode,
)
from zk.errors import (
    BadVersionError,
    BrokerIdInUseError,
    ControllerMovedError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    TopicExistsError,
    ZkError,
)
from zk.kafka_zk_log_dirs import LogDirZkMixin
from zk.kafka_zk_reassignment import ReassignmentZkMixin
from zk.loop_slice import LoopSlice
from zk.znodes import (
    PERSISTENT_PATHS,
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerRegistration,
    ClusterIdZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    FeatureZNode,
    IsrChangeNotificationSequenceZNode,
    IsrChangeNotificationZNode,
    PartitionState,
    PreferredReplicaElectionZNode,
    ProducerIdBlockZNode,
    TopicAssignment,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
    ZnodeDecodeError,
    new_kafka_uuid,
)

log = logging.getLogger(__name__)

__all__ = [
    "BrokerRegistration",
    "KafkaZk",
    "MalformedHandler",
    "PartitionState",
    "TopicAssignment",
]

# Kafka's initial controller epoch: /controller_epoch is created with 0, the first election
# makes it 1.
INITIAL_CONTROLLER_EPOCH = 0
# Producer id blocks handed out from /latest_producer_id_block (Kafka's block size).
PRODUCER_ID_BLOCK_SIZE = 1000
# Bounded retries for optimistic read-modify-write loops under contention.
_CAS_ATTEMPTS = 20
# Deletes per fenced multi when removing a topic. A multi travels as one ZooKeeper packet,
# bounded by jute.maxbuffer (1 MB by default); 500 deletes of paths up to ~300 bytes (topic
# names reach 249 characters, plus a chroot) stay far below it.
MAX_DELETES_PER_MULTI = 500


# Told (path, error) about a znode that does not decode, by reads that skip such znodes.
MalformedHandler = Callable[[str, ZnodeDecodeError], None]


def _now_ms() -> int:
    return int(time.time() * 1000)


def _stat_of(result: OpResult) -> ZnodeStat:
    """The new stat a SetDataOp of a multi returned."""
    if not isinstance(result, ZnodeStat):
        raise ZkError(f"a set-data operation answered {result!r} instead of a znode stat")
    return result


def _report_malformed(
    on_malformed: MalformedHandler | None, path: str, error: ZnodeDecodeError
) -> None:
    """Hand a decode failure to the caller's handler; without one, it is the caller's error."""
    if on_malformed is None:
        raise error
    on_malformed(path, error)


class KafkaZk(ReassignmentZkMixin, LogDirZkMixin):
    def __init__(self, client: ZkClient) -> None:
        self.client = client

    # ------------------------------------------------------------------ setup

    async def ensure_persistent_paths(self) -> None:
        await asyncio.gather(*(self.client.ensure_path(path) for path in PERSISTENT_PATHS))

    async def get_or_create_cluster_id(self) -> str:
        found = await self.client.get(ClusterIdZNode.path())
        if found is not None:
            return ClusterIdZNode.decode(found[0])
        proposed = new_kafka_uuid()
        try:
            await self.client.create(
                ClusterIdZNode.path(), ClusterIdZNode.encode(proposed), makepath=True
            )
            return proposed
        except NodeExistsError:
            found = await self.client.get(ClusterIdZNode.path())
            if found is None:
                raise
            return ClusterIdZNode.decode(found[0])

    # ------------------------------------------------------------------ brokers

    async def register_broker(self, reg: BrokerRegistration) -> int:
        """Create the ephemeral /brokers/ids/<id>; returns the broker epoch (its czxid)."""
        path = BrokerIdZNode.path(reg.broker_id)
        try:
            await self.client.create(path, BrokerIdZNode.encode(reg), ephemeral=True)
        except NodeExistsError:
            # Our own create may have succeeded before a connection loss made us retry.
            stat = await self._own_ephemeral_stat(path)
            if stat is None:
                raise BrokerIdInUseError(
                    f"broker id {reg.broker_id} is registered by another ZooKeeper session",
                    path=path,
                ) from None
            return stat.czxid
        stat = await self._own_ephemeral_stat(path)
        if stat is None:
            raise BrokerIdInUseError(f"registration {path} vanished right after creation", path)
        return stat.czxid

    async def update_broker_registration(self, reg: BrokerRegistration) -> None:
        """Rewrite this broker's /brokers/ids/<id> in place (new endpoints); the broker epoch,
        the znode's czxid, stays."""
        await self.client.set(BrokerIdZNode.path(reg.broker_id), BrokerIdZNode.encode(reg))

    async def _own_ephemeral_stat(self, path: str) -> ZnodeStat | None:
        found = await self.client.get(path)
        if found is None or found[1].ephemeral_owner != self.client.session_id:
            return None
        return found[1]

    async def get_broker_ids(self) -> list[int]:
        children = await self.client.get_children(BrokerIdsZNode.path()) or []
        return sorted(int(child) for child in children if child.isdigit())

    async def get_brokers_with_epochs(
        self, on_malformed: MalformedHandler | None = None
    ) -> dict[int, tuple[BrokerRegistration, int]]:
        """{broker_id: (registration, broker epoch = czxid)} of live brokers. A registration
        that does not decode raises ZnodeDecodeError, or, given `on_malformed`, is reported
        to it and left out."""
        broker_ids = await self.get_broker_ids()
        paths = [BrokerIdZNode.path(b) for b in broker_ids]
        found = await self.client.get_many(paths)
        brokers: dict[int, tuple[BrokerRegistration, int]] = {}
        for broker_id, path, item in zip(broker_ids, paths, found, strict=True):
            if item is None:  # gone between the two reads
                continue
            try:
                brokers[broker_id] = (BrokerIdZNode.decode(broker_id, item[0]), item[1].czxid)
            except ZnodeDecodeError as exc:
                _report_malformed(on_malformed, path, exc)
        return brokers

    # ------------------------------------------------------------------ controller

    async def get_controller_id(self) -> int | None:
        found = await self.client.get(ControllerZNode.path())
        return None if found is None else ControllerZNode.decode(found[0])

    async def get_controller_epoch(self) -> tuple[int, int] | None:
        """(epoch, zk_version) of /controller_epoch, None before the first election."""
        found = await self.client.get(ControllerEpochZNode.path())
        if found is None:
            return None
        return ControllerEpochZNode.decode(found[0]), found[1].version

    async def try_elect_controller(self, broker_id: int) -> tuple[int, int] | None:
        """One election attempt: (new_epoch, new_epoch_zk_version) if we won, else None."""
        current = await self.get_controller_epoch()
        if current is None:
            # Another broker may create it first: fine, read theirs.
            with contextlib.suppress(NodeExistsError):
                await self.client.create(
                    ControllerEpochZNode.path(),
                    ControllerEpochZNode.encode(INITIAL_CONTROLLER_EPOCH),
                )
            current = await self.get_controller_epoch()
            if current is None:
                raise ZkError("/controller_epoch disappeared during election")
        epoch, zk_version = current
        new_epoch = epoch + 1
        try:
            results = await self.client.multi(
                [
                    CreateOp(
                        ControllerZNode.path(),
                        ControllerZNode.encode(broker_id, _now_ms()),
                        ephemeral=True,
                    ),
                    SetDataOp(
                        ControllerEpochZNode.path(),
                        ControllerEpochZNode.encode(new_epoch),
                        zk_version,
                    ),
                ]
            )
        except (NodeExistsError, BadVersionError):
            return await self._check_controller_and_epoch(broker_id, new_epoch)
        return new_epoch, _stat_of(results[1]).version

    async def _check_controller_and_epoch(
        self, broker_id: int, new_epoch: int
    ) -> tuple[int, int] | None:
        # Our multi may have committed before a connection loss made it look failed.
        found = await self.client.get(ControllerZNode.path())
        if found is None or found[1].ephemeral_owner != self.client.session_id:
            return None
        if ControllerZNode.decode(found[0]) != broker_id:
            return None
        current = await self.get_controller_epoch()
        if current is None or current[0] != new_epoch:
            return None
        return current

    async def resign_controller(self, broker_id: int) -> None:
        """Delete /controller if we hold it (never another broker's)."""
        found = await self.client.get(ControllerZNode.path())
        if found is None or ControllerZNode.decode(found[0]) != broker_id:
            return
        if found[1].ephemeral_owner != self.client.session_id:
            return
        with contextlib.suppress(NoNodeError, BadVersionError):
            await self.client.delete(ControllerZNode.path(), version=found[1].version)

    async def enable_feature_versioning(self, epoch_zk_version: int) -> None:
        """What Kafka 2.7+'s controller does first at failover (enableFeatureVersioning): make
        /feature say "enabled" at the current znode version, keeping the finalized features of
        an enabled one and dropping those of a disabled one. Fenced, so a deposed controller
        cannot write it."""
        path = FeatureZNode.path()
        found = await self.client.get(path)
        if found is None:
            wanted = FeatureZNode.encode(FeatureZNode.STATUS_ENABLED, {})
            with contextlib.suppress(NodeExistsError):  # a predecessor created it meanwhile
                await self._fenced_multi(epoch_zk_version, [CreateOp(path, wanted)])
            return
        version, status, features = FeatureZNode.decode(found[0])
        if status != FeatureZNode.STATUS_ENABLED:
            features = {}
        if (version, status) == (FeatureZNode.VERSION, FeatureZNode.STATUS_ENABLED):
            return
        wanted = FeatureZNode.encode(FeatureZNode.STATUS_ENABLED, features)
        await self._fenced_multi(epoch_zk_version, [SetDataOp(path, wanted, found[1].version)])

    async def get_finalized_features(self) -> tuple[dict[str, int], int] | None:
        """/feature's finalized features (none unless its status is enabled) and the znode's
        version, or None when it is absent."""
        found = await self.client.get(FeatureZNode.path())
        if found is None:
            return None
        _, status, features = FeatureZNode.decode(found[0])
        if status != FeatureZNode.STATUS_ENABLED:
            features = {}
        return features, found[1].version

    async def set_finalized_features(
        self, epoch_zk_version: int, features: Mapping[str, int], znode_version: int | None
    ) -> None:
        """Replace /feature's finalized features (status enabled), fenced by the controller
        epoch and, when it exists, by the version it was read at."""
        data = FeatureZNode.encode(FeatureZNode.STATUS_ENABLED, features)
        path = FeatureZNode.path()
        op: Op = (
            CreateOp(path, data) if znode_version is None else SetDataOp(path, data, znode_version)
        )
        await self._fenced_multi(epoch_zk_version, [op])

    async def _fenced_multi(self, epoch_zk_version: int, ops: Sequence[Op]) -> list[OpResult]:
        try:
            results = await self.client.multi(
                [CheckOp(ControllerEpochZNode.path(), epoch_zk_version), *ops]
            )
        except (BadVersionError, NoNodeError) as exc:
            if exc.op_index == 0:
                raise ControllerMovedError(
                    f"controller epoch zkVersion is no longer {epoch_zk_version}",
                    path=ControllerEpochZNode.path(),
                ) from None
            if exc.op_index is not None:
                exc.op_index -= 1  # report the index within the caller's ops
            raise
        except ZkError as exc:
            if exc.op_index is not None:
                exc.op_index -= 1
            raise
        return results[1:]

    # ------------------------------------------------------------------ topics

    async def get_all_topics(self) -> list[str]:
        return await self.client.get_children(TopicsZNode.path()) or []

    async def get_topic_assignment(self, topic: str) -> TopicAssignment | None:
        found = await self.client.get(TopicZNode.path(topic))
        return None if found is None else TopicZNode.decode(topic, found[0])

    async def get_topic_assignments(
        self, topics: Sequence[str], on_malformed: MalformedHandler | None = None
    ) -> dict[str, TopicAssignment | None]:
        """{topic: assignment, or None if the topic is gone}; batched: every read is sent
        before the first answer is awaited. A topic znode that does not decode raises
        ZnodeDecodeError, or, given `on_malformed`, is reported to it and left out."""
        paths = [TopicZNode.path(topic) for topic in topics]
        found = await self.client.get_many(paths)
        assignments: dict[str, TopicAssignment | None] = {}
        for topic, path, item in zip(topics, paths, found, strict=True):
            try:
                assignments[topic] = None if item is None else TopicZNode.decode(topic, item[0])
            except ZnodeDecodeError as exc:
                _report_malformed(on_malformed, path, exc)
        return assignments

    async def create_topic(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]],
        configs: Mapping[str, str],
        topic_id: str,
    ) -> None:
        """Kafka's order: config znode first, then the topic znode the controller watches."""
        if await self.client.exists(TopicZNode.path(topic)) is not None:
            raise TopicExistsError(f"topic {topic!r} already exists", path=TopicZNode.path(topic))
        await self._set_or_create(
            ConfigEntityZNode.path("topics", topic), ConfigEntityZNode.encode(configs)
        )
        data = TopicZNode.encode(
            TopicAssignment(
                topic_id=topic_id,
                partitions={
                    partition: list(replicas) for partition, replicas in assignment.items()
                },
            )
        )
        try:
            await self.client.create(TopicZNode.path(topic), data)
        except NodeExistsError:
            raise TopicExistsError(
                f"topic {topic!r} already exists", path=TopicZNode.path(topic)
            ) from None
        except NoNodeError:
            await self.client.ensure_path(TopicsZNode.path())
            await self.client.create(TopicZNode.path(topic), data)

    async def set_topic_assignment(
        self,
        epoch_zk_version: int,
        topic: str,
        assignment: TopicAssignment,
        expected_zk_version: int = -1,
    ) -> int:
        """Fenced rewrite of /brokers/topics/<t> (topic id back-fill, added partitions,
        reassignment); returns the new zkVersion."""
        results = await self._fenced_multi(
            epoch_zk_version,
            [SetDataOp(TopicZNode.path(topic), TopicZNode.encode(assignment), expected_zk_version)],
        )
        return _stat_of(results[0]).version

    async def get_topic_configs(self, topic: str) -> dict[str, str]:
        found = await self.client.get(ConfigEntityZNode.path("topics", topic))
        return {} if found is None else ConfigEntityZNode.decode(found[0])

    async def change_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        """Replace a topic's config overrides, then notify brokers through /config/changes
        (AdminZkClient.changeTopicConfig's two writes, in its order)."""
        await self._set_or_create(
            ConfigEntityZNode.path("topics", topic), ConfigEntityZNode.encode(configs)
        )
        await self.client.create(
            ConfigEntityChangeNotificationSequenceZNode.create_path(),
            ConfigEntityChangeNotificationSequenceZNode.encode(f"topics/{topic}"),
            sequence=True,
            makepath=True,
        )

    async def get_entity_config(self, entity_type: str, entity_name: str) -> dict[str, str]:
        """/config/<entity_type>/<entity_name> (a sanitized name), {} when absent."""
        found = await self.client.get(ConfigEntityZNode.path(entity_type, entity_name))
        return {} if found is None else ConfigEntityZNode.decode(found[0])

    async def get_entity_names(self, entity_type: str) -> list[str]:
        """The (sanitized) names under /config/<entity_type>."""
        return await self.client.get_children(f"/config/{entity_type}") or []

    async def change_entity_config(
        self, entity_type: str, entity_name: str, configs: Mapping[str, str]
    ) -> None:
        """Replace an entity's configs (users, clients ...), then notify brokers through
        /config/changes (AdminZkClient.changeEntityConfig's two writes, in its order)."""
        await self._set_or_create(
            ConfigEntityZNode.path(entity_type, entity_name), ConfigEntityZNode.encode(configs)
        )
        await self.client.create(
            ConfigEntityChangeNotificationSequenceZNode.create_path(),
            ConfigEntityChangeNotificationSequenceZNode.encode(f"{entity_type}/{entity_name}"),
            sequence=True,
            makepath=True,
        )

    # ------------------------------------------------------------ delegation tokens

    async def create_delegation_token_paths(self) -> None:
        await asyncio.gather(
            self.client.ensure_path(DelegationTokenInfoZNode.tokens_path()),
            self.client.ensure_path(DelegationTokenChangeNotificationSequenceZNode.directory()),
        )

    async def get_delegation_token_ids(self) -> list[str]:
        return await self.client.get_children(DelegationTokenInfoZNode.tokens_path()) or []

    async def get_delegation_token(self, token_id: str) -> DelegationTokenInfo | None:
        found = await self.client.get(DelegationTokenInfoZNode.path(token_id))
        if found is None or not found[0]:
            return None
        return DelegationTokenInfoZNode.decode(found[0])

    async def set_or_create_delegation_token(self, token: DelegationTokenInfo) -> None:
        await self._set_or_create(
            DelegationTokenInfoZNode.path(token.token_id), DelegationTokenInfoZNode.encode(token)
        )

    async def delete_delegation_token(self, token_id: str) -> None:
        with contextlib.suppress(NoNodeError):
            await self.client.delete(DelegationTokenInfoZNode.path(token_id))

    async def create_token_change_notification(self, token_id: str) -> None:
        await self.client.create(
            DelegationTokenChangeNotificationSequenceZNode.create_path(),
            DelegationTokenChangeNotificationSequenceZNode.encode(token_id),
            sequence=True,
            makepath=True,
        )

    async def _set_or_create(self, path: str, data: bytes) -> None:
        try:
            await self.client.set(path, data)
        except NoNodeError:
            try:
                await self.client.create(path, data, makepath=True)
            except NodeExistsError:
                await self.client.set(path, data)

    async def mark_topic_for_deletion(self, topic: str) -> None:
        with contextlib.suppress(NodeExistsError):  # already marked
            await self.client.create(DeleteTopicsTopicZNode.path(topic), makepath=True)

    async def get_topics_pending_deletion(self) -> list[str]:
        return await self.client.get_children(DeleteTopicsZNode.path()) or []

    # ------------------------------------------------------------------ partition states

    async def get_partition_states(
        self, topic: str, partitions: Iterable[int]
    ) -> dict[int, tuple[PartitionState, int] | None]:
        """{partition: (state, zk_version) or None}; batched reads."""
        partition_list = list(partitions)
        keys = [(topic, partition) for partition in partition_list]
        found = await self.get_many_partition_states(keys)
        return {partition: found[(topic, partition)] for partition in partition_list}

    async def get_many_partition_states(
        self,
        partitions: Sequence[tuple[str, int]],
        on_malformed: MalformedHandler | None = None,
        arm: bool = False,
    ) -> dict[tuple[str, int], tuple[PartitionState, int] | None]:
        """Across topics, for controller fail-over: one pipelined burst of reads. A state
        that does not decode raises ZnodeDecodeError, or, given `on_malformed`, is reported
        to it and left out. `arm`: see ZkClient.get_many."""
        paths = [TopicPartitionStateZNode.path(topic, p) for topic, p in partitions]
        found = await self.client.get_many(paths, arm=arm)
        result: dict[tuple[str, int], tuple[PartitionState, int] | None] = {}
        loop_slice = LoopSlice()  # 5,000 JSON documents take tens of milliseconds
        for key, path, item in zip(partitions, paths, found, strict=True):
            await loop_slice.pause_if_spent()
            try:
                result[key] = (
                    None
                    if item is None
                    else (TopicPartitionStateZNode.decode(item[0], path), item[1].version)
                )
            except ZnodeDecodeError as exc:
                _report_malformed(on_malformed, path, exc)
        return result

    async def create_partition_states(
        self, epoch_zk_version: int, topic: str, states: Mapping[int, PartitionState]
    ) -> dict[int, int | None]:
        """Fenced creation of each partition's state znode (pipelined, one multi per
        partition). Returns {partition: 0 (the new zkVersion), or None if it already existed}.
        Raises NoNodeError if the topic znode is gone, ControllerMovedError if fenced."""
        await self._ensure_partition_parents(topic, states)
        outcomes = await asyncio.gather(
            *(
                self._fenced_multi(
                    epoch_zk_version,
                    [
                        CreateOp(
                            TopicPartitionStateZNode.path(topic, partition),
                            TopicPartitionStateZNode.encode(state),
                        )
                    ],
                )
                for partition, state in states.items()
            ),
            return_exceptions=True,
        )
        created: dict[int, int | None] = {}
        for partition, outcome in zip(states, outcomes, strict=True):
            if isinstance(outcome, NodeExistsError):
                created[partition] = None
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                created[partition] = 0
        return created

    async def _ensure_partition_parents(self, topic: str, partitions: Iterable[int]) -> None:
        # Never makepath: if /brokers/topics/<t> is gone the topic was deleted, and recreating
        # parents would resurrect it.
        paths = [TopicPartitionsZNode.path(topic)]
        for path_group in (paths, [TopicPartitionZNode.path(topic, p) for p in partitions]):
            outcomes = await asyncio.gather(
                *(self.client.create(path) for path in path_group), return_exceptions=True
            )
            for outcome in outcomes:
                if isinstance(outcome, BaseException) and not isinstance(outcome, NodeExistsError):
                    raise outcome

    async def update_partition_state(
        self,
        epoch_zk_version: int,
        topic: str,
        partition: int,
        state: PartitionState,
        expected_zk_version: int,
    ) -> int:
        """Fenced conditional write; returns the new zkVersion (the partition epoch).
        BadVersionError if the state changed since it was read."""
        results = await self._fenced_multi(
            epoch_zk_version,
            [
                SetDataOp(
                    TopicPartitionStateZNode.path(topic, partition),
                    TopicPartitionStateZNode.encode(state),
                    expected_zk_version,
                )
            ],
        )
        return _stat_of(results[0]).version

    async def update_partition_states(
        self,
        epoch_zk_version: int,
        writes: Sequence[tuple[tuple[str, int], PartitionState, int]],
    ) -> list[int]:
        """Several fenced conditional writes ((topic, partition), state, expected zkVersion) in
        one multi: all or none. Returns the new zkVersions, in order; BadVersionError or
        NoNodeError (with `op_index`) when one of the states changed or vanished."""
        results = await self._fenced_multi(
            epoch_zk_version,
            [
                SetDataOp(
                    TopicPartitionStateZNode.path(*key),
                    TopicPartitionStateZNode.encode(state),
                    expected_zk_version,
                )
                for key, state, expected_zk_version in writes
            ],
        )
        return [_stat_of(result).version for result in results]

    async def conditional_update_partition_state_as_leader(
        self,
        topic: str,
        partition: int,
        state: PartitionState,
        expected_zk_version: int,
    ) -> int:
        """Leader-side ISR change: a plain conditional write of the partition state, not fenced
        by the controller epoch (Kafka's leader writes it with conditionalUpdatePath, keeping
        the controller_epoch it read). Returns the new zkVersion (the partition epoch).
        BadVersionError if the state changed since it was read (the controller or another
        leader wrote it), NoNodeError if it is gone (the topic was deleted)."""
        stat = await self.client.set(
            TopicPartitionStateZNode.path(topic, partition),
            TopicPartitionStateZNode.encode(state),
            expected_zk_version,
        )
        return stat.version

    async def create_isr_change_notification(self, partitions: Iterable[tuple[str, int]]) -> str:
        """Leader-side: tell the controller an ISR changed (sequential znode)."""
        return await self.client.create(
            IsrChangeNotificationSequenceZNode.create_path(),
            IsrChangeNotificationSequenceZNode.encode(partitions),
            sequence=True,
            makepath=True,
        )

    async def get_isr_change_notifications(self) -> list[str]:
        """Names (isr_change_<seq>) of the pending ISR change notifications, oldest first."""
        children = await self.client.get_children(IsrChangeNotificationZNode.path()) or []
        return sorted(children)

    async def read_isr_change_notifications(self, names: Sequence[str]) -> list[tuple[str, int]]:
        """The partitions named by the notifications `names`, in order, duplicates removed;
        batched reads. A notification that vanished meanwhile or does not decode is skipped
        with a warning: it names nothing the controller can act on, and deleting it with the
        others is all that is left to do (Kafka treats an undecodable one as empty)."""
        paths = [f"{IsrChangeNotificationZNode.path()}/{name}" for name in names]
        found = await self.client.get_many(paths)
        partitions: dict[tuple[str, int], None] = {}
        for path, item in zip(paths, found, strict=True):
            if item is None:
                log.warning("ISR change notification %s vanished before it was read", path)
                continue
            try:
                named = IsrChangeNotificationSequenceZNode.decode(item[0])
            except ZnodeDecodeError as exc:
                log.warning("skipping malformed ISR change notification %s: %s", path, exc)
                continue
            partitions.update(dict.fromkeys(named))
        return list(partitions)

    async def delete_isr_change_notifications(
        self, epoch_zk_version: int, names: Iterable[str]
    ) -> None:
        """Fenced removal of processed ISR change notifications (Kafka's
        deleteIsrChangeNotifications is a controller write: a deposed controller must not
        delete what its successor has not read); already-missing ones are skipped."""
        paths = [f"{IsrChangeNotificationZNode.path()}/{name}" for name in names]
        outcomes = await asyncio.gather(
            *(self._fenced_multi(epoch_zk_version, [DeleteOp(path)]) for path in paths),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, NoNodeError):
                raise outcome

    # ------------------------------------------------------------------ preferred election

    async def get_preferred_replica_election(self) -> tuple[list[tuple[str, int]], int] | None:
        """The partitions /admin/preferred_replica_election names and its zkVersion; None when
        no election is requested. A malformed request names nothing (with a warning): it can
        only be deleted."""
        path = PreferredReplicaElectionZNode.path()
        found = await self.client.get(path)
        if found is None:
            return None
        data, stat = found
        try:
            return PreferredReplicaElectionZNode.decode(data), stat.version
        except ZnodeDecodeError as exc:
            log.warning("ignoring malformed %s: %s", path, exc)
            return [], stat.version

    async def delete_preferred_replica_election(self, epoch_zk_version: int, version: int) -> None:
        """Fenced removal of the request once handled (Kafka's deletePreferredReplicaElection),
        at the zkVersion read: a request rewritten meanwhile stays to be handled. Gone or
        rewritten already: nothing to do (its watch brings the controller back)."""
        with contextlib.suppress(NoNodeError, BadVersionError):
            await self._fenced_multi(
                epoch_zk_version, [DeleteOp(PreferredReplicaElectionZNode.path(), version)]
            )

    # ------------------------------------------------------------------ topic deletion

    async def delete_topic_znodes(self, epoch_zk_version: int, topic: str) -> None:
        """Fenced removal of /brokers/topics/<t> (with its partitions), /config/topics/<t> and
        /admin/delete_topics/<t>; already-missing ones are skipped.

        One multi per MAX_DELETES_PER_MULTI znodes, each fenced by the controller epoch: a
        single multi for a topic of thousands of partitions would exceed ZooKeeper's
        jute.maxbuffer (1 MB) and be refused. Children go before parents and the deletion
        marker goes last, so a deletion cut short leaves a consistent, still-marked topic that
        the next attempt finishes."""
        for attempt in range(_CAS_ATTEMPTS):
            paths = await self._topic_deletion_paths(topic)
            try:
                for start in range(0, len(paths), MAX_DELETES_PER_MULTI):
                    batch = paths[start : start + MAX_DELETES_PER_MULTI]
                    await self._fenced_multi(epoch_zk_version, [DeleteOp(path) for path in batch])
                return
            except (NoNodeError, NotEmptyError):
                # The tree changed under us (a partition znode appeared or vanished): list it
                # again and carry on; ControllerMovedError and connection trouble propagate.
                if attempt == _CAS_ATTEMPTS - 1:
                    raise

    async def _topic_deletion_paths(self, topic: str) -> list[str]:
        paths = await self._tree_post_order(TopicZNode.path(topic))
        for path in (ConfigEntityZNode.path("topics", topic), DeleteTopicsTopicZNode.path(topic)):
            if await self.client.exists(path) is not None:
                paths.append(path)
        return paths

    async def delete_topic_deletion_markers(
        self, epoch_zk_version: int, topics: Iterable[str]
    ) -> None:
        """Fenced removal of /admin/delete_topics/<t> without deleting the topics (Kafka's
        deleteTopicDeletions, used when delete.topic.enable=false); missing ones are skipped."""
        paths = [DeleteTopicsTopicZNode.path(topic) for topic in topics]
        outcomes = await asyncio.gather(
            *(self._fenced_multi(epoch_zk_version, [DeleteOp(path)]) for path in paths),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, NoNodeError):
                raise outcome

    async def _tree_post_order(self, path: str) -> list[str]:
        """Every znode under and including `path`, children before parents; [] if missing."""
        children = await self.client.get_children(path)
        if children is None:
            return []
        subtrees = await asyncio.gather(
            *(self._tree_post_order(f"{path}/{child}") for child in children)
        )
        return [node for subtree in subtrees for node in subtree] + [path]

    # ------------------------------------------------------------------ producer ids

    async def allocate_producer_id_block(
        self, broker_id: int, block_size: int = PRODUCER_ID_BLOCK_SIZE
    ) -> tuple[int, int]:
        """Claim the next [block_start, block_end] of producer ids (inclusive), with a
        conditional write on /latest_producer_id_block."""
        path = ProducerIdBlockZNode.path()
        for _ in range(_CAS_ATTEMPTS):
            found = await self.client.get(path)
            if found is None:
                with contextlib.suppress(NodeExistsError):
                    await self.client.create(path, makepath=True)
                continue
            data, stat = found
            start = ProducerIdBlockZNode.decode(data)[2] + 1 if data else 0
            end = start + block_size - 1
            try:
                await self.client.set(
                    path, ProducerIdBlockZNode.encode(broker_id, start, end), stat.version
                )
                return start, end
            except BadVersionError:
                continue
        raise ZkError("could not allocate a producer id block: too much contention")
