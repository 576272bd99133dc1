"""The controller's channel to every live broker (Kafka's ControllerChannelManager): one sender
task per broker, this one included, that delivers the controller's LeaderAndIsr, UpdateMetadata
and StopReplica requests in Kafka's order (UpdateMetadata first only to a broker that learns of
new brokers from it), over the broker's inter-broker listener.

The controller (controller/broker_requests.py) decides what each broker is to be told and hands
it over without waiting; here each broker's share waits in that broker's `_PendingRequests`
until its sender is free. While a request is in flight, later rounds merge into the pending
ones: a partition's newer state replaces the older (each carries its whole state, and brokers
apply only newer leader epochs), so the backlog is bounded by the partitions the broker is told
about, not by the number of events, and a broker that answers slowly gets fewer, larger
requests.

As Kafka's RequestSendThread: the request version per API is the highest both sides support
(ApiVersions, asked once per connection; a Kafka 3.9 broker at its default inter-broker protocol
takes LeaderAndIsr v7, UpdateMetadata v8 and StopReplica v4, which Kafka's controller would
pick too); a request that fails (no connection, timeout) is sent again after
RETRY_BACKOFF_S until it is answered or the broker leaves (dies, or re-registers with a new
broker epoch, which gets a sender of its own); answers with errors are logged on the state
change log as Kafka's controller logs them, and not retried. LeaderAndIsr answers, and
StopReplica answers for a topic deletion's replicas, go back to the controller's answer
handler (controller/broker_requests.py, `BrokerAnswer`), which acts on their errors.

Requests are built and encoded on a worker thread: a failover's request to each broker holds
every partition, thousands, and encoding them on the event loop would stall it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from broker.network.broker_client import BrokerClient, BrokerClientError
from broker.network.sasl import SaslClientConfig
from broker.protocol import adapter
from broker.protocol.adapter import EncodedRequest
from broker.protocol.api_keys import ApiKey
from broker.protocol.controller_apis import (
    LEADER_AND_ISR_REQUEST,
    STOP_REPLICA_REQUEST,
    UPDATE_METADATA_REQUEST,
)
from broker.protocol.registry import request_class
from controller.broker_requests import (
    EPOCH_DURING_DELETE,
    AnsweredRequest,
    AnswerHandler,
    BrokerAnswer,
    BrokerRequests,
    LeaderAndIsrPartition,
    LiveBroker,
    PartitionInfo,
    RequestRound,
    StopReplicaPartition,
)
from zk.znodes import kafka_string_to_uuid

log = logging.getLogger(__name__)
state_change_log = logging.getLogger("state.change.logger")

# Kafka's RequestSendThread backs off this long before sending a failed request again.
RETRY_BACKOFF_S = 0.1
CLIENT_ID_PREFIX = "controller"
# The highest version of each request this side can build.
OUR_MAX_VERSIONS = {
    ApiKey.LEADER_AND_ISR: LEADER_AND_ISR_REQUEST.last_version,
    ApiKey.UPDATE_METADATA: UPDATE_METADATA_REQUEST.last_version,
    ApiKey.STOP_REPLICA: STOP_REPLICA_REQUEST.last_version,
}
# A failover tells each broker about every partition. Kafka sends that as one request per
# broker; we split it, so that a broker of ours (whose event loop decodes and answers it) is
# never held for long by one request: 5,000 LeaderAndIsr partitions took 250 ms of its loop.
MAX_PARTITIONS_PER_REQUEST = 1000
# Versions from which a request groups partitions under their topic, and StopReplica carries
# a leader epoch and delete flag per partition.
FIRST_TOPIC_STATES_LEADER_AND_ISR = 2
FIRST_TOPIC_STATES_UPDATE_METADATA = 5
FIRST_PARTITION_STATES_STOP_REPLICA = 3

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ChannelConfig:
    broker_id: int
    # The inter-broker listener of this (the controller's) broker: requests go to each
    # broker's endpoint of that name, and LeaderAndIsr names leaders by it.
    listener_name: Callable[[], str]
    socket_timeout_ms: int  # Kafka's controller.socket.timeout.ms
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslClientConfig | None = None


@dataclass(slots=True)
class _PendingRequests:
    """One broker's requests not yet sent, merged per partition."""

    controller_id: int = -1
    controller_epoch: int = -1
    live_brokers: tuple[LiveBroker, ...] = ()
    metadata: dict[TopicPartition, PartitionInfo] | None = None  # None: no UpdateMetadata
    leader_and_isr: dict[TopicPartition, LeaderAndIsrPartition] = field(default_factory=dict)
    stop_replica: dict[TopicPartition, StopReplicaPartition] = field(default_factory=dict)

    def add(self, round_: RequestRound, requests: BrokerRequests) -> None:
        self.controller_id, self.controller_epoch = round_.controller_id, round_.controller_epoch
        self.live_brokers = round_.live_brokers
        if requests.update_metadata is not None:
            metadata = self.metadata if self.metadata is not None else {}
            for info in requests.update_metadata:
                metadata[info.key] = info
            self.metadata = metadata
        for partition in requests.leader_and_isr:
            key = partition.info.key
            earlier = self.leader_and_isr.get(key)
            if earlier is not None and earlier.is_new:
                partition = LeaderAndIsrPartition(partition.info, True)
            self.leader_and_isr[key] = partition
            # Hosting it again is the newest intent: a pending delete must not remove it.
            self.stop_replica.pop(key, None)
        for stop in requests.stop_replica:
            earlier_stop = self.stop_replica.get(stop.key)
            if earlier_stop is not None and earlier_stop.delete_partition:
                stop = StopReplicaPartition(stop.topic, stop.partition, stop.leader_epoch, True)
            self.stop_replica[stop.key] = stop
            if stop.delete_partition:
                self.leader_and_isr.pop(stop.key, None)

    def empty(self) -> bool:
        return self.metadata is None and not self.leader_and_isr and not self.stop_replica


