"""zk/kazoo_extensions.start_and_log_in: how a refused SASL login is told from a lost
connection, whichever moment ZooKeeper refuses it (a fake kazoo client, no ZooKeeper)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kazoo import exceptions as kazoo_errors
from kazoo.protocol.states import KazooState, KeeperState

from zk.kazoo_extensions import start_and_log_in


class _Started:
    def wait(self, timeout_s: float) -> bool:
        return True


class FakeClient:
    """Connects at once; what its first request meets is the test's to choose."""

    def __init__(self, first_request: Callable[[FakeClient], None]) -> None:
        self.client_state: Any = KeeperState.CONNECTED
        self.connected = True
        self._listeners: list[Callable[[Any], None]] = []
        self._first_request = first_request

    def add_listener(self, listener: Callable[[Any], None]) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[Any], None]) -> None:
        self._listeners.remove(listener)

    def start_async(self) -> _Started:
        return _Started()

    def exists(self, path: str) -> None:
        self._first_request(self)

    def refuse_login(self) -> None:
        """What kazoo does on AUTH_FAILED: the state, then LOST to every listener, then closed."""
        self.client_state = KeeperState.AUTH_FAILED
        self.connected = False
        for listener in list(self._listeners):
            listener(KazooState.LOST)
        self.client_state = KeeperState.CLOSED


def _refused_before_the_request(client: FakeClient) -> None:
    client.refuse_login()
    raise kazoo_errors.ConnectionClosedError("Connection has been closed")


def _refused_in_answer_to_the_request(client: FakeClient) -> None:
    client.refuse_login()
    raise kazoo_errors.AuthFailedError()


def _lost_without_a_refusal(client: FakeClient) -> None:
    client.connected = False
    raise kazoo_errors.ConnectionLoss()


def _answered(client: FakeClient) -> None:
    return None


def test_login_refused_before_the_first_request_is_refused_not_a_lost_connection() -> None:
    assert start_and_log_in(FakeClient(_refused_before_the_request), 1.0, True) == "refused"


def test_login_refused_in_answer_to_the_first_request_is_refused() -> None:
    assert start_and_log_in(FakeClient(_refused_in_answer_to_the_request), 1.0, True) == "refused"


def test_connection_lost_without_a_refusal_still_raises() -> None:
    with pytest.raises(kazoo_errors.ConnectionLoss):
        start_and_log_in(FakeClient(_lost_without_a_refusal), 1.0, True)


def test_answered_login_is_connected() -> None:
    assert start_and_log_in(FakeClient(_answered), 1.0, True) == "connected"
