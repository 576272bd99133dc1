"""ZkClient.get_many reads with ZooKeeper's multiRead, and falls back to one read per znode
when a server refuses multiRead as a whole (one older than 3.6)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from kazoo import exceptions as kazoo_errors
from kazoo.protocol.serialization import int_struct, multiheader_struct, stat_struct

from zk.client import ZkClient
from zk.kazoo_extensions import MultiRead

_STAT_FIELDS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)


class _Answered:
    """A kazoo async result, answered now (`value` / `error`) or later by `answer`."""

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self._value, self._error = value, error

    def answer(self, error: BaseException) -> None:
        self._error = error

    def rawlink(self, callback: Any) -> None:
        callback(self)

    def get_nowait(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


class _OldServerKazoo:
    """Refuses every multiRead as ZooKeeper 3.5 would; answers plain reads."""

    chroot = ""

    def __init__(self) -> None:
        self.multi_reads = 0
        self.reads: list[str] = []
        self.handler = SimpleNamespace(async_result=_Answered)

    def _call(self, request: Any, async_result: _Answered) -> None:
        assert request.type == MultiRead.type
        self.multi_reads += 1
        async_result.answer(kazoo_errors.UnimplementedError())

    def get_async(self, path: str) -> _Answered:
        self.reads.append(path)
        if path == "/missing":
            return _Answered(error=kazoo_errors.NoNodeError())
        stat = SimpleNamespace(
            czxid=1, mzxid=1, pzxid=1, ctime=0, mtime=0, version=3, cversion=0,
            aversion=0, ephemeralOwner=0, dataLength=1, numChildren=0,
        )  # fmt: skip
        return _Answered((path.encode(), stat))


def test_a_refused_multi_read_falls_back_to_one_read_per_znode() -> None:
    async def scenario() -> None:
        client = ZkClient("127.0.0.1:2181")
        kazoo = _OldServerKazoo()
        client._loop = asyncio.get_running_loop()
        client._kazoo = kazoo
        found = await client.get_many(["/a", "/missing", "/b"])
        assert [None if f is None else f[0] for f in found] == [b"/a", None, b"/b"]
        assert kazoo.multi_reads == 1 and not client._multi_read
        assert kazoo.reads == ["/a", "/missing", "/b"]
        # Later reads do not try multiRead again.
        await client.get_many(["/c"])
        assert kazoo.multi_reads == 1

    asyncio.run(scenario())


def test_multi_read_answers_decode_data_stats_and_per_znode_errors() -> None:
    request = MultiRead(["/a", "/gone", "/empty"])
    body = bytes(request.serialize())
    # Three getData ops (type 4, no watch), then the end marker.
    assert body.count(multiheader_struct.pack(4, False, -1)) == 3
    assert body.endswith(multiheader_struct.pack(-1, True, -1))

    answer = bytearray()
    answer += multiheader_struct.pack(4, False, 0) + int_struct.pack(3) + b"abc"
    answer += stat_struct.pack(*_STAT_FIELDS)
    answer += multiheader_struct.pack(-1, False, -101) + int_struct.pack(-101)  # NoNode
    answer += multiheader_struct.pack(4, False, 0) + int_struct.pack(-1)  # null data
    answer += stat_struct.pack(*_STAT_FIELDS)
    answer += multiheader_struct.pack(-1, True, -1)
    first, missing, empty = request.deserialize(bytes(answer), 0)
    assert isinstance(first, tuple) and first[0] == b"abc" and first[1].version == 5
    assert isinstance(missing, kazoo_errors.NoNodeError)
    assert isinstance(empty, tuple) and empty[0] == b""
