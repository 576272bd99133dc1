"""When ZooKeeper last answered this client's session, and since when that is known to be the
last answer: what a broker fences itself by (broker/cluster/session_fence.py).

kazoo's connection thread writes it (zk/kazoo_extensions.py hooks its socket and its
`select`), the event loop reads it. Each field is one float or bool assignment, atomic under
the GIL, so no lock is needed: the reader reads them in an order in which a write between its
reads only makes the silence look shorter (see `confirmed_silence_s`).

The silence is measured from the last *read* of bytes ZooKeeper sent, not from their arrival,
and it only counts once the connection thread has looked at its socket and found nothing
unread. A broker stopped (SIGSTOP, a long pause, a starved thread) while answers arrive finds
them in its socket when it runs again: until its connection thread has read them, the old
read time is not taken as silence, because no observation after it says the socket was empty.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class AnswerClock:
    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        # Monotonic seconds: the last read of bytes from ZooKeeper (None: none yet).
        self.last_answer_s: float | None = None
        # Monotonic seconds: the latest moment at which the connection thread knew that
        # nothing ZooKeeper sent was waiting unread.
        self.quiet_seen_s: float | None = None
        # Whether a connection to ZooKeeper is open (only an open one can hold unread answers).
        self.socket_open = False
        # The session timeout ZooKeeper granted at the last connect (it may differ from the
        # requested one: servers clamp it to [2, 20] ticks).
        self.negotiated_session_timeout_ms: int | None = None
        self.answers = 0

    # -- kazoo's connection thread ------------------------------------------------------

    def answered(self) -> None:
        self.last_answer_s = self._now()
        self.answers += 1

    def quiet(self, at_s: float) -> None:
        """Nothing from ZooKeeper was unread at `at_s` (taken before the look that found it)."""
        if self.quiet_seen_s is None or at_s > self.quiet_seen_s:
            self.quiet_seen_s = at_s

    def opened(self) -> None:
        self.socket_open = True

    def closed(self) -> None:
        # Whatever was unread on it is gone with it: nothing can wait unread from now on.
        self.quiet(self._now())
        self.socket_open = False

    def granted(self, session_timeout_ms: int) -> None:
        if session_timeout_ms > 0:  # 0: the session had expired, no timeout was granted
            self.negotiated_session_timeout_ms = session_timeout_ms

    # -- the reader ---------------------------------------------------------------------

    def confirmed_silence_s(self, now_s: float | None = None) -> float | None:
        """How long ZooKeeper is known to have sent nothing: up to now when no connection is
        open (nothing can be waiting unread), else up to the connection thread's latest
        look at an empty socket. None before the first answer."""
        # What the silence runs to is read before what it runs from: an answer read in
        # between then only makes the silence look shorter, never longer.
        seen: float | None
        if not self.socket_open:
            seen = self._now() if now_s is None else now_s
        else:
            seen = self.quiet_seen_s
        last = self.last_answer_s
        if last is None:
            return None
        return 0.0 if seen is None else max(0.0, seen - last)
