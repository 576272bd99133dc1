"""The leader's ISR changes through AlterPartition (Kafka's DefaultAlterPartitionManager and
Partition's pending ISR states), with a fake controller: batching, one request in flight, what
each answer does to the partition, and the maximal ISR the high watermark counts meanwhile."""

from __future__ import annotations

import asyncio
import io
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from broker.cluster.alter_partition_channel import (
    AlterPartitionChannel,
    build_request,
    choose_version,
    read_answer,
)
from broker.log.log import Log, LogConfig
from broker.log.record_codec import SimpleRecord, build_batch
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.replication.alter_partition_manager import (
    AlterPartitionAnswer,
    AlterPartitionEntry,
    AlterPartitionManager,
    ControllerUnreachableError,
    PartitionAnswer,
)
from broker.replication.partition import Partition
from zk.znodes import PartitionState, uuid_to_kafka_string

ME, OTHER, THIRD = 1, 2, 3
EPOCH = 4
TOPIC_ID = uuid_to_kafka_string(uuid.UUID(int=7))
Request = tuple[list[AlterPartitionEntry], bool, asyncio.Future[AlterPartitionAnswer]]


@dataclass
class FakeController:
    """Holds each request until the test answers it."""

    requests: list[Request] = field(default_factory=list)
    unreachable: int = 0  # the next N sends fail without an answer
    closed: bool = False

    async def send(
        self, broker_epoch: int, entries: list[AlterPartitionEntry], use_topic_ids: bool
    ) -> AlterPartitionAnswer:
        assert broker_epoch == 77
        if self.unreachable:
            self.unreachable -= 1
            raise ControllerUnreachableError("connection refused")
        future: asyncio.Future[AlterPartitionAnswer] = asyncio.get_running_loop().create_future()
        self.requests.append((entries, use_topic_ids, future))
        return await future

    async def close(self) -> None:
        self.closed = True

    def answer(self, index: int, answers: dict[tuple[str, int], PartitionAnswer]) -> None:
        self.requests[index][2].set_result(AlterPartitionAnswer(ErrorCode.none, answers))

    def refuse(self, index: int, error: ErrorCode) -> None:
        self.requests[index][2].set_result(AlterPartitionAnswer(error))


def _leader(tmp_path: Path, name: str, isr: list[int], records: int = 0) -> Partition:
    replica_log = Log.open(tmp_path / f"{name}-0", LogConfig())
    partition = Partition(name, 0, replica_log, [], broker_id=ME)
    state = PartitionState(leader=ME, leader_epoch=EPOCH, isr=isr, controller_epoch=1)
    partition.make_leader(state, zk_version=10, replicas=[ME, OTHER, THIRD], now_ms=0)
    for index in range(records):
        batch = build_batch([SimpleRecord(None, b"v%d" % index, (), 1000)])
        replica_log.append_as_leader(bytearray(batch), partition.leader_epoch, 1000)
    return partition


@dataclass
class Setup:
    controller: FakeController
    manager: AlterPartitionManager
    changed: list[Partition]


def _setup(retry_backoff_s: float = 0.01) -> Setup:
    controller = FakeController()
    changed: list[Partition] = []
    manager = AlterPartitionManager(
        ME,
        broker_epoch=lambda: 77,
        sender=controller,
        on_isr_changed=changed.append,
        topic_id=lambda topic: TOPIC_ID if topic != "no-id" else None,
        retry_backoff_s=retry_backoff_s,
        max_unreachable_backoff_s=0.04,
    )
    return Setup(controller, manager, changed)


async def _turns() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def _until(condition: Callable[[], bool], what: str, timeout_s: float = 2.0) -> None:
    async def wait() -> None:
        while not condition():
            await asyncio.sleep(0.005)

    try:
        await asyncio.wait_for(wait(), timeout_s)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def _run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(scenario())  # type: ignore[arg-type]


def _ok(isr: list[int], partition_epoch: int, leader_epoch: int = EPOCH) -> PartitionAnswer:
    return PartitionAnswer(ErrorCode.none, leader_epoch, tuple(isr), partition_epoch)


