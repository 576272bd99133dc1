"""librdkafka's own test suite for `scripts/client_suites --suite rdkafka`.

librdkafka's tests are C/C++ programs linked into one `tests/test-runner` that runs against the
cluster named in a `test.conf` file. Its source comes from the npm package node-rdkafka, which
carries librdkafka's tree under `deps/librdkafka` (`npm pack`, once). It is built once into the
cache directory, with the optional dependencies this suite does not need left out (TLS, SASL,
zstd, libcurl; LZ4 is librdkafka's bundled copy), then kept for later runs.

Each test number runs in its own runner process (`TESTS=0103`), one after the other, so a crash
or hang stays with its test and each output is a log of its own (`--log-dir`, default /tmp,
`rdkafka-suite-<number>.log`). The runner is told the broker release (`TEST_KAFKA_VERSION`) and
left without its broker-less tests (local and mock-cluster tests: -L), those that need its socket
emulator (-E) and those it flags as known issues (-K); it reports those as skipped. Its summary
table gives each test's outcome; for failures, the `### Test ... failed at` lines of the log and
the lines just before them are printed too.

A few tests call Kafka's scripts through `$KAFKA_PATH` (kafka-topics.sh in 0045, 0052, 0077;
kafka-acls.sh in 0109, 0115, 0119); a stand-in KAFKA_PATH runs Kafka's own tool classes from
`reference/lib/` (`make reference`), or else this project's console tools. 0098_consumer_txn
also produces with Kafka's Java client (its `TransactionProducerCli`, compiled with `javac`
against those jars), and it and 0110 need RapidJSON's headers at build time (Debian:
rapidjson-dev; the cached build is redone once they appear); without them the runner skips
them and says why.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tarfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

NODE_RDKAFKA_RELEASE = "3.6.1"
# What node-rdkafka NODE_RDKAFKA_RELEASE carries (src/rdkafka.h's RD_KAFKA_VERSION).
LIBRDKAFKA_VERSION = "2.12.0"
ARCHIVE_NAME = f"node-rdkafka-{NODE_RDKAFKA_RELEASE}.tgz"
ARCHIVE_PREFIX = "package/deps/librdkafka/"
CONFIGURE_FLAGS = (
    "--no-download",
    "--disable-ssl",
    "--disable-gssapi",
    "--disable-zstd",
    "--disable-curl",
    "--disable-lz4-ext",
)
BUILD_JOBS = "-j2"
BUILT_STAMP = ".pykafka-classic-built"
# What librdkafka's configure looks for (Debian: rapidjson-dev), found or not.
RAPIDJSON_HEADER = Path("/usr/include/rapidjson/schema.h")
NPM_TIMEOUT_S = 600.0
BUILD_TIMEOUT_S = 3600.0
# The broker release the runner gates its tests on: the one whose API ranges we advertise.
TEST_KAFKA_VERSION = "3.9.0"
# Sequential; no broker-less (local/mock) tests, no sockem tests, no tests with known issues.
RUNNER_ARGS = ("-p1", "-L", "-E", "-K")
KILL_GRACE_S = 10.0
# The tests first (0098 alone takes about 4 minutes), then broker-facing tests that
# cover produce, consume, compression, groups, offsets, timestamps, headers, admin, compaction
# and idempotence in under ten more, 0101 (fetch from follower, KIP-392) and 0109
# (auto-creation, with a kafka-acls DENY). Left
# out: tests of authentication (0115, 0119, 0126, 0135, 0142), of TLS (0097), and slower ones
# (0038 performance, 0042 many topics, 0045 about 100 s, 0089 and 0091 waiting out poll
# intervals); `--tests all` has them all.
FOCUS_TESTS = ("0103", "0129", "0137", "0061", "0098")
BROAD_TESTS = (
    "0001", "0002", "0005", "0007", "0008", "0012", "0013", "0014", "0015", "0017", "0019",
    "0021", "0022", "0029", "0030", "0031", "0034", "0035", "0036", "0039", "0040", "0044",
    "0048", "0052", "0054", "0063", "0067", "0070", "0073", "0077", "0081", "0082", "0085",
    "0090", "0092", "0099", "0101", "0109", "0110", "0112", "0130", "0140",
)  # fmt: skip
DEFAULT_TESTS = FOCUS_TESTS + BROAD_TESTS
DETAIL_LINES_BEFORE = 6
# The Kafka scripts librdkafka's tests call (test_kafka_topics, test_kafka_cmd), by their class.
KAFKA_TOOL_CLASSES = {
    "kafka-topics.sh": "org.apache.kafka.tools.TopicCommand",
    "kafka-acls.sh": "kafka.admin.AclCommand",
    "kafka-configs.sh": "kafka.admin.ConfigCommand",
}

# The runner's own words for what it leaves out, said in this tool's terms.
_SKIP_REASONS = {
    "": "left out by the runner without a reason (e.g. it needs another test scenario)",
    "Filtered due to negative test flags": "broker-less (local/mock), sockem or known-issue test",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\x1b\(B")
# `| 0103_transactions       |     PASSED |  12.345s | reason`: one row of the summary table.
_SUMMARY_ROW = re.compile(
    r"^\|\s*(?P<name>\S+)\s*\|\s*(?P<state>[A-Z]+)\s*\|\s*[\d.]+s\s*\|\s?(?P<rest>.*)$"
)
_FAILURE_HEADER = re.compile(r'^### Test "(?P<name>[^" ]+)[^"]*" failed at ')
_TEST_NUMBER = re.compile(r"^(\d{4})(?:[_-].*)?$")
_SOURCE_FILE = re.compile(r"^(0\d{3})-.*\.(?:c|cpp)$")


class RdkafkaError(Exception):
    """librdkafka's tests could not be fetched, built or run; the message says why."""


