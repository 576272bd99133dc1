"""What zk/client.py adds to kazoo: a cheaper `select` for its connection thread, callbacks
that hand over to the event loop straight from that thread, two ZooKeeper requests kazoo
lacks (multiRead, setWatches; kazoo sends any object with `type`, `serialize()` and
`deserialize()`), and zk.zk_security's ACLs and credentials in kazoo's terms."""

from __future__ import annotations

import functools
import logging
import math
import queue
import select
import threading
import time
from collections.abc import Sequence
from typing import Any

from kazoo import exceptions as kazoo_errors
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol.serialization import (
    Connect,
    GetData,
    MultiHeader,
    int_struct,
    long_struct,
    multiheader_struct,
    read_buffer,
    stat_struct,
    write_string,
)
from kazoo.protocol.serialization import (
    ZnodeStat as KazooStat,
)
from kazoo.protocol.states import KeeperState
from kazoo.security import ACL, Id

from zk.answer_clock import AnswerClock
from zk.zk_security import ZkAcl, ZkSaslCredentials

log = logging.getLogger(__name__)


def kazoo_acls(acls: Sequence[ZkAcl]) -> list[Any]:
    return [ACL(acl.perms, Id(acl.scheme, acl.id)) for acl in acls]


def start_and_log_in(client: Any, timeout_s: float, logs_in: bool) -> str:
    """Start `client`: "connected", "refused" (ZooKeeper refused its SASL login) or
    "timeout". kazoo reports CONNECTED before its SASL exchange, and a refused login after
    it, as LOST (then CLOSED): a listener catches the AUTH_FAILED in between, and with a
    login a first answer waits for its outcome."""
    refused = threading.Event()

    def listener(state: Any) -> None:  # kazoo's connection thread
        if client.client_state == KeeperState.AUTH_FAILED:
            refused.set()

    client.add_listener(listener)
    try:
        if client.start_async().wait(timeout_s) and logs_in:
            client.exists("/")
    except kazoo_errors.AuthFailedError:
        refused.set()
    except kazoo_errors.KazooException:
        # A login refused between the connect and the first request closes the session before
        # the request is sent: the request then fails as closed, and the listener has the cause.
        if not refused.is_set():
            raise
    finally:
        client.remove_listener(listener)
    if refused.is_set():
        return "refused"
    return "connected" if client.connected else "timeout"


def sasl_options(credentials: ZkSaslCredentials) -> dict[str, str]:
    """kazoo's (pure-sasl's) options; a new dict each time, because kazoo adds to it."""
    return {
        "mechanism": "DIGEST-MD5",
        "username": credentials.username,
        "password": credentials.password,
        "service": credentials.service_name,
    }


class LoopHandoff:
    """A kazoo callback (a watcher, or a completion linked to an answer) that only hands over to
    an event loop (`call_soon_threadsafe`) and never blocks. `PollingHandler` runs it on kazoo's
    connection thread as the event or answer is read, instead of queueing it for one of kazoo's
    worker threads: a failover's thousands of watch events and answers then cost no queue
    operations and wake no other thread, and reach the loop in the order ZooKeeper sent them."""

    __slots__ = ()


def _hand_over(callback: Any, *args: Any) -> None:
    try:
        callback(*args)
    except Exception:  # the connection thread must go on reading
        log.exception("ZooKeeper callback %r failed", callback)


class _CompletionQueue(queue.Queue[Any]):
    """kazoo's completion queue: a completion of a `LoopHandoff` runs at once."""

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        if isinstance(item, functools.partial) and isinstance(item.func, LoopHandoff):
            _hand_over(item.func, *item.args)
        else:
            super().put(item, block, timeout)


class _AnsweringSocket:
    """kazoo's socket to ZooKeeper, telling an AnswerClock of every read that returned bytes
    and of its closing; everything else is the socket's own."""

    __slots__ = ("_clock", "_sock")

    def __init__(self, sock: Any, clock: AnswerClock) -> None:
        self._sock = sock
        self._clock = clock

    def recv(self, size: int) -> bytes:
        data: bytes = self._sock.recv(size)
        if data:
            self._clock.answered()
        return data

    def close(self) -> None:
        try:
            self._sock.close()
        finally:
            self._clock.closed()

    def fileno(self) -> int:
        return int(self._sock.fileno())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


