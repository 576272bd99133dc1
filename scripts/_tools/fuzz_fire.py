"""Fire mutated frames at brokers, each followed by a valid ApiVersions probe on the same
connection, and classify what happened:

- answered: the probe's response came back (whatever came before it), so the broker read past
  the mutated frame and still serves this connection;
- closed: the broker closed the connection (the expected answer to garbage);
- stalled: nothing within the frame timeout (a size prefix that swallowed the probe, a long
  poll); the connection is dropped and a new one opened;
- refused: a connection attempt failed (or, on a SASL listener, the fuzzer's own login);
- timed out: a connection (with its TLS handshake and login) took longer than
  CONNECT_TIMEOUT_S, which a loaded machine can make happen without anything refusing.
  Both counted apart from frames: a broker that refuses connections is dead or broken.

Connections are opened by `FireOptions.open`: plain TCP, or TLS and a SASL login first (see
fuzz_security.py), or TLS alone to fire frames before authentication.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from .fuzz_check import probe_payload
from .fuzz_mutate import Mutant, frame

ANSWERED, CLOSED, STALLED = "answered", "closed", "stalled"
OUTCOMES = (ANSWERED, CLOSED, STALLED)
# A response stream that is not Kafka framing: counted as closed, and also apart, because a
# broker must never write one (the check reports it as a problem).
GARBLED = "garbled"
# fire_one only: a connection attempt failed, or did not finish in time
REFUSED, CONNECT_TIMED_OUT = "refused", "timed out"
CONNECT_TIMEOUT_S = 5.0
REFUSED_BACKOFF_S = 0.2
# Probe correlation ids count up from here; recorded clients start near 0, so a mutated frame
# answered under its own id is rarely mistaken for the probe (and harmless if it is).
PROBE_CORRELATION_BASE = 0x5EED0000
MAX_RESPONSE_BYTES = 256 * 1024 * 1024  # a sane response bound; more means a garbled stream
_SIZE = struct.Struct(">i")


Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Opener = Callable[[str], Awaitable[Streams]]


async def open_plain(address: str) -> Streams:
    host, port = address.rsplit(":", 1)
    return await asyncio.wait_for(asyncio.open_connection(host, int(port)), CONNECT_TIMEOUT_S)


class GarbledResponseError(ConnectionError):
    """The broker sent something that is not a response frame."""


@dataclass
class Tally:
    frames: int = 0
    refused: int = 0
    connect_timeouts: int = 0
    garbled: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    per_api: dict[str, dict[str, int]] = field(default_factory=dict)
    per_operation: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, api: str, operation: str, outcome: str) -> None:
        if outcome == GARBLED:
            self.garbled += 1
            outcome = CLOSED
        self.frames += 1
        self.outcomes[outcome] += 1
        for table, key in ((self.per_api, api), (self.per_operation, operation)):
            row = table.setdefault(key, dict.fromkeys(OUTCOMES, 0))
            row[outcome] += 1

    def count_connect_failure(self, outcome: str) -> None:
        """A connection that `_connect` could not open: CONNECT_TIMED_OUT or REFUSED."""
        if outcome == CONNECT_TIMED_OUT:
            self.connect_timeouts += 1
        else:
            self.refused += 1

    def merged(self, other: Tally) -> Tally:
        """Both tallies' counts together."""
        total = Tally(self.frames + other.frames, self.refused + other.refused)
        total.garbled = self.garbled + other.garbled
        total.connect_timeouts = self.connect_timeouts + other.connect_timeouts
        total.outcomes = {o: self.outcomes[o] + other.outcomes[o] for o in OUTCOMES}
        for name in ("per_api", "per_operation"):
            table: dict[str, dict[str, int]] = {}
            for source in (getattr(self, name), getattr(other, name)):
                for key, row in source.items():
                    into = table.setdefault(key, dict.fromkeys(OUTCOMES, 0))
                    for outcome, count in row.items():
                        into[outcome] += count
            setattr(total, name, table)
        return total


@dataclass
class FireOptions:
    addresses: list[str]
    concurrency: int
    frame_timeout_s: float
    deadline: float  # time.monotonic() after which no new frame is sent
    api_name: Callable[[int | None], str]
    progress: Callable[[str], None] = print
    progress_interval_s: float = 10.0
    open: Opener = open_plain


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def abort(self) -> None:
        # An abortive close (RST) leaves no TIME_WAIT behind; a long run opens many thousands.
        self.writer.transport.abort()