@dataclass(frozen=True, slots=True)
class RowResult:
    """One row of the runner's summary, in client_suites' terms."""

    test: str
    status: str  # PASSED, FAILED or SKIPPED
    reason: str


@dataclass(frozen=True, slots=True)
class NumberRun:
    """What one runner process (one test number) gave."""

    number: str
    rows: list[RowResult]
    details: dict[str, list[str]]
    log: Path
    problem: str  # why there is no summary (timeout, crash), or ""


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def parse_summary(output: str) -> list[RowResult]:
    """The rows of the runner's summary table, without its `<MAIN>` row."""
    rows = []
    for line in strip_ansi(output).splitlines():
        match = _SUMMARY_ROW.match(line.strip())
        if match is None or match["name"] == "<MAIN>":
            continue
        state, rest = match["state"], match["rest"].strip()
        if state == "RUNNING":
            status, rest = "FAILED", rest or "still running when the runner stopped"
        elif state == "DNS":
            status, rest = "SKIPPED", rest or "not started"
        elif state in ("PASSED", "FAILED", "SKIPPED"):
            status = state
            if status == "SKIPPED":
                rest = _SKIP_REASONS.get(rest, rest)
        else:
            continue
        rows.append(RowResult(match["name"], status, rest))
    return rows


def failure_details(output: str, before: int = DETAIL_LINES_BEFORE) -> dict[str, list[str]]:
    """Per failed test: each `### Test ... failed at` line, its message and the lines before."""
    lines = strip_ansi(output).splitlines()
    found: dict[str, list[str]] = {}
    taken = 0  # lines before this one belong to an earlier excerpt
    for index, line in enumerate(lines):
        match = _FAILURE_HEADER.match(line.strip())
        if match is None:
            continue
        excerpt = found.setdefault(match["name"], [])
        if excerpt:
            excerpt.append("...")
        excerpt.extend(lines[max(taken, index - before) : index + 2])
        taken = index + 2
    return found


def select_tests(selection: str | None, tests_dir: Path) -> list[str]:
    """The test numbers to run: DEFAULT_TESTS, every numbered test ("all") or a comma list."""
    names = (path.name for path in tests_dir.iterdir())
    matches = (_SOURCE_FILE.match(name) for name in names)
    known = sorted({match[1] for match in matches if match and match[1] != "0000"})
    if not selection:
        return list(DEFAULT_TESTS)
    if selection.strip() == "all":
        return known
    numbers: list[str] = []
    for item in selection.split(","):
        match = _TEST_NUMBER.match(item.strip())
        if match is None:
            raise RdkafkaError(f"not a librdkafka test number: {item.strip()!r} (e.g. 0103)")
        if match[1] not in known:
            raise RdkafkaError(f"librdkafka {LIBRDKAFKA_VERSION} has no test {match[1]}")
        if match[1] not in numbers:
            numbers.append(match[1])
    return numbers


