"""A response holding FileRecords goes out on a plaintext connection as the exact bytes of
its frame: buffers and file regions in order, after whatever the transport still held, through
a full socket buffer (EAGAIN), on asyncio's loop and on uvloop; a region whose bytes left the
file, or a peer gone mid-send, ends the send with an error instead of a short frame or a
hang."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
import uvloop

from broker.log.file_records import FileRecords, FileRecordsTruncatedError
from broker.network.sendfile import ZeroCopySender
from broker.protocol.framing import encode_frame, frame_parts

TIMEOUT_S = 20.0
LOOPS: dict[str, Callable[[Coroutine[Any, Any, bytes]], bytes]] = {
    "asyncio": asyncio.run,
    "uvloop": uvloop.run,
}


def _file(tmp_path: Path, size_bytes: int) -> tuple[int, bytes]:
    content = os.urandom(size_bytes)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(content)
    return os.open(path, os.O_RDONLY), content


class _Peer:
    """The client end: reads everything on a thread until the connection closes (or, when
    `leaves`, reads a little and closes its end)."""

    def __init__(self, sock: socket.socket, slow: bool, leaves: bool = False) -> None:
        self.received = bytearray()
        self._sock = sock
        self._slow = slow
        self._leaves = leaves
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        self._sock.settimeout(TIMEOUT_S)
        if self._slow:
            # Let the server's socket buffer fill first: its sends must then wait (EAGAIN).
            threading.Event().wait(0.3)
        while chunk := self._sock.recv(1 << 16):
            self.received += chunk
            if self._leaves:
                self._sock.close()
                return

    def join(self) -> bytes:
        self._thread.join(TIMEOUT_S)
        assert not self._thread.is_alive(), "the peer never saw the connection close"
        return bytes(self.received)


async def _serve(
    send: Callable[[asyncio.StreamWriter, ZeroCopySender], Coroutine[Any, Any, None]],
    slow_peer: bool = False,
    peer_leaves: bool = False,
) -> bytes:
    server_end, client_end = socket.socketpair()
    peer = _Peer(client_end, slow_peer, peer_leaves)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    protocol = asyncio.StreamReaderProtocol(reader)
    transport, _ = await loop.connect_accepted_socket(lambda: protocol, server_end)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    assert ZeroCopySender.usable(writer)
    sender = ZeroCopySender(writer)
    try:
        await asyncio.wait_for(send(writer, sender), TIMEOUT_S)
    finally:
        sender.close()
        writer.close()
    received = await asyncio.to_thread(peer.join)
    client_end.close()
    return received


@pytest.mark.parametrize("loop_name", LOOPS)
def test_buffers_and_regions_go_out_as_one_exact_frame_in_order(
    tmp_path: Path, loop_name: str
) -> None:
    fd, content = _file(tmp_path, 6 << 20)
    # Earlier bytes still in the transport: a large write the kernel cannot take at once.
    earlier = os.urandom(3 << 20)
    body: list[bytes | FileRecords] = [
        b"partition 0 head",
        FileRecords.duplicate(fd, 10, 5 << 20, 0),  # more than a socket buffer holds
        b"partition 1 head",
        FileRecords.duplicate(fd, 7, 100, 0),
        b"tail",
    ]
    expected_body = (
        b"partition 0 head" + content[10 : 10 + (5 << 20)] + b"partition 1 head"
        b"" + content[7:107] + b"tail"
    )
    parts = frame_parts(b"HDR", body)

    async def send(writer: asyncio.StreamWriter, sender: ZeroCopySender) -> None:
        writer.write(earlier)
        assert writer.transport.get_write_buffer_size() > 0
        await sender.send(parts)
        writer.write(b"next response")
        await writer.drain()

    received = LOOPS[loop_name](_serve(send, slow_peer=True))
    os.close(fd)
    assert received == earlier + encode_frame(b"HDR" + expected_body) + b"next response"
    for part in body:
        if isinstance(part, FileRecords):
            with pytest.raises(ValueError):
                part.fd  # noqa: B018 - each region is closed once sent


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_region_no_longer_in_the_file_fails_the_send(tmp_path: Path, loop_name: str) -> None:
    fd, _ = _file(tmp_path, 1000)
    region = FileRecords.duplicate(fd, 900, 500, 0)  # past the end: truncated meanwhile
    os.close(fd)

    async def send(_writer: asyncio.StreamWriter, sender: ZeroCopySender) -> None:
        with pytest.raises(FileRecordsTruncatedError):
            await sender.send([b"head", region])

    LOOPS[loop_name](_serve(send))
    with pytest.raises(ValueError):
        region.fd  # noqa: B018 - closed by the failed send


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_peer_gone_mid_send_fails_the_send(tmp_path: Path, loop_name: str) -> None:
    fd, _ = _file(tmp_path, 8 << 20)
    region = FileRecords.duplicate(fd, 0, 8 << 20, 0)
    os.close(fd)

    async def send(_writer: asyncio.StreamWriter, sender: ZeroCopySender) -> None:
        with pytest.raises(ConnectionError):
            await sender.send([b"head", region])

    LOOPS[loop_name](_serve(send, peer_leaves=True))


def test_frame_parts_count_file_records_by_their_length(tmp_path: Path) -> None:
    fd, _ = _file(tmp_path, 100)
    region = FileRecords.duplicate(fd, 0, 100, 0)
    os.close(fd)
    parts = frame_parts(b"H", [b"ab", region])
    assert parts[0] == (1 + 2 + 100).to_bytes(4, "big") + b"Hab"
    assert parts[1] is region
    region.close()
