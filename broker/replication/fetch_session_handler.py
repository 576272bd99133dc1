"""Incremental fetch sessions, the fetcher's side (KIP-227; Kafka's FetchSessionHandler).

The first request is full and asks for a session (epoch 0). Once the leader grants one, each
request names only the partitions whose position changed since the last request, plus those to
forget, and carries the next epoch. Any error, or a leader that stops answering with the
session's id, sends the fetcher back to a full request.
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from broker.replication.fetch_session import (
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    FetchPosition,
    TopicPartition,
    next_epoch,
)


@dataclass(frozen=True, slots=True)
class SessionRequest:
    session_id: int
    epoch: int
    to_send: dict[TopicPartition, FetchPosition]  # the request's `topics`
    forgotten: list[TopicPartition]  # its `forgotten_topics_data`

    @property
    def full(self) -> bool:
        return self.epoch == INITIAL_EPOCH


class FetchSessionHandler:
    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.next_epoch = INITIAL_EPOCH
        self._sent: dict[TopicPartition, FetchPosition] = {}

    def build(self, wanted: dict[TopicPartition, FetchPosition]) -> SessionRequest:
        """The request for these partitions at these positions; assumes it will be sent, and
        keeps `wanted` (the caller makes a new one for each request)."""
        sent, self._sent = self._sent, wanted
        if self.next_epoch == INITIAL_EPOCH:
            return SessionRequest(self.session_id, INITIAL_EPOCH, dict(wanted), [])
        changed = {key: p for key, p in wanted.items() if sent.get(key) != p}
        added = sum(1 for key in changed if key not in sent)
        # Partitions still wanted are all of `wanted` but the added ones: the rest of `sent`
        # is forgotten. Counting first spares a pass over thousands in the usual case.
        if len(sent) == len(wanted) - added:
            return SessionRequest(self.session_id, self.next_epoch, changed, [])
        forgotten = [key for key in sent if key not in wanted]
        return SessionRequest(self.session_id, self.next_epoch, changed, forgotten)

    def on_response(self, request: SessionRequest, error_code: ErrorCode, session_id: int) -> bool:
        """Whether the response's partitions may be used."""
        if error_code != ErrorCode.none:
            if error_code == ErrorCode.fetch_session_id_not_found:
                self.session_id = INVALID_SESSION_ID
            self.next_epoch = INITIAL_EPOCH
            return False
        if session_id == INVALID_SESSION_ID:
            # No session granted, or the leader closed ours: full requests until one is.
            self.session_id = INVALID_SESSION_ID
            self.next_epoch = INITIAL_EPOCH
        elif not request.full and session_id != self.session_id:
            self.next_epoch = INITIAL_EPOCH  # not the session we asked about: start over
            return False
        elif request.full:
            self.session_id = session_id
            self.next_epoch = next_epoch(INITIAL_EPOCH)
        else:
            self.next_epoch = next_epoch(self.next_epoch)
        return True

    def on_failure(self) -> None:
        """The request got no answer: start over with a full one (closing the old session)."""
        self.next_epoch = INITIAL_EPOCH