# How long the connection thread waits in one `poll` at most while it watches its socket: each
# empty wait is an observation that nothing from ZooKeeper is unread (AnswerClock.quiet), so
# this bounds how late a fence can come after its bound.
QUIET_LOOK_INTERVAL_S = 0.1


class PollingHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """kazoo's threading handler with a cheaper `select`, and `LoopHandoff` callbacks run on the
    connection thread. kazoo's connection thread sends one request or reads one response per
    `select`, and kazoo's own creates and closes an epoll selector each time: with thousands of
    requests in flight (a controller failover) that was a third of the thread's time. `poll`
    has no fd limit either and keeps no kernel object.

    With an AnswerClock, the sockets it connects report what ZooKeeper sends, and its waits on
    them report, every QUIET_LOOK_INTERVAL_S, that nothing is unread."""

    queue_impl = _CompletionQueue

    def __init__(self, clock: AnswerClock | None = None) -> None:
        super().__init__()
        self._clock = clock
        self._zk_fd = -1

    def create_connection(self, *args: Any, **kwargs: Any) -> Any:
        sock = super().create_connection(*args, **kwargs)
        clock = self._clock
        if clock is None:
            return sock
        # Before kazoo sends its Connect on it: nothing can be unread on it yet.
        self._zk_fd = int(sock.fileno())
        clock.opened()
        return _AnsweringSocket(sock, clock)

    def dispatch_callback(self, callback: Any) -> None:
        if isinstance(callback.func, LoopHandoff):
            _hand_over(callback.func, *callback.args)
        else:
            super().dispatch_callback(callback)

    def select(
        self, rlist: list[Any], wlist: list[Any], xlist: list[Any], timeout: float | None = None
    ) -> tuple[list[Any], list[Any], list[Any]]:
        clock = self._clock
        if clock is None or not any(_fd(obj) == self._zk_fd for obj in rlist):
            return self._poll(rlist, wlist, timeout)
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        while True:
            # Taken before the look: had anything been unread then, the look would find it.
            looked_at = time.monotonic()
            wait = QUIET_LOOK_INTERVAL_S
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - looked_at))
            ready = self._poll(rlist, wlist, wait)
            zk_readable = any(_fd(obj) == self._zk_fd for obj in ready[0])
            if not zk_readable and not any(_pending(obj) for obj in rlist):
                clock.quiet(looked_at)
            if ready[0] or ready[1] or (deadline is not None and time.monotonic() >= deadline):
                return ready

    def _poll(
        self, rlist: list[Any], wlist: list[Any], timeout: float | None
    ) -> tuple[list[Any], list[Any], list[Any]]:
        poller = select.poll()
        masks: dict[int, int] = {}
        for objects, mask in ((rlist, select.POLLIN), (wlist, select.POLLOUT)):
            for obj in objects:
                masks[_fd(obj)] = masks.get(_fd(obj), 0) | mask
        for fd, mask in masks.items():
            poller.register(fd, mask)
        # Rounded up: a sub-millisecond timeout must not become a busy zero.
        timeout_ms = None if timeout is None else math.ceil(max(timeout, 0.0) * 1000)
        ready = dict(poller.poll(timeout_ms))
        # A hang-up or an error counts as ready, as select() reports it.
        failed = select.POLLHUP | select.POLLERR | select.POLLNVAL
        readable = [obj for obj in rlist if ready.get(_fd(obj), 0) & (select.POLLIN | failed)]
        writable = [obj for obj in wlist if ready.get(_fd(obj), 0) & (select.POLLOUT | failed)]
        return readable, writable, []


def _fd(obj: Any) -> int:
    return obj if isinstance(obj, int) else int(obj.fileno())


def _pending(obj: Any) -> bool:
    """A TLS socket may hold decrypted bytes that `poll` does not see."""
    pending = getattr(obj, "pending", None)
    return pending is not None and int(pending()) > 0


