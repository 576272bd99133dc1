"""Followers fetch from their leaders (Kafka's ReplicaFetcherManager / ReplicaFetcherThread).

One fetcher task per (leader broker, fetcher id): a partition goes to fetcher
`abs(31 * hash(topic) + partition) % num.replica.fetchers` of its leader. Each task owns one
inter-broker connection and loops: truncate the partitions that just started following (via
OffsetForLeaderEpoch, so the local log never keeps a tail the leader does not have), then send
one Fetch for the rest, append what comes back byte-for-byte and take the leader's high
watermark. A partition that fails is backed off for `replica.fetch.backoff.ms`; the others go
on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from kio.schema.errors import ErrorCode

from broker.cluster.java_hash import java_abs, java_string_hash, to_int32
from broker.log.errors import RecordError, UnexpectedAppendOffsetError
from broker.network.broker_client import BrokerClient, BrokerClientError
from broker.network.sasl import SaslClientConfig
from broker.protocol.adapter import EncodedRequest
from broker.protocol.replica_request_encoding import (
    FetchPartitionRequest,
    encode_fetch,
    encode_offset_for_leader_epoch,
)
from broker.replication.fetch_session import FetchPosition
from broker.replication.fetch_session_handler import FetchSessionHandler, SessionRequest
from broker.replication.partition import Partition
from zk.loop_slice import LoopSlice

if TYPE_CHECKING:
    from broker.config.kafka_config import KafkaConfig

log = logging.getLogger(__name__)

# The versions one broker of this project sends another are in replica_request_encoding
# (Kafka pins them with inter.broker.protocol.version).
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1

TopicPartition = tuple[str, int]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    broker_id: int
    num_fetchers: int
    max_wait_ms: int
    min_bytes: int
    response_max_bytes: int
    partition_max_bytes: int
    backoff_ms: int
    socket_timeout_ms: int
    ssl_context: ssl.SSLContext | None = None  # the leaders' inter-broker listener is SSL
    sasl: SaslClientConfig | None = None  # ... or SASL: this broker's mechanism and user

    @classmethod
    def from_broker_config(
        cls, config: KafkaConfig, ssl_context: ssl.SSLContext | None, sasl: SaslClientConfig | None
    ) -> FetcherConfig:
        return cls(
            broker_id=config.broker_id,
            num_fetchers=config["num.replica.fetchers"],
            max_wait_ms=config["replica.fetch.wait.max.ms"],
            min_bytes=config["replica.fetch.min.bytes"],
            response_max_bytes=config["replica.fetch.response.max.bytes"],
            partition_max_bytes=config["replica.fetch.max.bytes"],
            backoff_ms=config["replica.fetch.backoff.ms"],
            socket_timeout_ms=config["replica.socket.timeout.ms"],
            ssl_context=ssl_context,
            sasl=sasl,
        )


class FollowerLogs(Protocol):
    """What a fetcher needs of the replica manager."""

    def follower(self, key: TopicPartition, leader_epoch: int) -> Partition | None: ...

    def append_replicated(
        self, partition: Partition, records: bytes, high_watermark: int, log_start_offset: int
    ) -> None: ...

    def truncate(self, partition: Partition, offset: int) -> None: ...

    def truncate_fully(self, partition: Partition, offset: int) -> None: ...


AddressOf = Callable[[int], tuple[str, int] | None]


@dataclass(slots=True)
class FetchState:
    leader_epoch: int
    fetch_offset: int = UNDEFINED_OFFSET
    truncating: bool = True
    delayed_until_s: float = 0.0
    # Kafka's FetcherLagMetrics ConsumerLag: the leader's high watermark less our next fetch
    # offset, as of the last answer (None before the first).
    lag: int | None = None
    # What the last request asked, kept while it stays right: an idle session's thousands of
    # partitions then cost no new position per request.
    position: FetchPosition | None = None


def fetcher_id(key: TopicPartition, num_fetchers: int) -> int:
    """Kafka's `Utils.abs(31 * topic.hashCode + partition) % num.replica.fetchers`."""
    topic, partition = key
    return java_abs(to_int32(31 * java_string_hash(topic) + partition)) % num_fetchers


