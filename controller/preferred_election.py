"""Replica leader elections on request: Kafka's onReplicaElection and
processReplicaLeaderElection.

Three triggers ask for them, each handled in a controller event:
- an ElectLeaders request (preferred or unclean), queued in a `RequestQueue` of
  `ElectionRequest`s and answered through a future once the event has run;
- /admin/preferred_replica_election, written by an operator (preferred only);
- the auto-rebalance check (`auto_rebalance.py`, preferred only).

Rules (Kafka 3.0): a preferred election moves leadership to the first assigned replica, only if
it is alive and in the ISR, keeping the ISR; it is not needed when that replica already leads.
An unclean election is only needed when the partition has no live leader; it elects the first
live ISR member, else (asked for by an ElectLeaders request only) the first live replica with
an ISR of just that replica. Every write goes through the partition state machine, fenced.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum

from kio.schema.errors import ErrorCode

from controller.context import ControllerContext, TopicPartition
from controller.election import (
    NO_LEADER,
    LeaderAndIsr,
    elect_offline_leader,
    elect_preferred_leader,
)
from controller.errors import (
    ELECTION_NOT_NEEDED,
    ELIGIBLE_LEADERS_NOT_AVAILABLE,
    INVALID_TOPIC_EXCEPTION,
    NONE,
    PREFERRED_LEADER_NOT_AVAILABLE,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from controller.partition_state_machine import PartitionStateMachine
from controller.request_queue import RequestQueue
from controller.state_change_log import ChangeReason
from controller.zk_api import ControllerZk
from zk.znodes import ZnodeDecodeError

log = logging.getLogger(__name__)

# ElectLeaders requests waiting for the controller's event task; more are refused at once
# (NOT_CONTROLLER makes clients retry) rather than piling up while the controller is stuck.
MAX_PENDING_ELECTION_REQUESTS = 64
# Partitions named in one log line about many.
MAX_LOGGED_PARTITIONS = 20


class ElectionType(IntEnum):
    """ElectLeaders' election_type (Kafka's org.apache.kafka.common.ElectionType)."""

    PREFERRED = 0
    UNCLEAN = 1


class ElectionTrigger(StrEnum):
    """Who asked; Kafka's names, as its log lines show them."""

    AUTO = "AutoTriggered"
    ZOOKEEPER = "ZkTriggered"
    ADMIN_CLIENT = "AdminClientTriggered"


# Kafka's strategy names, which its failure messages carry (clients show them to users).
_STRATEGY = {
    ElectionType.PREFERRED: "PreferredReplicaPartitionLeaderElectionStrategy",
    ElectionType.UNCLEAN: "OfflinePartitionLeaderElectionStrategy(true)",
}
_FAILED = {
    ElectionType.PREFERRED: PREFERRED_LEADER_NOT_AVAILABLE,
    ElectionType.UNCLEAN: ELIGIBLE_LEADERS_NOT_AVAILABLE,
}


@dataclass(frozen=True, slots=True)
class ElectionResult:
    """One partition's outcome: a Kafka error code (NONE: elected) and message."""

    error_code: ErrorCode
    message: str | None = None
    leader: int = NO_LEADER


ElectionResults = dict[TopicPartition, ElectionResult]


