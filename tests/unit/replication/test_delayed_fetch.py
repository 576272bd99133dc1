"""A parked fetch (Kafka's DelayedFetch) decides completion from offsets: a wake-up reads no
log, completing reads each log once, and min_bytes, max_wait_ms, a leader change and a fenced
epoch complete it as in Kafka. Real logs on a temporary directory, stand-in broker services."""

import asyncio
import datetime
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from broker.handlers import fetch
from broker.log.config import LogConfig
from broker.log.file_records import FileRecords
from broker.log.manager import LogManager
from broker.log.record_codec import SimpleRecord, build_batch
from broker.metrics.prometheus import BrokerCounters
from broker.network.context import RequestContext
from broker.protocol.header import RequestHeader
from broker.quotas.manager import ClientQuotas
from broker.quotas.sensor import QuotaWindow
from broker.replication.delayed_fetch import DelayedFetch, FetchRequestPosition
from broker.replication.fetch_session import FetchSessionCache
from broker.replication.partition import Partition
from broker.replication.read_checks import ReadResult
from broker.replication.replica_manager import ReplicaManager
from tests.unit.replication.hosting import prepare_now
from zk.znodes import PartitionState

ME, FOLLOWER = 1, 2
CONSUMER = -1
WAIT_S = 5  # bound on waiting for an outcome; parked fetches ask for 30 s


class Broker:
    """A replica manager leading partitions of topic "t", each log's reads counted."""

    def __init__(
        self, tmp_path: Path, partitions: int, isr: list[int], api_version: int = 12
    ) -> None:
        self.manager = ReplicaManager(
            ME, LogManager([tmp_path], LogConfig()), lambda t, p: True, lambda topic: 1
        )
        self.reads: Counter[int] = Counter()
        prepare_now(self.manager, "t", "", list(range(partitions)))
        for index in range(partitions):
            self.apply(
                index, PartitionState(leader=ME, leader_epoch=0, isr=isr, controller_epoch=1)
            )
            self._count_reads(self.partition(index))
        services = SimpleNamespace(
            replica_manager=self.manager,
            fetch_sessions=FetchSessionCache(max_slots=10),
            metadata_cache=None,  # topics are named, never by id, at v12
            config={"fetch.max.bytes": 50 * 1024 * 1024},
            metrics=BrokerCounters(),
            authorizer=None,
            quotas=ClientQuotas(None, QuotaWindow(11, 1000), QuotaWindow(11, 1000)),  # type: ignore[arg-type]
        )
        # A v12 request body throughout; `api_version` below 11 takes away the consumer's
        # client metadata (no follower fetching), as an older request would.
        header = RequestHeader(api_key=1, api_version=api_version, correlation_id=1, client_id=None)
        self.context = RequestContext(header, "127.0.0.1", "PLAINTEXT", services)  # type: ignore[arg-type]

    def apply(self, index: int, state: PartitionState, zk_version: int = 0) -> None:
        self.manager.apply_state("t", "", index, [ME, FOLLOWER], state, LogConfig(), zk_version)

    def partition(self, index: int) -> Partition:
        found = self.manager.get("t", index)
        assert found is not None
        return found

    def _count_reads(self, partition: Partition) -> None:
        read = partition.log.read_records

        def counted(*args: Any, **kwargs: Any) -> bytes | FileRecords:
            self.reads[partition.partition] += 1
            return read(*args, **kwargs)

        partition.log.read_records = counted  # type: ignore[method-assign]

    def append(self, index: int, value_bytes: int = 10) -> int:
        """Append one batch; its size in bytes."""
        batch = build_batch([SimpleRecord(None, b"v" * value_bytes, (), 1000)])
        assert self.manager.append_records("t", index, batch).error_code == ErrorCode.none
        return len(batch)

    def fetch(
        self,
        offsets: dict[int, int],
        min_bytes: int = 1,
        max_wait_ms: int = 30_000,
        replica_id: int = CONSUMER,
        leader_epoch: int = -1,
        rack_id: str = "",
    ) -> "asyncio.Task[dict[int, dict[str, Any]]]":
        request = FetchRequest(
            cluster_id=None,
            replica_id=BrokerId(replica_id),
            max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=max_wait_ms)),
            min_bytes=i32(min_bytes),
            max_bytes=i32(50 * 1024 * 1024),
            isolation_level=i8(0),
            session_id=i32(0),
            session_epoch=i32(-1),
            topics=(
                FetchTopic(
                    topic=TopicName("t"),
                    partitions=tuple(
                        FetchPartition(
                            partition=i32(index),
                            current_leader_epoch=i32(leader_epoch),
                            fetch_offset=i64(offset),
                            last_fetched_epoch=i32(-1),
                            log_start_offset=i64(-1),
                            partition_max_bytes=i32(1024 * 1024),
                        )
                        for index, offset in offsets.items()
                    ),
                ),
            ),
            forgotten_topics_data=(),
            rack_id=rack_id,
        )

        async def answer() -> dict[int, dict[str, Any]]:
            response = await fetch.handle(self.context, request)
            (topic,) = response
            return {entry["partition_index"]: entry for entry in topic["partitions"]}

        return asyncio.create_task(answer())