def test_one_request_in_flight_and_the_next_carries_every_change_waiting(tmp_path: Path) -> None:
    async def scenario() -> None:
        s = _setup()
        a, b, c = (_leader(tmp_path, name, [ME, OTHER, THIRD]) for name in "abc")
        s.manager.propose(a, [ME, OTHER])
        await _turns()
        s.manager.propose(b, [ME, OTHER])
        s.manager.propose(c, [ME, THIRD])
        await _turns()
        assert len(s.controller.requests) == 1, "a second request left while one was in flight"
        [entry] = s.controller.requests[0][0]
        assert (entry.topic, entry.isr, entry.leader_epoch, entry.partition_epoch) == (
            "a",
            (ME, OTHER),
            EPOCH,
            10,
        )
        assert s.controller.requests[0][1] is True  # every topic has an id: v2+
        s.controller.answer(0, {("a", 0): _ok([ME, OTHER], 11)})
        await _until(lambda: len(s.controller.requests) == 2, "the second request")
        assert sorted(e.topic for e in s.controller.requests[1][0]) == ["b", "c"]
        s.controller.answer(1, {("b", 0): _ok([ME, OTHER], 11), ("c", 0): _ok([ME, THIRD], 11)})
        await _until(lambda: not s.manager.unsent and not s.manager.in_flight, "all answered")
        assert [p.isr for p in (a, b, c)] == [[ME, OTHER], [ME, OTHER], [ME, THIRD]]
        assert [p.zk_version for p in (a, b, c)] == [11, 11, 11]
        assert s.manager.shrinks == 3 and s.manager.expands == 0
        assert s.changed == [a, b, c]
        await s.manager.stop()
        assert s.controller.closed

    _run(scenario)


def test_a_topic_without_an_id_makes_the_request_name_topics(tmp_path: Path) -> None:
    async def scenario() -> None:
        s = _setup()
        s.manager.propose(_leader(tmp_path, "no-id", [ME, OTHER]), [ME])
        await _until(lambda: bool(s.controller.requests), "the request")
        entries, use_topic_ids, _ = s.controller.requests[0]
        assert use_topic_ids is False and entries[0].topic_id is None
        await s.manager.stop()

    _run(scenario)


def test_a_second_change_waits_while_one_is_pending(tmp_path: Path) -> None:
    async def scenario() -> None:
        s = _setup()
        a = _leader(tmp_path, "a", [ME, OTHER, THIRD])
        s.manager.propose(a, [ME, OTHER])
        s.manager.propose(a, [ME])
        await _turns()
        assert [e.isr for e in s.controller.requests[0][0]] == [(ME, OTHER)]
        assert a.pending_isr is not None and a.pending_isr.isr == (ME, OTHER)
        await s.manager.stop()

    _run(scenario)


def test_a_pending_shrink_keeps_the_committed_isr_for_the_high_watermark(tmp_path: Path) -> None:
    async def scenario() -> None:
        s = _setup()
        a = _leader(tmp_path, "a", [ME, OTHER, THIRD], records=5)
        a.update_follower_fetch(OTHER, 5, now_ms=1)
        a.update_follower_fetch(THIRD, 2, now_ms=1)
        assert a.high_watermark == 2
        s.manager.propose(a, [ME, OTHER])
        await _turns()
        assert a.maximal_isr == [ME, OTHER, THIRD]
        assert not a.maybe_increment_high_watermark(), "the shrink may still be refused"
        assert a.high_watermark == 2
        s.controller.answer(0, {("a", 0): _ok([ME, OTHER], 11)})
        await _until(lambda: a.pending_isr is None, "the answer")
        assert a.isr == [ME, OTHER] and a.high_watermark == 5
        await s.manager.stop()

    _run(scenario)


def test_a_pending_expand_counts_the_new_member_for_the_high_watermark(tmp_path: Path) -> None:
    async def scenario() -> None:
        s = _setup()
        a = _leader(tmp_path, "a", [ME, OTHER], records=5)
        a.update_follower_fetch(OTHER, 3, now_ms=1)
        a.update_follower_fetch(THIRD, 3, now_ms=1)
        assert a.high_watermark == 3
        expanded = a.isr_after_expand(THIRD)
        assert expanded == [ME, OTHER, THIRD]
        s.manager.propose(a, expanded)
        await _turns()
        assert a.isr == [ME, OTHER] and a.maximal_isr == [ME, OTHER, THIRD]
        a.update_follower_fetch(OTHER, 5, now_ms=2)
        assert a.high_watermark == 3, "the member being added holds the high watermark back"
        a.update_follower_fetch(THIRD, 4, now_ms=2)
        assert a.high_watermark == 4
        s.controller.answer(0, {("a", 0): _ok([ME, OTHER, THIRD], 11)})
        await _until(lambda: a.pending_isr is None, "the answer")
        assert a.isr == [ME, OTHER, THIRD] and a.zk_version == 11
        assert s.manager.expands == 1 and s.manager.shrinks == 0
        await s.manager.stop()

    _run(scenario)