async def _connect(address: str, open_streams: Opener) -> _Connection | str:
    """The connection, else CONNECT_TIMED_OUT or REFUSED."""
    try:
        reader, writer = await open_streams(address)
    except TimeoutError:  # before OSError, of which it is a subclass
        return CONNECT_TIMED_OUT
    except (OSError, asyncio.IncompleteReadError, ValueError):
        return REFUSED  # ValueError: a SASL login answered with something undecodable
    return _Connection(reader, writer)


async def _until_probe(connection: _Connection, data: bytes, probe_id: int) -> None:
    connection.writer.write(data)
    await connection.writer.drain()
    wanted = _SIZE.pack(probe_id)
    while True:
        (size,) = _SIZE.unpack(await connection.reader.readexactly(_SIZE.size))
        if not 4 <= size <= MAX_RESPONSE_BYTES:
            raise GarbledResponseError(f"response size {size}")
        payload = await connection.reader.readexactly(size)
        if payload[:4] == wanted:
            return


@functools.cache
def _probe_template() -> bytes:
    return probe_payload(0)


async def exchange(connection: _Connection, data: bytes, probe_id: int, timeout_s: float) -> str:
    """Send `data` and a probe; the outcome. The connection is unusable unless answered."""
    probe = frame(_probe_template()[:4] + _SIZE.pack(probe_id) + _probe_template()[8:])
    try:
        await asyncio.wait_for(_until_probe(connection, data + probe, probe_id), timeout_s)
    except TimeoutError:
        return STALLED
    except GarbledResponseError:
        return GARBLED
    except (OSError, asyncio.IncompleteReadError):
        return CLOSED
    return ANSWERED


class _Source:
    """Hands out mutants until the frame budget or the deadline runs out."""

    def __init__(self, mutants: Callable[[], Mutant], limit: int, deadline: float) -> None:
        self._mutants = mutants
        self._left = limit
        self._deadline = deadline
        self.probe_id = PROBE_CORRELATION_BASE

    @property
    def exhausted(self) -> bool:
        return self._left <= 0 or time.monotonic() >= self._deadline

    def next(self) -> tuple[Mutant, int] | None:
        if self.exhausted:
            return None
        self._left -= 1
        self.probe_id = (self.probe_id + 1) & 0x7FFFFFFF
        return self._mutants(), self.probe_id


async def _worker(index: int, source: _Source, options: FireOptions, tally: Tally) -> None:
    position = index % len(options.addresses)
    connection: _Connection | None = None
    while not source.exhausted:
        if connection is None:
            opened = await _connect(options.addresses[position], options.open)
            if not isinstance(opened, _Connection):
                tally.count_connect_failure(opened)
                position = (position + 1) % len(options.addresses)
                await asyncio.sleep(REFUSED_BACKOFF_S)
                continue
            connection = opened
        item = source.next()
        if item is None:
            break
        mutant, probe_id = item
        outcome = await exchange(connection, mutant.data, probe_id, options.frame_timeout_s)
        tally.add(options.api_name(mutant.api_key), mutant.operation, outcome)
        if outcome != ANSWERED:
            connection.abort()
            connection = None
    if connection is not None:
        connection.abort()


async def fire_one(
    address: str, data: bytes, timeout_s: float, open_streams: Opener = open_plain
) -> str:
    """One frame on its own connection (the historic 18-byte killer goes first)."""
    connection = await _connect(address, open_streams)
    if not isinstance(connection, _Connection):
        return connection
    try:
        return await exchange(connection, data, PROBE_CORRELATION_BASE, timeout_s)
    finally:
        with contextlib.suppress(OSError):
            connection.abort()


async def fire(
    mutants: Callable[[], Mutant], limit: int, options: FireOptions, tally: Tally
) -> None:
    source = _Source(mutants, limit, options.deadline)
    workers = [_worker(i, source, options, tally) for i in range(options.concurrency)]
    reporter = asyncio.ensure_future(_report_progress(tally, options))
    try:
        await asyncio.gather(*workers)
    finally:
        reporter.cancel()


async def _report_progress(tally: Tally, options: FireOptions) -> None:
    """A line per interval, so a long run by hand shows its pace and any sudden change."""
    last_frames, last_time = tally.frames, time.monotonic()
    while True:
        await asyncio.sleep(options.progress_interval_s)
        now = time.monotonic()
        rate = (tally.frames - last_frames) / (now - last_time)
        outcomes = "  ".join(f"{name} {count}" for name, count in tally.outcomes.items())
        options.progress(
            f"{tally.frames} frames, {rate:.0f} frames/s  {outcomes}  refused {tally.refused}"
            f"  timed out {tally.connect_timeouts}"
        )
        last_frames, last_time = tally.frames, now
