"""Walking batch headers in segment bytes: chunk by chunk, optionally checking CRCs."""

from __future__ import annotations

import os
from collections.abc import Iterator

from broker.log.batch import (
    CURRENT_MAGIC,
    HEADER_SIZE_BYTES,
    HEADER_STRUCT,
    BatchHeader,
    check_crc,
    read_batch_header,
)
from broker.log.errors import RecordError


def scan_chunk(chunk: bytes, verify: bool) -> Iterator[tuple[int, BatchHeader]]:
    """Complete batches at the front of `chunk`; stops at an incomplete or bad one."""
    position = 0
    while position < len(chunk):
        try:
            header = read_batch_header(chunk, position)
            if verify:
                check_crc(chunk, position, header)
        except RecordError:
            return
        yield position, header
        position += header.size_bytes


def read_one_header(fd: int, position: int, end: int, verify: bool) -> BatchHeader | None:
    """The batch at `position` when it did not fit a scan chunk; None if it is bad or torn."""
    head = os.pread(fd, HEADER_SIZE_BYTES, position)
    if len(head) < HEADER_SIZE_BYTES:
        return None
    header = BatchHeader(*HEADER_STRUCT.unpack_from(head))
    if header.magic != CURRENT_MAGIC or header.size_bytes < HEADER_SIZE_BYTES:
        return None
    if position + header.size_bytes > end:
        return None
    if not verify:
        return header
    batch = os.pread(fd, header.size_bytes, position)
    try:
        check_crc(batch, 0, read_batch_header(batch, 0))
    except RecordError:
        return None
    return header