def report_granted_timeouts(client: Any, clock: AnswerClock) -> None:
    """Tell `clock` the session timeout ZooKeeper grants at each connect: kazoo reads it from
    the ConnectResponse (for its own ping and read timeouts) but keeps it nowhere."""
    connection = client._connection
    invoke = connection._invoke

    def invoke_reporting(timeout: float, request: Any, xid: int | None = None) -> Any:
        result = invoke(timeout, request, xid)
        if isinstance(request, Connect):
            clock.granted(int(result[0].time_out))
        return result

    connection._invoke = invoke_reporting


class MultiRead:
    """ZooKeeper's multiRead (opcode 22): getData of several znodes in one request, each
    answered on its own (a missing znode fails only its own read). kazoo sends any object with
    `type`, `serialize()` and `deserialize()`; it has no multiRead of its own."""

    type = 22

    def __init__(self, paths: Sequence[str], kazoo: Any = None) -> None:
        self.paths = paths
        self._kazoo = kazoo
        # The zxid of the answer's header: every read in it saw ZooKeeper at this zxid or
        # before, so a change it did not see has a higher one.
        self.zxid = -1

    def serialize(self) -> bytearray:
        body = bytearray()
        for path in self.paths:
            body += MultiHeader(GetData.type, False, -1).serialize()
            body += write_string(path) + b"\x00"  # no watch
        body += multiheader_struct.pack(-1, True, -1)
        return body

    def deserialize(self, raw: bytes, offset: int) -> list[tuple[bytes, Any] | BaseException]:
        # kazoo's connection thread sets last_zxid from this answer's header just before it
        # decodes the body (here), and reads nothing else in between.
        if self._kazoo is not None:
            self.zxid = int(self._kazoo.last_zxid)
        results: list[tuple[bytes, Any] | BaseException] = []
        while True:
            op_type, done, err = multiheader_struct.unpack_from(raw, offset)
            offset += multiheader_struct.size
            if done:
                return results
            if op_type == GetData.type:
                data, offset = read_buffer(raw, offset)
                stat = KazooStat._make(stat_struct.unpack_from(raw, offset))
                offset += stat_struct.size
                results.append((data or b"", stat))
            else:  # an error result: its code follows
                code = int_struct.unpack_from(raw, offset)[0]
                offset += int_struct.size
                results.append(kazoo_errors.EXCEPTIONS[code or err]())

    def __repr__(self) -> str:
        return f"MultiRead({len(self.paths)} paths)"


class SetWatches:
    """ZooKeeper's setWatches (opcode 101): arm data watches on many znodes in one request.
    A znode changed after `relative_zxid` (or, for an exists watch, created) fires at once
    instead, so nothing between the read at that zxid and the arming is missed. kazoo has no
    such request (it is what ZooKeeper's Java client sends after a reconnection)."""

    type = 101

    def __init__(
        self,
        relative_zxid: int,
        data_paths: Sequence[str],
        exist_paths: Sequence[str],
        kazoo: Any,
        watchers: Sequence[Any],
    ) -> None:
        self.relative_zxid = relative_zxid
        self.data_paths = data_paths
        self.exist_paths = exist_paths
        self._kazoo = kazoo
        self._watchers = watchers  # one per path, data paths first

    def serialize(self) -> bytearray:
        # On kazoo's connection thread, just before the request is written: kazoo finds the
        # watchers when an event arrives, which cannot be before this.
        paths = [*self.data_paths, *self.exist_paths]
        for path, watcher in zip(paths, self._watchers, strict=True):
            self._kazoo._data_watchers[path].add(watcher)
        body = bytearray(long_struct.pack(self.relative_zxid))
        for group in (self.data_paths, self.exist_paths, ()):
            body += int_struct.pack(len(group))
            for path in group:
                body += write_string(path)
        return body

    def deserialize(self, raw: bytes, offset: int) -> bool:
        return True

    def __repr__(self) -> str:
        return f"SetWatches({len(self.data_paths)} + {len(self.exist_paths)} paths)"
