"""A run of whole record batches left in a segment file, to be sent without entering Python.

Kafka's FileRecords slice: a fetch on a plaintext connection answers with the position and
length of the batches in the segment, and the connection hands them to the kernel with
`sendfile`, so record bytes never pass through user space (DESIGN.md, "Copies on the hot
path").

The slice owns a duplicate of the segment's file descriptor, taken on the event loop while the
segment is part of the log. Between the read and the send the loop runs other work: retention
or a compaction swap may close and unlink the segment, and a bare descriptor number could then
be reused by another file. The duplicate keeps the file itself open (unlinked or not) until the
slice is closed, after its send or when it is dropped unsent. What it cannot keep is bytes a
truncation removes (a leader turned follower truncating its log under a slow consumer): the
send then comes up short, and the connection is closed, as Kafka closes it when its
FileRecords shrinks during a write.
"""

from __future__ import annotations

import os


class FileRecordsTruncatedError(OSError):
    """The slice's bytes are no longer all in the file (it was truncated meanwhile)."""


class FileRecords:
    """`size_bytes` bytes of whole batches at `position` of a segment file; `last_offset` is
    the last offset of the last batch (a read_committed fetch bounds its aborted
    transactions by it)."""

    __slots__ = ("_fd", "last_offset", "position", "size_bytes")

    def __init__(self, fd: int, position: int, size_bytes: int, last_offset: int) -> None:
        """Takes ownership of `fd` (see `duplicate`)."""
        self._fd = fd
        self.position = position
        self.size_bytes = size_bytes
        self.last_offset = last_offset

    @classmethod
    def duplicate(
        cls, segment_fd: int, position: int, size_bytes: int, last_offset: int
    ) -> FileRecords:
        """A slice of the file open as `segment_fd`, holding its own descriptor. Raises
        OSError (out of descriptors, for one): the caller then reads the bytes instead."""
        return cls(os.dup(segment_fd), position, size_bytes, last_offset)

    def __len__(self) -> int:
        return self.size_bytes

    @property
    def fd(self) -> int:
        if self._fd < 0:
            raise ValueError("the slice was closed")
        return self._fd

    def read(self) -> bytes:
        """The bytes, copied (a TLS connection or a response kio encodes needs them)."""
        data = os.pread(self.fd, self.size_bytes, self.position)
        while len(data) < self.size_bytes:
            more = os.pread(self.fd, self.size_bytes - len(data), self.position + len(data))
            if not more:
                raise FileRecordsTruncatedError(
                    f"{self.size_bytes - len(data)} of {self.size_bytes} bytes at"
                    f" {self.position} are gone from the file"
                )
            data += more
        return data

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def __del__(self) -> None:
        # A slice dropped unsent (a partition left out of an incremental fetch's answer, a
        # read replaced by a later one) gives its descriptor back here.
        self.close()

    def __repr__(self) -> str:
        return f"FileRecords(fd={self._fd}, position={self.position}, size={self.size_bytes})"


def records_bytes(records: bytes | FileRecords) -> bytes:
    """`records` as bytes (read from the file, for a slice; the slice is then closed)."""
    if isinstance(records, FileRecords):
        try:
            return records.read()
        finally:
            records.close()
    return records
