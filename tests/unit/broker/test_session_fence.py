"""Self-fencing from ZooKeeper (broker.cluster.session_fence, zk.answer_clock): the bound, the
cases that must not fence a live session, and what a fence changes for the parts that lead."""

from __future__ import annotations

import asyncio
import socket
import struct
from pathlib import Path

from kazoo.protocol.serialization import Connect
from kio.schema.errors import ErrorCode

from broker.cluster.metadata_cache import MetadataCache
from broker.cluster.session_fence import SessionFence, beyond_session
from broker.log.config import LogConfig
from broker.log.manager import LogManager
from broker.log.record_codec import SimpleRecord, build_batch
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.replication.replica_manager import ReplicaManager
from tests.unit.replication.hosting import prepare_now
from zk.answer_clock import AnswerClock
from zk.cluster_watch import ClusterView
from zk.kazoo_extensions import PollingHandler, report_granted_timeouts
from zk.znodes import BrokerRegistration, PartitionState, TopicAssignment

ME, OTHER = 1, 2
TIMEOUT_MS = 6000
SESSION = 0x1234


class FakeTime:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


class Fixture:
    """A fence on a fake clock, with a connection open and an answer at t=1000."""

    def __init__(self, enabled: bool = True) -> None:
        self.time = FakeTime()
        self.clock = AnswerClock(self.time)
        self.session: int | None = SESSION
        self.fence = SessionFence(
            ME, self.clock, lambda: TIMEOUT_MS, lambda: self.session, enabled=enabled
        )
        self.fence.registered_session_id = SESSION
        self.told: list[bool] = []
        self.fence.listeners.append(self.told.append)
        self.clock.opened()
        self.clock.answered()

    def advance(self, seconds: float) -> None:
        self.time.now_s += seconds

    def quiet_now(self) -> None:
        """The connection thread looked at its socket and found nothing unread."""
        self.clock.quiet(self.time.now_s)


def test_the_bound_is_strictly_beyond_the_session_timeout() -> None:
    assert not beyond_session(None, TIMEOUT_MS)
    assert not beyond_session(6.0, TIMEOUT_MS)
    assert beyond_session(6.001, TIMEOUT_MS)


def test_no_silence_is_measured_before_the_first_answer() -> None:
    time = FakeTime()
    clock = AnswerClock(time)
    assert clock.confirmed_silence_s() is None
    clock.closed()
    time.now_s += 60
    assert clock.confirmed_silence_s() is None


def test_silence_runs_to_the_last_look_at_an_empty_socket_while_a_connection_is_open() -> None:
    f = Fixture()
    f.advance(4)
    f.quiet_now()
    f.advance(3)  # no look since: the socket may hold answers read later
    assert f.clock.confirmed_silence_s(f.time.now_s) == 4.0


def test_silence_runs_to_now_while_no_connection_is_open() -> None:
    f = Fixture()
    f.advance(2)
    f.clock.closed()
    f.advance(5)
    assert f.clock.confirmed_silence_s(f.time.now_s) == 7.0


def test_a_look_from_before_the_last_answer_counts_no_silence() -> None:
    f = Fixture()
    f.quiet_now()
    f.advance(1)
    f.clock.answered()
    f.advance(10)
    assert f.clock.confirmed_silence_s(f.time.now_s) == 0.0


def test_fenced_once_the_confirmed_silence_passes_the_session_timeout() -> None:
    f = Fixture()
    f.advance(6.0)
    f.quiet_now()
    f.fence.check(f.time.now_s)
    assert not f.fence.fenced, "exactly the timeout is within the bound"
    f.advance(0.1)
    f.quiet_now()
    f.fence.check(f.time.now_s)
    assert f.fence.fenced and f.told == [True] and f.fence.fences == 1


