"""Incremental fetch sessions (KIP-227): the leader's cache and contexts, the fetcher's handler,
and the two talking to each other through in-memory reads."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from kio.schema.errors import ErrorCode

from broker.replication.fetch_context import new_context
from broker.replication.fetch_session import (
    SESSION_EVICTION_MS,
    CachedPartition,
    FetchPosition,
    FetchSessionCache,
    TopicPartition,
)
from broker.replication.fetch_session_handler import FetchSessionHandler, SessionRequest
from broker.replication.read_checks import ReadResult

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)


def _counter() -> Iterator[int]:
    yield from range(1, 1_000_000)


def _cache(max_slots: int = 10) -> FetchSessionCache:
    ids = _counter()
    return FetchSessionCache(max_slots, random_id=lambda: next(ids))


def _request(request: SessionRequest) -> Any:
    """A Fetch request as the handler sees it (kio-like attribute access)."""
    topics: dict[str, list[Any]] = {}
    for (topic, partition), position in request.to_send.items():
        topics.setdefault(topic, []).append(
            SimpleNamespace(
                partition=partition,
                fetch_offset=position.fetch_offset,
                partition_max_bytes=position.partition_max_bytes,
                current_leader_epoch=position.current_leader_epoch,
                log_start_offset=position.log_start_offset,
            )
        )
    forgotten: dict[str, list[int]] = {}
    for topic, partition in request.forgotten:
        forgotten.setdefault(topic, []).append(partition)
    return SimpleNamespace(
        session_id=request.session_id,
        session_epoch=request.epoch,
        topics=[SimpleNamespace(topic=t, partitions=p) for t, p in topics.items()],
        forgotten_topics_data=[
            SimpleNamespace(topic=t, partitions=p) for t, p in forgotten.items()
        ],
    )


class FakeLeader:
    """Logs of fixed contents: reading at `offset` returns what lies past it."""

    def __init__(self) -> None:
        self.log_end: dict[TopicPartition, int] = {A0: 0, A1: 0, B0: 0}
        self.high_watermark: dict[TopicPartition, int] = {A0: 0, A1: 0, B0: 0}
        self.reads: list[TopicPartition] = []

    def read(self, key: TopicPartition, position: FetchPosition) -> ReadResult:
        self.reads.append(key)
        if key not in self.log_end:
            return ReadResult(ErrorCode.unknown_topic_or_partition)
        size = max(self.log_end[key] - position.fetch_offset, 0)
        return ReadResult(ErrorCode.none, b"x" * size, self.high_watermark[key], 0)

    def serve(
        self, cache: FetchSessionCache, request: Any
    ) -> tuple[ErrorCode, int, dict[Any, Any]]:
        context = new_context(cache, request, now_ms=0)
        if context.error_code != ErrorCode.none:
            return context.error_code, 0, {}
        results = [(key, self.read(key, position)) for key, position in context.all_positions()]
        session_id, answered = context.respond(cache, results, privileged=True, now_ms=0)
        return ErrorCode.none, session_id, dict(answered)


def _positions(**offsets: int) -> dict[TopicPartition, FetchPosition]:
    keys = {"a0": A0, "a1": A1, "b0": B0}
    return {keys[name]: FetchPosition(offset, 1024) for name, offset in offsets.items()}


def test_a_full_fetch_with_epoch_0_creates_a_session_holding_all_partitions() -> None:
    cache, leader, handler = _cache(), FakeLeader(), FetchSessionHandler()
    request = handler.build(_positions(a0=0, a1=0, b0=0))
    assert request.full and request.session_id == 0
    error, session_id, answered = leader.serve(cache, _request(request))
    assert error == ErrorCode.none and session_id == 1
    assert set(answered) == {A0, A1, B0}  # a full response holds every partition
    assert handler.on_response(request, error, session_id)
    assert (handler.session_id, handler.next_epoch) == (1, 1)
    assert len(cache) == 1


def test_an_incremental_fetch_sends_only_moved_partitions_and_answers_only_changed_ones() -> None:
    cache, leader, handler = _cache(), FakeLeader(), FetchSessionHandler()
    first = handler.build(_positions(a0=0, a1=0, b0=0))
    handler.on_response(first, *leader.serve(cache, _request(first))[:2])
    leader.log_end[A1] = 5
    second = handler.build(_positions(a0=0, a1=0, b0=0))
    assert not second.full and second.to_send == {} and second.forgotten == []
    leader.reads.clear()
    error, session_id, answered = leader.serve(cache, _request(second))
    assert leader.reads == [A0, A1, B0]  # every session partition is read ...
    assert set(answered) == {A1}  # ... but only the one with records is answered
    assert handler.on_response(second, error, session_id) and handler.next_epoch == 2
    third = handler.build(_positions(a0=0, a1=5, b0=0))
    assert third.to_send == {A1: FetchPosition(5, 1024)}
    leader.high_watermark[A0] = 7  # a moved high watermark is news even without records
    assert set(leader.serve(cache, _request(third))[2]) == {A0}


def test_forgotten_partitions_leave_the_session() -> None:
    cache, leader, handler = _cache(), FakeLeader(), FetchSessionHandler()
    first = handler.build(_positions(a0=0, b0=0))
    handler.on_response(first, *leader.serve(cache, _request(first))[:2])
    second = handler.build(_positions(a0=0))
    assert second.forgotten == [B0]
    leader.reads.clear()
    leader.serve(cache, _request(second))
    assert leader.reads == [A0]


def test_a_partition_with_an_error_is_answered_every_time_and_once_more_after() -> None:
    cached = CachedPartition(FetchPosition(0, 1024))
    assert cached.must_respond(ErrorCode.none, 0, 3, 0)
    assert not cached.must_respond(ErrorCode.none, 0, 3, 0)
    assert cached.must_respond(ErrorCode.not_leader_or_follower, 0, 3, 0)
    assert cached.must_respond(ErrorCode.not_leader_or_follower, 0, 3, 0)
    assert cached.must_respond(ErrorCode.none, 0, 3, 0)  # the error cleared: say so
    assert not cached.must_respond(ErrorCode.none, 0, 3, 0)


def test_answered_partitions_move_to_the_end_of_the_session_for_fairness() -> None:
    cache, leader, handler = _cache(), FakeLeader(), FetchSessionHandler()
    first = handler.build(_positions(a0=0, a1=0, b0=0))
    handler.on_response(first, *leader.serve(cache, _request(first))[:2])
    leader.log_end[A0] = 1
    second = handler.build(_positions(a0=0, a1=0, b0=0))
    handler.on_response(second, *leader.serve(cache, _request(second))[:2])
    leader.reads.clear()
    leader.serve(cache, _request(handler.build(_positions(a0=1, a1=0, b0=0))))
    assert leader.reads == [A1, B0, A0]


def test_unknown_session_and_wrong_epoch_are_refused_and_the_handler_starts_over() -> None:
    cache, leader, handler = _cache(), FakeLeader(), FetchSessionHandler()
    first = handler.build(_positions(a0=0))
    handler.on_response(first, *leader.serve(cache, _request(first))[:2])
    stale = SessionRequest(handler.session_id, 5, {}, [])
    assert leader.serve(cache, _request(stale))[0] == ErrorCode.invalid_fetch_session_epoch
    unknown = SessionRequest(999, 1, {}, [])
    error = leader.serve(cache, _request(unknown))[0]
    assert error == ErrorCode.fetch_session_id_not_found
    assert not handler.on_response(unknown, error, 0)
    assert handler.session_id == 0 and handler.build(_positions(a0=0)).full


def test_a_full_fetch_naming_a_session_replaces_it_and_final_epoch_closes_it() -> None:
    cache, leader = _cache(), FakeLeader()
    _, first_id, _ = leader.serve(cache, _request(SessionRequest(0, 0, _positions(a0=0), [])))
    _, second_id, _ = leader.serve(
        cache, _request(SessionRequest(first_id, 0, _positions(a0=0), []))
    )
    assert second_id != first_id and len(cache) == 1
    error, session_id, answered = leader.serve(
        cache, _request(SessionRequest(second_id, -1, _positions(b0=0), []))
    )
    assert (error, session_id, set(answered)) == (ErrorCode.none, 0, {B0})
    assert len(cache) == 0


def test_a_full_cache_evicts_an_idle_session_or_a_consumer_for_a_follower() -> None:
    cache = _cache(max_slots=1)
    consumer = cache.create(False, {}, now_ms=0)
    assert cache.create(False, {}, now_ms=1) == 0  # nothing idle long enough: no session
    follower = cache.create(True, {}, now_ms=2)  # a follower outranks a consumer
    assert follower != 0 and cache.get(consumer, 3) is None
    assert cache.create(True, {}, now_ms=4) == 0
    assert cache.create(False, {}, now_ms=2 + SESSION_EVICTION_MS) != 0  # idle: evicted


def test_a_cache_with_no_slots_answers_without_sessions() -> None:
    cache, leader = _cache(max_slots=0), FakeLeader()
    handler = FetchSessionHandler()
    request = handler.build(_positions(a0=0))
    error, session_id, _ = leader.serve(cache, _request(request))
    assert session_id == 0 and handler.on_response(request, error, session_id)
    assert handler.build(_positions(a0=0)).full  # keeps sending full requests


def test_a_fetch_without_session_fields_is_sessionless() -> None:
    request = SimpleNamespace(topics=[], forgotten_topics_data=None)
    context = new_context(_cache(), request, now_ms=0)
    assert context.session is None and not context.wants_session
