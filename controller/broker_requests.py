"""What the controller tells each live broker after an event: Kafka's UpdateMetadata,
LeaderAndIsr and StopReplica requests (ControllerChannelManager's request batch), decided by
comparing the context with what each broker was last sent.

The controller writes ZooKeeper first, as Kafka's does; these requests then carry the result.
Our brokers also learn it from the znodes they watch; Apache Kafka 3.9 brokers in ZooKeeper mode
learn brokers, the controller and leaders only from these requests.

Pure (but for yielding to the loop): `RequestPlanner.plan` reads a `ControllerContext` and
returns plain data; the broker side (broker/cluster/controller_channel.py) encodes and sends
it, one queue per broker, so an event never waits on the network. The rules, per live broker
(id, broker epoch):

- A broker new to this controller, or restarted (new broker epoch), and every broker after a
  failover, gets everything: an UpdateMetadata with the live brokers and every partition that
  has a leader, then LeaderAndIsr for each partition it is a replica of (Kafka's
  onControllerFailover and onBrokerStartup, which send the metadata first so that a follower
  finds its leader's endpoint).
- Otherwise a broker gets an UpdateMetadata with the partitions whose state changed (and the
  live brokers, which the request always carries) when anything changed; LeaderAndIsr for
  partitions of which it is a replica whose leader epoch (or topic id) differs from the one it
  was last sent. An ISR change without a new leader epoch (a leader's own shrink or expand) goes
  out only as UpdateMetadata, as in Kafka: a LeaderAndIsr with an equal leader epoch is
  refused by a Kafka broker.
- A topic gone from the context (deleted) goes out in UpdateMetadata with leader -2 (Kafka's
  LeaderDuringDelete, which removes it from a broker's metadata cache), and as StopReplica with
  delete and leader epoch -2 to each broker that was sent one of its replicas. A replica moved
  away from a broker by a reassignment gets StopReplica with delete and the partition's leader
  epoch.
- A broker in controlled shutdown gets StopReplica without delete for the partitions it follows
  (Kafka's controller takes those replicas offline), once.
- What an event asks for beyond the context's changes (`ExtraRequests`): StopReplica with
  delete and leader epoch -2 for the replicas whose deletion the topic deletion manager
  started (controller/topic_deletion.py), and LeaderAndIsr for every replica of a broker whose
  log dir failed, whatever it was sent before (Kafka's onBrokerLogDirFailure: the answer names
  the replicas it lost with KAFKA_STORAGE_ERROR).

The channel hands the answers the controller acts on back as `BrokerAnswer`s (Kafka's
LeaderAndIsrResponseReceived and TopicDeletionStopReplicaResponseReceived events).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple, Protocol

from controller.context import ControllerContext, TopicPartition
from zk.loop_slice import LoopSlice
from zk.znodes import BrokerRegistration, parse_endpoint

# Kafka's LeaderAndIsr.LeaderDuringDelete and LeaderAndIsr.EpochDuringDelete.
LEADER_DURING_DELETE = -2
EPOCH_DURING_DELETE = -2
# Kafka's SecurityProtocol ids, as UpdateMetadata (v1+) carries them per endpoint.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


@dataclass(frozen=True, slots=True)
class Endpoint:
    listener: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class LiveBroker:
    """A live broker as UpdateMetadata describes it."""

    broker_id: int
    broker_epoch: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None

    def endpoint(self, listener: str) -> Endpoint | None:
        return next((e for e in self.endpoints if e.listener == listener), None)


class PartitionInfo(NamedTuple):
    """One partition's state and assignment, as both requests carry it. A tuple: a failover
    builds and compares thousands of them."""

    topic: str
    topic_id: str | None  # Kafka's base64 form; None for a topic without one
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int  # Kafka's partition epoch
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()

    @property
    def key(self) -> TopicPartition:
        return self.topic, self.partition


@dataclass(frozen=True, slots=True)
class LeaderAndIsrPartition:
    info: PartitionInfo
    is_new: bool


@dataclass(frozen=True, slots=True)
class StopReplicaPartition:
    topic: str
    partition: int
    leader_epoch: int
    delete_partition: bool

    @property
    def key(self) -> TopicPartition:
        return self.topic, self.partition


@dataclass(frozen=True, slots=True)
class BrokerRequests:
    """What one broker is to be sent; an empty part is not sent. The channel sends them in
    Kafka's order: LeaderAndIsr, UpdateMetadata, StopReplica, with UpdateMetadata first only to
    a broker that learns of brokers (or broker epochs) it was not sent before
    (broker/cluster/controller_channel.py)."""

    broker_id: int
    broker_epoch: int
    # None: no UpdateMetadata; otherwise its partitions (maybe none: the live brokers changed).
    update_metadata: tuple[PartitionInfo, ...] | None = None
    leader_and_isr: tuple[LeaderAndIsrPartition, ...] = ()
    stop_replica: tuple[StopReplicaPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestRound:
    """One controller event's requests, with what every request of the round shares."""

    controller_id: int
    controller_epoch: int
    live_brokers: tuple[LiveBroker, ...]
    requests: tuple[BrokerRequests, ...]

    def live_broker(self, broker_id: int) -> LiveBroker | None:
        return next((b for b in self.live_brokers if b.broker_id == broker_id), None)