class _BrokerSender:
    """Delivers one broker's requests (in one broker epoch), one at a time, in order."""

    def __init__(
        self,
        config: ChannelConfig,
        broker: LiveBroker,
        address: tuple[str, int],
        answer_handler: Callable[[], AnswerHandler | None] = lambda: None,
    ):
        self.broker_id = broker.broker_id
        self.broker_epoch = broker.broker_epoch
        self._config = config
        self._answer_handler = answer_handler
        self._client = BrokerClient(
            address[0],
            address[1],
            client_id=f"{CLIENT_ID_PREFIX}-{config.broker_id}",
            connect_timeout_ms=config.socket_timeout_ms,
            request_timeout_ms=config.socket_timeout_ms,
            ssl_context=config.ssl_context,
            sasl=config.sasl,
        )
        self._versions: dict[int, int] | None = None
        # (id, epoch) of the live brokers of the last UpdateMetadata sent (None: none yet).
        self._told_brokers: frozenset[tuple[int, int]] | None = None
        self._pending = _PendingRequests()
        self._wake = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(
            self._run(), name=f"controller-channel-{broker.broker_id}"
        )

    def add(self, round_: RequestRound, requests: BrokerRequests) -> None:
        self._pending.add(round_, requests)
        self._wake.set()

    def stop(self) -> None:
        self.task.cancel()

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        await self._client.close()

    async def _run(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                pending, self._pending = self._pending, _PendingRequests()
                if not pending.empty():
                    await self._send_all(pending)
        finally:
            await self._client.close()

    async def _send_all(self, pending: _PendingRequests) -> None:
        prefix = f"[Controller id={pending.controller_id} epoch={pending.controller_epoch}]"
        # Kafka's controller sends a round's LeaderAndIsr before its UpdateMetadata, so that a
        # broker's metadata names a new leader only after its own LeaderAndIsr: a Kafka 3.9
        # leader that was named in Metadata before it finished becoming leader answers a new
        # producer's first batch NOT_LEADER_OR_FOLLOWER and takes the next one, with a later
        # sequence, as that producer's first, and librdkafka then acknowledges the refused
        # records without them ever being written. Only a broker that learns of brokers it
        # has not been told about (it is new to this controller, or a broker joined) gets the
        # metadata first, as Kafka's onControllerFailover and onBrokerStartup send it, so that
        # it finds the endpoints of the leaders it is to follow.
        metadata = list(pending.metadata.values()) if pending.metadata is not None else None
        metadata_first = metadata is not None and self._introduces_brokers(pending)
        if metadata is not None and metadata_first:
            await self._send_metadata(prefix, pending, metadata)
        if pending.leader_and_isr:
            states = list(pending.leader_and_isr.values())
            leaders = sum(1 for s in states if s.info.leader == self.broker_id)
            state_change_log.info(
                "%s Sending LeaderAndIsr request to broker %d with %d become-leader and %d"
                " become-follower partitions",
                prefix,
                self.broker_id,
                leaders,
                len(states) - leaders,
            )
            await self._deliver(ApiKey.LEADER_AND_ISR, prefix, pending, states)
        if metadata is not None and not metadata_first:
            await self._send_metadata(prefix, pending, metadata)
        stops = self._not_superseded(list(pending.stop_replica.values()))
        if stops:
            state_change_log.info(
                "%s Sending StopReplica request for %d replicas to broker %d",
                prefix,
                len(stops),
                self.broker_id,
            )
            await self._deliver(ApiKey.STOP_REPLICA, prefix, pending, stops)

    def _introduces_brokers(self, pending: _PendingRequests) -> bool:
        live = {(broker.broker_id, broker.broker_epoch) for broker in pending.live_brokers}
        return self._told_brokers is None or not live <= self._told_brokers

    async def _send_metadata(
        self, prefix: str, pending: _PendingRequests, partitions: list[PartitionInfo]
    ) -> None:
        state_change_log.info(
            "%s Sending UpdateMetadata request to broker %d for %d partitions",
            prefix,
            self.broker_id,
            len(partitions),
        )
        await self._deliver(ApiKey.UPDATE_METADATA, prefix, pending, partitions)
        self._told_brokers = frozenset(
            (broker.broker_id, broker.broker_epoch) for broker in pending.live_brokers
        )

    async def _deliver(
        self, api_key: ApiKey, prefix: str, pending: _PendingRequests, items: list[Any]
    ) -> None:
        """Send until answered (Kafka's RequestSendThread retries for as long as the broker
        is live; this task is cancelled when it is not)."""
        encoded: list[EncodedRequest] | None = None
        encoded_version = -1
        answered = 0  # of `encoded`: a retry goes on from the first request not answered
        while True:
            try:
                version = await self._version(api_key)
                if encoded is None or encoded_version != version:
                    listener = self._config.listener_name()
                    encoded = await asyncio.to_thread(
                        encode, api_key, version, pending, self.broker_epoch, items, listener
                    )
                    encoded_version, answered = version, 0
                if api_key == ApiKey.STOP_REPLICA:
                    still = self._not_superseded(items)
                    if len(still) < len(items):
                        # Hosted again meanwhile (the next round's LeaderAndIsr is pending):
                        # re-encode without those (a stop already answered is sent again,
                        # which changes nothing).
                        items, encoded = still, None
                        if not items:
                            return
                        continue
                while answered < len(encoded):
                    response = await self._client.send(encoded[answered])
                    carried = request_items(api_key, version, items)[answered]
                    answered += 1
                    log_response(prefix, api_key, self.broker_id, response)
                    self._report(api_key, pending.controller_epoch, carried, response)
                return
            except UnsupportedControllerApiError as error:
                # Sending again would not help: this broker cannot be driven this way.
                state_change_log.error(
                    "%s Not sending to broker %d: %s", prefix, self.broker_id, error
                )
                return
            except BrokerClientError as error:
                log.warning(
                    "%s fails to send %s to broker %d at %s (%s); retrying in %.1f s",
                    prefix,
                    api_key.name,
                    self.broker_id,
                    self._client.address,
                    error,
                    RETRY_BACKOFF_S,
                )
                self._versions = None  # a new connection may be a restarted broker
                await asyncio.sleep(RETRY_BACKOFF_S)

    def _report(
        self, api_key: ApiKey, controller_epoch: int, carried: list[Any], response: Any
    ) -> None:
        handler = self._answer_handler()
        if handler is None:
            return
        answer = broker_answer(
            api_key, self.broker_id, self.broker_epoch, controller_epoch, carried, response
        )
        if answer is not None:
            handler(answer)

    def _not_superseded(self, stops: list[StopReplicaPartition]) -> list[StopReplicaPartition]:
        """The stops whose replica no later round asks this broker to host: a topic deleted
        and created again under the same name must not lose its new log to the old topic's
        delete (Kafka refuses the creation until the deletion is done; ours does not wait)."""
        pending = self._pending.leader_and_isr
        if not pending:
            return stops
        return [s for s in stops if not (s.delete_partition and s.key in pending)]

    async def _version(self, api_key: ApiKey) -> int:
        if self._versions is None:
            self._versions = usable_versions(await self._client.api_versions())
        version = self._versions.get(api_key)
        if version is None:
            raise UnsupportedControllerApiError(
                f"broker {self.broker_id} does not serve {api_key.name}"
            )
        return version


class UnsupportedControllerApiError(BrokerClientError):
    """The broker advertises no version of a controller request that we can build."""


def usable_versions(advertised: dict[int, tuple[int, int]]) -> dict[int, int]:
    """Per controller API, the highest version both sides support."""
    usable = {}
    for api_key, ours in OUR_MAX_VERSIONS.items():
        theirs = advertised.get(api_key)
        if theirs is not None and theirs[0] <= min(ours, theirs[1]):
            usable[int(api_key)] = min(ours, theirs[1])
    return usable


class ControllerChannel:
    """The controller's `BrokerRequestSink`: a sender per live broker."""

    def __init__(self, config: ChannelConfig) -> None:
        self._config = config
        self._senders: dict[int, _BrokerSender] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._answer_handler: AnswerHandler | None = None

    def set_answer_handler(self, handler: AnswerHandler | None) -> None:
        self._answer_handler = handler

    def send(self, requests: RequestRound) -> None:
        live = {broker.broker_id: broker for broker in requests.live_brokers}
        for broker_id, current in list(self._senders.items()):
            broker = live.get(broker_id)
            if broker is None or broker.broker_epoch != current.broker_epoch:
                # Gone, or restarted: what was queued for its earlier life is void.
                self._retire(broker_id)
        listener = self._config.listener_name()
        for share in requests.requests:
            sender = self._senders.get(share.broker_id)
            if sender is None:
                broker = live.get(share.broker_id)
                endpoint = None if broker is None else broker.endpoint(listener)
                if broker is None or endpoint is None:
                    log.warning(
                        "broker %d has no %s endpoint: the controller cannot reach it",
                        share.broker_id,
                        listener,
                    )
                    continue
                sender = _BrokerSender(
                    self._config,
                    broker,
                    (endpoint.host, endpoint.port),
                    lambda: self._answer_handler,
                )
                self._senders[share.broker_id] = sender
            sender.add(requests, share)

    def close_all(self) -> None:
        for broker_id in list(self._senders):
            self._retire(broker_id)

    async def close(self) -> None:
        senders = list(self._senders.values())
        self._senders.clear()
        await asyncio.gather(*(sender.close() for sender in senders), *self._closing)

    def _retire(self, broker_id: int) -> None:
        sender = self._senders.pop(broker_id)
        task = asyncio.get_running_loop().create_task(sender.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)


# -- encoding (on a worker thread) --------------------------------------------------------


def request_items(api_key: ApiKey, version: int, items: list[Any]) -> list[list[Any]]:
    """The items each request carrying `items` holds, in sending order:
    MAX_PARTITIONS_PER_REQUEST partitions at most each, and before StopReplica v3 one request
    per delete flag (the flag was request-wide)."""
    chunks = [
        items[start : start + MAX_PARTITIONS_PER_REQUEST]
        for start in range(0, len(items), MAX_PARTITIONS_PER_REQUEST)
    ] or [[]]  # an UpdateMetadata of the live brokers alone
    if api_key != ApiKey.STOP_REPLICA or version >= FIRST_PARTITION_STATES_STOP_REPLICA:
        return chunks
    split = []
    for chunk in chunks:
        for delete in (False, True):
            chosen = [s for s in chunk if s.delete_partition == delete]
            if chosen:
                split.append(chosen)
    return split


def encode(
    api_key: ApiKey,
    version: int,
    pending: _PendingRequests,
    broker_epoch: int,
    items: list[Any],
    listener: str,
) -> list[EncodedRequest]:
    """The requests carrying `items`, as `request_items` divides them."""
    values: list[dict[str, Any]] = []
    for chunk in request_items(api_key, version, items):
        if api_key == ApiKey.UPDATE_METADATA:
            values.append(update_metadata_values(version, pending, broker_epoch, chunk))
        elif api_key == ApiKey.LEADER_AND_ISR:
            values.append(leader_and_isr_values(version, pending, broker_epoch, chunk, listener))
        else:
            values.extend(stop_replica_values(version, pending, broker_epoch, chunk))
    cls = request_class(api_key, version)
    writer: Callable[[io.BytesIO, Any], None] = entity_writer(cls)
    encoded = []
    for value in values:
        buffer = io.BytesIO()
        writer(buffer, adapter.build(cls, value))
        encoded.append(
            EncodedRequest(int(api_key), version, bool(cls.__flexible__), buffer.getvalue())  # type: ignore[attr-defined]
        )
    return encoded


def _set_partition_states(
    values: dict[str, Any],
    grouped_by_topic: bool,
    items: Sequence[Any],
    info: Callable[[Any], PartitionInfo],
    state: Callable[[Any], dict[str, Any]],
) -> None:
    """The partition states of a LeaderAndIsr or UpdateMetadata: one flat list before the
    version that groups them per topic (with the topic id), per topic from it on."""
    if not grouped_by_topic:
        values["ungrouped_partition_states"] = [state(item) for item in items]
        return
    grouped: dict[str, list[Any]] = {}
    for item in items:
        grouped.setdefault(info(item).topic, []).append(item)
    values["topic_states"] = [
        {
            "topic_name": topic,
            "topic_id": _uuid(info(members[0]).topic_id),
            "partition_states": [state(item) for item in members],
        }
        for topic, members in grouped.items()
    ]


def _uuid(topic_id: str | None) -> Any:
    return kafka_string_to_uuid(topic_id) if topic_id else None


def _header(pending: _PendingRequests, broker_epoch: int) -> dict[str, Any]:
    return {
        "controller_id": pending.controller_id,
        "is_kraft_controller": False,
        "controller_epoch": pending.controller_epoch,
        "broker_epoch": broker_epoch,
    }


def update_metadata_values(
    version: int, pending: _PendingRequests, broker_epoch: int, items: list[PartitionInfo]
) -> dict[str, Any]:
    def state(info: PartitionInfo) -> dict[str, Any]:
        return {
            "topic_name": info.topic,
            "partition_index": info.partition,
            "controller_epoch": info.controller_epoch,
            "leader": info.leader,
            "leader_epoch": info.leader_epoch,
            "isr": info.isr,
            "zk_version": info.zk_version,
            "replicas": info.replicas,
            "offline_replicas": info.offline_replicas,
        }

    values = _header(pending, broker_epoch)
    grouped = version >= FIRST_TOPIC_STATES_UPDATE_METADATA
    _set_partition_states(values, grouped, items, lambda info: info, state)
    values["live_brokers"] = [_live_broker(broker) for broker in pending.live_brokers]
    return values


def _live_broker(broker: LiveBroker) -> dict[str, Any]:
    plaintext = next((e for e in broker.endpoints if e.security_protocol == 0), None)
    return {
        "id": broker.broker_id,
        "v0_host": plaintext.host if plaintext else "",
        "v0_port": plaintext.port if plaintext else -1,
        "endpoints": [
            {
                "port": e.port,
                "host": e.host,
                "listener": e.listener,
                "security_protocol": e.security_protocol,
            }
            for e in broker.endpoints
        ],
        "rack": broker.rack,
    }


def leader_and_isr_values(
    version: int,
    pending: _PendingRequests,
    broker_epoch: int,
    items: list[LeaderAndIsrPartition],
    listener: str,
) -> dict[str, Any]:
    def state(partition: LeaderAndIsrPartition) -> dict[str, Any]:
        info = partition.info
        return {
            "topic_name": info.topic,
            "partition_index": info.partition,
            "controller_epoch": info.controller_epoch,
            "leader": info.leader,
            "leader_epoch": info.leader_epoch,
            "isr": info.isr,
            "partition_epoch": info.zk_version,
            "replicas": info.replicas,
            "adding_replicas": info.adding_replicas,
            "removing_replicas": info.removing_replicas,
            "is_new": partition.is_new,
        }

    values = _header(pending, broker_epoch)
    grouped = version >= FIRST_TOPIC_STATES_LEADER_AND_ISR
    _set_partition_states(values, grouped, items, lambda partition: partition.info, state)
    leader_ids = {p.info.leader for p in items}
    live_leaders = []
    for broker in pending.live_brokers:
        endpoint = broker.endpoint(listener)
        if broker.broker_id in leader_ids and endpoint is not None:
            live_leaders.append(
                {"broker_id": broker.broker_id, "host_name": endpoint.host, "port": endpoint.port}
            )
    values["live_leaders"] = live_leaders
    return values


def stop_replica_values(
    version: int, pending: _PendingRequests, broker_epoch: int, items: list[StopReplicaPartition]
) -> list[dict[str, Any]]:
    """One request from v3 on; before, one per delete flag (the flag was request-wide)."""
    if version >= FIRST_PARTITION_STATES_STOP_REPLICA:
        topics: dict[str, list[StopReplicaPartition]] = {}
        for stop in items:
            topics.setdefault(stop.topic, []).append(stop)
        values = _header(pending, broker_epoch)
        values["topic_states"] = [
            {
                "topic_name": topic,
                "partition_states": [
                    {
                        "partition_index": s.partition,
                        "leader_epoch": s.leader_epoch,
                        "delete_partition": s.delete_partition,
                    }
                    for s in stops
                ],
            }
            for topic, stops in topics.items()
        ]
        return [values]
    requests = []
    for delete in (False, True):
        chosen = [s for s in items if s.delete_partition == delete]
        if not chosen:
            continue
        values = _header(pending, broker_epoch)
        values["delete_partitions"] = delete
        values["ungrouped_partitions"] = [
            {"topic_name": s.topic, "partition_index": s.partition} for s in chosen
        ]
        grouped: dict[str, list[int]] = {}
        for s in chosen:
            grouped.setdefault(s.topic, []).append(s.partition)
        values["topics"] = [
            {"name": topic, "partition_indexes": indexes} for topic, indexes in grouped.items()
        ]
        requests.append(values)
    return requests


# -- answers ------------------------------------------------------------------------------


def log_response(prefix: str, api_key: ApiKey, broker_id: int, response: Any) -> None:
    """Errors in an answer, on the state change log as Kafka's controller logs them."""
    name = {
        ApiKey.LEADER_AND_ISR: "LeaderAndIsr",
        ApiKey.UPDATE_METADATA: "UpdateMetadata",
        ApiKey.STOP_REPLICA: "StopReplica",
    }[api_key]
    if response.error_code != ErrorCode.none:
        state_change_log.error(
            "%s Received error %s in %s response from broker %d",
            prefix,
            response.error_code.name.upper(),
            name,
            broker_id,
        )
        return
    failed = [
        f"{topic}-{partition}: {error.name.upper()}"
        for topic, partition, error in partition_errors(api_key, response)
        if error != ErrorCode.none
    ]
    if failed:
        state_change_log.warning(
            "%s %s response from broker %d has partition errors: %s",
            prefix,
            name,
            broker_id,
            ", ".join(failed),
        )


def partition_errors(api_key: ApiKey, response: Any) -> list[tuple[str, int, ErrorCode]]:
    """(topic or topic id, partition, error) for each partition an answer lists."""
    if api_key == ApiKey.UPDATE_METADATA:
        return []
    topics = getattr(response, "topics", None)
    if topics is not None:  # LeaderAndIsr v5+: by topic id
        return [
            (str(topic.topic_id), int(p.partition_index), p.error_code)
            for topic in topics
            for p in topic.partition_errors
        ]
    return [
        (str(p.topic_name), int(p.partition_index), p.error_code) for p in response.partition_errors
    ]


def broker_answer(
    api_key: ApiKey,
    broker_id: int,
    broker_epoch: int,
    controller_epoch: int,
    carried: list[Any],
    response: Any,
) -> BrokerAnswer | None:
    """What the controller is to act on in an answer to a request that carried `carried`:
    every LeaderAndIsr answer, and a StopReplica answer's errors for the replicas it deleted
    for a topic deletion (Kafka's controller registers a callback for those only). A
    StopReplica refused as a whole (stale epochs) fails each of its deletions, where Kafka's
    callback gets no partitions and leaves them started until the broker restarts."""
    top_error = int(response.error_code)
    if api_key == ApiKey.LEADER_AND_ISR:
        names = {
            str(kafka_string_to_uuid(p.info.topic_id)): p.info.topic
            for p in carried
            if p.info.topic_id
        }
        errors = tuple(
            (names.get(topic, topic), partition, int(error))
            for topic, partition, error in partition_errors(api_key, response)
        )
        return BrokerAnswer(
            AnsweredRequest.LEADER_AND_ISR,
            broker_id,
            broker_epoch,
            controller_epoch,
            top_error,
            errors,
        )
    if api_key != ApiKey.STOP_REPLICA:
        return None
    deletions = {
        s.key for s in carried if s.delete_partition and s.leader_epoch == EPOCH_DURING_DELETE
    }
    if not deletions:
        return None
    if top_error != ErrorCode.none:
        errors = tuple((topic, partition, top_error) for topic, partition in sorted(deletions))
    else:
        # As Kafka's controller: only the partitions the answer lists (brokers list all).
        errors = tuple(
            (topic, partition, int(error))
            for topic, partition, error in partition_errors(api_key, response)
            if (topic, partition) in deletions
        )
    return BrokerAnswer(
        AnsweredRequest.STOP_REPLICA, broker_id, broker_epoch, controller_epoch, top_error, errors
    )
