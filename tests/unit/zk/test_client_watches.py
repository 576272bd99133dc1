"""ZkClient's watch bookkeeping against a stand-in for kazoo (no server)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from zk.client import ZkClient


class _Answered:
    """A kazoo async result already answered (with nothing: arming needs no answer here)."""

    def rawlink(self, callback: Callable[[Any], None]) -> None:
        callback(self)

    def get_nowait(self) -> None:
        return None


class _FakeKazoo:
    """Keeps watchers the way kazoo does: a set per path, until the watch fires."""

    def __init__(self) -> None:
        self.data_watchers: defaultdict[str, set[Any]] = defaultdict(set)
        self.child_watchers: defaultdict[str, set[Any]] = defaultdict(set)

    def exists_async(self, path: str, watch: Any = None) -> _Answered:
        self.data_watchers[path].add(watch)
        return _Answered()

    def get_children_async(self, path: str, watch: Any = None) -> _Answered:
        self.child_watchers[path].add(watch)
        return _Answered()


def _noop() -> None:
    pass


def _client_with_fake_kazoo() -> tuple[ZkClient, _FakeKazoo]:
    client = ZkClient("127.0.0.1:2181")
    kazoo = _FakeKazoo()
    client._loop = asyncio.get_running_loop()
    client._kazoo = kazoo
    return client, kazoo


def test_unwatched_paths_leave_no_state_behind() -> None:
    # Topics and partitions come and go: watching and unwatching their znodes must not make
    # the client grow.
    async def scenario() -> None:
        client, _ = _client_with_fake_kazoo()
        paths = [f"/brokers/topics/churn{i}/partitions/0/state" for i in range(1_000)]
        for path in paths:
            client.watch_data(path, _noop)
            client.watch_children(path, _noop)
        for path in paths:
            client.unwatch_data(path, _noop)
            client.unwatch_children(path, _noop)
        # Requests beyond the in-flight bound go out as earlier ones are answered.
        for _ in range(1_000):
            if not client._waiting:
                break
            await asyncio.sleep(0)
        assert client._watches == {"data": {}, "children": {}}
        assert "churn" not in repr(vars(client))

    asyncio.run(scenario())


def test_path_watched_again_before_its_old_watch_fired_has_one_kazoo_watcher() -> None:
    # The watch armed before the unwatch stays registered until it fires; arming again must
    # not add a second watcher that would deliver every change twice.
    async def scenario() -> None:
        client, kazoo = _client_with_fake_kazoo()
        client.watch_data("/p", _noop)
        client.unwatch_data("/p", _noop)
        client.watch_data("/p", _noop)
        client.watch_children("/p", _noop)
        assert len(kazoo.data_watchers["/p"]) == 1
        assert len(kazoo.child_watchers["/p"]) == 1
        assert kazoo.data_watchers["/p"] != kazoo.child_watchers["/p"]

    asyncio.run(scenario())
