"""Fetch v0-v17, with incremental fetch sessions (KIP-227); v0-v3 answer old message formats.

Consumers read up to the high watermark; followers (`replica_id` >= 0) read up to the log end,
and their fetch offset is how the leader learns how far they have come. The response holds
whole batches; the first batch is returned even if larger than the limits (KIP-74); the
broker's `fetch.max.bytes` caps the request's `max_bytes`. Long polling: if fewer than
`min_bytes` are available the request parks as a delayed fetch until enough arrive, a
partition must answer an error, or `max_wait_ms` passes (woken by a high-watermark move for
consumers, an append for followers); it judges completion from offsets and reads the logs once,
when it completes (see `broker.replication.delayed_fetch`). Which partitions are read and
answered follows the request's session fields (see `broker.replication.fetch_context`). An
incremental fetch that wants at most one byte (every follower and most consumers) reads only
the partitions of its session that changed, and parks on the session itself: a change marks
the partition, which is then read (see `broker.replication.fetch_session`).

v13+ names topics by id, resolved from the broker's metadata at each request: an id no topic
has answers UNKNOWN_TOPIC_ID. v15 moves the replica id into `replica_state` (its broker epoch
is not checked: Kafka checks it only in KRaft mode). v16 names the current leader of a
partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, and lists its endpoint
(KIP-951). v17's replica directory id is KRaft's and ignored.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import legacy_fetch
from broker.handlers.authorization import access_of
from broker.handlers.current_leader import CurrentLeaders
from broker.log.file_records import FileRecords, records_bytes
from broker.network.context import RequestContext
from broker.protocol import adapter, fetch_encoding
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.quotas.throttle import consumer_fetch_max_bytes, consumer_fetch_throttle_time_ms
from broker.replication.delayed_fetch import (
    DelayedFetch,
    FetchPartitionStatus,
    FetchRequestPosition,
)
from broker.replication.fetch_context import new_context
from broker.replication.fetch_session import (
    INVALID_SESSION_ID,
    FetchKey,
    FetchPosition,
    FetchSession,
    TopicPartition,
)
from broker.replication.partition import Partition
from broker.replication.read_checks import ReadResult
from broker.replication.replica_manager import ReplicaManager
from broker.replication.replica_selector import ClientMetadata
from broker.security.acl import Operation, ResourceType
from zk.loop_slice import LoopSlice

Results = list[tuple[FetchKey, ReadResult]]
TOPIC_ID_VERSION = 13
# Fetch v11 added the consumer's rack_id and preferred_read_replica (KIP-392).
CLIENT_METADATA_VERSION = 11
CURRENT_LEADER_VERSION = 16
# The errors whose partitions name their current leader (v16+), as in Kafka.
# Fetch v12 added the partitions' diverging epoch (KIP-595: followers truncate on it).
DIVERGING_EPOCH_VERSION = 12
LEADER_MOVED_ERRORS = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch})
# Partitions read between two looks at the clock (see _read_all).
PARTITIONS_PER_SLICE_CHECK = 32
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
# An incremental fetch reads every partition of its session this often per
# replica.lag.time.max.ms (else only what changed): a caught-up follower then never counts as
# lagging, and a log start offset that retention moved reaches the fetcher.
SWEEPS_PER_LAG = 4
# Record sets at least this large are sent from their segment files with sendfile on a
# plaintext connection. Each costs a descriptor duplicate and a system call of its own, which a
# few KB of copying undercuts; and each must be at least fetch_encoding's separate-part size.
ZERO_COPY_MIN_BYTES = 32 * 1024


async def handle(context: RequestContext, request: Any) -> Any:
    sessions = context.services.fetch_sessions
    version = context.api_version
    fetch_context = new_context(
        sessions, request, _now_ms(), uses_topic_ids=version >= TOPIC_ID_VERSION
    )
    if fetch_context.error_code != ErrorCode.none:
        return _response(context, fetch_context.error_code, INVALID_SESSION_ID, [])
    replica_id = replica_id_of(request)
    deadline_s = asyncio.get_running_loop().time() + adapter.millis(request.max_wait) / 1000
    session = fetch_context.session
    if session is not None and request.min_bytes <= 1:
        results, names = await _read_session(context, request, session, deadline_s)
    else:
        if session is not None:
            session.last_sweep_ms = None  # this read all of it outside the session's watch
        positions = fetch_context.all_positions()
        names = _topic_names(context, positions)
        results = await _read_or_park(context, request, positions, names, deadline_s)
    session_id, answered = fetch_context.respond(sessions, results, replica_id >= 0, _now_ms())
    if replica_id < 0:
        response_bytes = sum(len(result.records) for _, result in answered if result.records)
        throttle_time_ms = consumer_fetch_throttle_time_ms(context, response_bytes)
        if throttle_time_ms > 0:
            # Kafka's throttled answer: no data, and a new session is not handed out.
            incremental = int(getattr(request, "session_epoch", 0)) > 0
            kept_id = session_id if incremental else INVALID_SESSION_ID
            return _response(context, ErrorCode.none, kept_id, [], throttle_time_ms)
    _count_bytes_out(context, answered, names, replica_id >= 0)
    if legacy_fetch.needs_conversion(version):
        # v0-v3 have no sessions: the request's positions are all there is.
        offsets = {key: position.fetch_offset for key, position in _named(fetch_context.positions)}
        converted = await legacy_fetch.convert(context, _named(answered), offsets)
        answered = list(converted)
    return _response(context, ErrorCode.none, session_id, _by_topic(answered, names))


async def _read_or_park(
    context: RequestContext,
    request: Any,
    positions: list[tuple[FetchKey, FetchPosition]],
    names: dict[str | uuid.UUID, str],
    deadline_s: float,
) -> Results:
    """Read every partition; short of `min_bytes`, park as a delayed fetch and read again
    what changed meanwhile."""
    results, total_bytes, any_error = await _read_all(context, request, positions, names)
    if total_bytes >= request.min_bytes or any_error:
        return results
    delayed = await _wait_for_data(context, request, positions, names, deadline_s, results)
    if delayed is None:
        return results
    # The delayed fetch's read, now that it completes: only of what changed meanwhile.
    results, _, _ = await _read_all(context, request, positions, names, (results, delayed))
    return results


async def _read_session(
    context: RequestContext, request: Any, session: FetchSession, deadline_s: float
) -> tuple[Results, dict[str | uuid.UUID, str]]:
    """An incremental fetch of at most one byte wanted: read what the session says may have
    changed (or everything, when a sweep is due); with nothing to give, wait for the
    session's partitions to mark a change, and read what they marked."""
    now_ms = _now_ms()
    sweep_interval_ms = context.services.replica_manager.replica_lag_time_max_ms // SWEEPS_PER_LAG
    sweep = session.last_sweep_ms is None or now_ms - session.last_sweep_ms >= sweep_interval_ms
    if sweep:
        session.last_sweep_ms = now_ms
    names: dict[str | uuid.UUID, str] = {}
    read: dict[FetchKey, ReadResult] = {}
    keys = session.keys_to_read(sweep)
    loop = asyncio.get_running_loop()
    while True:
        await _read_session_keys(context, request, session, keys, names, read)
        remaining_s = deadline_s - loop.time()
        total_bytes = sum(len(result.records) for result in read.values())
        if total_bytes >= request.min_bytes or remaining_s <= 0 or _any_error(read):
            break
        await session.watch.wait(remaining_s)
        keys = session.take_changed()
        if not keys:
            break  # the deadline passed
    return list(read.items()), names