def ensure_runner(cache_dir: Path) -> Path:
    """librdkafka's `tests/` directory with a built test-runner, building it if needed."""
    tree = cache_dir / f"librdkafka-{LIBRDKAFKA_VERSION}"
    tests_dir = tree / "tests"
    stamp = tests_dir / BUILT_STAMP
    built = stamp.is_file() and (tests_dir / "test-runner").is_file()
    # Built again once RapidJSON turns up: tests such as 0098 and 0110 need it.
    stale = built and "rapidjson=no" in stamp.read_text() and RAPIDJSON_HEADER.is_file()
    if built and not stale:
        return tests_dir
    archive = cache_dir / ARCHIVE_NAME
    if not archive.is_file():
        _npm_pack(cache_dir)
    if tree.exists():
        shutil.rmtree(tree)
    _unpack(archive, tree)
    build_log = tree / "build.log"
    print(f"building librdkafka {LIBRDKAFKA_VERSION} and its test-runner (log: {build_log})")
    started = time.monotonic()
    with build_log.open("w") as log:
        _build_step(["./configure", *CONFIGURE_FLAGS], tree, log, build_log)
        _build_step(["make", BUILD_JOBS, "libs"], tree, log, build_log)
        _build_step(["make", BUILD_JOBS, "-C", "tests", "build"], tree, log, build_log)
    rapidjson = "yes" if RAPIDJSON_HEADER.is_file() else "no"
    stamp.write_text(f"{' '.join(CONFIGURE_FLAGS)}\nrapidjson={rapidjson}\n")
    print(f"built in {time.monotonic() - started:.0f} s")
    return tests_dir


def _npm_pack(cache_dir: Path) -> None:
    if shutil.which("npm") is None:
        raise RdkafkaError("npm is not on PATH (it fetches librdkafka's source, node-rdkafka)")
    cache_dir.mkdir(parents=True, exist_ok=True)
    print(f"fetching librdkafka's source: npm pack node-rdkafka@{NODE_RDKAFKA_RELEASE}")
    command = ["npm", "pack", "--silent", f"node-rdkafka@{NODE_RDKAFKA_RELEASE}"]
    command += ["--pack-destination", str(cache_dir)]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=NPM_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise RdkafkaError(f"npm pack took over {NPM_TIMEOUT_S:.0f} s") from None
    if result.returncode != 0 or not (cache_dir / ARCHIVE_NAME).is_file():
        raise RdkafkaError(f"npm pack node-rdkafka failed: {result.stderr.strip()}")


def _unpack(archive: Path, tree: Path) -> None:
    """Only librdkafka's tree (`package/deps/librdkafka/`) from the npm package, into `tree`."""
    try:
        with tarfile.open(archive) as bundle:
            members = []
            for member in bundle.getmembers():
                if member.name.startswith(ARCHIVE_PREFIX) and member.name != ARCHIVE_PREFIX:
                    member.name = member.name[len(ARCHIVE_PREFIX) :]
                    members.append(member)
            if not members:
                raise RdkafkaError(f"{archive.name} has no {ARCHIVE_PREFIX}")
            bundle.extractall(tree, members=members, filter="data")
    except (OSError, tarfile.TarError) as error:
        raise RdkafkaError(f"cannot unpack {archive}: {error}") from None


