"""A controller's LeaderAndIsr and StopReplica, applied to this broker's replicas (Kafka's
ReplicaManager.becomeLeaderOrFollower and stopReplicas), through the replica manager's own
paths: `apply_state`, which the partition state znodes take too, and `delete_partition`. The
rules they follow (which state is newer, which leader epoch is stale) are the pure functions
of broker/replication/control_requests.py; the handlers fence the request first.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from broker.protocol.controller_apis import EPOCH_DURING_DELETE
from broker.replication.control_requests import (
    AppliedState,
    RequestedState,
    has_consistent_topic_id,
    leader_and_isr_decision,
    state_change_log,
    stop_replica_error,
)
from zk.loop_slice import LoopSlice

if TYPE_CHECKING:
    from broker.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)


async def become_leader_or_follower(
    replica_manager: ReplicaManager, controller_id: int, states: Sequence[RequestedState]
) -> dict[tuple[str, int], ErrorCode]:
    """Apply a LeaderAndIsr request's partition states (its controller epoch already
    accepted) through `apply_state`, the path the partition state znodes take, each only
    if newer than what the replica holds (broker/replication/control_requests.py). A
    partition whose log is not open here yet is left to the znode watch, which opens it
    (Kafka's controller wrote the znodes before it sent the request). Applied in slices of
    loop time: a failover's request names thousands of partitions, and each leadership
    change costs about as much here as when the znode watch applies it in slices."""
    errors: dict[tuple[str, int], ErrorCode] = {}
    loop_slice = LoopSlice()
    for state in states:
        await loop_slice.pause_if_spent()
        errors[state.key] = _apply_requested(replica_manager, controller_id, state)
    return errors


def _apply_requested(
    replica_manager: ReplicaManager, controller_id: int, requested: RequestedState
) -> ErrorCode:
    key = requested.key
    if replica_manager.is_offline(key):
        return ErrorCode.kafka_storage_error
    known_topic_id = replica_manager.topic_id(requested.topic)
    if not has_consistent_topic_id(requested.topic_id, known_topic_id):
        state_change_log.error(
            "[Broker id=%d] Topic ID in memory: %s does not match the topic ID for"
            " partition %s-%d received: %s.",
            replica_manager.broker_id,
            known_topic_id,
            *key,
            requested.topic_id,
        )
        return ErrorCode.inconsistent_topic_id
    current = replica_manager.get_by_key(key)
    applied = None if current is None else AppliedState(current.leader_epoch, current.zk_version)
    decision = leader_and_isr_decision(applied, requested.leader_epoch, requested.zk_version)
    if decision.error != ErrorCode.none and applied is not None:
        state_change_log.info(
            "[Broker id=%d] Ignoring LeaderAndIsr request from controller %d for partition"
            " %s-%d since its leader epoch %d and partition epoch %d are not newer than the"
            " current leader epoch %d and partition epoch %d",
            replica_manager.broker_id,
            controller_id,
            *key,
            requested.leader_epoch,
            requested.zk_version,
            applied.leader_epoch,
            applied.zk_version,
        )
    if not decision.apply:
        return decision.error
    if replica_manager.broker_id not in requested.replicas:
        state_change_log.warning(
            "[Broker id=%d] Ignoring LeaderAndIsr request from controller %d for partition"
            " %s-%d as itself is not in assigned replica list %s",
            replica_manager.broker_id,
            controller_id,
            *key,
            ",".join(map(str, requested.replicas)),
        )
        return ErrorCode.unknown_topic_or_partition
    if current is not None:
        topic_id, log_config = (replica_manager.topic_id(requested.topic) or ""), current.log.config
    else:
        prepared = replica_manager.prepared_log(key)
        if prepared is None:
            return ErrorCode.none  # the znode watch opens the log, then applies the state
        topic_id, log_config = prepared[0], prepared[1].config
    replica_manager.apply_state(
        requested.topic,
        topic_id,
        requested.partition,
        list(requested.replicas),
        requested.partition_state,
        log_config,
        requested.zk_version,
        removing=requested.removing,
    )
    return ErrorCode.none


async def stop_replicas(
    replica_manager: ReplicaManager, controller_id: int, stops: Sequence[tuple[str, int, int, bool]]
) -> dict[tuple[str, int], ErrorCode]:
    """A StopReplica request's partitions, (topic, partition, leader epoch, delete), its
    controller epoch already accepted: each stops following its leader, and with
    delete is removed with its log as our own topic deletion and reassignment remove a
    replica (`delete_partition`). Kafka's ReplicaManager.stopReplicas' answers."""
    errors: dict[tuple[str, int], ErrorCode] = {}
    for topic, partition, leader_epoch, delete in stops:
        key = (topic, partition)
        if replica_manager.is_offline(key):
            errors[key] = ErrorCode.kafka_storage_error
            continue
        current = replica_manager.get_by_key(key)
        error = stop_replica_error(None if current is None else current.leader_epoch, leader_epoch)
        if error != ErrorCode.none:
            state_change_log.warning(
                "[Broker id=%d] Ignoring StopReplica request (delete=%s) from controller %d"
                " for partition %s-%d since its associated leader epoch %d is smaller than"
                " the current leader epoch %d",
                replica_manager.broker_id,
                str(delete).lower(),
                controller_id,
                *key,
                leader_epoch,
                current.leader_epoch if current is not None else -1,
            )
            errors[key] = error
            continue
        try:
            if delete:
                topic_id = replica_manager.topic_id(topic)
                if leader_epoch == EPOCH_DURING_DELETE and topic_id is not None:
                    replica_manager.deleting_topics[topic] = topic_id
                await replica_manager.delete_partition(
                    topic, partition, f"StopReplica from controller {controller_id}"
                )
            elif replica_manager.fetchers is not None:
                replica_manager.fetchers.remove_partition(key)
        except OSError as io_error:
            log.error("%s-%d: deleting the replica failed: %s", *key, io_error)
            errors[key] = ErrorCode.kafka_storage_error
            continue
        errors[key] = ErrorCode.none
    return errors