async def _read_session_keys(
    context: RequestContext,
    request: Any,
    session: FetchSession,
    keys: list[FetchKey],
    names: dict[str | uuid.UUID, str],
    read: dict[FetchKey, ReadResult],
) -> None:
    """Read `keys` into `read` (replacing earlier reads of them), each watched first; those
    whose read left something to give stay unsettled: the next request reads them again."""
    positions = [(key, session.partitions[key].position) for key in keys]
    names.update(_topic_names(context, positions))
    replica_manager = context.services.replica_manager
    replicas = {}
    for (topic, partition), _ in positions:
        name = names.get(topic)
        replica = None if name is None else replica_manager.get_by_key((name, partition))
        session.watch_replica((topic, partition), replica)
        replicas[(topic, partition)] = replica
    earlier_bytes = sum(len(result.records) for result in read.values())
    results, _, _ = await _read_all(context, request, positions, names, start_bytes=earlier_bytes)
    replica_id = replica_id_of(request)
    read_committed = _read_committed(request)
    for (key, result), (_, position) in zip(results, positions, strict=True):
        read[key] = result
        if not _settled(result, position, replicas[key], replica_id, read_committed):
            session.unsettled.add(key)


def _settled(
    result: ReadResult,
    position: FetchPosition,
    replica: Partition | None,
    replica_id: int,
    read_committed: bool,
) -> bool:
    """Whether a read of the partition would answer nothing new until one of its events:
    no error, and the fetch position at the end the fetcher may read to. A follower out of
    the ISR is read on every request, as its fetches decide when it rejoins."""
    if replica is None or _must_answer_now(result) or result.records:
        return False
    if replica_id >= 0:
        return position.fetch_offset >= result.log_end_offset and replica_id in replica.isr
    end = result.last_stable_offset if read_committed else result.high_watermark
    return position.fetch_offset >= end