class AnsweredRequest(Enum):
    LEADER_AND_ISR = "LeaderAndIsr"
    STOP_REPLICA = "StopReplica"


@dataclass(frozen=True, slots=True)
class BrokerAnswer:
    """A broker's answer that the controller acts on: any LeaderAndIsr answer (replicas in
    failed log dirs answer KAFKA_STORAGE_ERROR), and a StopReplica answer for the replicas
    it was told to delete for a topic deletion (leader epoch -2). `partition_errors` names
    topics by name; for a StopReplica refused as a whole, each of its deletions carries the
    request's error."""

    request: AnsweredRequest
    broker_id: int
    broker_epoch: int
    controller_epoch: int
    error_code: int
    partition_errors: tuple[tuple[str, int, int], ...]  # (topic, partition, error code)


AnswerHandler = Callable[[BrokerAnswer], None]


@dataclass(slots=True)
class ExtraRequests:
    """Requests events asked for beyond what the context's changes imply; the next plan
    takes them."""

    # broker -> partitions whose replica there is to be deleted for a topic deletion.
    deletion_stops: dict[int, set[TopicPartition]] = field(default_factory=dict)
    # Brokers to be sent LeaderAndIsr for every replica they host (a log dir failed there).
    leader_and_isr_to: set[int] = field(default_factory=set)

    def stop_for_deletion(self, broker_id: int, partition: TopicPartition) -> None:
        self.deletion_stops.setdefault(broker_id, set()).add(partition)

    def take(self) -> ExtraRequests:
        taken = ExtraRequests(self.deletion_stops, self.leader_and_isr_to)
        self.deletion_stops, self.leader_and_isr_to = {}, set()
        return taken


class BrokerRequestSink(Protocol):
    """Where the controller hands its rounds (the broker's controller channel). Both calls
    return at once: sending happens elsewhere, so that an event never waits on a broker."""

    def send(self, requests: RequestRound) -> None: ...

    def set_answer_handler(self, handler: AnswerHandler | None) -> None:
        """Where the answers the controller acts on go (called on the event loop)."""
        ...

    def close_all(self) -> None:
        """This broker stopped being controller: drop whatever is queued, close the
        connections."""
        ...


@dataclass(slots=True)
class _Sent:
    """What one broker (in one broker epoch) was last sent."""

    broker_epoch: int
    # partition -> (topic id, leader epoch) of the last LeaderAndIsr it was sent for it.
    leader_and_isr: dict[TopicPartition, tuple[str | None, int]] = field(default_factory=dict)
    # Partitions it was told to stop for its controlled shutdown.
    stopped: set[TopicPartition] = field(default_factory=set)


def live_broker(broker_id: int, broker_epoch: int, registration: BrokerRegistration) -> LiveBroker:
    endpoints = []
    for text in registration.endpoints:
        listener, host, port = parse_endpoint(text)
        protocol = registration.listener_security_protocol_map.get(listener, listener)
        endpoints.append(Endpoint(listener, host, port, SECURITY_PROTOCOL_IDS.get(protocol, 0)))
    return LiveBroker(broker_id, broker_epoch, tuple(endpoints), registration.rack)