def test_fenced_when_no_connection_is_open_for_longer_than_the_timeout() -> None:
    f = Fixture()
    f.advance(4)
    f.clock.closed()  # kazoo dropped the connection and reconnects in vain
    f.advance(2.5)
    f.fence.check(f.time.now_s)
    assert f.fence.fenced


def test_a_stop_shorter_than_the_timeout_does_not_fence_before_the_socket_is_read() -> None:
    """SIGSTOP for 5 s, 2 s after the last answer: after SIGCONT the loop may look before the
    connection thread has read the ping answers waiting in its socket. Wall time says 7 s of
    silence; no look at an empty socket says more than 2."""
    f = Fixture()
    f.advance(2)
    f.quiet_now()
    f.advance(5)  # stopped: no look, answers pile up unread
    f.fence.check(f.time.now_s)
    assert not f.fence.fenced
    f.clock.answered()  # the connection thread runs and reads them
    f.advance(0.1)
    f.quiet_now()
    f.fence.check(f.time.now_s)
    assert not f.fence.fenced and f.told == []


def test_a_slow_zookeeper_answering_within_the_timeout_never_fences() -> None:
    f = Fixture()
    for _ in range(20):
        for _ in range(55):  # 5.5 s between answers, looked at every 0.1 s
            f.advance(0.1)
            f.quiet_now()
            f.fence.check(f.time.now_s)
        f.clock.answered()
    assert f.fence.fences == 0


def test_a_flapping_link_never_fences_while_answers_get_through_within_the_timeout() -> None:
    f = Fixture()
    for outage_s in (1.0, 3.0, 5.9, 0.5, 4.0):
        f.advance(outage_s)
        f.clock.closed()
        f.fence.check(f.time.now_s)
        f.clock.opened()
        f.clock.answered()  # reconnected in the same session
    assert f.fence.fences == 0


def test_the_fence_lifts_at_the_next_answer_when_the_session_survived() -> None:
    f = Fixture()
    f.advance(7)
    f.quiet_now()
    f.fence.check(f.time.now_s)
    assert f.fence.fenced
    f.advance(1)
    f.fence.check(f.time.now_s)
    assert f.fence.fenced, "no answer yet"
    f.clock.answered()
    f.fence.check(f.time.now_s)
    assert not f.fence.fenced and f.told == [True, False]


def test_after_an_expired_session_the_fence_stays_until_the_broker_registers_again() -> None:
    f = Fixture()
    f.clock.closed()
    f.advance(7)
    f.fence.check(f.time.now_s)
    assert f.fence.fenced
    f.session = None  # the reconnect is told the session expired
    f.clock.opened()
    f.clock.answered()
    f.fence.check(f.time.now_s)
    assert f.fence.fenced
    f.session = SESSION + 1  # a new session, not registered in yet
    f.fence.check(f.time.now_s)
    assert f.fence.fenced
    f.fence.registered_session_id = SESSION + 1
    f.fence.check(f.time.now_s)
    assert not f.fence.fenced


def test_disabled_fencing_never_fences() -> None:
    f = Fixture(enabled=False)
    f.clock.closed()
    f.advance(60)
    f.fence.check(f.time.now_s)
    assert not f.fence.fenced and f.fence.fences == 0


def test_the_connection_thread_looks_at_an_empty_socket_and_not_at_a_full_one() -> None:
    clock = AnswerClock()
    handler = PollingHandler(clock)
    ours, zookeeper = socket.socketpair()
    try:
        handler._zk_fd = ours.fileno()
        clock.opened()
        clock.answered()
        assert handler.select([ours], [], [], 0.25)[0] == []
        seen = clock.quiet_seen_s
        assert seen is not None and clock.last_answer_s is not None
        assert seen > clock.last_answer_s
        zookeeper.sendall(b"answer")
        assert handler.select([ours], [], [], 5)[0] == [ours]
        assert clock.quiet_seen_s == seen, "an unread answer is no quiet look"
    finally:
        ours.close()
        zookeeper.close()