@pytest.mark.parametrize("error", [ErrorCode.operation_not_attempted, ErrorCode.ineligible_replica])
def test_a_change_refused_unapplied_goes_back_to_the_committed_isr(
    tmp_path: Path, error: ErrorCode
) -> None:
    async def scenario() -> None:
        s = _setup()
        a = _leader(tmp_path, "a", [ME, OTHER], records=2)
        a.update_follower_fetch(THIRD, 2, now_ms=1)
        s.manager.propose(a, [ME, OTHER, THIRD])
        await _turns()
        s.controller.answer(0, {("a", 0): PartitionAnswer(error)})
        await _until(lambda: a.pending_isr is None, "the refusal")
        assert a.isr == [ME, OTHER] and a.maximal_isr == [ME, OTHER] and a.zk_version == 10
        assert s.manager.failed == 1 and s.manager.expands == 0
        s.manager.propose(a, [ME, OTHER, THIRD])  # a later check may ask again
        await _until(lambda: len(s.controller.requests) == 2, "the second attempt")
        await s.manager.stop()

    _run(scenario)


@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.invalid_update_version,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.unknown_topic_id,
        ErrorCode.invalid_request,
    ],
)
def test_a_change_refused_for_a_newer_state_waits_for_that_state(
    tmp_path: Path, error: ErrorCode
) -> None:
    async def scenario() -> None:
        s = _setup()
        a = _leader(tmp_path, "a", [ME, OTHER, THIRD])
        s.manager.propose(a, [ME, OTHER])
        await _turns()
        s.controller.answer(0, {("a", 0): PartitionAnswer(error)})
        await _until(lambda: not s.manager.in_flight, "the answer")
        await asyncio.sleep(0.05)  # well past the retry back-off
        assert len(s.controller.requests) == 1, "not sent again"
        assert a.pending_isr is not None, "still pending"
        s.manager.propose(a, [ME])
        assert len(s.manager.unsent) == 0, "no other change starts meanwhile"
        # The controller's state arrives (the state znode's watch or a LeaderAndIsr).
        state = PartitionState(ME, EPOCH, [ME, THIRD], controller_epoch=1)
        assert a.is_newer(state, 12)
        a.make_leader(state, 12, [ME, OTHER, THIRD], now_ms=5)
        assert a.pending_isr is None and a.isr == [ME, THIRD]
        await s.manager.stop()

    _run(scenario)


def test_another_partition_error_sends_the_change_again(tmp_path: Path) -> None:
    async def scenario() -> None:
        s = _setup()
        a = _leader(tmp_path, "a", [ME, OTHER, THIRD])
        s.manager.propose(a, [ME, OTHER])
        await _turns()
        s.controller.answer(0, {("a", 0): PartitionAnswer(ErrorCode.not_controller)})
        await _until(lambda: len(s.controller.requests) == 2, "the retry")
        assert [e.isr for e in s.controller.requests[1][0]] == [(ME, OTHER)]
        s.controller.answer(1, {("a", 0): _ok([ME, OTHER], 11)})
        await _until(lambda: a.pending_isr is None, "the answer")
        assert a.isr == [ME, OTHER]
        await s.manager.stop()

    _run(scenario)


def test_a_top_level_error_or_no_controller_sends_everything_again(tmp_path: Path) -> None:
    async def scenario() -> None:
        s = _setup()
        a, b = _leader(tmp_path, "a", [ME, OTHER]), _leader(tmp_path, "b", [ME, OTHER])
        s.controller.unreachable = 2
        s.manager.propose(a, [ME])
        await _until(lambda: len(s.controller.requests) == 1, "a request answered")
        s.manager.propose(b, [ME])
        s.controller.refuse(0, ErrorCode.stale_broker_epoch)
        await _until(lambda: len(s.controller.requests) == 2, "the retry")
        assert sorted(e.topic for e in s.controller.requests[1][0]) == ["a", "b"]
        # "a" is left out of the answer: it goes again at once.
        s.controller.answer(1, {("b", 0): _ok([ME], 11)})
        await _until(lambda: len(s.controller.requests) == 3, "the missing partition again")
        assert [e.topic for e in s.controller.requests[2][0]] == ["a"]
        s.controller.answer(2, {("a", 0): _ok([ME], 11)})
        await _until(lambda: a.pending_isr is None and b.pending_isr is None, "both answered")
        assert a.isr == b.isr == [ME]
        await s.manager.stop()

    _run(scenario)


