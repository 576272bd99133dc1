"""What one Fetch request reads and answers, given its session fields (Kafka's FetchContext).

- epoch -1 (FINAL): a full fetch with no session; a named session is closed first.
- epoch 0 (INITIAL): a full fetch that asks for a new session (a named one is closed first);
  the response carries the new session's id, or 0 when the cache has no slot.
- epoch > 0: an incremental fetch in an existing session; the request's partitions update the
  session, `forgotten_topics_data` leaves it, the session says which partitions are read (see
  `broker.replication.fetch_session`), and only those with something new are answered.

From v13 topics are named by id: the keys are (topic id, partition), an id no topic has is
kept as it is (the handler answers UNKNOWN_TOPIC_ID for it), and a session keyed one way
refuses requests keyed the other (FETCH_SESSION_TOPIC_ID_ERROR), as in Kafka.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from broker.replication.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchKey,
    FetchPosition,
    FetchSession,
    FetchSessionCache,
    next_epoch,
)
from broker.replication.read_checks import ReadResult

ZERO_TOPIC_ID = uuid.UUID(int=0)


@dataclass
class FetchContext:
    # The request's partitions; for an incremental fetch, see all_positions().
    positions: list[tuple[FetchKey, FetchPosition]]
    error_code: ErrorCode = ErrorCode.none
    session: FetchSession | None = None  # set for incremental fetches
    wants_session: bool = False  # a full fetch that asked for one
    uses_topic_ids: bool = False

    def all_positions(self) -> list[tuple[FetchKey, FetchPosition]]:
        """Every partition of the fetch (of its session, for an incremental one)."""
        if self.session is None:
            return self.positions
        return [(key, cached.position) for key, cached in self.session.partitions.items()]

    def respond(
        self,
        cache: FetchSessionCache,
        results: list[tuple[FetchKey, ReadResult]],
        privileged: bool,
        now_ms: int,
    ) -> tuple[int, list[tuple[FetchKey, ReadResult]]]:
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
        session_id = cache.create(privileged, cached, now_ms, self.uses_topic_ids)
        return session_id, results

    @staticmethod
    def _changed(
        session: FetchSession, results: list[tuple[FetchKey, ReadResult]]
    ) -> list[tuple[FetchKey, ReadResult]]:
        answered = []
        for key, result in results:
            cached = session.partitions.get(key)
            if cached is None:
                continue  # forgotten by a later request meanwhile
            changed = cached.must_respond(
                result.error_code,
                len(result.records),
                result.high_watermark,
                result.log_start_offset,
            )
            if changed or result.diverging_epoch is not None:
                answered.append((key, result))
                session.move_to_end(key)
        return answered


def new_context(
    cache: FetchSessionCache, request: Any, now_ms: int, uses_topic_ids: bool = False
) -> FetchContext:
    session_id = int(getattr(request, "session_id", INVALID_SESSION_ID))
    epoch = int(getattr(request, "session_epoch", FINAL_EPOCH))
    requested = list(_positions(request, uses_topic_ids))
    if epoch in (FINAL_EPOCH, INITIAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)
        return FetchContext(
            requested, wants_session=epoch == INITIAL_EPOCH, uses_topic_ids=uses_topic_ids
        )
    session = cache.get(session_id, now_ms)
    if session is None:
        return FetchContext([], ErrorCode.fetch_session_id_not_found)
    if session.epoch != epoch:
        return FetchContext([], ErrorCode.invalid_fetch_session_epoch)
    if session.uses_topic_ids != uses_topic_ids:
        return FetchContext([], ErrorCode.fetch_session_topic_id_error)
    session.update(requested, _forgotten(request, uses_topic_ids))
    session.epoch = next_epoch(session.epoch)
    return FetchContext(requested, session=session, uses_topic_ids=uses_topic_ids)


def _topic_key(topic: Any, uses_topic_ids: bool) -> str | uuid.UUID:
    if not uses_topic_ids:
        return str(topic.topic)
    # kio reads the zero id as None; no topic has it, so it stays unknown.
    return topic.topic_id if topic.topic_id is not None else ZERO_TOPIC_ID


def _positions(request: Any, uses_topic_ids: bool) -> Iterator[tuple[FetchKey, FetchPosition]]:
    for topic in request.topics:
        for fetch in topic.partitions:
            position = FetchPosition(
                int(fetch.fetch_offset),
                int(fetch.partition_max_bytes),
                int(getattr(fetch, "current_leader_epoch", -1)),
                int(getattr(fetch, "log_start_offset", -1)),
                int(getattr(fetch, "last_fetched_epoch", -1)),
            )
            yield (_topic_key(topic, uses_topic_ids), int(fetch.partition)), position


def _forgotten(request: Any, uses_topic_ids: bool) -> Iterable[FetchKey]:
    for topic in getattr(request, "forgotten_topics_data", None) or ():
        for partition in topic.partitions:
            yield _topic_key(topic, uses_topic_ids), int(partition)