@pytest.fixture(autouse=True)
def _responses_as_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """The handler's answer as the values it encodes, to look into."""
    monkeypatch.setattr(fetch, "_response", lambda context, error, session, responses: responses)


async def _parked(task: "asyncio.Task[Any]") -> None:
    """Let the fetch run to where it waits; it must not have answered."""
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()


def test_a_wake_up_without_new_data_reads_no_log(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path, partitions=1, isr=[ME])
        waiting = broker.fetch({0: 0})
        await _parked(waiting)
        assert broker.reads[0] == 1  # the first read, before parking
        for _ in range(3):
            broker.partition(0).waiters.on_high_watermark(0)  # woken, nothing new
            await _parked(waiting)
        assert broker.reads[0] == 1
        broker.append(0)
        answer = await asyncio.wait_for(waiting, WAIT_S)
        assert answer[0]["error_code"] == ErrorCode.none and answer[0]["records"]
        assert broker.reads[0] == 2  # and once when it completes

    asyncio.run(scenario())


def test_completing_reads_each_log_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path, partitions=2, isr=[ME])
        batch_bytes = broker.append(0)
        broker.append(1)
        waiting = broker.fetch({0: 1, 1: 1}, min_bytes=2 * batch_bytes)
        await _parked(waiting)
        broker.append(0)  # half of min_bytes: a wake-up, no read
        await _parked(waiting)
        assert broker.reads == Counter({0: 1, 1: 1})
        broker.append(1)
        answer = await asyncio.wait_for(waiting, WAIT_S)
        assert all(answer[index]["records"] for index in (0, 1))
        assert broker.reads == Counter({0: 2, 1: 2})

    asyncio.run(scenario())


def test_completing_re_reads_only_the_partitions_that_changed(tmp_path: Path) -> None:
    """A follower's session holds thousands of partitions and one append completes its fetch:
    the others answer what the read before parking found, without another read."""

    async def scenario() -> None:
        broker = Broker(tmp_path, partitions=3, isr=[ME, FOLLOWER])
        waiting = broker.fetch({0: 0, 1: 0, 2: 0}, replica_id=FOLLOWER)
        await _parked(waiting)
        batch_bytes = broker.append(1)
        answer = await asyncio.wait_for(waiting, WAIT_S)
        assert broker.reads == Counter({0: 1, 1: 2, 2: 1})
        assert len(answer[1]["records"]) == batch_bytes
        assert [answer[index]["records"] for index in (0, 2)] == [b"", b""]
        assert {answer[index]["error_code"] for index in (0, 1, 2)} == {ErrorCode.none}

    asyncio.run(scenario())


def test_a_partition_whose_epoch_moved_while_parked_is_read_again(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path, partitions=2, isr=[ME, FOLLOWER])
        waiting = broker.fetch({0: 0, 1: 0}, replica_id=FOLLOWER, leader_epoch=0)
        await _parked(waiting)
        # Still the leader, in a new epoch: the fetch named epoch 0, now fenced.
        bumped = PartitionState(leader=ME, leader_epoch=1, isr=[ME, FOLLOWER], controller_epoch=1)
        broker.apply(0, bumped, zk_version=1)
        answer = await asyncio.wait_for(waiting, WAIT_S)
        assert answer[0]["error_code"] == ErrorCode.fenced_leader_epoch
        assert answer[1]["error_code"] == ErrorCode.none
        assert broker.reads[1] == 1

    asyncio.run(scenario())


def test_min_bytes_waits_until_about_that_many_bytes_are_readable(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path, partitions=1, isr=[ME])
        waiting = broker.fetch({0: 0}, min_bytes=1000)
        await _parked(waiting)
        appended_bytes = broker.append(0, value_bytes=100)
        while appended_bytes < 1000:
            await _parked(waiting)  # woken by each append, short of min_bytes
            appended_bytes += broker.append(0, value_bytes=100)
        answer = await asyncio.wait_for(waiting, WAIT_S)
        assert len(answer[0]["records"]) == appended_bytes

    asyncio.run(scenario())


def test_max_wait_answers_what_there_is_when_min_bytes_never_arrives(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path, partitions=1, isr=[ME])
        waiting = broker.fetch({0: 0}, min_bytes=1_000_000, max_wait_ms=100)
        await _parked(waiting)
        batch_bytes = broker.append(0)
        answer = await asyncio.wait_for(waiting, WAIT_S)
        assert len(answer[0]["records"]) == batch_bytes
        assert broker.reads[0] == 2

    asyncio.run(scenario())


