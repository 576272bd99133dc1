"""Async facade over kazoo: with zk/client_security.py (how sessions are made, logged in and
stopped, and the ACLs of created znodes) and zk/kazoo_extensions.py, the only modules that
import kazoo.

kazoo runs its own connection and callback threads. Every result is handed back to the asyncio
loop through `loop.call_soon_threadsafe`, and watch / session callbacks only ever run on the
loop, so code above this module never needs locks.

The loop never waits for kazoo: kazoo wakes its connection thread with one byte per request
on a socket pair, whose buffer holds a few hundred sends at most, after which the sending
thread blocks until kazoo's thread has caught up. So at most MAX_REQUESTS_IN_FLIGHT requests
are handed to kazoo at a time; the rest wait, in order, on the loop, and go out as answers
come back. ZooKeeper still sees every request in the order it was made.

Watches are "persistent" from the caller's point of view: a one-shot ZooKeeper watch is re-armed
before the caller's callback runs, so the caller's re-read always happens under an armed watch.
kazoo drops its watchers when the connection is lost, so after every reconnection (same or new
session) all watches are re-armed and every callback runs once: changes made while we were away
are never missed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kazoo import exceptions as kazoo_errors
from kazoo.client import KazooClient, KazooState
from kazoo.protocol.paths import _prefix_root

from zk import errors
from zk.answer_clock import AnswerClock
from zk.client_security import creation_acls, new_session, start_logged_in, stop
from zk.kazoo_extensions import LoopHandoff, MultiRead, SetWatches
from zk.loop_slice import LoopSlice
from zk.path_rules import path_error
from zk.zk_security import ZkSaslCredentials

log = logging.getLogger(__name__)

SessionEvent = Literal["CONNECTED", "SUSPENDED", "LOST"]
WatchKind = Literal["data", "children"]

# A concurrent child creation can make a recursive delete fail with NotEmpty; retry a few times.
_RECURSIVE_DELETE_ATTEMPTS = 5
# Requests handed to kazoo and not answered yet; the rest wait on the loop (see above). Each
# waiting request is a byte in kazoo's wake-up socket pair, and Linux counts about 1 KB of
# its buffer per send: 100 stay well below the ~200 KB it has.
MAX_REQUESTS_IN_FLIGHT = 100
# Reads per multiRead request (ZooKeeper 3.6+). One request costs both ends far more than one
# more read in it; 100 partition states are ~10 KB of answer.
MAX_READS_PER_REQUEST = 100
# A multiRead refused as a whole by a server that predates it: read one znode per request.
_NO_MULTI_READ = (
    kazoo_errors.UnimplementedError,
    kazoo_errors.BadArgumentsError,
    kazoo_errors.MarshallingError,
)


@dataclass(frozen=True, slots=True)
class ZnodeStat:
    czxid: int
    mzxid: int
    ctime_ms: int
    mtime_ms: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int  # session id of the owner, 0 for persistent znodes
    data_length: int
    num_children: int
    pzxid: int


@dataclass(frozen=True, slots=True)
class CheckOp:
    path: str
    version: int


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequence: bool = False


@dataclass(frozen=True, slots=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = -1


Op = CheckOp | CreateOp | SetDataOp | DeleteOp
# What each op of a successful multi returns: CreateOp -> created path, SetDataOp -> new stat,
# CheckOp / DeleteOp -> True.
OpResult = str | ZnodeStat | bool


@dataclass(frozen=True, slots=True)
class _KazooWatcher(LoopHandoff):
    """What kazoo calls when a one-shot watch fires. kazoo keeps a set of watchers per path, so
    watchers that compare equal for the same (client, kind, path) are registered once however
    often the path is re-armed, and the client keeps no per-path watcher that could outlive the
    watch (topics and partitions come and go; a cache of watchers would grow without bound)."""

    client: ZkClient
    kind: WatchKind
    path: str

    def __call__(self, event: Any) -> None:  # kazoo thread
        self.client._on_kazoo_watch(self.kind, self.path, event)


class _Settle(LoopHandoff):
    """Linked to kazoo's result of a request: hands the outcome to `settle` on the loop. Runs on
    kazoo's connection thread (or the loop, if the result was ready when linked)."""

    __slots__ = ("loop", "settle")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        settle: Callable[[Any, BaseException | None], None],
    ) -> None:
        self.loop = loop
        self.settle = settle

    def __call__(self, result: Any) -> None:
        try:
            value, exc = result.get_nowait(), None
        except BaseException as error:
            value, exc = None, error
        # A closed loop means nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.settle, value, exc)