def test_an_answer_never_takes_the_partition_back(tmp_path: Path) -> None:
    async def scenario() -> None:
        s = _setup()
        a = _leader(tmp_path, "a", [ME, OTHER, THIRD])
        s.manager.propose(a, [ME, OTHER])
        await _turns()
        # The watch brings the controller's write (v11) and then a newer one (v12) first.
        a.make_leader(PartitionState(ME, EPOCH, [ME, OTHER], 1), 11, [ME, OTHER, THIRD], 1)
        a.make_leader(PartitionState(ME, EPOCH, [ME], 1), 12, [ME, OTHER, THIRD], 2)
        s.controller.answer(0, {("a", 0): _ok([ME, OTHER], 11)})
        await _until(lambda: not s.manager.in_flight, "the answer")
        assert (a.isr, a.zk_version) == ([ME], 12)
        # Pending with an answer older than the version known: ignored, still pending.
        pending = a.begin_isr_change([ME, OTHER])
        assert pending is not None
        assert not a.commit_isr_change(pending, EPOCH, [ME, OTHER], 11)
        assert not a.commit_isr_change(pending, EPOCH + 1, [ME, OTHER], 13)
        assert (a.isr, a.zk_version, a.pending_isr) == ([ME], 12, pending)
        assert a.commit_isr_change(pending, EPOCH, [ME, OTHER], 13)
        assert (a.isr, a.zk_version, a.pending_isr) == ([ME, OTHER], 13, None)
        await s.manager.stop()

    _run(scenario)


def test_losing_leadership_settles_a_pending_change(tmp_path: Path) -> None:
    async def scenario() -> None:
        s = _setup()
        a = _leader(tmp_path, "a", [ME, OTHER, THIRD])
        s.manager.propose(a, [ME, OTHER])
        await _turns()
        a.make_follower(PartitionState(OTHER, EPOCH + 1, [OTHER, THIRD], 1), 11, [ME, OTHER])
        assert a.pending_isr is None
        s.controller.answer(0, {("a", 0): _ok([ME, OTHER], 11)})
        await _until(lambda: not s.manager.in_flight, "the answer")
        assert (a.isr, a.leader_id, a.is_leader) == ([OTHER, THIRD], OTHER, False)
        assert s.changed == [] and s.manager.shrinks == 0
        await s.manager.stop()

    _run(scenario)


# -- the request on the wire ------------------------------------------------------------------


def test_the_version_is_the_highest_both_serve_at_most_1_without_topic_ids() -> None:
    key = int(ApiKey.ALTER_PARTITION)
    assert choose_version({key: (0, 3)}, use_topic_ids=True) == 3
    assert choose_version({key: (0, 2)}, use_topic_ids=True) == 2
    assert choose_version({key: (0, 3)}, use_topic_ids=False) == 1
    with pytest.raises(ControllerUnreachableError):
        choose_version({}, use_topic_ids=True)
    with pytest.raises(ControllerUnreachableError):
        choose_version({key: (2, 3)}, use_topic_ids=False)


