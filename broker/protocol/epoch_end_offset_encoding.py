"""OffsetForLeaderEpoch responses encoded with `struct`, entry by entry.

A follower that starts following thousands of partitions (a failover, a controlled shutdown)
asks their leader for all of them in one request, and again for those answered with an error
after its back-off. Building the answer as kio entities cost about 30 µs a partition on the
leader's event loop; each entry here is a few fields packed at once (a unit test holds every
version to kio's encoding). The topics and the response around the entries are encoded by kio
(`adapter.encode_with_array`).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from broker.protocol import adapter

# (error, partition, leader epoch, end offset) -> the entry's bytes.
EntryWriter = Callable[[ErrorCode, int, int, int], bytes]


@functools.cache
def entry_writer(cls: type) -> EntryWriter:
    """An encoder of `cls` (an EpochEndOffset version) entries."""
    tail = b"\x00" if cls.__flexible__ else b""  # type: ignore[attr-defined]  # no tagged fields
    if adapter.has_field(cls, "leader_epoch"):
        with_epoch = struct.Struct(">hiiq")

        def write(error: ErrorCode, partition: int, epoch: int, end_offset: int) -> bytes:
            return with_epoch.pack(error.value, partition, epoch, end_offset) + tail

        return write
    without_epoch = struct.Struct(">hiq")  # v0 answers no leader epoch

    def write_v0(error: ErrorCode, partition: int, epoch: int, end_offset: int) -> bytes:
        return without_epoch.pack(error.value, partition, end_offset) + tail

    return write_v0


def encode_topic(topic_cls: type, topic: str, entries: list[bytes]) -> bytes:
    """One topic's entry around its encoded partition entries."""
    return b"".join(adapter.encode_with_array(topic_cls, {"topic": topic}, "partitions", entries))


def encode_response(cls: type, topics: list[bytes]) -> adapter.Encoded:
    return adapter.Encoded(adapter.encode_with_array(cls, {"throttle_time": 0}, "topics", topics))