def split_chroot(connect: str) -> tuple[str, str | None]:
    """'h1:2181,h2:2181/kafka' -> ('h1:2181,h2:2181', '/kafka'); no chroot (or '/') -> None."""
    slash = connect.find("/")
    if slash < 0:
        return connect, None
    hosts, chroot = connect[:slash], connect[slash:].rstrip("/")
    return hosts, (chroot or None)


def _stat(raw: Any) -> ZnodeStat:
    return ZnodeStat(
        czxid=int(raw.czxid),
        mzxid=int(raw.mzxid),
        ctime_ms=int(raw.ctime),
        mtime_ms=int(raw.mtime),
        version=int(raw.version),
        cversion=int(raw.cversion),
        aversion=int(raw.aversion),
        ephemeral_owner=int(raw.ephemeralOwner),
        data_length=int(raw.dataLength),
        num_children=int(raw.numChildren),
        pzxid=int(raw.pzxid),
    )


_ERROR_MAP: tuple[tuple[type[BaseException], type[errors.ZkError]], ...] = (
    (kazoo_errors.NoNodeError, errors.NoNodeError),
    (kazoo_errors.NodeExistsError, errors.NodeExistsError),
    (kazoo_errors.BadVersionError, errors.BadVersionError),
    (kazoo_errors.NotEmptyError, errors.NotEmptyError),
    (kazoo_errors.ConnectionLoss, errors.ConnectionLossError),
    (kazoo_errors.OperationTimeoutError, errors.ConnectionLossError),
    (kazoo_errors.SessionExpiredError, errors.SessionExpiredError),  # incl. ConnectionClosedError
    (kazoo_errors.NoAuthError, errors.NoAuthError),
    (kazoo_errors.AuthFailedError, errors.AuthFailedError),
)


def _translate(exc: BaseException, path: str | None, op_index: int | None = None) -> BaseException:
    if isinstance(exc, errors.ZkError):
        return exc
    translated: errors.ZkError
    for kazoo_type, ours in _ERROR_MAP:
        if isinstance(exc, kazoo_type):
            translated = ours(f"{type(exc).__name__} at {path}", path=path, op_index=op_index)
            break
    else:
        if not isinstance(exc, kazoo_errors.KazooException):
            return exc
        translated = errors.ZkError(f"{type(exc).__name__} at {path}: {exc}", path, op_index)
    translated.__cause__ = exc  # kazoo's own error, for who needs to tell them apart
    return translated


@dataclass(frozen=True, slots=True)
class _Request:
    """A request for kazoo: `send()` hands it over; `future` gets its answer."""

    send: Callable[[], Any]
    path: str | None
    future: asyncio.Future[Any]