class ReplicaFetcher:
    def __init__(
        self,
        source_broker_id: int,
        config: FetcherConfig,
        logs: FollowerLogs,
        address_of: AddressOf,
    ) -> None:
        self.source_broker_id = source_broker_id
        self._config = config
        self._logs = logs
        self._address_of = address_of
        self.partitions: dict[TopicPartition, FetchState] = {}
        self._wakeup = asyncio.Event()
        self._client: BrokerClient | None = None
        self._session = FetchSessionHandler()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        name = f"replica-fetcher-{self.source_broker_id}"
        self._task = asyncio.get_running_loop().create_task(self._run(), name=name)

    def add(self, key: TopicPartition, leader_epoch: int) -> None:
        self.partitions[key] = FetchState(leader_epoch)
        self._wakeup.set()

    def remove(self, key: TopicPartition) -> None:
        self.partitions.pop(key, None)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._client is not None:
            await self._client.close()

    async def _run(self) -> None:
        while True:
            try:
                await self._do_work()
            except asyncio.CancelledError:
                raise
            except BrokerClientError as error:
                log.info("fetching from broker %d failed: %s", self.source_broker_id, error)
                await self._drop_client()
                await asyncio.sleep(self._config.backoff_ms / 1000)
            except Exception:
                log.exception("replica fetcher for broker %d failed", self.source_broker_id)
                self._session.on_failure()
                await asyncio.sleep(self._config.backoff_ms / 1000)

    async def _do_work(self) -> None:
        now_s = time.monotonic()
        truncating, wanted = self._scan(now_s)
        if not truncating and not wanted:
            await self._idle(now_s)
            return
        client = self._connect()
        if client is None:
            await asyncio.sleep(self._config.backoff_ms / 1000)
            return
        if truncating:
            await self._truncate(client, truncating)
            # The truncation's round trip let other work run: take every position anew.
            wanted = self._scan(time.monotonic(), truncate=False)[1]
        if wanted:
            await self._fetch(client, wanted)

    def _scan(
        self, now_s: float, truncate: bool = True
    ) -> tuple[dict[TopicPartition, FetchState], dict[TopicPartition, FetchPosition]]:
        """The partitions not backed off: those to truncate first (if `truncate`), and the
        positions to fetch the others from. One pass over thousands of partitions on every
        request (a failover's fetches come back at once, tens a second): no call but the
        follower check per partition, and a position made anew only when it changed."""
        truncating: dict[TopicPartition, FetchState] = {}
        wanted: dict[TopicPartition, FetchPosition] = {}
        follower = self._logs.follower
        max_bytes = self._config.partition_max_bytes
        for key, state in self.partitions.items():
            if state.delayed_until_s > now_s:
                continue
            if state.truncating:
                if truncate:
                    truncating[key] = state
                continue
            partition = follower(key, state.leader_epoch)
            if partition is None:
                continue
            log_start_offset = partition.log.log_start_offset
            position = state.position
            if (
                position is None
                or position.fetch_offset != state.fetch_offset
                or position.current_leader_epoch != state.leader_epoch
                or position.log_start_offset != log_start_offset
            ):
                position = state.position = FetchPosition(
                    state.fetch_offset, max_bytes, state.leader_epoch, log_start_offset
                )
            wanted[key] = position
        return truncating, wanted

    async def _idle(self, now_s: float) -> None:
        self._wakeup.clear()
        delays = [s.delayed_until_s - now_s for s in self.partitions.values()]
        timeout_s = min(delays) if delays else None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), timeout_s)

    def _connect(self) -> BrokerClient | None:
        if self._client is not None:
            return self._client
        address = self._address_of(self.source_broker_id)
        if address is None:
            return None  # not registered (yet); its partitions wait for a new leader or it
        self._client = BrokerClient(
            address[0],
            address[1],
            client_id=f"broker-{self._config.broker_id}-fetcher",
            request_timeout_ms=self._config.socket_timeout_ms + self._config.max_wait_ms,
            ssl_context=self._config.ssl_context,
            sasl=self._config.sasl,
        )
        return self._client

    async def _drop_client(self) -> None:
        self._session.on_failure()
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def _delay(self, key: TopicPartition, state: FetchState) -> None:
        state.delayed_until_s = time.monotonic() + self._config.backoff_ms / 1000

    # -- truncation ----------------------------------------------------------------------

    async def _truncate(
        self, client: BrokerClient, states: dict[TopicPartition, FetchState]
    ) -> None:
        requests: dict[TopicPartition, int] = {}
        for key, state in states.items():
            partition = self._logs.follower(key, state.leader_epoch)
            if partition is None:
                continue
            latest_epoch = partition.log.leader_epoch_cache.latest_epoch
            if latest_epoch == UNDEFINED_EPOCH:
                self._finish_truncation(partition, state, partition.high_watermark)
            else:
                requests[key] = latest_epoch
        if not requests:
            return
        response = await client.send(self._epoch_request(states, requests))
        errors = PartitionErrors(f"OffsetForLeaderEpoch from broker {self.source_broker_id}")
        loop_slice = LoopSlice()  # thousands after a failover, each looked up after a pause
        for topic in response.topics:
            for result in topic.partitions:
                await loop_slice.pause_if_spent()
                key = (topic.topic, int(result.partition))
                self._on_epoch_end_offset(key, result, errors)
        errors.log()

    def _epoch_request(
        self, states: dict[TopicPartition, FetchState], requests: dict[TopicPartition, int]
    ) -> EncodedRequest:
        by_topic: dict[str, list[tuple[int, int, int]]] = {}
        for (topic, partition), epoch in requests.items():
            current_epoch = states[(topic, partition)].leader_epoch
            by_topic.setdefault(topic, []).append((partition, current_epoch, epoch))
        return encode_offset_for_leader_epoch(self._config.broker_id, list(by_topic.items()))

    def _on_epoch_end_offset(
        self, key: TopicPartition, result: Any, errors: PartitionErrors
    ) -> None:
        state = self.partitions.get(key)
        if state is None or not state.truncating:
            return
        partition = self._logs.follower(key, state.leader_epoch)
        if partition is None:
            return
        if result.error_code != ErrorCode.none:
            errors.add(key, result.error_code)
            self._delay(key, state)
            return
        leader_epoch, end_offset = int(result.leader_epoch), int(result.end_offset)
        if end_offset == UNDEFINED_OFFSET:
            self._finish_truncation(partition, state, partition.high_watermark)
            return
        self._finish_truncation(
            partition, state, self._truncation_offset(partition, leader_epoch, end_offset)
        )

    @staticmethod
    def _truncation_offset(partition: Partition, leader_epoch: int, end_offset: int) -> int:
        """Kafka's rule: keep what both logs hold for the largest epoch they share."""
        replica_log = partition.log
        cache = replica_log.leader_epoch_cache
        if leader_epoch == cache.latest_epoch:
            return min(end_offset, replica_log.log_end_offset)
        local_epoch, local_end = cache.end_offset_for(leader_epoch, replica_log.log_end_offset)
        if local_epoch == UNDEFINED_EPOCH or local_end == UNDEFINED_OFFSET:
            return min(partition.high_watermark, end_offset)
        return min(end_offset, local_end)

    def _finish_truncation(self, partition: Partition, state: FetchState, offset: int) -> None:
        if offset < partition.log.log_end_offset:
            log.info(
                "%s-%d: truncating from %d to %d (leader %d, epoch %d)",
                partition.topic,
                partition.partition,
                partition.log.log_end_offset,
                offset,
                self.source_broker_id,
                state.leader_epoch,
            )
            self._logs.truncate(partition, offset)
        state.truncating = False
        state.fetch_offset = partition.log.log_end_offset

    # -- fetching ------------------------------------------------------------------------

    async def _fetch(
        self, client: BrokerClient, wanted: dict[TopicPartition, FetchPosition]
    ) -> None:
        request = self._session.build(wanted)
        response = await client.send(self._fetch_request(request))
        error = response.error_code
        if not self._session.on_response(request, error, int(response.session_id)):
            if error in (
                ErrorCode.fetch_session_id_not_found,
                ErrorCode.invalid_fetch_session_epoch,
            ):
                log.info("fetch session with broker %d: %s", self.source_broker_id, error.name)
                return  # the next request is a full one
            raise BrokerClientError(f"Fetch answered {error.name}")
        # An incremental response holds only the partitions with something new. A full one
        # after a failover holds thousands with records: appended in slices of loop time (each
        # partition's state is looked up again after a pause).
        loop_slice = LoopSlice()
        errors = PartitionErrors(f"fetch from broker {self.source_broker_id}")
        for topic in response.responses:
            for data in topic.partitions:
                await loop_slice.pause_if_spent()
                key = (topic.topic, int(data.partition_index))
                position = wanted.get(key)
                if position is not None:
                    self._on_partition_data(key, position.fetch_offset, data, errors)
        errors.log()

    def _fetch_request(self, request: SessionRequest) -> EncodedRequest:
        # Packed rather than built as a kio entity: a full request names thousands of
        # partitions after a failover (see replica_request_encoding).
        return encode_fetch(
            replica_id=self._config.broker_id,
            max_wait_ms=self._config.max_wait_ms,
            min_bytes=self._config.min_bytes,
            max_bytes=self._config.response_max_bytes,
            session_id=request.session_id,
            session_epoch=request.epoch,
            topics=[
                (topic, [_fetch_partition(p, f) for p, f in partitions])
                for topic, partitions in _by_topic(request.to_send.items())
            ],
            forgotten=[
                (topic, [p for p, _ in partitions])
                for topic, partitions in _by_topic((key, key) for key in request.forgotten)
            ],
        )

    def _on_partition_data(
        self, key: TopicPartition, fetch_offset: int, data: Any, errors: PartitionErrors
    ) -> None:
        state = self.partitions.get(key)
        if state is None or state.truncating or state.fetch_offset != fetch_offset:
            return  # removed, re-added or moved while the request was out
        partition = self._logs.follower(key, state.leader_epoch)
        if partition is None:
            return
        error = data.error_code
        if error == ErrorCode.none:
            self._append(key, state, partition, data)
        elif error == ErrorCode.offset_out_of_range:
            self._on_out_of_range(partition, state, data)
        else:
            if error != ErrorCode.not_leader_or_follower:
                errors.add(key, error)
            self._delay(key, state)

    def _append(
        self, key: TopicPartition, state: FetchState, partition: Partition, data: Any
    ) -> None:
        try:
            self._logs.append_replicated(
                partition,
                data.records or b"",
                int(data.high_watermark),
                int(data.log_start_offset),
            )
        except UnexpectedAppendOffsetError as error:
            log.warning("%s-%d: %s; truncating again", *key, error)
            state.truncating = True
            return
        except RecordError as error:
            log.error("%s-%d: corrupt data from the leader: %s", *key, error)
            self._delay(key, state)
            return
        state.fetch_offset = partition.log.log_end_offset
        state.lag = max(0, int(data.high_watermark) - state.fetch_offset)

    def _on_out_of_range(self, partition: Partition, state: FetchState, data: Any) -> None:
        leader_start = int(data.log_start_offset)
        if leader_start >= 0 and state.fetch_offset < leader_start:
            # The leader deleted what we would fetch next (retention): start where it starts.
            log.info("%s-%d: restarting the log at %d", *partition.key, leader_start)
            self._logs.truncate_fully(partition, leader_start)
        else:
            # Our log ends beyond the leader's (an unclean election): drop what it lacks.
            self._logs.truncate(partition, max(int(data.high_watermark), 0))
        state.fetch_offset = partition.log.log_end_offset