def test_a_consumer_waits_for_the_high_watermark_not_the_append(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path, partitions=1, isr=[ME, FOLLOWER])
        waiting = broker.fetch({0: 0})
        await _parked(waiting)
        broker.append(0)  # not committed: the follower has not fetched it
        await _parked(waiting)
        assert broker.reads[0] == 1
        broker.manager.read("t", 0, 1, 1024, True, replica_id=FOLLOWER)
        answer = await asyncio.wait_for(waiting, WAIT_S)
        assert answer[0]["records"] and answer[0]["high_watermark"] == 1

    asyncio.run(scenario())


def test_a_follower_fetch_completes_on_the_append(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path, partitions=1, isr=[ME, FOLLOWER])
        waiting = broker.fetch({0: 0}, replica_id=FOLLOWER)
        await _parked(waiting)
        broker.append(0)
        answer = await asyncio.wait_for(waiting, WAIT_S)
        assert answer[0]["records"]

    asyncio.run(scenario())


def test_a_leader_change_completes_the_fetch(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path, partitions=1, isr=[ME, FOLLOWER], api_version=10)
        waiting = broker.fetch({0: 0})
        await _parked(waiting)
        moved = PartitionState(leader=FOLLOWER, leader_epoch=1, isr=[FOLLOWER], controller_epoch=1)
        broker.apply(0, moved, zk_version=1)
        answer = await asyncio.wait_for(waiting, WAIT_S)
        assert answer[0]["error_code"] == ErrorCode.not_leader_or_follower

    asyncio.run(scenario())


def test_a_v11_consumer_is_served_by_the_replica_that_became_follower(tmp_path: Path) -> None:
    # Kafka 3.9 lets a follower serve a consumer whose fetch carries client metadata (v11+,
    # KIP-392), up to the follower's high watermark.
    async def scenario() -> None:
        broker = Broker(tmp_path, partitions=1, isr=[ME, FOLLOWER])
        waiting = broker.fetch({0: 0})
        await _parked(waiting)
        moved = PartitionState(leader=FOLLOWER, leader_epoch=1, isr=[FOLLOWER], controller_epoch=1)
        broker.apply(0, moved, zk_version=1)
        answer = await asyncio.wait_for(waiting, WAIT_S)
        assert answer[0]["error_code"] == ErrorCode.none
        assert answer[0]["records"] == b""
        # The follower's high watermark moves with the leader's: its consumers get the data.
        parked = broker.fetch({0: 0})
        await _parked(parked)
        batch = build_batch([SimpleRecord(None, b"w" * 10, (), 1000)])
        broker.manager.append_replicated(broker.partition(0), batch, 1, 0)
        answer = await asyncio.wait_for(parked, WAIT_S)
        assert answer[0]["error_code"] == ErrorCode.none
        assert answer[0]["high_watermark"] == 1
        assert bytes(answer[0]["records"]) == batch

    asyncio.run(scenario())


