"""Run kafka-python's own integration tests against a cluster of ours.

    scripts/client_suites [--cache-dir DIR] [--with-clients] [--brokers 3] [--kafka-defaults]
                          [--set KEY=VALUE ...] [--dir DIR] [--keep-cluster] [--timeout-s 120]
                          [-k EXPRESSION] [--impl ours|kafka]

Starts a cluster (3 brokers) with `scripts/cluster up` in its own directory on free ports
(`--impl kafka`: Apache Kafka 3.9 from `make reference`, to see what fails against Kafka itself),
fetches the sdist of the installed kafka-python (`pip download`, once, into --cache-dir), runs its
`test/integration/test_admin_integration.py` (--with-clients adds the consumer and producer
modules) with this venv's pytest, pointed at the cluster through kafka-python's variables
(`KAFKA_VERSION=3.9.0`, the release whose API ranges we advertise, and `KAFKA_URI`), prints one
line per test (PASSED, FAILED, ERROR or SKIPPED, with the reason)
and the counts, then stops the cluster (--keep-cluster leaves it up to investigate).

The brokers get the settings of kafka-python's own broker fixture that its tests rely on
(`group.min.session.timeout.ms=1000`, `group.initial.rebalance.delay.ms=0`,
`num.partitions=4`): its tests use 3 s session timeouts, which Kafka's default minimum (6 s)
refuses, and partitions of auto-created topics beyond the first. --kafka-defaults leaves them out;
--set adds or replaces broker settings. The fixture runs one broker with id 0; a few tests rely
on that (see --brokers).

A manual, reporting tool: it needs PyPI, so it is not part of `make test`. Exits 0 when no test
failed or errored, 1 otherwise, 2 when it could not run them.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from .client_suites_sdist import SdistError, ensure_sdist, installed_version

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = ROOT / "scripts" / "cluster"
DEFAULT_CACHE_DIR = Path.home() / ".cache" / "pykafka-classic" / "client-suites"
ADMIN_MODULE = "test/integration/test_admin_integration.py"
CLIENT_MODULES = (
    "test/integration/test_consumer_integration.py",
    "test/integration/test_producer_integration.py",
)
# kafka-python reads the broker's release from here; Kafka 3.9 is the one whose ranges we serve.
KAFKA_VERSION = "3.9.0"
DEFAULT_BROKER_COUNT = 3
# What kafka-python's broker fixture (servers/resources/*/kafka.properties) sets that its tests
# depend on and our brokers understand.
FIXTURE_OVERRIDES = {
    "group.min.session.timeout.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
    # Its KafkaFixture's `partitions=4`: tests rely on auto-created topics having partition 1
    # (test_transactional_producer_offsets commits an offset for it).
    "num.partitions": "4",
}
# Same ranges as the integration tests: below Linux's ephemeral ports (32768+).
BROKER_PORT_RANGE = (10000, 19000)
ZOOKEEPER_PORT_RANGE = (20000, 29000)
PORT_PICK_ATTEMPTS = 200
LAUNCHER_TIMEOUT_S = 180.0
DEFAULT_TEST_TIMEOUT_S = 120
# The whole pytest run; a hung client must not keep the cluster up forever.
SUITE_TIMEOUT_S = 3600.0
EXIT_FAILURES = 1
EXIT_NOT_RUN = 2


@dataclass(frozen=True, slots=True)
class Outcome:
    test: str
    status: str  # PASSED, FAILED, ERROR or SKIPPED
    reason: str


class RunError(Exception):
    """The suite could not be run; the message says why."""


def main(argv: list[str] | None = None) -> int:
    options = _parse_args(argv)
    try:
        tree = ensure_sdist(options.cache_dir, installed_version())
        return _run_with_cluster(options, tree)
    except (SdistError, RunError) as error:
        print(f"client_suites: {error}", file=sys.stderr)
        return EXIT_NOT_RUN


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/client_suites", description="Run kafka-python's integration tests."
    )
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    parser.add_argument("--with-clients", action="store_true", help="consumer/producer modules")
    parser.add_argument("--brokers", type=int, default=DEFAULT_BROKER_COUNT)
    parser.add_argument("--kafka-defaults", action="store_true", help="no fixture settings")
    parser.add_argument("--set", action="append", default=[], type=_setting, metavar="KEY=VALUE")
    parser.add_argument("--dir", type=Path, help="cluster directory (default: a new temp dir)")
    parser.add_argument("--keep-cluster", action="store_true", help="leave the cluster running")
    parser.add_argument("--timeout-s", type=int, default=DEFAULT_TEST_TIMEOUT_S, help="per test")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression")
    parser.add_argument(
        "--impl", choices=("ours", "kafka"), default="ours", help="whose brokers (scripts/cluster)"
    )
    return parser.parse_args(argv)


def _setting(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not key or not separator:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _run_with_cluster(options: argparse.Namespace, tree: Path) -> int:
    work_dir = Path(tempfile.mkdtemp(prefix="client-suites-"))
    directory = options.dir or work_dir / "cluster"
    port_base = _pick_base(BROKER_PORT_RANGE, options.brokers)
    zk_port_base = _pick_base(ZOOKEEPER_PORT_RANGE, 1)
    up = ["up", "--dir", str(directory), "--brokers", str(options.brokers)]
    up += ["--port-base", str(port_base), "--zk-port-base", str(zk_port_base)]
    up += ["--impl", options.impl]
    settings = {} if options.kafka_defaults else dict(FIXTURE_OVERRIDES)
    settings.update(options.set)
    for key, value in settings.items():
        up += ["--set", f"{key}={value}"]
    _launcher(*up)
    try:
        outcomes = _run_pytest(options, tree, port_base, work_dir)
    finally:
        if options.keep_cluster:
            print(f"cluster left running: scripts/cluster down --dir {directory} --wipe")
        else:
            _launcher("down", "--dir", str(directory), "--wipe")
            shutil.rmtree(work_dir, ignore_errors=True)
    _print_report(outcomes)
    failed = any(outcome.status in ("FAILED", "ERROR") for outcome in outcomes)
    return EXIT_FAILURES if failed else 0


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _pick_base(port_range: tuple[int, int], port_count: int) -> int:
    """A random base with `port_count` free ports from it on."""
    for _ in range(PORT_PICK_ATTEMPTS):
        base = random.randrange(*port_range)
        if all(_port_free(base + offset) for offset in range(port_count)):
            return base
    raise RunError(f"no free ports in {port_range}")


def _launcher(*args: str) -> str:
    command = [sys.executable, str(CLUSTER_SCRIPT), *args]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=LAUNCHER_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise RunError(f"scripts/cluster {args[0]} took over {LAUNCHER_TIMEOUT_S:.0f} s") from None
    if result.returncode != 0:
        raise RunError(f"scripts/cluster {args[0]} failed: {result.stderr.strip()}")
    return result.stdout


def _run_pytest(
    options: argparse.Namespace, tree: Path, port_base: int, work_dir: Path
) -> list[Outcome]:
    modules = [ADMIN_MODULE, *(CLIENT_MODULES if options.with_clients else ())]
    report = work_dir / "junit.xml"
    # The fixtures insist that a Kafka installation directory exists, though they never use it
    # against an external broker.
    kafka_root = work_dir / "kafka-root"
    kafka_root.mkdir(exist_ok=True)
    env = dict(os.environ)
    # Not ZOOKEEPER_URI: kafka-python 3.0's KafkaFixture.instance then takes ZooKeeper's host and
    # port as the broker's. Against an external broker its fixtures never need ZooKeeper.
    env.pop("ZOOKEEPER_URI", None)
    env.update(
        KAFKA_VERSION=KAFKA_VERSION,
        KAFKA_URI=f"PLAINTEXT://127.0.0.1:{port_base}",
        KAFKA_ROOT=str(kafka_root),
    )
    # `addopts=` drops the sdist's --durations; the per-test timeout is ours.
    command = [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider"]
    command += ["-q", f"--timeout={options.timeout_s}", "--timeout-method=thread"]
    command += [f"--junitxml={report}", *(["-k", options.keyword] if options.keyword else [])]
    print(f"running {' '.join(modules)} against 127.0.0.1:{port_base} ({options.brokers} brokers)")
    try:
        subprocess.run(
            [*command, *modules], cwd=tree, env=env, timeout=SUITE_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise RunError(f"the tests took over {SUITE_TIMEOUT_S:.0f} s") from None
    return _read_junit(report)


def _read_junit(report: Path) -> list[Outcome]:
    try:
        root = ElementTree.parse(report).getroot()
    except (OSError, ElementTree.ParseError) as error:
        raise RunError(f"pytest wrote no readable report ({error})") from None
    return [_outcome(case) for case in root.iter("testcase")]


def _outcome(case: ElementTree.Element) -> Outcome:
    module = case.get("classname", "").rsplit(".", 1)[-1]
    test = f"{module}::{case.get('name', '?')}"
    for tag, status in (("failure", "FAILED"), ("error", "ERROR"), ("skipped", "SKIPPED")):
        element = case.find(tag)
        if element is not None:
            return Outcome(test, status, _first_line(element.get("message", "")))
    return Outcome(test, "PASSED", "")


def _first_line(message: str) -> str:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[0] if lines else ""


def _print_report(outcomes: list[Outcome]) -> None:
    print()
    for outcome in outcomes:
        suffix = f"  ({outcome.reason})" if outcome.reason else ""
        print(f"{outcome.status:<8} {outcome.test}{suffix}")
    counts = {status: 0 for status in ("PASSED", "FAILED", "ERROR", "SKIPPED")}
    for outcome in outcomes:
        counts[outcome.status] += 1
    print(", ".join(f"{count} {status.lower()}" for status, count in counts.items()))
