"""Sending a response that holds `FileRecords` on a plaintext connection: the buffers with
sendmsg and the file regions with os.sendfile, written straight to the socket (Kafka's
FileRecords.writeTo, a `transferTo` per region).

asyncio's loop.sendfile does this for its own selector transports, but uvloop's transports
(which the broker runs on) do not support it. So the sender waits until the transport has
flushed everything written before (a response's bytes must not overtake the previous one's),
then writes on the socket itself; the transport is idle meanwhile, as a connection has one
request in flight and nothing else writes to it. When the socket's buffer is full, the next
few KB go through the transport, and the sender waits for them to be flushed: the transport
watches the socket for room (the loop refuses a second watcher on a transport's descriptor)
and notices a connection reset or closed meanwhile. The socket then has room again, for as
much as the peer read, and sendfile goes on.

Each region's bytes are the file's at the time of the send. A region that the file no longer
holds whole (truncated since the read) ends the connection: the frame's size was announced.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Sequence

from broker.log.file_records import FileRecords, FileRecordsTruncatedError

# Ask the kernel to hold a buffer until what follows it (the region after a partition's
# header) instead of sending it in a packet of its own.
MSG_MORE = getattr(socket, "MSG_MORE", 0)
# Below the kernel's IOV_MAX (1024), for one sendmsg.
MAX_BUFFERS_PER_SEND = 512
# What a region hands the transport when the socket is full: a small part of what the socket
# takes once it has room again, so that nearly every byte still goes by sendfile.
WAIT_CHUNK_BYTES = 16 * 1024


class ZeroCopySender:
    """Writes responses with regions for one connection; `close` it with the connection."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._socket: socket.socket | None = None

    @staticmethod
    def usable(writer: asyncio.StreamWriter) -> bool:
        """Whether `writer` is a plaintext socket connection (TLS keeps the copying path:
        its bytes are encrypted in user space)."""
        return (
            writer.get_extra_info("sslcontext") is None
            and writer.get_extra_info("ssl_object") is None
            and writer.get_extra_info("socket") is not None
        )

    async def send(self, parts: Sequence[bytes | FileRecords]) -> None:
        """Write `parts` in order; closes every region, sent or not."""
        try:
            await self._flushed()
            sock = self._own_socket()
            buffers: list[bytes] = []
            for part in parts:
                if not isinstance(part, FileRecords):
                    buffers.append(part)
                    continue
                if buffers:
                    await self._send_buffers(sock, buffers, more=True)
                    buffers = []
                await self._send_region(sock, part)
                part.close()
            if buffers:
                await self._send_buffers(sock, buffers, more=False)
        finally:
            for part in parts:
                if isinstance(part, FileRecords):
                    part.close()

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    async def _flushed(self) -> None:
        """Wait until the transport holds nothing unsent: flow control resumes writing only
        when the buffer falls to the low-water mark, so that mark goes to zero meanwhile."""
        transport = self._writer.transport
        if transport.get_write_buffer_size() == 0:
            return
        low, high = transport.get_write_buffer_limits()
        transport.set_write_buffer_limits(high=0, low=0)
        try:
            await self._writer.drain()
        finally:
            if not transport.is_closing():
                transport.set_write_buffer_limits(high=high, low=low)

    def _own_socket(self) -> socket.socket:
        if self._socket is None:
            transport_socket = self._writer.get_extra_info("socket")
            duplicate = socket.socket(fileno=os.dup(transport_socket.fileno()))
            duplicate.setblocking(False)
            self._socket = duplicate
        return self._socket

    async def _send_buffers(self, sock: socket.socket, buffers: list[bytes], more: bool) -> None:
        views = [memoryview(buffer) for buffer in buffers if buffer]
        while views:
            batch = views[:MAX_BUFFERS_PER_SEND]
            last_batch = len(views) <= MAX_BUFFERS_PER_SEND
            flags = MSG_MORE if more or not last_batch else 0
            try:
                sent = sock.sendmsg(batch, (), flags)
            except BlockingIOError:
                # The socket is full: the rest (partition fields, small record sets) goes
                # through the transport, which writes it once there is room.
                self._writer.writelines(views)
                await self._flushed()
                return
            while sent:
                head = views[0]
                if sent >= len(head):
                    sent -= len(head)
                    views.pop(0)
                else:
                    views[0] = head[sent:]
                    sent = 0

    async def _send_region(self, sock: socket.socket, region: FileRecords) -> None:
        offset, remaining = region.position, region.size_bytes
        out_fd, in_fd = sock.fileno(), region.fd
        while remaining:
            try:
                sent = os.sendfile(out_fd, in_fd, offset, remaining)
            except BlockingIOError:
                chunk = os.pread(in_fd, min(remaining, WAIT_CHUNK_BYTES), offset)
                sent = len(chunk)
                if sent:
                    self._writer.write(chunk)
                    await self._flushed()
            if sent == 0:
                raise FileRecordsTruncatedError(
                    f"{remaining} of {region.size_bytes} bytes at {region.position} left the"
                    " segment file before they were sent"
                )
            offset += sent
            remaining -= sent