def test_an_epoch_bump_completes_a_fetch_that_named_the_old_epoch(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(tmp_path, partitions=1, isr=[ME, FOLLOWER])
        named = broker.fetch({0: 0}, replica_id=FOLLOWER, leader_epoch=0)
        unnamed = broker.fetch({0: 0}, replica_id=FOLLOWER)
        await _parked(named)
        bumped = PartitionState(leader=ME, leader_epoch=1, isr=[ME], controller_epoch=1)
        broker.apply(0, bumped, zk_version=1)
        answer = await asyncio.wait_for(named, WAIT_S)
        assert answer[0]["error_code"] == ErrorCode.fenced_leader_epoch
        await _parked(unnamed)  # as in Kafka, an epoch it did not name does not complete it
        unnamed.cancel()

    asyncio.run(scenario())


# -- completion rules on stand-ins for the partition and its log --------------------------


class _Segment:
    def __init__(self, base_offset: int, size_bytes: int) -> None:
        self.base_offset = base_offset
        self.size_bytes = size_bytes
        self.offset_index = SimpleNamespace(lookup=lambda offset: (base_offset, 0))


class _Log:
    """Positions only: reading it fails the test."""

    def __init__(self, log_end_offset: int, active: _Segment) -> None:
        self.log_end_offset = log_end_offset
        self.log_start_offset = 0
        self.active_segment = active

    def segment_for(self, offset: int) -> _Segment:
        return self.active_segment

    def read(self, *args: Any) -> bytes:
        raise AssertionError("a delayed fetch read the log to decide completion")


def _stand_in(log_end_offset: int, high_watermark: int) -> Any:
    log = _Log(log_end_offset, _Segment(0, 100 * log_end_offset))
    return SimpleNamespace(
        log=log,
        high_watermark=high_watermark,
        is_leader=True,
        leadership_generation=1,
        leader_epoch=0,
    )


def _read(partition: Any) -> ReadResult:
    """What the fetch's read answered just before it parked."""
    return ReadResult(
        ErrorCode.none,
        b"",
        partition.high_watermark,
        partition.log.log_start_offset,
        partition.log.log_end_offset,
    )


def _park(partition: Any, fetch_offset: int, min_bytes: int, follower: bool) -> DelayedFetch:
    request = FetchRequestPosition(("t", 0), fetch_offset, max_bytes=1024 * 1024)
    return asyncio.run(
        DelayedFetch.park(lambda key: partition, [(request, _read(partition))], min_bytes, follower)
    )


def _completes(delayed: DelayedFetch, lookup: Any) -> bool:
    return asyncio.run(delayed.try_complete(lookup))


def test_truncation_below_the_fetch_offset_completes_the_fetch() -> None:
    partition = _stand_in(log_end_offset=10, high_watermark=10)
    delayed = _park(partition, fetch_offset=10, min_bytes=1, follower=True)
    assert not _completes(delayed, lambda key: partition)
    partition.log.log_end_offset = 7
    partition.log.active_segment.size_bytes = 700
    assert _completes(delayed, lambda key: partition)


def test_a_rolled_segment_completes_the_fetch() -> None:
    partition = _stand_in(log_end_offset=10, high_watermark=10)
    delayed = _park(partition, fetch_offset=10, min_bytes=1_000_000, follower=True)
    partition.log.log_end_offset = 11
    partition.log.active_segment = _Segment(10, 100)
    assert _completes(delayed, lambda key: partition)


def test_bytes_count_from_the_fetch_position_to_the_end_the_fetcher_may_read() -> None:
    partition = _stand_in(log_end_offset=10, high_watermark=10)
    consumer = _park(partition, fetch_offset=10, min_bytes=300, follower=False)
    follower = _park(partition, fetch_offset=10, min_bytes=300, follower=True)
    partition.log.log_end_offset = 13
    partition.log.active_segment.size_bytes = 1300  # three batches of 100 bytes
    assert _completes(follower, lambda key: partition)
    assert not _completes(consumer, lambda key: partition)  # none committed yet
    partition.high_watermark = 13
    assert _completes(consumer, lambda key: partition)


def test_an_unknown_partition_completes_the_fetch() -> None:
    partition = _stand_in(log_end_offset=10, high_watermark=10)
    delayed = _park(partition, fetch_offset=10, min_bytes=1, follower=False)
    assert _completes(delayed, lambda key: None)


def test_completion_stops_looking_once_min_bytes_are_readable() -> None:
    partitions = {("t", p): _stand_in(log_end_offset=10, high_watermark=10) for p in range(100)}
    requests = [FetchRequestPosition(key, 10, max_bytes=1024 * 1024) for key in partitions]
    parked = [(request, _read(partitions[request.key])) for request in requests]
    delayed = asyncio.run(DelayedFetch.park(partitions.get, parked, min_bytes=1, follower=True))
    looked_at: list[tuple[str, int]] = []

    def lookup(key: tuple[str, int]) -> Any:
        looked_at.append(key)
        return partitions[key]

    assert not _completes(delayed, lookup)
    assert len(looked_at) == 100  # nothing new anywhere: every partition is looked at
    appended = partitions[("t", 2)]
    appended.log.log_end_offset = 11
    appended.log.active_segment.size_bytes = 1100
    looked_at.clear()
    assert _completes(delayed, lookup)
    assert looked_at == [("t", 0), ("t", 1), ("t", 2)]


def test_a_partition_that_moved_between_its_read_and_the_park_is_noted() -> None:
    request = FetchRequestPosition(("t", 0), 10, max_bytes=1024 * 1024)
    still = _stand_in(log_end_offset=10, high_watermark=10)
    parked = asyncio.run(DelayedFetch.park(lambda key: still, [(request, _read(still))], 1, True))
    assert not parked.changed_since_read
    moved = _stand_in(log_end_offset=10, high_watermark=10)
    earlier = _read(moved)
    moved.log.log_end_offset = 11  # appended during a pause of the park
    parked = asyncio.run(DelayedFetch.park(lambda key: moved, [(request, earlier)], 1, True))
    assert parked.changed_since_read
    lost = _stand_in(log_end_offset=10, high_watermark=10)
    earlier = _read(lost)
    lost.is_leader = False  # became a follower during a pause of the park
    parked = asyncio.run(DelayedFetch.park(lambda key: lost, [(request, earlier)], 1, True))
    assert parked.changed_since_read