def _must_answer_now(result: ReadResult) -> bool:
    # A preferred read replica is answered at once too, as in Kafka: the consumer moves.
    return (
        result.error_code != ErrorCode.none
        or result.diverging_epoch is not None
        or result.preferred_read_replica >= 0
    )


def _any_error(read: dict[FetchKey, ReadResult]) -> bool:
    return any(_must_answer_now(result) for result in read.values())


async def _wait_for_data(
    context: RequestContext,
    request: Any,
    positions: list[tuple[FetchKey, FetchPosition]],
    names: dict[str | uuid.UUID, str],
    deadline_s: float,
    results: Results,
) -> DelayedFetch | None:
    """Park the fetch until `min_bytes` may be readable, a partition must answer an error,
    or the deadline (Kafka's DelayedFetch: each wake-up checks offsets only, no log is
    read). None if there was nothing to wait for."""
    # Partitions of unknown topic ids are answered, but only the others are worth waiting for.
    waited_for = [
        (
            FetchRequestPosition(
                (names[topic], partition),
                position.fetch_offset,
                position.partition_max_bytes,
                position.current_leader_epoch,
            ),
            result,
        )
        for ((topic, partition), position), (_, result) in zip(positions, results, strict=True)
        if topic in names
    ]
    remaining_s = deadline_s - asyncio.get_running_loop().time()
    if remaining_s <= 0 or not waited_for:
        return None
    replica_manager = context.services.replica_manager
    delayed = await DelayedFetch.park(
        replica_manager.get_by_key,
        waited_for,
        request.min_bytes,
        follower=replica_id_of(request) >= 0,
        read_committed=_read_committed(request),
        any_replica=client_metadata_of(request, context.api_version) is not None,
    )
    await replica_manager.wait_for_fetch(delayed, deadline_s - asyncio.get_running_loop().time())
    return delayed


def _count_bytes_out(
    context: RequestContext,
    answered: Results,
    names: dict[str | uuid.UUID, str],
    by_follower: bool,
) -> None:
    metrics = context.services.metrics
    for (topic, _), result in answered:
        if result.records:
            metrics.fetched(names.get(topic, ""), len(result.records), by_follower)


def _topic_names(
    context: RequestContext, positions: list[tuple[FetchKey, FetchPosition]]
) -> dict[str | uuid.UUID, str]:
    """Each requested topic's name; a topic id no topic has is left out (UNKNOWN_TOPIC_ID)."""
    cache = context.services.metadata_cache
    names: dict[str | uuid.UUID, str] = {}
    for (topic, _), _ in positions:
        if topic in names:
            continue
        name = topic if isinstance(topic, str) else cache.topic_name(topic)
        if name is not None:
            names[topic] = name
    return names


def _named(
    items: list[tuple[FetchKey, Any]],
) -> list[tuple[TopicPartition, Any]]:
    """Keys by name (only v0-v12, which never name topics by id, get here)."""
    return [
        ((topic, partition), item) for (topic, partition), item in items if isinstance(topic, str)
    ]


def _response(
    context: RequestContext,
    error_code: ErrorCode,
    session_id: int,
    responses: list[dict[str, Any]],
    throttle_time_ms: int = 0,
) -> Any:
    version = context.api_version
    values = {
        "throttle_time": throttle_time_ms,
        "error_code": error_code,
        "session_id": session_id,
        "responses": responses,
    }
    if version >= DIVERGING_EPOCH_VERSION and _any_diverging(responses):
        # A tagged field, as below: rare answers (a follower that must truncate).
        if version >= CURRENT_LEADER_VERSION:
            _add_current_leaders(context, values)
        return adapter.build(response_class(ApiKey.FETCH, version), _in_memory(values))
    if version >= CURRENT_LEADER_VERSION and _add_current_leaders(context, values):
        # kio writes the tagged fields; such answers are rare (a leader moved), so their copy
        # of the record sets costs little.
        return adapter.build(response_class(ApiKey.FETCH, version), _in_memory(values))
    # Encoded here rather than built as kio entities: record sets stay uncopied, and building
    # entities cost more than the encoding for the small fetches of a follower keeping up.
    if fetch_encoding.can_encode(version):
        return adapter.Encoded(fetch_encoding.encode_parts(version, values))
    return adapter.build(response_class(ApiKey.FETCH, version), _in_memory(values))