async def elect_leaders(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    machine: PartitionStateMachine,
    partitions: Iterable[TopicPartition],
    election_type: ElectionType,
    trigger: ElectionTrigger,
) -> ElectionResults:
    """Elect where needed and possible; every partition named gets a result."""
    results: ElectionResults = {}
    electable = []
    for tp in dict.fromkeys(partitions):
        if not context.has_partition(tp):
            results[tp] = ElectionResult(
                UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
            )
        elif tp[0] in context.topics_queued_for_deletion:
            results[tp] = ElectionResult(INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
        elif not _election_needed(context, tp, election_type):
            results[tp] = ElectionResult(ELECTION_NOT_NEEDED)
        else:
            electable.append(tp)
    if electable:
        log.info(
            "Starting replica leader election (%s) for partitions %s triggered by %s",
            election_type.name,
            _names(electable),
            trigger,
        )
        await _refresh(kafka_zk, context, electable)
        results.update(await _elect(context, machine, electable, election_type, trigger))
    return results


async def _refresh(
    kafka_zk: ControllerZk, context: ControllerContext, partitions: Sequence[TopicPartition]
) -> None:
    """Decide on the states in ZooKeeper, as Kafka's election does: leaders announce ISR
    changes to the controller only every few seconds, so a replica that has just caught up
    may be in the ISR there but not yet in the context."""
    states = await kafka_zk.get_many_partition_states(partitions, on_malformed=_log_malformed)
    for tp, versioned in states.items():
        if versioned is not None:
            context.partition_states[tp] = versioned


def _log_malformed(path: str, error: ZnodeDecodeError) -> None:
    log.warning("deciding on the last known state: %s does not decode: %s", path, error)


def _election_needed(
    context: ControllerContext, tp: TopicPartition, election_type: ElectionType
) -> bool:
    versioned = context.partition_states.get(tp)
    if versioned is None:
        return True  # no state yet: the election fails with a clear message
    leader = versioned[0].leader
    if election_type is ElectionType.PREFERRED:
        replicas = context.replicas(tp)
        return not replicas or leader != replicas[0]
    return leader == NO_LEADER or leader not in context.live_replicas(tp)


def _decide(
    context: ControllerContext,
    tp: TopicPartition,
    election_type: ElectionType,
    trigger: ElectionTrigger,
) -> LeaderAndIsr | ElectionResult:
    versioned = context.partition_states.get(tp)
    if versioned is None:
        message = f"LeaderAndIsr information doesn't exist for partition {_name(tp)}"
        return ElectionResult(_FAILED[election_type], message)
    if not _election_needed(context, tp, election_type):
        return ElectionResult(ELECTION_NOT_NEEDED)  # a leader changed it meanwhile
    state = versioned[0]
    replicas = context.replicas(tp)
    if election_type is ElectionType.PREFERRED:
        decision = elect_preferred_leader(
            replicas, state.isr, context.live_replicas(tp), context.shutting_down_brokers
        )
    else:
        # Kafka allows the unclean step only when an operator asked through the API.
        allow_unclean = trigger is ElectionTrigger.ADMIN_CLIENT
        live = context.live_replicas(tp)
        decision = elect_offline_leader(replicas, state.isr, live, allow_unclean)
    if decision is None:
        message = (
            f"Failed to elect leader for partition {_name(tp)} under strategy "
            f"{_STRATEGY[election_type]}"
        )
        return ElectionResult(_FAILED[election_type], message)
    return decision


def _reason(election_type: ElectionType) -> ChangeReason:
    """What the state-change log records; the state machine records an unclean decision as
    UNCLEAN_ELECTION whatever the reason given."""
    if election_type is ElectionType.PREFERRED:
        return ChangeReason.PREFERRED_ELECTION
    # A clean election for a leaderless partition is what a broker failure would have caused.
    return ChangeReason.BROKER_FAILURE


async def _elect(
    context: ControllerContext,
    machine: PartitionStateMachine,
    partitions: Sequence[TopicPartition],
    election_type: ElectionType,
    trigger: ElectionTrigger,
) -> ElectionResults:
    results: ElectionResults = {}

    async def decide(tp: TopicPartition) -> LeaderAndIsr | None:
        decision = _decide(context, tp, election_type, trigger)
        if isinstance(decision, ElectionResult):
            results[tp] = decision
            return None
        return decision

    outcome = await machine.decide_and_write(partitions, decide, _reason(election_type))
    for tp, decision in outcome.written.items():
        if tp in context.partition_states:
            results[tp] = ElectionResult(NONE, leader=decision.leader)
        else:
            results[tp] = ElectionResult(UNKNOWN_TOPIC_OR_PARTITION, "The topic was deleted.")
    for tp in outcome.unsettled:
        message = f"The state of partition {_name(tp)} kept changing during the election"
        results[tp] = ElectionResult(_FAILED[election_type], message)
    if trigger is not ElectionTrigger.ADMIN_CLIENT:
        # Nobody waits for this answer: carry on on the controller's retry timer, as Kafka's
        # election loop carries on until the writes settle. An admin client is answered with
        # the failure and decides itself whether to ask again.

        async def decide_again(tp: TopicPartition) -> LeaderAndIsr | None:
            if tp[0] in context.topics_queued_for_deletion:
                return None
            return await decide(tp)

        machine.retry_later(outcome.unsettled, decide_again, _reason(election_type))
    _log_outcome(results, election_type)
    return results


def _log_outcome(results: ElectionResults, election_type: ElectionType) -> None:
    elected = [tp for tp, result in results.items() if result.error_code == NONE]
    failed = {tp: r for tp, r in results.items() if r.error_code not in (NONE, ELECTION_NOT_NEEDED)}
    if elected:
        log.info(
            "Replica leader election (%s) completed for %s", election_type.name, _names(elected)
        )
    for tp, result in list(failed.items())[:MAX_LOGGED_PARTITIONS]:
        log.warning(
            "Error completing replica leader election (%s) for partition %s: %s",
            election_type.name,
            _name(tp),
            result.message,
        )


async def on_preferred_replica_election_znode(
    kafka_zk: ControllerZk, context: ControllerContext, machine: PartitionStateMachine
) -> None:
    """/admin/preferred_replica_election was created (or was there at failover): elect the
    preferred replicas it names, then delete it (fenced), as Kafka's controller does whatever
    the outcome. Partitions of unknown or deleted topics are skipped."""
    found = await kafka_zk.get_preferred_replica_election()
    if found is None:
        return
    partitions, version = found
    try:
        await elect_leaders(
            kafka_zk,
            context,
            machine,
            partitions,
            ElectionType.PREFERRED,
            ElectionTrigger.ZOOKEEPER,
        )
    finally:
        # Also after a failed write: a request left in place would be retried on every
        # failover, and Kafka removes it in a `finally` too. ControllerMovedError propagates
        # from here (the fenced delete fails as well), which is what the caller expects.
        await kafka_zk.delete_preferred_replica_election(context.epoch_zk_version, version)


@dataclass(frozen=True, slots=True)
class ElectionRequest:
    """An ElectLeaders request waiting in the controller's `RequestQueue`."""

    partitions: list[TopicPartition]
    election_type: ElectionType


def election_requests() -> RequestQueue[ElectionRequest, ElectionResults]:
    return RequestQueue(MAX_PENDING_ELECTION_REQUESTS, _error_results)


async def serve_election_request(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    machine: PartitionStateMachine,
    request: ElectionRequest,
) -> ElectionResults:
    return await elect_leaders(
        kafka_zk,
        context,
        machine,
        request.partitions,
        request.election_type,
        ElectionTrigger.ADMIN_CLIENT,
    )


def _error_results(
    request: ElectionRequest, error_code: ErrorCode, message: str | None
) -> ElectionResults:
    return dict.fromkeys(request.partitions, ElectionResult(error_code, message))


def _name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def _names(partitions: Sequence[TopicPartition]) -> str:
    shown = ",".join(_name(tp) for tp in partitions[:MAX_LOGGED_PARTITIONS])
    return shown + (" ..." if len(partitions) > MAX_LOGGED_PARTITIONS else "")
