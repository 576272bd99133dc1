"""The kazoo handler zk.client uses: a poll-based `select` (select()'s answers, any fd number),
and callbacks that hand over to the event loop run at once on the thread that reads them."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from kazoo.protocol.states import Callback

from zk.kazoo_extensions import LoopHandoff, PollingHandler


def test_reports_readable_and_writable_sockets_like_select() -> None:
    handler = PollingHandler()
    left, right = socket.socketpair()
    try:
        readable, writable, errored = handler.select([left], [right], [], 1.0)
        assert (readable, writable, errored) == ([], [right], [])
        right.send(b"x")
        readable, writable, _ = handler.select([left, right], [], [], 1.0)
        assert readable == [left]
        assert writable == []
    finally:
        left.close()
        right.close()


def test_times_out_with_nothing_ready_and_counts_a_hang_up_as_readable() -> None:
    handler = PollingHandler()
    left, right = socket.socketpair()
    try:
        started = time.monotonic()
        assert handler.select([left], [], [], 0.05) == ([], [], [])
        assert time.monotonic() - started >= 0.04
        right.close()
        assert handler.select([left], [], [], 1.0)[0] == [left]
    finally:
        left.close()


def test_takes_raw_file_descriptors_too() -> None:
    handler = PollingHandler()
    left, right = socket.socketpair()
    try:
        right.send(b"x")
        assert handler.select([left.fileno()], [], [], 1.0)[0] == [left.fileno()]
    finally:
        left.close()
        right.close()


class _Recorder(LoopHandoff):
    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []

    def __call__(self, *args: object) -> None:
        self.calls.append((threading.current_thread().name, args))


class _Failing(LoopHandoff):
    def __call__(self, *args: object) -> None:
        raise ValueError("broken callback")


def test_hand_over_callbacks_run_on_the_reading_thread_and_others_are_queued() -> None:
    handler = PollingHandler()
    handler.start()
    try:
        watcher = _Recorder()
        handler.dispatch_callback(Callback("watch", watcher, ("event",)))
        result = handler.async_result()
        result.rawlink(watcher)
        result.set("answer")
        here = threading.current_thread().name
        assert watcher.calls == [(here, ("event",)), (here, (result,))]

        queued: list[str] = []
        done = threading.Event()

        def plain(*args: object) -> None:
            queued.append(threading.current_thread().name)
            done.set()

        handler.dispatch_callback(Callback("watch", plain, ()))
        assert done.wait(5.0), "a plain kazoo callback never ran"
        assert queued and queued[0] != here  # still one of kazoo's worker threads
    finally:
        handler.stop()


def test_a_failing_hand_over_callback_is_logged_and_does_not_raise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = PollingHandler()
    handler.start()
    try:
        handler.dispatch_callback(Callback("watch", _Failing(), ("event",)))
        result = handler.async_result()
        result.rawlink(_Failing())
        result.set_exception(RuntimeError("no answer"))
    finally:
        handler.stop()
    failures = [r for r in caplog.records if r.getMessage().startswith("ZooKeeper callback")]
    assert len(failures) == 2
    assert all(r.exc_info and "broken callback" in str(r.exc_info[1]) for r in failures)
