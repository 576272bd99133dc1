"""`events`: merge every broker's state-change.log into one timeline.

Each broker writes Kafka-style lines, `[2026-11-23 10:00:00,123] INFO <message>
(state.change.logger)`, to DIR/broker-N/state-change.log. The timeline prints them in time
order as `2026-11-23 10:00:00,123 broker-N <message>`. The merge is stable: lines with the same
timestamp keep their order within a file, and files are taken in broker id order. A line that
does not start with a timestamp (a traceback) belongs to the entry above it.

In a mixed cluster (its brokers have run both ours and Apache Kafka, `up --impl kafka,ours,ours`
or `start --impl`), each line also names the implementation that wrote it, after the broker:
`2026-11-23 10:00:00,123 broker-1 (kafka) <message>`. It is the one the broker was last
launched as before the line's time (cluster.json's `impl_history`), so a broker migrated
from Kafka to ours shows Kafka's lines as kafka and ours as ours in the same file. A cluster
of one implementation prints no label, as before.
"""

from __future__ import annotations

import bisect
import datetime
import heapq
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import ClusterError
from .layout import ClusterState, broker_key, is_cluster_dir, load_state

STATE_CHANGE_LOG = "state-change.log"
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
_LINE = re.compile(
    r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (?P<level>[A-Z]+) (?P<message>.*?)"
    r"(?: \((?P<logger>[\w.]+)\))?$"
)
_BROKER_DIR = re.compile(r"^broker-(\d+)$")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)$")
_SECONDS_PER_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True, slots=True)
class Event:
    timestamp: str  # "YYYY-mm-dd HH:MM:SS,mmm": sorts as text
    writer: str  # "broker-N"
    message: str  # may span lines (a traceback)
    impl: str | None = None  # in a mixed cluster: "ours" or "kafka", whichever wrote it

    @property
    def source(self) -> str:
        """The writer, and its implementation when the cluster is mixed."""
        return self.writer if self.impl is None else f"{self.writer} ({self.impl})"

    def render(self) -> str:
        return f"{self.timestamp} {self.source} {self.message}"


# The implementation that wrote a line, from the line's timestamp.
ImplOf = Callable[[str], str]


def impl_at(history: list[list[str]], fallback: str) -> ImplOf:
    """For one broker: the implementation it was last launched as at a given time
    (`history`: cluster.json's [started, impl] pairs, oldest first). Before the first
    launch on record, the first implementation; with no record, `fallback`."""
    starts = [started for started, _ in history]
    impls = [impl for _, impl in history]

    def impl_of(timestamp: str) -> str:
        if not impls:
            return fallback
        return impls[max(0, bisect.bisect_right(starts, timestamp) - 1)]

    return impl_of


def labellers(state: ClusterState) -> dict[str, ImplOf]:
    """writer ("broker-N") -> its ImplOf, for a mixed cluster; empty for one of one
    implementation, whose lines carry no label."""
    if len(state.impls_ever_run()) < 2:
        return {}
    return {
        broker_key(i): impl_at(state.processes[broker_key(i)].impl_history, state.broker_impl(i))
        for i in state.spec.broker_ids
    }


def parse_since(text: str, now: datetime.datetime | None = None) -> str:
    """`--since`: a duration back from now (`90s`, `5m`, `1h`, `250ms`) or a timestamp
    (`2026-11-23 10:00:00[,123]`). Returns the timestamp text events are compared with."""
    duration = _DURATION.match(text.strip())
    if duration is not None:
        seconds = float(duration[1]) * _SECONDS_PER_UNIT[duration[2]]
        moment = (now or datetime.datetime.now()) - datetime.timedelta(seconds=seconds)
        return f"{moment.strftime(TIMESTAMP_FORMAT)},{moment.microsecond // 1000:03d}"
    stamp = text.strip().replace("T", " ").replace(".", ",")
    main, _, millis = stamp.partition(",")
    try:
        datetime.datetime.strptime(main, TIMESTAMP_FORMAT)
    except ValueError:
        raise ClusterError(
            f"--since {text!r}: expected a duration (90s, 5m, 1h) or YYYY-MM-DD HH:MM:SS[,mmm]"
        ) from None
    if millis and not (millis.isdigit() and len(millis) <= 3):
        raise ClusterError(f"--since {text!r}: milliseconds must be 1-3 digits")
    return f"{main},{(millis or '0').ljust(3, '0')}"


def read_events(path: Path, writer: str, impl_of: ImplOf | None = None) -> Iterator[Event]:
    """The entries of one state-change.log, in file order (each labelled with `impl_of`'s
    implementation, when given)."""
    current: Event | None = None
    with open(path, encoding="utf-8", errors="replace") as lines:
        for raw in lines:
            line = raw.rstrip("\n")
            match = _LINE.match(line)
            if match is not None:
                if current is not None:
                    yield current
                impl = None if impl_of is None else impl_of(match["time"])
                current = Event(match["time"], writer, match["message"], impl)
            elif current is not None and line:
                message = f"{current.message}\n{line}"
                current = Event(current.timestamp, writer, message, current.impl)
    if current is not None:
        yield current


def broker_logs(directory: Path) -> list[tuple[str, Path]]:
    """(writer, path) of every DIR/broker-N/state-change.log, by broker id."""
    found = []
    for child in directory.iterdir():
        match = _BROKER_DIR.match(child.name)
        log_path = child / STATE_CHANGE_LOG
        if match is not None and log_path.is_file():
            found.append((int(match[1]), child.name, log_path))
    return [(writer, path) for _, writer, path in sorted(found)]


def timeline(
    directory: Path, since: str | None = None, impl_of: dict[str, ImplOf] | None = None
) -> Iterator[Event]:
    """Every entry in time order; `impl_of` (see `labellers`) labels each writer's lines."""
    impl_of = impl_of or {}
    streams = [
        read_events(path, writer, impl_of.get(writer)) for writer, path in broker_logs(directory)
    ]
    # heapq.merge is stable: equal timestamps come out in stream order, then file order.
    for event in heapq.merge(*streams, key=lambda e: e.timestamp):
        if since is None or event.timestamp >= since:
            yield event


def events(directory: Path, since_text: str | None) -> None:
    if not directory.exists() or not is_cluster_dir(directory):
        raise ClusterError(f"no cluster in {directory}")
    since = None if since_text is None else parse_since(since_text)
    if not broker_logs(directory):
        raise ClusterError(f"no broker of {directory} has written {STATE_CHANGE_LOG} yet")
    for event in timeline(directory, since, labellers(load_state(directory))):
        print(event.render())
