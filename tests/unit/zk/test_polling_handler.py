"""The poll-based `select` kazoo's connection thread uses: select()'s answers, any fd number."""

from __future__ import annotations

import socket
import time

from zk.kazoo_extensions import PollingHandler


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
