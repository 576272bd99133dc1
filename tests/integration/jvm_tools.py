"""Apache Kafka 3.9's own tools (`scripts/kafka-jvm`) for differential tests, and the small
normaliser that makes their output against two clusters comparable.

The normaliser only rewrites what legitimately differs between two healthy clusters:

- broker addresses: `127.0.0.1:<port of broker i>` becomes `broker-i` (each cluster has its
  own ports);
- the cluster directory (log dir paths) becomes `<DIR>`;
- topic ids (`TopicId: <22 characters>`) become `TopicId: <id>` (random per topic);
- runs of spaces and tabs become one space, trailing blanks go: the tools pad their table
  columns to the widest cell, and some cells (topic ids, producer ids) differ in width;
- lines a tool prints in the iteration order of a Java hash set or map, which depends on the
  client's hashing, not on the broker, are sorted (`sort_lines`, `sort_partition_list`);
- log4j records on stderr (`[time] LEVEL message (logger)`, with any stack trace after them)
  are dropped from the compared stderr: they carry timestamps, and the tool's own messages
  are what is compared (the raw stderr is in every failure message).

Step-specific rewrites (replica placement that Kafka draws at random, transaction
coordinators and producer ids taken from per-broker blocks, log sizes that depend on the
producer's timing) live beside the steps in test_jvm_tools.py, each checking first that what
it hides obeys Kafka's rules.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
KAFKA_JVM = REPO_ROOT / "scripts" / "kafka-jvm"
TOOL_TIMEOUT_S = 90.0
# JVM flags for start-up time only (C1 compiler, serial GC): a tool's behaviour and output are
# the same as with kafka-run-class.sh's G1 flags, at about half the CPU per invocation.
FAST_START_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true"


@dataclass(frozen=True)
class ToolRun:
    tool: str
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    attempts: int = 1

    @property
    def command(self) -> str:
        return " ".join(["kafka-jvm", self.tool, *self.args])


def run_jvm_tool(
    tool: str, *args: str, stdin: str | None = None, timeout_s: float = TOOL_TIMEOUT_S
) -> ToolRun:
    """`scripts/kafka-jvm TOOL ARGS...` (Kafka 3.9's tool, log4j at WARN to stderr)."""
    env = dict(os.environ, KAFKA_JVM_PERFORMANCE_OPTS=FAST_START_JVM_OPTS)
    env.pop("KAFKA_JVM_LOG_LEVEL", None)
    env.pop("KAFKA_LOG4J_OPTS", None)
    started = time.monotonic()
    try:
        result = subprocess.run(
            [str(KAFKA_JVM), tool, *args],
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        return ToolRun(
            tool,
            args,
            -9,
            _text(expired.stdout),
            _text(expired.stderr) + f"\n(killed after {timeout_s:.0f} s)",
            time.monotonic() - started,
        )
    return ToolRun(
        tool, args, result.returncode, result.stdout, result.stderr, time.monotonic() - started
    )


def _text(output: str | bytes | None) -> str:
    if output is None:
        return ""
    return output.decode(errors="replace") if isinstance(output, bytes) else output


@dataclass(frozen=True)
class ClusterView:
    """What the normaliser needs to know about one cluster."""

    directory: Path
    ports: dict[int, int]  # broker id -> port

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self.ports)


Normaliser = Callable[[str, ClusterView], str]

_TOPIC_ID = re.compile(r"TopicId: [A-Za-z0-9_-]{22}")
_BLANKS = re.compile(r"[ \t]+")
_LOG4J_RECORD = re.compile(
    r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) "
)
_LOG4J_RECORD_END = re.compile(r" \([\w.$]+\)$")


def common(text: str, view: ClusterView) -> str:
    """The rewrites every compared output gets (module docstring)."""
    for broker_id, port in view.ports.items():
        text = re.sub(rf"127\.0\.0\.1:{port}(?!\d)", f"broker-{broker_id}", text)
        text = re.sub(rf"localhost:{port}(?!\d)", f"broker-{broker_id}", text)
    text = text.replace(str(view.directory), "<DIR>")
    text = _TOPIC_ID.sub("TopicId: <id>", text)
    lines = [_BLANKS.sub(" ", line).strip() for line in text.splitlines()]
    return "\n".join(lines).strip("\n")


def without_log4j(stderr: str) -> str:
    """stderr without log4j records (and the stack traces printed after them)."""
    kept: list[str] = []
    in_record = after_record = False
    for line in stderr.splitlines():
        if _LOG4J_RECORD.match(line):
            in_record = _LOG4J_RECORD_END.search(line) is None
            after_record = not in_record
            continue
        if in_record:
            if _LOG4J_RECORD_END.search(line):
                in_record, after_record = False, True
            continue
        if after_record and (line.startswith(("\t", "Caused by: ")) or not line.strip()):
            continue
        after_record = False
        kept.append(line)
    return "\n".join(kept)


def sort_lines(predicate: Callable[[str], bool] = lambda line: True) -> Normaliser:
    """Sort, in place, each run of consecutive lines that satisfy `predicate`."""

    def normalise(text: str, view: ClusterView) -> str:
        out: list[str] = []
        run: list[str] = []
        for line in [*text.splitlines(), None]:
            if line is not None and predicate(line):
                run.append(line)
                continue
            out.extend(sorted(run))
            run = []
            if line is not None:
                out.append(line)
        return "\n".join(out)

    return normalise


def sort_partition_list(text: str, view: ClusterView) -> str:
    """`... for partitions t-1, t-0` (a Java set's order) with the partitions sorted."""

    def sort_list(match: re.Match[str]) -> str:
        return match.group(1) + ", ".join(sorted(match.group(2).split(", ")))

    return re.sub(r"^(.* for partitions )(.+)$", sort_list, text, flags=re.MULTILINE)