def _in_memory(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with every record set read into memory (kio encodes bytes only)."""
    for topic in values["responses"]:
        for partition in topic["partitions"]:
            records = partition["records"]
            if isinstance(records, FileRecords):
                partition["records"] = records_bytes(records)
    return values


def _any_diverging(responses: list[dict[str, Any]]) -> bool:
    return any("diverging_epoch" in p for topic in responses for p in topic["partitions"])


def _add_current_leaders(context: RequestContext, values: dict[str, Any]) -> bool:
    """Name the current leader of each partition refused for leadership (KIP-951); whether
    any was."""
    leaders = CurrentLeaders(context.services.metadata_cache, context.listener_name)
    found = False
    for topic in values["responses"]:
        for partition in topic["partitions"]:
            if partition["error_code"] in LEADER_MOVED_ERRORS:
                partition["current_leader"] = leaders.leader(
                    topic["topic"], partition["partition_index"]
                )
                found = True
    values["node_endpoints"] = leaders.node_endpoints()
    return found


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def _read_committed(request: Any) -> bool:
    """Fetch v4+ names an isolation level; older versions read uncommitted."""
    return int(getattr(request, "isolation_level", READ_UNCOMMITTED)) == READ_COMMITTED


def _aborted(result: ReadResult) -> list[dict[str, int]] | None:
    if result.aborted_transactions is None:
        return None
    return [
        {"producer_id": txn.producer_id, "first_offset": txn.first_offset}
        for txn in result.aborted_transactions
    ]


def client_metadata_of(request: Any, version: int) -> ClientMetadata | None:
    """A consumer's Fetch v11+ carries client metadata (its rack, "" when unset), as Kafka
    builds it for every such request: a follower may then serve it (KIP-392)."""
    if version < CLIENT_METADATA_VERSION or replica_id_of(request) >= 0:
        return None
    return ClientMetadata(str(getattr(request, "rack_id", "") or ""))


def replica_id_of(request: Any) -> int:
    """The fetching replica's id (v15+ in `replica_state`), -1 for a consumer."""
    replica_state = getattr(request, "replica_state", None)
    if replica_state is not None:
        return int(replica_state.replica_id)
    return int(getattr(request, "replica_id", -1))


async def _read_all(
    context: RequestContext,
    request: Any,
    positions: list[tuple[FetchKey, FetchPosition]],
    names: dict[str | uuid.UUID, str],
    parked: tuple[Results, DelayedFetch] | None = None,
    start_bytes: int = 0,
) -> tuple[Results, int, bool]:
    """Read every partition of the fetch, within the response's byte budget. With `parked`
    (the first read's results and the delayed fetch that then completed), a partition where
    nothing changed since keeps its first result: in a follower's session of thousands of
    partitions, one append completes the fetch and all but that one are unchanged. Such a
    session is read in slices of loop time, so that other requests get in between; an append
    meanwhile to a partition already read completes the delayed fetch at once, as the parked
    position is then behind the log end. `start_bytes`: what earlier reads of this response
    already hold."""
    replica_manager = context.services.replica_manager
    replica_id = replica_id_of(request)
    read_committed = _read_committed(request)  # once, not per partition
    client_metadata = client_metadata_of(request, context.api_version)
    zero_copy_min_bytes = _zero_copy_min_bytes(context)
    # fetch.max.bytes caps what one response may hold, whatever the client asks (KIP-541);
    # a consumer's quota too, so that no fetch is bound to be throttled.
    budget_bytes = min(
        getattr(request, "max_bytes", 0x7FFFFFFF),
        context.services.config["fetch.max.bytes"],
        consumer_fetch_max_bytes(context) if replica_id < 0 else 0x7FFFFFFF,
    )
    statuses = parked[1].status_by_key() if parked is not None else {}
    refused = _refused_topics(context, names, replica_id)
    total_bytes = start_bytes
    any_error = False
    results = []
    loop_slice = LoopSlice()
    for index, (key, position) in enumerate(positions):
        if index % PARTITIONS_PER_SLICE_CHECK == 0:
            await loop_slice.pause_if_spent()
        topic, partition = key
        name = names.get(topic)
        if name is None:
            results.append((key, ReadResult(ErrorCode.unknown_topic_id)))
            continue
        if name in refused:
            results.append((key, ReadResult(ErrorCode.topic_authorization_failed)))
            any_error = True
            continue
        result = _reuse_parked(replica_manager, parked, statuses, index, (name, partition))
        if result is None:
            result = replica_manager.read(
                name,
                partition,
                position.fetch_offset,
                min(position.partition_max_bytes, max(budget_bytes - total_bytes, 0)),
                min_one_batch=total_bytes == 0,
                current_leader_epoch=position.current_leader_epoch,
                replica_id=replica_id,
                follower_log_start_offset=position.log_start_offset,
                read_committed=read_committed,
                last_fetched_epoch=position.last_fetched_epoch,
                client_metadata=client_metadata,
                zero_copy_min_bytes=zero_copy_min_bytes,
            )
        total_bytes += len(result.records)
        # A diverging epoch is answered at once, as an error is: the fetcher must truncate.
        any_error = any_error or _must_answer_now(result)
        results.append((key, result))
    return results, total_bytes, any_error


def _zero_copy_min_bytes(context: RequestContext) -> int | None:
    """Whether (from what size) reads may stay in their segment files: only where the
    connection can sendfile them and the answer is encoded by fetch_encoding, which hands
    record sets on as they are (v0-v3 convert them; v4-v17 answers kio encodes, the rare
    ones with tagged fields, read them into memory first)."""
    version = context.api_version
    if not context.zero_copy or not fetch_encoding.can_encode(version):
        return None
    return max(ZERO_COPY_MIN_BYTES, fetch_encoding.SEPARATE_RECORDS_MIN_BYTES)


def _reuse_parked(
    replica_manager: ReplicaManager,
    parked: tuple[Results, DelayedFetch] | None,
    statuses: dict[TopicPartition, FetchPartitionStatus],
    index: int,
    key: TopicPartition,
) -> ReadResult | None:
    """The partition's read before the fetch was parked (the `index`th), if a read now would
    answer the same (DelayedFetch.same_as_parked); None when it must be read (again)."""
    if parked is None:
        return None
    earlier = parked[0][index][1]
    status = statuses.get(key)
    current = replica_manager.get_by_key(key)
    if status is not None and DelayedFetch.same_as_parked(status, current, earlier):
        return earlier
    return None


def _refused_topics(
    context: RequestContext, names: dict[str | uuid.UUID, str], replica_id: int
) -> frozenset[str]:
    """The topics a consumer may not read. The dispatcher checked those the request names; an
    incremental fetch also reads the rest of its session, checked here on every request as
    Kafka does, so that removing an ACL stops a running consumer. Followers were checked for
    ClusterAction."""
    access = access_of(context)
    if access is None or replica_id >= 0:
        return frozenset()
    topics = set(names.values())
    return frozenset(
        name for name in topics if not access.allowed(Operation.READ, ResourceType.TOPIC, name)
    )


def _by_topic(results: Results, names: dict[str | uuid.UUID, str]) -> list[dict[str, Any]]:
    """Consecutive partitions of one topic share an entry, as in Kafka's responses. An entry
    carries the topic's name and, from v13, its id (the request's)."""
    responses: list[dict[str, Any]] = []
    previous_topic: str | uuid.UUID | None = None
    for (topic, partition), result in results:
        if not responses or topic != previous_topic:
            responses.append(
                {
                    "topic": names.get(topic, ""),
                    "topic_id": topic if isinstance(topic, uuid.UUID) else None,
                    "partitions": [],
                }
            )
            previous_topic = topic
        responses[-1]["partitions"].append(_partition_data(partition, result))
    return responses


def _partition_data(partition: int, result: ReadResult) -> dict[str, Any]:
    data = _plain_partition_data(partition, result)
    if result.diverging_epoch is not None:
        epoch, end_offset = result.diverging_epoch
        data["diverging_epoch"] = {"epoch": epoch, "end_offset": end_offset}
    return data


def _plain_partition_data(partition: int, result: ReadResult) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "error_code": result.error_code,
        "high_watermark": result.high_watermark,
        "last_stable_offset": (
            result.last_stable_offset if result.last_stable_offset >= 0 else result.high_watermark
        ),
        "log_start_offset": result.log_start_offset,
        "aborted_transactions": _aborted(result),
        "preferred_read_replica": result.preferred_read_replica,
        "records": result.records,
    }