def _round_trip(entity: Any) -> Any:
    """Encoded and decoded, as on the wire."""
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    decoded, size = entity_reader(type(entity))(memoryview(buffer.getvalue()), 0)
    assert size == len(buffer.getvalue())
    return decoded


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_each_version_is_built_and_its_answer_read(version: int) -> None:
    entries = [
        AlterPartitionEntry("t", TOPIC_ID, 0, EPOCH, (ME, OTHER), 10),
        AlterPartitionEntry("t", TOPIC_ID, 1, EPOCH, (ME,), 3),
    ]
    request = _round_trip(build_request(ME, 77, entries, version))
    assert (request.broker_id, request.broker_epoch) == (ME, 77)
    [topic] = request.topics
    if version >= 2:
        assert uuid_to_kafka_string(topic.topic_id) == TOPIC_ID
    else:
        assert topic.topic_name == "t"
    first = topic.partitions[0]
    if version >= 3:
        assert [(m.broker_id, m.broker_epoch) for m in first.new_isr_with_epochs] == [
            (ME, -1),
            (OTHER, -1),
        ]
    else:
        assert list(first.new_isr) == [ME, OTHER]
    assert (first.leader_epoch, first.partition_epoch) == (EPOCH, 10)
    answered_topic: dict[str, object] = {
        "partitions": [
            {
                "partition_index": 0,
                "error_code": ErrorCode.none,
                "leader_id": ME,
                "leader_epoch": EPOCH,
                "isr": [ME, OTHER],
                "leader_recovery_state": 0,
                "partition_epoch": 11,
            },
            {
                "partition_index": 1,
                "error_code": ErrorCode.invalid_update_version,
                "leader_id": 0,
                "leader_epoch": 0,
                "isr": [],
                "leader_recovery_state": 0,
                "partition_epoch": 0,
            },
        ]
    }
    if version >= 2:
        answered_topic["topic_id"] = topic.topic_id
    else:
        answered_topic["topic_name"] = "t"
    response = adapter.build(
        response_class(ApiKey.ALTER_PARTITION, version),
        {"throttle_time": 0, "error_code": ErrorCode.none, "topics": [answered_topic]},
    )
    answer = read_answer(_round_trip(response), version, entries)
    assert answer.partitions[("t", 0)] == _ok([ME, OTHER], 11)
    assert answer.partitions[("t", 1)].error_code == ErrorCode.invalid_update_version


# -- the channel to the controller --------------------------------------------------------------


@dataclass
class FakeClient:
    """Answers ApiVersions; holds AlterPartition until `response` is set."""

    response: asyncio.Future[Any]
    closed: bool = False
    sent: list[Any] = field(default_factory=list)

    async def api_versions(self) -> dict[int, tuple[int, int]]:
        return {int(ApiKey.ALTER_PARTITION): (0, 3)}

    async def send(self, request: Any) -> Any:
        self.sent.append(request)
        return await asyncio.shield(self.response)

    async def close(self) -> None:
        self.closed = True


@dataclass
class View:
    controller_id: int | None


def _channel(view: View, client: FakeClient) -> AlterPartitionChannel:
    as_view: Any = view  # the channel reads only `controller_id`
    channel = AlterPartitionChannel(ME, lambda: as_view, lambda _: ("127.0.0.1", 9), 30_000)

    async def connect(controller_id: int, address: tuple[str, int]) -> Any:
        channel._client = client  # type: ignore[assignment]
        return client

    channel._connect = connect  # type: ignore[method-assign]
    return channel


def test_the_channel_gives_up_on_a_request_once_another_broker_is_controller() -> None:
    async def scenario() -> None:
        view = View(controller_id=2)
        client = FakeClient(asyncio.get_running_loop().create_future())
        channel = _channel(view, client)
        entries = [AlterPartitionEntry("t", TOPIC_ID, 0, EPOCH, (ME,), 10)]
        sending = asyncio.ensure_future(channel.send(77, entries, use_topic_ids=True))
        await _until(lambda: bool(client.sent), "the request")
        assert client.sent[0].broker_epoch == 77 and not sending.done()
        view.controller_id = 3
        with pytest.raises(ControllerUnreachableError, match="moved"):
            await asyncio.wait_for(sending, 2.0)
        assert client.closed, "the connection to the old controller is dropped"
        view.controller_id = None
        with pytest.raises(ControllerUnreachableError, match="no controller"):
            await channel.send(77, entries, use_topic_ids=True)

    _run(scenario)


def test_the_channel_answers_with_the_controllers_response() -> None:
    async def scenario() -> None:
        response: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        client = FakeClient(response)
        channel = _channel(View(controller_id=2), client)
        entries = [AlterPartitionEntry("t", TOPIC_ID, 0, EPOCH, (ME,), 10)]
        response.set_result(
            adapter.build(
                response_class(ApiKey.ALTER_PARTITION, 3),
                {"throttle_time": 0, "error_code": ErrorCode.not_controller, "topics": []},
            )
        )
        answer = await channel.send(77, entries, use_topic_ids=True)
        assert answer.error_code == ErrorCode.not_controller
        assert client.sent[0].__version__ == 3
        assert client.closed, "NOT_CONTROLLER: the next attempt looks the controller up again"

    _run(scenario)
