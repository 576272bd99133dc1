"""Kafka's state-change log: one line per controller election, broker registration or loss, and
partition leader/ISR change, with the reason, on the `state.change.logger` logger.

The broker process sends this logger to `state-change.log` (see `broker/__main__.py`), which
`scripts/cluster events` merges across brokers into one timeline. Lines keep Kafka's shape:
`[Controller id=1 epoch=3] Changed partition t-0 ... ` / `[Broker id=2] ...`.

Every line's arguments are strings and numbers (lists are joined first): the broker queues
these records unformatted for a thread to write, so an argument changed later would be
written changed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from enum import StrEnum

LOGGER_NAME = "state.change.logger"
_log = logging.getLogger(LOGGER_NAME)


class ChangeReason(StrEnum):
    """Why the controller (or a leader) wrote a partition's leader and ISR."""

    NEW_PARTITION = "new partition"
    BROKER_FAILURE = "broker failure"
    BROKER_STARTUP = "broker startup"
    LOG_DIR_FAILURE = "log dir failure"
    CONTROLLER_FAILOVER = "controller failover"
    ISR_SHRINK = "ISR shrink"
    ISR_EXPAND = "ISR expand"
    PREFERRED_ELECTION = "preferred leader election"
    UNCLEAN_ELECTION = "unclean leader election"
    CONTROLLED_SHUTDOWN = "controlled shutdown"
    REASSIGNMENT = "reassignment"
    TOPIC_DELETION = "topic deletion"
    REPAIR = "repair after a failed write"


def _controller(broker_id: int, epoch: int) -> str:
    return f"[Controller id={broker_id} epoch={epoch}]"


def controller_elected(broker_id: int, epoch: int) -> None:
    _log.info(
        "%s Broker %d elected controller with epoch %d",
        _controller(broker_id, epoch),
        broker_id,
        epoch,
    )


def controller_resigned(broker_id: int, epoch: int) -> None:
    _log.info("%s Broker %d resigned as controller", _controller(broker_id, epoch), broker_id)


def brokers_changed(
    broker_id: int, epoch: int, new: Iterable[int], dead: Iterable[int], bounced: Iterable[int]
) -> None:
    prefix = _controller(broker_id, epoch)
    for registered in sorted(new):
        _log.info("%s Broker %d registered", prefix, registered)
    for lost in sorted(dead):
        _log.info("%s Broker %d lost (its ZooKeeper session ended)", prefix, lost)
    for restarted in sorted(bounced):
        _log.info("%s Broker %d re-registered with a new broker epoch", prefix, restarted)


def partition_changed(
    broker_id: int,
    epoch: int,
    topic: str,
    partition: int,
    leader: int,
    leader_epoch: int,
    isr: list[int],
    zk_version: int,
    reason: ChangeReason,
) -> None:
    """The controller wrote (or created) a partition's state znode."""
    _log.info(
        "%s Changed partition %s-%d to LeaderAndIsr(leader=%d, leaderEpoch=%d, isr=%s, "
        "zkVersion=%d) reason: %s",
        _controller(broker_id, epoch),
        topic,
        partition,
        leader,
        leader_epoch,
        ",".join(map(str, isr)),
        zk_version,
        reason,
    )


def leader_changed_isr(
    broker_id: int,
    topic: str,
    partition: int,
    old_isr: list[int],
    new_isr: list[int],
    leader_epoch: int,
    zk_version: int,
    reason: ChangeReason,
) -> None:
    """A partition leader's ISR change (shrink or expand) landed: its own znode write, or the
    controller's answer to its AlterPartition."""
    _log.info(
        "[Broker id=%d] Changed ISR of partition %s-%d from %s to %s (leaderEpoch=%d, "
        "zkVersion=%d) reason: %s",
        broker_id,
        topic,
        partition,
        ",".join(map(str, old_isr)),
        ",".join(map(str, new_isr)),
        leader_epoch,
        zk_version,
        reason,
    )


def became_leader(
    broker_id: int,
    topic: str,
    partition: int,
    leader_epoch: int,
    start_offset: int,
    high_watermark: int,
    isr: list[int],
    previous_epoch: int,
) -> None:
    """A broker started leading a partition (or its leader epoch was bumped)."""
    _log.info(
        "[Broker id=%d] Leader %s-%d starts at leader epoch %d from offset %d with high "
        "watermark %d ISR [%s]. Previous leader epoch was %d.",
        broker_id,
        topic,
        partition,
        leader_epoch,
        start_offset,
        high_watermark,
        ",".join(map(str, isr)),
        previous_epoch,
    )


def became_follower(
    broker_id: int,
    topic: str,
    partition: int,
    leader: int,
    leader_epoch: int,
    log_end_offset: int,
    high_watermark: int,
    previous_epoch: int,
) -> None:
    """A broker started following a partition's (new) leader, or lost it (leader -1)."""
    _log.info(
        "[Broker id=%d] Follower %s-%d starts at leader epoch %d from offset %d with high "
        "watermark %d (leader %d). Previous leader epoch was %d.",
        broker_id,
        topic,
        partition,
        leader_epoch,
        log_end_offset,
        high_watermark,
        leader,
        previous_epoch,
    )


def replicas_marked_offline(
    broker_id: int, epoch: int, replicas: Iterable[tuple[str, int]], replica_broker: int
) -> None:
    """A broker's answer named replicas in failed log dirs (Kafka's line for it)."""
    _log.info(
        "%s Mark replicas %s on broker %d as offline",
        _controller(broker_id, epoch),
        ",".join(f"{topic}-{partition}" for topic, partition in replicas),
        replica_broker,
    )