class RequestPlanner:
    """Decides each round's requests; one per controller term (a new term sends everything)."""

    def __init__(self, controller_id: int) -> None:
        self._controller_id = controller_id
        # What every broker of `_sent` was last sent in UpdateMetadata (a broker that is sent
        # less would be new, and gets everything).
        self._metadata: dict[TopicPartition, PartitionInfo] = {}
        self._live_brokers: tuple[LiveBroker, ...] | None = None
        self._sent: dict[int, _Sent] = {}
        # Each partition's info with the context objects it was built from: the context
        # replaces a state or an assignment when it changes, so an event that changed few
        # partitions rebuilds only those (5,000 rebuilt cost 70 ms of the event loop).
        self._built: dict[TopicPartition, tuple[tuple[Any, ...], PartitionInfo]] = {}
        self._liveness: tuple[Any, ...] | None = None

    async def plan(
        self, context: ControllerContext, extra: ExtraRequests | None = None
    ) -> RequestRound | None:
        """The round to send after an event, or None when nothing changed. Yields to the loop
        between slices of work (a failover plans thousands of partitions per broker); only
        the event task changes the context, and it is the one waiting here."""
        extra = extra or ExtraRequests()
        loop_slice = LoopSlice()
        live = _live_brokers(context)
        current = await self._partitions(context, loop_slice)
        first_round = self._live_brokers is None
        changed = [info for key, info in current.items() if self._metadata.get(key) != info]
        # A topic whose deletion completed was announced with leader -2 when it started.
        deleted = [
            _during_delete(info)
            for key, info in self._metadata.items()
            if key not in current and info.leader != LEADER_DURING_DELETE
        ]
        brokers_changed = live != self._live_brokers
        deleted_keys = {info.key for info in deleted}
        requests: list[BrokerRequests] = []
        for broker in live:
            sent = self._sent.get(broker.broker_id)
            if sent is None or sent.broker_epoch != broker.broker_epoch:
                sent = self._sent[broker.broker_id] = _Sent(broker.broker_epoch)
                update_metadata: tuple[PartitionInfo, ...] | None = tuple(current.values())
                candidates: Iterable[PartitionInfo] = current.values()
            else:
                update_metadata = None
                if changed or deleted or brokers_changed:
                    update_metadata = (*changed, *deleted)
                candidates = changed
            resend = broker.broker_id in extra.leader_and_isr_to
            if resend:
                candidates = current.values()
            leader_and_isr = await self._leader_and_isr(
                broker.broker_id, sent, candidates, first_round, loop_slice, resend
            )
            stop = self._stops(broker.broker_id, sent, context, current, deleted_keys)
            deletions = extra.deletion_stops.get(broker.broker_id, ())
            if deletions:
                stop += tuple(
                    StopReplicaPartition(*key, EPOCH_DURING_DELETE, True)
                    for key in sorted(deletions)
                )
                for key in deletions:
                    sent.leader_and_isr.pop(key, None)
                    sent.stopped.discard(key)
            if update_metadata is not None or leader_and_isr or stop:
                requests.append(
                    BrokerRequests(
                        broker.broker_id, broker.broker_epoch, update_metadata, leader_and_isr, stop
                    )
                )
        for broker_id in set(self._sent) - {broker.broker_id for broker in live}:
            del self._sent[broker_id]
        self._metadata = current
        self._live_brokers = live
        if not requests:
            return None
        return RequestRound(self._controller_id, context.epoch, live, tuple(requests))

    async def _leader_and_isr(
        self,
        broker_id: int,
        sent: _Sent,
        candidates: Iterable[PartitionInfo],
        first_round: bool,
        loop_slice: LoopSlice,
        resend: bool = False,
    ) -> tuple[LeaderAndIsrPartition, ...]:
        """LeaderAndIsr for the candidates this broker hosts and was not sent yet (with
        `resend`: also those it was sent)."""
        chosen = []
        for info in candidates:
            await loop_slice.pause_if_spent()
            if broker_id not in info.replicas or info.leader == LEADER_DURING_DELETE:
                continue
            version = (info.topic_id, info.leader_epoch)
            if sent.leader_and_isr.get(info.key) == version and not resend:
                continue
            # Created, or assigned to this broker, in this controller's term (Kafka's new
            # partitions and new replicas).
            before = self._metadata.get(info.key)
            is_new = not first_round and (before is None or broker_id not in before.replicas)
            sent.leader_and_isr[info.key] = version
            sent.stopped.discard(info.key)
            chosen.append(LeaderAndIsrPartition(info, is_new))
        return tuple(chosen)

    async def _partitions(
        self, context: ControllerContext, loop_slice: LoopSlice
    ) -> dict[TopicPartition, PartitionInfo]:
        """Every partition with a leader state, as the requests describe it."""
        live = context.live_brokers
        offline = context.offline_replicas
        liveness = (frozenset(live), tuple(sorted(offline.items())))
        if liveness != self._liveness:
            self._built.clear()  # which replicas are offline may have changed anywhere
            self._liveness = liveness
        built = self._built
        result: dict[TopicPartition, PartitionInfo] = {}
        for topic in sorted(context.assignments):
            assignment = context.assignments[topic]
            being_deleted = topic in context.topics_queued_for_deletion
            for partition in sorted(assignment.partitions):
                await loop_slice.pause_if_spent()
                key = (topic, partition)
                versioned = context.partition_states.get(key)
                if versioned is None:
                    continue  # Kafka: "Leader not yet assigned ... Skip sending"
                sources = (
                    versioned,
                    assignment.partitions[partition],
                    assignment.adding_replicas.get(partition),
                    assignment.removing_replicas.get(partition),
                    assignment.topic_id,
                    being_deleted,
                )
                cached = built.get(key)
                if cached is not None and all(
                    a is b for a, b in zip(cached[0], sources, strict=True)
                ):
                    result[key] = cached[1]
                    continue
                info = _partition_info(topic, partition, sources, live, offline)
                built[key] = (sources, info)
                result[key] = info
        for key in set(built) - set(result):
            del built[key]
        return result

    @staticmethod
    def _stops(
        broker_id: int,
        sent: _Sent,
        context: ControllerContext,
        current: Mapping[TopicPartition, PartitionInfo],
        deleted: set[TopicPartition],
    ) -> tuple[StopReplicaPartition, ...]:
        stops = []
        for key in list(sent.leader_and_isr):
            info = current.get(key)
            if key in deleted or info is None:
                stops.append(StopReplicaPartition(*key, EPOCH_DURING_DELETE, True))
            elif broker_id not in info.replicas:
                stops.append(StopReplicaPartition(*key, info.leader_epoch, True))
            else:
                continue
            del sent.leader_and_isr[key]
            sent.stopped.discard(key)
        if broker_id in context.shutting_down_brokers:
            for key in sent.leader_and_isr:
                info = current[key]
                if info.leader != broker_id and key not in sent.stopped:
                    sent.stopped.add(key)
                    stops.append(StopReplicaPartition(*key, info.leader_epoch, False))
        return tuple(stops)


def _live_brokers(context: ControllerContext) -> tuple[LiveBroker, ...]:
    return tuple(
        live_broker(broker_id, context.broker_epochs[broker_id], registration)
        for broker_id, registration in sorted(context.broker_registrations.items())
        if broker_id in context.live_brokers and broker_id in context.broker_epochs
    )


def _partition_info(
    topic: str,
    partition: int,
    sources: tuple[Any, ...],
    live: set[int],
    offline: Mapping[int, frozenset[TopicPartition]],
) -> PartitionInfo:
    (state, zk_version), replicas, adding, removing, topic_id, being_deleted = sources
    offline_replicas = tuple(
        r for r in replicas if r not in live or (topic, partition) in offline.get(r, ())
    )
    return PartitionInfo(
        topic,
        topic_id,
        partition,
        state.controller_epoch,
        LEADER_DURING_DELETE if being_deleted else state.leader,
        state.leader_epoch,
        tuple(state.isr),
        zk_version,
        tuple(replicas),
        tuple(adding or ()),
        tuple(removing or ()),
        offline_replicas,
    )


def _during_delete(info: PartitionInfo) -> PartitionInfo:
    return info._replace(leader=LEADER_DURING_DELETE, adding_replicas=(), removing_replicas=())
