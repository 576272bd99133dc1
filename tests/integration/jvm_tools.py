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

`JvmProcess` is the skeleton of the long-running JVMs that tests watch while faults happen
(streams_app.py, verifiable_clients.py): they differ only in command line and line parsing.
"""

from __future__ import annotations

import base64
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
KAFKA_JVM = REPO_ROOT / "scripts" / "kafka-jvm"
# scripts/kafka-jvm's own modules (the tools' main classes, the JVM's options), for ToolBatch.
sys.path.insert(0, str(REPO_ROOT / "scripts"))
TOOL_RUNNER_SOURCE = Path(__file__).resolve().parent / "jvm" / "ToolRunner.java"
TOOL_RUNNER_CLASS = "ToolRunner"
TOOL_TIMEOUT_S = 90.0
# JVM flags for start-up time only (C1 compiler, serial GC): a tool's behaviour and output are
# the same as with kafka-run-class.sh's G1 flags, at about half the CPU per invocation.
FAST_START_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true"
# Long enough for a shutdown hook to close a Kafka client against a cluster that has lost a
# broker; a JVM that needs longer is SIGKILLed.
STOP_TIMEOUT_S = 60.0
KILL_WAIT_S = 30.0  # a SIGKILLed JVM is gone at once; this only bounds a wedged machine
TAIL_LINES = 40


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


class JvmProcess:
    """A JVM in the background. A thread reads its stdout as it comes, copying it to
    NAME.stdout and handing each line to `on_line`; stderr goes to NAME.stderr. Both files stay
    in the test's directory for reading after a failure."""

    def __init__(
        self,
        command: list[str],
        env: dict[str, str] | None,
        log_dir: Path,
        name: str,
        on_line: Callable[[str], None],
    ) -> None:
        self.name = name
        self.stdout_path = log_dir / f"{name}.stdout"
        self.stderr_path = log_dir / f"{name}.stderr"
        self._on_line = on_line
        with open(self.stderr_path, "w") as stderr:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env=env,
            )
        self._reader = threading.Thread(target=self._read, name=f"{name}-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with open(self.stdout_path, "w") as copy:
            for line in self.process.stdout:
                copy.write(line)
                copy.flush()  # complete even if the test run itself is killed
                self._on_line(line.rstrip("\n"))

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def finished(self) -> bool:
        """Exited, with everything it printed read."""
        if self.alive:
            return False
        self._reader.join(timeout=0.1)
        return not self._reader.is_alive()

    def terminate(self) -> None:
        """SIGTERM, without waiting: the caller bounds the wait for `finished`, or calls
        `kill` or `stop` afterwards."""
        if self.alive:
            self.process.terminate()

    def kill(self) -> None:
        if self.alive:
            self.process.kill()
        self._reap()

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM so that the JVM's shutdown hooks close its clients; SIGKILL if that takes
        longer than `timeout_s`."""
        self.terminate()
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._reap()

    def _reap(self) -> None:
        self.process.wait(timeout=KILL_WAIT_S)
        self._reader.join(timeout=KILL_WAIT_S)

    def stderr_tail(self, lines: int = TAIL_LINES) -> str:
        if not self.stderr_path.exists():
            return ""
        return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-lines:])


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


class ToolBatch:
    """Kafka 3.9's tools run one after another in one JVM (tests/integration/jvm/ToolRunner.java
    says how each run gets its own stdin, stdout, stderr and exit status), for a scenario of
    many tool runs: a JVM start-up is most of a short tool's CPU. `run` answers as
    `run_jvm_tool` does. A run that outlives its timeout kills the JVM, which the next run
    starts again."""

    def __init__(self, classes: Path, log_dir: Path, name: str) -> None:
        self._classes = classes
        self._stderr_path = log_dir / f"{name}.stderr"
        self._process: subprocess.Popen[str] | None = None
        self._answers: queue.Queue[str | None] = queue.Queue()

    def _start(self) -> subprocess.Popen[str]:
        from _cluster.kafka_reference import class_sharing_options
        from _tools.kafka_jvm import classpath, java_executable, log4j_file

        command = [
            java_executable(),
            # The console and verifiable clients' heap (LARGER_HEAP_TOOLS), for every tool.
            "-Xmx512M",
            *FAST_START_JVM_OPTS.split(),
            *class_sharing_options(),
            f"-Dlog4j.configuration=file:{log4j_file('WARN')}",
            "-cp",
            f"{classpath()}:{self._classes}",
            TOOL_RUNNER_CLASS,
        ]
        with open(self._stderr_path, "a") as stderr:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self._answers = queue.Queue()
        threading.Thread(
            target=self._read, args=(process, self._answers), name="tool-runner", daemon=True
        ).start()
        return process

    @staticmethod
    def _read(process: subprocess.Popen[str], answers: queue.Queue[str | None]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            answers.put(line.rstrip("\n"))
        answers.put(None)

    def run(
        self, tool: str, *args: str, stdin: str | None = None, timeout_s: float = TOOL_TIMEOUT_S
    ) -> ToolRun:
        from _tools.kafka_jvm import MAIN_CLASSES

        if self._process is None or self._process.poll() is not None:
            self._process = self._start()
        process = self._process
        assert process.stdin is not None
        encoded = [
            _b64(MAIN_CLASSES[tool]),
            "-" if stdin is None else _b64(stdin),
            *(_b64(arg) for arg in args),
        ]
        started = time.monotonic()
        process.stdin.write("\t".join(encoded) + "\n")
        process.stdin.flush()
        # Lines before the answer were written to the JVM's own stdout by a class that kept it
        # before the runner replaced System.out: the tool's output too.
        leaked: list[str] = []
        deadline = started + timeout_s
        while True:
            try:
                line = self._answers.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.close(kill=True)
                return ToolRun(
                    tool,
                    args,
                    -9,
                    "\n".join(leaked),
                    f"(killed after {timeout_s:.0f} s; the runner's stderr: {self._stderr_path})",
                    time.monotonic() - started,
                )
            if line is None:
                self._process = None
                return ToolRun(
                    tool,
                    args,
                    -1,
                    "\n".join(leaked),
                    f"(the tool runner JVM exited; its stderr: {self._stderr_path})",
                    time.monotonic() - started,
                )
            if line.startswith("@@result\t"):
                _, status, out, err = line.split("\t")
                stdout = "".join(f"{text}\n" for text in leaked) + _unb64(out)
                return ToolRun(
                    tool, args, int(status), stdout, _unb64(err), time.monotonic() - started
                )
            leaked.append(line)

    def close(self, kill: bool = False) -> None:
        """End of input ends the runner; `kill` for one that is stuck in a tool."""
        process, self._process = self._process, None
        if process is None:
            return
        if kill:
            process.kill()
        elif process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=KILL_WAIT_S)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode("ascii")


def _unb64(text: str) -> str:
    return base64.b64decode(text).decode(errors="replace")
