"""Self-fencing (zookeeper.session.fencing.enable): a broker that has heard nothing from
ZooKeeper for longer than its session timeout stops acting on leadership it may no longer hold.
A deliberate difference from ZooKeeper-mode Kafka, which never fences itself (DEVIATIONS.md).

The bound: fenced while the confirmed silence (zk/answer_clock.py: from the last read of
anything ZooKeeper sent this session's connection, up to the connection thread's latest look
at an empty socket, or up to now while no connection is open) exceeds the session timeout
ZooKeeper granted. ZooKeeper expires a session it has not heard from for that long, and it
last heard from us no later than it sent its last answer, so by then the session is gone and
the controller has (or is about to have) moved this broker's partitions.

Why it never fences a live session in the ordinary cases: a slow ZooKeeper still answers
within the timeout (its pings too); a broker stopped or starved for less than the timeout
finds the answers that came meanwhile unread in its socket, and the silence is not confirmed
until its connection thread has looked and found nothing (answer_clock.py); a flapping link
lets answers through between outages. The one case in which the session may still be alive:
ZooKeeper hears the broker but its answers do not come back for a whole timeout (a one-way
cut). Fencing then costs availability, never safety, and ends at the next answer.

While fenced, the parts that act on leadership ask this object (through the listeners the
server wires): the replica manager answers NOT_LEADER_OR_FOLLOWER for the partitions it leads
and answers its acks=all waiters, the metadata cache names no leader where it would name this
broker, and the controller stops acting as controller. The fence lifts at the next answer:
the session survived (registration and, if still the /controller owner, controllership are
valid), or it expired, and then the fence stays until the broker has registered in its new
session and so follows what the controller decided meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from zk.answer_clock import AnswerClock

log = logging.getLogger(__name__)

# How often the fence looks at the clock (the connection thread's looks come as often: see
# zk.kazoo_extensions.QUIET_LOOK_INTERVAL_S).
CHECK_INTERVAL_S = 0.1


def beyond_session(silence_s: float | None, session_timeout_ms: int) -> bool:
    """Whether a confirmed silence is past the bound (None: no answer yet, nothing to fence)."""
    return silence_s is not None and silence_s * 1000.0 > session_timeout_ms


class SessionFence:
    def __init__(
        self,
        broker_id: int,
        answers: AnswerClock,
        session_timeout_ms: Callable[[], int],
        session: Callable[[], int | None],
        enabled: bool = True,
    ) -> None:
        """`session`: the id of the ZooKeeper session kazoo is connected with (None while it is
        not connected)."""
        self.broker_id = broker_id
        self.enabled = enabled
        self._answers = answers
        self._session_timeout_ms = session_timeout_ms
        self._session = session
        # The session in which this broker last registered (the server sets it).
        self.registered_session_id: int | None = None
        self.fenced = False
        # How often this broker fenced itself (the metric zookeeper_session_fences).
        self.fences = 0
        # Told True when fencing, False when the fence lifts.
        self.listeners: list[Callable[[bool], None]] = []
        self._last_answer_at_fence_s: float | None = None

    def check(self, now_s: float | None = None) -> None:
        """Fence or lift the fence as the clock says (every CHECK_INTERVAL_S, on the loop)."""
        silence_s = self._answers.confirmed_silence_s(now_s)
        timeout_ms = self._session_timeout_ms()
        if not self.fenced:
            if self.enabled and beyond_session(silence_s, timeout_ms):
                self._fence(silence_s or 0.0, timeout_ms)
            return
        last = self._answers.last_answer_s
        if last is None or last == self._last_answer_at_fence_s:
            return  # no answer since the fence
        # Connected in the session this broker is registered in: the session survived, or it
        # expired and the broker has registered anew since. Not before: an expired session's
        # broker waits for its new registration (the controller then tells it what it leads).
        session = self._session()
        if session is not None and session == self.registered_session_id:
            self._unfence(last)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(CHECK_INTERVAL_S)
            try:
                self.check()
            except Exception:
                log.exception("checking the ZooKeeper session fence failed")

    def _fence(self, silence_s: float, timeout_ms: int) -> None:
        self.fenced = True
        self.fences += 1
        self._last_answer_at_fence_s = self._answers.last_answer_s
        log.warning(
            "no answer from ZooKeeper for %.1f s, beyond the session timeout of %d ms: broker %d "
            "fences itself (stops leading its partitions and acting as controller) until "
            "ZooKeeper answers",
            silence_s,
            timeout_ms,
            self.broker_id,
        )
        self._tell(True)

    def _unfence(self, last_answer_s: float) -> None:
        self.fenced = False
        before = self._last_answer_at_fence_s
        measured = 0.0 if before is None else last_answer_s - before
        log.info(
            "ZooKeeper answers again after %.1f s of silence: broker %d lifts its fence",
            measured,
            self.broker_id,
        )
        self._tell(False)

    def _tell(self, fenced: bool) -> None:
        for listener in list(self.listeners):
            try:
                listener(fenced)
            except Exception:
                log.exception("a session fence listener failed")
