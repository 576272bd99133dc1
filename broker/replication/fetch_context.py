"""What one Fetch request reads and answers, given its session fields (Kafka's FetchContext).

- epoch -1 (FINAL): a full fetch with no session; a named session is closed first.
- epoch 0 (INITIAL): a full fetch that asks for a new session (a named one is closed first);
  the response carries the new session's id, or 0 when the cache has no slot.
- epoch > 0: an incremental fetch in an existing session; the request's partitions update the
  session, `forgotten_topics_data` leaves it, every session partition is read, and only those
  with something new are answered.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from broker.replication.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchPosition,
    FetchSession,
    FetchSessionCache,
    TopicPartition,
    next_epoch,
)
from broker.replication.replica_manager import ReadResult


@dataclass
class FetchContext:
    positions: list[tuple[TopicPartition, FetchPosition]]
    error_code: ErrorCode = ErrorCode.none
    session: FetchSession | None = None  # set for incremental fetches
    wants_session: bool = False  # a full fetch that asked for one

    def respond(
        self,
        cache: FetchSessionCache,
        results: list[tuple[TopicPartition, ReadResult]],
        privileged: bool,
        now_ms: int,
    ) -> tuple[int, list[tuple[TopicPartition, ReadResult]]]:
        """The session id and the partitions the response holds; updates the session."""
        if self.session is not None:
            return self.session.session_id, self._changed(self.session, results)
        if not self.wants_session:
            return INVALID_SESSION_ID, results
        positions = dict(self.positions)
        cached = {}
        for key, result in results:
            entry = CachedPartition(positions[key])
            entry.must_respond(result.error_code, 0, result.high_watermark, result.log_start_offset)
            cached[key] = entry
        return cache.create(privileged, cached, now_ms), results

    @staticmethod
    def _changed(
        session: FetchSession, results: list[tuple[TopicPartition, ReadResult]]
    ) -> list[tuple[TopicPartition, ReadResult]]:
        answered = []
        for key, result in results:
            cached = session.partitions.get(key)
            if cached is None:
                continue  # forgotten by a later request meanwhile
            if cached.must_respond(
                result.error_code,
                len(result.records),
                result.high_watermark,
                result.log_start_offset,
            ):
                answered.append((key, result))
                session.move_to_end(key)
        return answered


def new_context(cache: FetchSessionCache, request: Any, now_ms: int) -> FetchContext:
    session_id = int(getattr(request, "session_id", INVALID_SESSION_ID))
    epoch = int(getattr(request, "session_epoch", FINAL_EPOCH))
    requested = list(_positions(request))
    if epoch in (FINAL_EPOCH, INITIAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)
        return FetchContext(requested, wants_session=epoch == INITIAL_EPOCH)
    session = cache.get(session_id, now_ms)
    if session is None:
        return FetchContext([], ErrorCode.fetch_session_id_not_found)
    if session.epoch != epoch:
        return FetchContext([], ErrorCode.invalid_fetch_session_epoch)
    session.update(requested, _forgotten(request))
    session.epoch = next_epoch(session.epoch)
    positions = [(key, cached.position) for key, cached in session.partitions.items()]
    return FetchContext(positions, session=session)


def _positions(request: Any) -> Iterator[tuple[TopicPartition, FetchPosition]]:
    for topic in request.topics:
        for fetch in topic.partitions:
            position = FetchPosition(
                int(fetch.fetch_offset),
                int(fetch.partition_max_bytes),
                int(getattr(fetch, "current_leader_epoch", -1)),
                int(getattr(fetch, "log_start_offset", -1)),
            )
            yield (str(topic.topic), int(fetch.partition)), position


def _forgotten(request: Any) -> Iterable[TopicPartition]:
    for topic in getattr(request, "forgotten_topics_data", None) or ():
        for partition in topic.partitions:
            yield str(topic.topic), int(partition)