class PartitionErrors:
    """The partitions of one response that answered an error, logged as one line per error:
    after a failover thousands answer FENCED_LEADER_EPOCH at once, and a line each cost the
    loop more than the rest of the response."""

    SHOWN = 5  # partitions named per line

    def __init__(self, what: str) -> None:
        self.what = what
        self._by_error: dict[ErrorCode, list[TopicPartition]] = {}

    def add(self, key: TopicPartition, error: ErrorCode) -> None:
        self._by_error.setdefault(error, []).append(key)

    def log(self) -> None:
        for error, keys in self._by_error.items():
            shown = ", ".join(f"{topic}-{partition}" for topic, partition in keys[: self.SHOWN])
            more = f" and {len(keys) - self.SHOWN} more" if len(keys) > self.SHOWN else ""
            log.info("%s: %s for %s%s", self.what, error.name, shown, more)


def _by_topic(items: Iterable[tuple[TopicPartition, T]]) -> list[tuple[str, list[tuple[int, T]]]]:
    grouped: dict[str, list[tuple[int, T]]] = {}
    for (topic, partition), value in items:
        grouped.setdefault(topic, []).append((partition, value))
    return list(grouped.items())


def _fetch_partition(partition: int, position: FetchPosition) -> FetchPartitionRequest:
    return FetchPartitionRequest(
        partition,
        position.current_leader_epoch,
        position.fetch_offset,
        position.log_start_offset,
        position.partition_max_bytes,
    )