def _leading(tmp_path: Path) -> ReplicaManager:
    logs = LogManager([tmp_path], LogConfig())
    manager = ReplicaManager(ME, logs, lambda t, p: True, lambda topic: 1)
    state = PartitionState(leader=ME, leader_epoch=0, isr=[ME, OTHER], controller_epoch=1)
    prepare_now(manager, "t", "", [0])
    manager.apply_state("t", "", 0, [ME, OTHER], state, LogConfig(), zk_version=0)
    return manager


def _batch() -> bytes:
    return build_batch([SimpleRecord(None, b"v", (), 1000)])


def test_a_fenced_leader_answers_not_leader_and_its_acks_all_waiters_too(tmp_path: Path) -> None:
    async def scenario() -> None:
        manager = _leading(tmp_path)
        appended = manager.append_records("t", 0, _batch())
        assert appended.info is not None
        required = appended.info.last_offset + 1
        waiting = asyncio.create_task(manager.wait_for_replication("t", 0, required, 2, 30))
        await asyncio.sleep(0)
        manager.set_session_fenced(True)
        assert await asyncio.wait_for(waiting, 5) == ErrorCode.not_leader_or_follower
        not_leader = ErrorCode.not_leader_or_follower
        assert manager.append_records("t", 0, _batch()).error_code == not_leader
        assert manager.read("t", 0, 0, 1024, True).error_code == not_leader
        manager.set_session_fenced(False)
        assert manager.append_records("t", 0, _batch()).error_code == ErrorCode.none

    asyncio.run(scenario())


def test_a_fenced_broker_names_no_leader_where_it_would_name_itself() -> None:
    assignment = TopicAssignment(None, {0: [ME, OTHER], 1: [OTHER, ME]})
    view = ClusterView(
        topics={"t": assignment},
        partition_states={
            ("t", 0): (PartitionState(ME, 3, [ME, OTHER], 1), 0),
            ("t", 1): (PartitionState(OTHER, 2, [OTHER, ME], 1), 0),
        },
    )
    view.brokers = {
        broker_id: BrokerRegistration.create(
            broker_id, [f"PLAINTEXT://h:{9091 + broker_id}"], {"PLAINTEXT": "PLAINTEXT"}, 0
        )
        for broker_id in (ME, OTHER)
    }
    view.touch("t")
    cache = MetadataCache(view)
    assert cache.leader_and_epoch("t", 0) == (ME, 3)
    cache.fenced_broker_id = ME
    assert cache.leader_and_epoch("t", 0) == (-1, 3)
    assert cache.leader_and_epoch("t", 1) == (OTHER, 2)
    entry_cls = adapter.nested_class(
        adapter.nested_class(response_class(ApiKey.METADATA, 12), "topics"), "partitions"
    )
    encoded = asyncio.run(cache.encoded_partitions(entry_cls, "t"))
    assert encoded is not None
    # Each entry opens with its error code, partition index and leader id.
    heads = [struct.unpack_from(">hii", data) for data in encoded]
    assert heads == [(ErrorCode.leader_not_available.value, 0, -1), (0, 1, OTHER)]


def test_the_granted_session_timeout_is_taken_from_each_connect_response() -> None:
    class Granted:
        time_out = 4000

    class Connection:
        def _invoke(self, timeout: float, request: object, xid: int | None = None) -> object:
            return (Granted(), None) if isinstance(request, Connect) else None

    class Client:
        _connection = Connection()

    clock = AnswerClock()
    report_granted_timeouts(Client(), clock)
    Client._connection._invoke(1.0, Connect(0, 0, 6000, 0, b"\x00" * 16, False))
    assert clock.negotiated_session_timeout_ms == 4000
    Granted.time_out = 0  # an expired session: no timeout granted, the last one stays
    Client._connection._invoke(1.0, Connect(0, 0, 6000, 0, b"\x00" * 16, False))
    assert clock.negotiated_session_timeout_ms == 4000