def _build_step(command: list[str], tree: Path, log: IO[str], build_log: Path) -> None:
    print(f"  {' '.join(command)}")
    try:
        result = subprocess.run(
            command,
            cwd=tree,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RdkafkaError(f"{command[0]} took over {BUILD_TIMEOUT_S:.0f} s") from None
    if result.returncode != 0:
        tail = build_log.read_text(errors="replace").splitlines()[-15:]
        raise RdkafkaError(f"`{' '.join(command)}` failed:\n" + "\n".join(tail))


def kafka_path_stand_in(repo_root: Path, work_dir: Path) -> Path:
    """A KAFKA_PATH for the tests that run Kafka's scripts or Java helpers.

    Some tests call `$KAFKA_PATH/bin/kafka-topics.sh` (or kafka-acls.sh, kafka-configs.sh); the
    Java helpers are compiled against `$KAFKA_PATH/libs/kafka-clients-*.jar` and started with
    `$KAFKA_PATH/bin/kafka-run-class.sh`. With `make reference`'s jars, `libs` is those jars and
    the scripts run Kafka's own tool classes; without them the scripts run this project's
    console tools of the same names (from .venv/bin) and the Java helpers are unavailable.
    """
    kafka_path = work_dir / "kafka-path"
    bin_dir = kafka_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    jars = repo_root / "reference" / "lib"
    if any(jars.glob("kafka-clients-*.jar")):
        (kafka_path / "libs").symlink_to(jars, target_is_directory=True)
        _script(bin_dir / "kafka-run-class.sh", 'java -cp "$CLASSPATH:$(dirname "$0")/../libs/*"')
        for script, tool_class in KAFKA_TOOL_CLASSES.items():
            _script(bin_dir / script, f'"$(dirname "$0")/kafka-run-class.sh" {tool_class}')
        return kafka_path
    for script in KAFKA_TOOL_CLASSES:
        ours = repo_root / ".venv" / "bin" / script.removesuffix(".sh")
        if ours.is_file():
            _script(bin_dir / script, f'"{ours}"')
    return kafka_path


def _script(path: Path, command: str) -> None:
    path.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
    path.chmod(0o755)


def run_number(
    tests_dir: Path,
    number: str,
    env: dict[str, str],
    log: Path,
    timeout_s: float,
    extra_args: Iterable[str] = (),
) -> NumberRun:
    """Run the tests numbered `number` in a runner of their own, its output into `log`."""
    command = ["./test-runner", *RUNNER_ARGS, *extra_args]
    # The runner aborts after its summary when a test failed; unbuffered, the summary survives.
    if shutil.which("stdbuf") is not None:
        command[:0] = ["stdbuf", "-oL", "-eL"]
    problem = ""
    with log.open("w") as out:
        process = subprocess.Popen(
            command,
            cwd=tests_dir,
            env={**env, "TESTS": number},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop_group(process)
            code = None
            problem = f"timed out after {timeout_s:.0f} s"
    output = log.read_text(errors="replace")
    rows = [row for row in parse_summary(output) if row.test.startswith(number)]
    failed = any(row.status == "FAILED" for row in rows)
    if problem:
        pass
    elif code is not None and code < 0 and not failed:
        # After a failure it aborts on purpose (SIGABRT); otherwise a signal is a crash.
        problem = f"the runner died of signal {-code}"
    elif not rows:
        problem = f"the runner printed no summary (exit code {code})"
    return NumberRun(number, rows, failure_details(output), log, problem)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the runner and its children (Java helpers), SIGKILL if they linger."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=KILL_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def runner_env(
    tests_dir: Path, test_conf: Path, kafka_path: Path, bootstrap: str
) -> dict[str, str]:
    env = dict(os.environ)
    libs = f"{tests_dir.parent / 'src'}:{tests_dir.parent / 'src-cpp'}"
    previous = env.get("LD_LIBRARY_PATH")
    env.update(
        LD_LIBRARY_PATH=f"{libs}:{previous}" if previous else libs,
        RDKAFKA_TEST_CONF=str(test_conf),
        TEST_KAFKA_VERSION=TEST_KAFKA_VERSION,
        KAFKA_PATH=str(kafka_path),
        # What test_kafka_topics passes to kafka-topics.sh --bootstrap-server.
        BROKERS=bootstrap,
    )
    for name in ("TESTS", "SUBTESTS", "TESTS_SKIP", "TESTS_SKIP_BEFORE", "ZK_ADDRESS", "CI"):
        env.pop(name, None)
    return env


def write_test_conf(path: Path, bootstrap: str, timeout_multiplier: float = 1.0) -> None:
    """The runner's test.conf; `timeout_multiplier` stretches every test's own time bounds
    (its `test.timeout.multiplier`, which librdkafka's CI raises by 2) on a loaded machine."""
    path.write_text(
        "# Written by scripts/client_suites --suite rdkafka.\n"
        f"bootstrap.servers={bootstrap}\n"
        "test.topic.random=true\n"
        f"test.timeout.multiplier={timeout_multiplier}\n"
    )