class ReplicaFetcherManager:
    def __init__(self, config: FetcherConfig, logs: FollowerLogs, address_of: AddressOf) -> None:
        self._config = config
        self._logs = logs
        self._address_of = address_of
        self._fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._fetcher_of: dict[TopicPartition, tuple[int, int]] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    def add_partition(self, key: TopicPartition, leader_id: int, leader_epoch: int) -> None:
        """Follow `leader_id` at `leader_epoch`, truncating first."""
        self.remove_partition(key)
        fetcher_key = (leader_id, fetcher_id(key, self._config.num_fetchers))
        fetcher = self._fetchers.get(fetcher_key)
        if fetcher is None:
            fetcher = ReplicaFetcher(leader_id, self._config, self._logs, self._address_of)
            fetcher.start()
            self._fetchers[fetcher_key] = fetcher
        fetcher.add(key, leader_epoch)
        self._fetcher_of[key] = fetcher_key

    def remove_partition(self, key: TopicPartition) -> None:
        fetcher_key = self._fetcher_of.pop(key, None)
        if fetcher_key is None:
            return
        fetcher = self._fetchers[fetcher_key]
        fetcher.remove(key)
        if not fetcher.partitions:
            # Nothing left to fetch from that leader: close its task and connection.
            del self._fetchers[fetcher_key]
            stopping = asyncio.get_running_loop().create_task(fetcher.stop())
            self._stopping.add(stopping)
            stopping.add_done_callback(self._stopping.discard)

    def fetching(self, key: TopicPartition) -> bool:
        return key in self._fetcher_of

    def lags(self) -> Iterator[tuple[str, TopicPartition, int]]:
        """(fetcher name as Kafka's clientId, partition, lag) for every partition with a lag."""
        for (leader_id, fetcher_index), fetcher in self._fetchers.items():
            client_id = f"ReplicaFetcherThread-{fetcher_index}-{leader_id}"
            for key, state in fetcher.partitions.items():
                if state.lag is not None:
                    yield client_id, key, state.lag

    async def shutdown(self) -> None:
        fetchers = list(self._fetchers.values())
        await asyncio.gather(*self._stopping, return_exceptions=True)
        self._fetchers.clear()
        self._fetcher_of.clear()
        await asyncio.gather(*(fetcher.stop() for fetcher in fetchers), return_exceptions=True)