class ZkClient:
    def __init__(
        self,
        connect: str,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
        sasl: ZkSaslCredentials | None = None,
        secure_acls: bool = False,
    ) -> None:
        """`secure_acls` is Kafka's zookeeper.set.acl: every znode this client creates gets
        `zk.zk_security.default_acls(True, path)` (the creator being `sasl`)."""
        self.connect = connect
        self.hosts, self.chroot = split_chroot(connect)
        self.session_timeout_ms = session_timeout_ms
        # Kafka's zookeeper.connection.timeout.ms defaults to the session timeout.
        self.connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        self.sasl = sasl
        self.secure_acls = secure_acls
        self._kazoo: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        self._disconnected_since_arming = False
        self._session_listeners: list[Callable[[str], None]] = []
        self._watches: dict[WatchKind, dict[str, list[Callable[[], None]]]] = {
            "data": {},
            "children": {},
        }
        self._in_flight = 0
        self._waiting: collections.deque[_Request] = collections.deque()
        self._multi_read = True  # until a server refuses it
        # The data watch callbacks whose callers arm them with their reads
        # (`get_many(..., arm=True)`), by path; a subset of self._watches["data"].
        self._armed_by_reads: dict[str, list[Callable[[], None]]] = {}
        # When ZooKeeper last answered this session, as kazoo's connection thread reads it.
        self.answers = AnswerClock()

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.chroot is not None:
            await asyncio.to_thread(self._ensure_chroot_blocking)
        self._kazoo = new_session(self.connect, self.session_timeout_ms, self.sasl, self.answers)
        self._kazoo.add_listener(self._on_kazoo_state)
        await asyncio.to_thread(self._start_blocking, self._kazoo)

    async def close(self) -> None:
        self._closing = True
        client, self._kazoo = self._kazoo, None
        if client is None:
            return
        await asyncio.to_thread(stop, client)

    @property
    def connected(self) -> bool:
        return self._kazoo is not None and bool(self._kazoo.connected)

    @property
    def negotiated_session_timeout_ms(self) -> int:
        """The session timeout ZooKeeper granted (the requested one before any connect)."""
        granted = self.answers.negotiated_session_timeout_ms
        return self.session_timeout_ms if granted is None else granted

    @property
    def session_id(self) -> int | None:
        if self._kazoo is None or self._kazoo.client_id is None:
            return None
        return int(self._kazoo.client_id[0])

    async def expire_session_for_testing(self) -> None:
        """End our session from a second connection that borrows its id and password (the way
        ZooKeeper's own tests do): ephemerals vanish, we see LOST, then a new session."""
        session_id, password = self._client().client_id
        intruder = KazooClient(
            hosts=self.hosts,
            client_id=(session_id, password),
            timeout=self.session_timeout_ms / 1000.0,
        )
        await asyncio.to_thread(self._start_blocking, intruder)
        await asyncio.to_thread(stop, intruder)

    def _new_kazoo(self, hosts: str) -> Any:
        return new_session(hosts, self.session_timeout_ms, self.sasl)

    def _start_blocking(self, session: Any) -> None:
        start_logged_in(session, self.hosts, self.connection_timeout_ms, self.sasl)

    def _ensure_chroot_blocking(self) -> None:
        # kazoo applies the chroot to every path but does not create it; like Kafka, create it
        # with a chroot-less session first.
        chroot = self.chroot
        if chroot is None:
            return  # no chroot to create
        bootstrap = self._new_kazoo(self.hosts)
        self._start_blocking(bootstrap)
        try:
            prefix = ""
            for name in chroot.strip("/").split("/"):
                prefix += f"/{name}"
                with contextlib.suppress(kazoo_errors.NodeExistsError):
                    # Null data, as Kafka creates the chroot.
                    bootstrap.create(prefix, None, acl=creation_acls(self.secure_acls, prefix))
        finally:
            stop(bootstrap)

    # ----------------------------------------------------------------- bridging

    def _client(self) -> Any:
        if self._kazoo is None:
            raise errors.SessionExpiredError("ZkClient is not started or is closed")
        return self._kazoo

    def _bridge(
        self, send: Callable[[], Any], path: str | None, sequence: bool = False
    ) -> asyncio.Future[Any]:
        """A future of what the request `send()` makes kazoo send; sent now if fewer than
        MAX_REQUESTS_IN_FLIGHT are unanswered, else once earlier ones are answered. A `path`
        that breaks ZooKeeper's rules fails it with InvalidPathError, unsent."""
        loop = self._loop
        if loop is None:
            raise errors.SessionExpiredError("ZkClient.start() was not awaited")
        request = _Request(send, path, loop.create_future())
        problem = None if path is None else path_error(path, sequence)
        if problem is not None:
            request.future.set_exception(errors.InvalidPathError(f"{problem}: {path!r}", path=path))
            return request.future
        if self._in_flight < MAX_REQUESTS_IN_FLIGHT and not self._waiting:
            self._send(loop, request)
        else:
            self._waiting.append(request)
        return request.future

    def _send(self, loop: asyncio.AbstractEventLoop, request: _Request) -> None:
        future, path = request.future, request.path
        try:
            async_result = request.send()
        except BaseException as error:
            future.set_exception(_translate(error, path))
            return
        self._in_flight += 1

        def settle(value: Any, exc: BaseException | None) -> None:
            self._in_flight -= 1
            self._send_waiting(loop)
            if future.done():
                return
            if exc is None:
                future.set_result(value)
            else:
                future.set_exception(_translate(exc, path))

        async_result.rawlink(_Settle(loop, settle))

    def _send_waiting(self, loop: asyncio.AbstractEventLoop) -> None:
        while self._waiting and self._in_flight < MAX_REQUESTS_IN_FLIGHT:
            request = self._waiting.popleft()
            if not request.future.done():  # a cancelled caller's request is not sent
                self._send(loop, request)

    # ----------------------------------------------------------------- operations

    async def get(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        try:
            data, stat = await self._bridge(lambda: self._client().get_async(path), path)
        except errors.NoNodeError:
            return None
        return (data or b""), _stat(stat)

    async def get_many(
        self, paths: Sequence[str], arm: bool = False
    ) -> list[tuple[bytes, ZnodeStat] | None]:
        """Pipelined reads, MAX_READS_PER_REQUEST to a multiRead: every request is sent before
        the first answer is awaited. None for a znode that does not exist. With `arm`, the
        watches among `paths` registered with `watch_data(..., armed_by_reads=True)` are armed
        as of these reads: a change they did not see fires them."""
        if not paths:
            return []
        legal = [path for path in paths if path_error(path) is None]
        if len(legal) < len(paths):  # no znode can be at the others
            found = dict(zip(legal, await self.get_many(legal, arm), strict=True))
            return [found.get(path) for path in paths]
        if self._multi_read:
            chunks = [
                paths[start : start + MAX_READS_PER_REQUEST]
                for start in range(0, len(paths), MAX_READS_PER_REQUEST)
            ]
            try:
                answers = await asyncio.gather(*(self._multi_read_chunk(c, arm) for c in chunks))
            except errors.ZkError as error:
                if not isinstance(error.__cause__, _NO_MULTI_READ):
                    raise
                log.warning("ZooKeeper refused a multiRead (%s): one read per znode", error)
                self._multi_read = False
            else:
                return await self._read_results([item for answer in answers for item in answer])
        if arm:
            # Watches armed before the reads: ZooKeeper answers in order, so the reads are
            # covered by them.
            for path in paths:
                if path in self._armed_by_reads and not self._arms_itself(path):
                    self._arm("data", path)
        client = self._client()
        futures = [self._bridge(functools.partial(client.get_async, path), path) for path in paths]
        return await self._read_results(await asyncio.gather(*futures, return_exceptions=True))

    async def _multi_read_chunk(self, paths: Sequence[str], arm: bool) -> list[Any]:
        client = self._client()
        request = MultiRead([_prefix_root(client.chroot, p) for p in paths], client)

        def send() -> Any:
            async_result = client.handler.async_result()
            client._call(request, async_result)
            return async_result

        answers: list[Any] = await self._bridge(send, paths[0])
        if len(answers) != len(paths):
            raise errors.ZkError(f"multiRead of {len(paths)} znodes got {len(answers)} answers")
        results = [
            _translate(a, path) if isinstance(a, BaseException) else a
            for a, path in zip(answers, paths, strict=True)
        ]
        if arm:
            self._arm_as_of(request.zxid, paths, results)
        return results

    def _arm_as_of(self, zxid: int, paths: Sequence[str], results: Sequence[Any]) -> None:
        """Arm the read-armed watches among `paths` as of the reads that gave `results` at
        `zxid`: data watches on znodes that exist, exists watches on the missing ones (a read
        that failed otherwise is retried by its caller, which arms it then)."""
        data: list[str] = []
        missing: list[str] = []
        for path, result in zip(paths, results, strict=True):
            if path not in self._armed_by_reads:
                continue
            if isinstance(result, errors.NoNodeError):
                missing.append(path)
            elif not isinstance(result, BaseException):
                data.append(path)
        if not data and not missing:
            return
        if zxid <= 0:  # no zxid to arm from: one watch-setting read per znode
            for path in (*data, *missing):
                self._arm("data", path)
            return
        client = self._client()
        request = SetWatches(
            zxid,
            [_prefix_root(client.chroot, path) for path in data],
            [_prefix_root(client.chroot, path) for path in missing],
            client,
            [self._watcher("data", path) for path in (*data, *missing)],
        )

        def send() -> Any:
            async_result = client.handler.async_result()
            client._call(request, async_result)
            return async_result

        self._bridge(send, None).add_done_callback(self._ignore_arm_failure)

    @staticmethod
    async def _read_results(outcomes: Iterable[Any]) -> list[tuple[bytes, ZnodeStat] | None]:
        # Thousands at a controller failover: converted in slices of loop time.
        results: list[tuple[bytes, ZnodeStat] | None] = []
        loop_slice = LoopSlice()
        for outcome in outcomes:
            await loop_slice.pause_if_spent()
            if isinstance(outcome, errors.NoNodeError):
                results.append(None)
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                data, stat = outcome
                results.append(((data or b""), _stat(stat)))
        return results

    async def exists(self, path: str) -> ZnodeStat | None:
        try:
            raw = await self._bridge(lambda: self._client().exists_async(path), path)
        except errors.InvalidPathError:
            return None
        return None if raw is None else _stat(raw)

    async def get_children(self, path: str) -> list[str] | None:
        try:
            children = await self._bridge(lambda: self._client().get_children_async(path), path)
        except errors.NoNodeError:
            return None
        return sorted(str(child) for child in children)

    async def create(
        self,
        path: str,
        data: bytes | None = None,
        ephemeral: bool = False,
        sequence: bool = False,
        makepath: bool = False,
    ) -> str:
        """Create a znode. `data=None` stores null data, as Kafka's createRecursive does for
        znodes that only hold children (zkCli shows `null`, not an empty line); `makepath`
        creates missing parents the same way (kazoo's own makepath would store b"")."""
        try:
            return await self._create(path, data, ephemeral, sequence)
        except errors.NoNodeError:
            parent = path.rstrip("/").rpartition("/")[0]
            if not makepath or not parent:
                raise
        await self.ensure_path(parent)
        return await self._create(path, data, ephemeral, sequence)

    async def _create(self, path: str, data: bytes | None, ephemeral: bool, sequence: bool) -> str:
        acl = creation_acls(self.secure_acls, path)
        create = functools.partial(
            self._client().create_async, path, data, acl, ephemeral, sequence
        )
        return str(await self._bridge(create, path, sequence))

    async def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        raw = await self._bridge(lambda: self._client().set_async(path, data, version), path)
        return _stat(raw)

    async def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        if not recursive:
            await self._bridge(lambda: self._client().delete_async(path, version), path)
            return
        for attempt in range(_RECURSIVE_DELETE_ATTEMPTS):
            try:
                await self._delete_tree(path, version)
                return
            except errors.NotEmptyError:
                if attempt == _RECURSIVE_DELETE_ATTEMPTS - 1:
                    raise

    async def _delete_tree(self, path: str, version: int) -> None:
        children = await self.get_children(path)
        if children is None:
            raise errors.NoNodeError(f"NoNodeError at {path}", path=path)
        prefix = path.rstrip("/")
        results = await asyncio.gather(
            *(self._delete_tree(f"{prefix}/{child}", -1) for child in children),
            return_exceptions=True,
        )
        for outcome in results:
            if isinstance(outcome, BaseException) and not isinstance(outcome, errors.NoNodeError):
                raise outcome
        await self._bridge(lambda: self._client().delete_async(path, version), path)

    async def ensure_path(self, path: str) -> None:
        """Create `path` and its missing ancestors, with null data (see `create`)."""
        with contextlib.suppress(errors.NodeExistsError):
            await self.create(path, makepath=True)

    async def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        """All ops or none. A failure raises the failing op's error with `op_index` set."""
        for index, op in enumerate(ops):
            problem = path_error(op.path, isinstance(op, CreateOp) and op.sequence)
            if problem is not None:
                message = f"{problem}: {op.path!r}"
                raise errors.InvalidPathError(message, path=op.path, op_index=index)
        transaction = self._client().transaction()
        for op in ops:
            if isinstance(op, CheckOp):
                transaction.check(op.path, op.version)
            elif isinstance(op, CreateOp):
                acl = creation_acls(self.secure_acls, op.path)
                transaction.create(op.path, op.data, acl, op.ephemeral, op.sequence)
            elif isinstance(op, SetDataOp):
                transaction.set_data(op.path, op.data, op.version)
            else:
                transaction.delete(op.path, op.version)
        raw_results = await self._bridge(transaction.commit_async, None)
        return self._multi_results(ops, raw_results)

    @staticmethod
    def _multi_results(ops: Sequence[Op], raw_results: Iterable[Any]) -> list[OpResult]:
        raw = list(raw_results)
        for index, item in enumerate(raw):
            if isinstance(item, BaseException) and not isinstance(
                item, kazoo_errors.RolledBackError | kazoo_errors.RuntimeInconsistency
            ):
                path = ops[index].path if index < len(ops) else None
                raise _translate(item, path, op_index=index)
        if any(isinstance(item, BaseException) for item in raw):
            raise errors.ZkError("multi rolled back without a reported cause")
        results: list[OpResult] = []
        for item in raw:
            if isinstance(item, (str, bool)):
                results.append(item)
            else:
                results.append(_stat(item))
        return results

    # ----------------------------------------------------------------- watches

    def watch_data(
        self, path: str, callback: Callable[[], None], armed_by_reads: bool = False
    ) -> None:
        """Call `callback` on the loop whenever `path` is created, changed or deleted. With
        `armed_by_reads`, the caller arms the watch itself, by reading `path` with
        `get_many(..., arm=True)` (first, and after each callback): thousands of watches that
        fire together are then re-armed with a few requests instead of one each."""
        if armed_by_reads:
            self._armed_by_reads.setdefault(path, []).append(callback)
            self._watches["data"].setdefault(path, []).append(callback)
            return
        self._add_watch("data", path, callback)

    def watch_children(self, path: str, callback: Callable[[], None]) -> None:
        """Call `callback` on the loop whenever the children of `path` change (or `path` is
        created / deleted)."""
        self._add_watch("children", path, callback)

    def unwatch_data(self, path: str, callback: Callable[[], None]) -> None:
        self._remove_watch("data", path, callback)

    def unwatch_children(self, path: str, callback: Callable[[], None]) -> None:
        self._remove_watch("children", path, callback)

    def on_session_event(self, callback: Callable[[str], None]) -> None:
        """`callback("CONNECTED" | "SUSPENDED" | "LOST")` on the loop. LOST means the session
        expired: ephemerals are gone, and a new session follows with another CONNECTED."""
        self._session_listeners.append(callback)

    def _add_watch(self, kind: WatchKind, path: str, callback: Callable[[], None]) -> None:
        # Armed already if this client arms a watch on the path (data watches armed by their
        # callers' reads do not count: nothing re-arms them for this callback).
        armed = self._arms_itself(path) if kind == "data" else bool(self._watches[kind].get(path))
        self._watches[kind].setdefault(path, []).append(callback)
        if not armed:
            self._arm(kind, path)

    def _arms_itself(self, path: str) -> bool:
        """Whether this client re-arms the data watch on `path`: some callback of it is not
        armed by its caller's reads."""
        callbacks = self._watches["data"].get(path, ())
        return len(callbacks) > len(self._armed_by_reads.get(path, ()))

    def _remove_watch(self, kind: WatchKind, path: str, callback: Callable[[], None]) -> None:
        # The server-side watch stays until it fires; it then finds no callback and is dropped.
        callbacks = self._watches[kind].get(path)
        if callbacks is None:
            return
        if callback in callbacks:
            callbacks.remove(callback)
        read_armed = self._armed_by_reads.get(path) if kind == "data" else None
        if read_armed is not None and callback in read_armed:
            read_armed.remove(callback)
            if not read_armed:
                del self._armed_by_reads[path]
        if not callbacks:
            del self._watches[kind][path]

    def _watcher(self, kind: WatchKind, path: str) -> _KazooWatcher:
        # Built afresh each time: watchers are equal by value, so nothing per path is kept.
        return _KazooWatcher(self, kind, path)

    def _on_kazoo_watch(self, kind: WatchKind, path: str, event: Any) -> None:  # kazoo thread
        # A NONE event means kazoo dropped the watch with the connection; the session
        # listener re-arms everything on reconnection.
        if event.type == "NONE" or self._loop is None:
            return
        with contextlib.suppress(RuntimeError):  # loop closed
            self._loop.call_soon_threadsafe(self._on_watch_fired, kind, path)

    def _arm(self, kind: WatchKind, path: str) -> None:
        """Send the watch-setting read. ZooKeeper answers one session's requests in order, so a
        read the caller issues afterwards is already covered by this watch."""
        if self._kazoo is None:
            return
        watcher = self._watcher(kind, path)
        if kind == "data":
            # exists() also arms a watch on a missing znode (fires on creation).
            future = self._bridge(
                functools.partial(self._client().exists_async, path, watch=watcher), path
            )
            future.add_done_callback(self._ignore_arm_failure)
        else:
            future = self._bridge(
                functools.partial(self._client().get_children_async, path, watch=watcher), path
            )
            future.add_done_callback(lambda done: self._after_children_armed(path, done))

    def _after_children_armed(self, path: str, done: asyncio.Future[Any]) -> None:
        if done.cancelled() or not isinstance(done.exception(), errors.NoNodeError):
            self._ignore_arm_failure(done)
            return
        # No znode, so no child watch: watch for its creation instead.
        if self._kazoo is None:
            return
        watcher = self._watcher("children", path)
        exists = self._bridge(
            functools.partial(self._client().exists_async, path, watch=watcher), path
        )
        exists.add_done_callback(lambda found: self._after_parent_exists(path, found))

    def _after_parent_exists(self, path: str, found: asyncio.Future[Any]) -> None:
        if found.cancelled() or found.exception() is not None:
            return  # connection trouble: the reconnection path re-arms everything
        if found.result() is not None:
            # Created between our two requests: its creation event was missed, so act as if
            # the watch fired.
            self._on_watch_fired("children", path)

    @staticmethod
    def _ignore_arm_failure(done: asyncio.Future[Any]) -> None:
        # Arm failures are connection failures; reconnection re-arms and notifies everyone.
        if not done.cancelled():
            done.exception()

    def _on_watch_fired(self, kind: WatchKind, path: str) -> None:
        callbacks = self._watches[kind].get(path)
        if not callbacks:
            return
        if kind != "data" or self._arms_itself(path):
            self._arm(kind, path)
        for callback in list(callbacks):
            self._run_callback(callback)

    @staticmethod
    def _run_callback(callback: Callable[[], None]) -> None:
        try:
            callback()
        except Exception:
            log.exception("ZooKeeper watch callback failed")

    # ----------------------------------------------------------------- session

    def _on_kazoo_state(self, state: Any) -> None:  # kazoo thread: hand over, never block
        if self._loop is None:
            return
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._on_session_state, str(state))

    def _on_session_state(self, state: str) -> None:
        if self._closing:
            return
        if state == KazooState.CONNECTED:
            event: SessionEvent = "CONNECTED"
        elif state == KazooState.SUSPENDED:
            event = "SUSPENDED"
        else:
            event = "LOST"
        log.info("ZooKeeper session %s", event)
        if event != "CONNECTED":
            self._disconnected_since_arming = True
        for listener in list(self._session_listeners):
            try:
                listener(event)
            except Exception:
                log.exception("ZooKeeper session listener failed")
        if event == "CONNECTED" and self._disconnected_since_arming:
            self._disconnected_since_arming = False
            self._rearm_all()

    def _rearm_all(self) -> None:
        unique: dict[Callable[[], None], None] = {}
        for kind, watches in self._watches.items():
            for path, callbacks in list(watches.items()):
                if kind != "data" or self._arms_itself(path):
                    self._arm(kind, path)  # the others: their callbacks' reads arm them
                for callback in callbacks:
                    unique.setdefault(callback, None)
        for callback in unique:
            self._run_callback(callback)
