"""Run a client's own integration tests against a cluster of ours.

    scripts/client_suites [--suite kafka-python|kafka-python-sasl|rdkafka] [--cache-dir DIR]
                          [--with-clients]
                          [--brokers 3] [--kafka-defaults] [--set KEY=VALUE ...] [--dir DIR]
                          [--keep-cluster] [--timeout-s S] [-k/--tests SELECTION] [--quick]
                          [--timeout-multiplier X] [--log-dir DIR] [--impl ours|kafka]

Starts a cluster (3 brokers) with `scripts/cluster up` in its own directory on free ports
(`--impl kafka`: Apache Kafka 3.9 from `make reference`, to see what fails against Kafka itself),
runs a client library's own tests against it, prints one line per test (PASSED, FAILED, ERROR or
SKIPPED, with the reason) and the counts, then stops the cluster (--keep-cluster leaves it up to
investigate).

`--suite kafka-python` (the default) fetches the sdist of the installed kafka-python (`pip
download`, once, into --cache-dir) and runs its `test/integration/test_admin_integration.py`
(--with-clients adds the consumer and producer modules) with this venv's pytest, pointed at the
cluster through kafka-python's variables (`KAFKA_VERSION=3.9.0`, the release whose API ranges we
advertise, and `KAFKA_URI`); -k is pytest's, --timeout-s bounds each test (default 120). The
brokers get the settings of kafka-python's own broker fixture that its tests rely on
(`group.min.session.timeout.ms=1000`, `group.initial.rebalance.delay.ms=0`,
`num.partitions=4`, the ACL authorizer with `allow.everyone.if.no.acl.found=true`): its tests
use 3 s session timeouts, which Kafka's default minimum (6 s) refuses, partitions of
auto-created topics beyond the first, and ACLs. The fixture runs one broker with id 0; a few
tests rely on that (see --brokers).

`--suite kafka-python-sasl` runs its `test/integration/test_sasl_integration.py` (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512) against a SASL_PLAINTEXT cluster (`up --security
sasl_plaintext`); that module skips itself on an external broker, so a plugin stands its
broker fixture on our cluster instead (see client_suites_sasl.py).

`--suite rdkafka` runs librdkafka's own test suite (its `tests/test-runner`, fetched with npm
and built once into --cache-dir; see client_suites_rdkafka.py). `--tests 0103,0129` picks test
numbers (default: issue 15's transaction tests and a broad broker-facing set; `all` for every
numbered test), --timeout-s bounds each test number (default 900), --quick turns on the runner's
quick mode, --timeout-multiplier stretches the tests' own time bounds (a loaded machine). Each
test number's output is kept in `<--log-dir>/rdkafka-suite-<number>.log` (default /tmp), and
under each failed test the report repeats the failure lines of that log. The
brokers get librdkafka's "default" test scenario (4 partitions and replication factor 3 for
auto-created topics) and, as librdkafka's test clusters have, the ACL authorizer (with
`allow.everyone.if.no.acl.found=true`), and a rack per broker (`broker.rack=RACK<id>`) with
Kafka's rack-aware replica selector, which 0101 (fetch from follower) needs.

--kafka-defaults leaves the suite's broker settings out; --set adds or replaces broker settings.
A manual, reporting tool: it needs PyPI or npm, so it is not part of `make test`. Exits 0 when
no test failed or errored, 1 otherwise, 2 when it could not run them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _cluster.ports import NoFreePorts, reserve_cluster_ports

from . import client_suites_rdkafka as rdkafka
from . import client_suites_sasl as sasl
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
    # Its KafkaFixture._acl_config for Kafka 2.4-3.x: test_create_describe_delete_acls needs an
    # authorizer; everyone may do what no ACL names.
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
LAUNCHER_TIMEOUT_S = 180.0
DEFAULT_TEST_TIMEOUT_S = 120
# Per librdkafka test number: 0103 alone runs a dozen transactional sub-tests.
DEFAULT_RDKAFKA_TIMEOUT_S = 900
DEFAULT_LOG_DIR = Path("/tmp")
# librdkafka's tests/scenarios/default.json (its trivup clusters' "default" scenario), and the
# ACL authorizer trivup's ZooKeeper-mode brokers run with: 0081's ACL cases and the kafka-acls
# calls of 0109, 0115 and 0119 need one. Everyone may do anything no ACL names, as the tests'
# anonymous clients expect. Each broker in a rack of its own, named RACK<broker id>, with Kafka's
# rack-aware replica selector, as its trivup brokers have: 0101 (fetch from follower) sets
# client.rack to RACK<id of a follower> and skips itself unless the replicas' racks differ.
RDKAFKA_SCENARIO = {
    "auto.create.topics.enable": "true",
    "num.partitions": "4",
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "broker.rack": "RACK{broker_id}",
    "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
}
RDKAFKA_REPLICATION_FACTOR = 3
# The whole pytest run; a hung client must not keep the cluster up forever.
SUITE_TIMEOUT_S = 3600.0
EXIT_FAILURES = 1
EXIT_NOT_RUN = 2


@dataclass(frozen=True, slots=True)
class Outcome:
    test: str
    status: str  # PASSED, FAILED, ERROR or SKIPPED
    reason: str
    details: tuple[str, ...] = ()  # printed under the test's line


class RunError(Exception):
    """The suite could not be run; the message says why."""


def main(argv: list[str] | None = None) -> int:
    options = _parse_args(argv)
    try:
        if options.suite == "rdkafka":
            return _run_rdkafka_suite(options)
        if options.suite == "kafka-python-sasl":
            return _run_kafka_python_sasl_suite(options)
        return _run_kafka_python_suite(options)
    except (SdistError, rdkafka.RdkafkaError, sasl.SaslSuiteError, RunError) as error:
        print(f"client_suites: {error}", file=sys.stderr)
        return EXIT_NOT_RUN


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/client_suites",
        description="Run kafka-python's integration tests or librdkafka's test suite.",
    )
    parser.add_argument(
        "--suite",
        choices=("kafka-python", "kafka-python-sasl", "rdkafka"),
        default="kafka-python",
        help="whose tests",
    )
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    parser.add_argument("--with-clients", action="store_true", help="consumer/producer modules")
    parser.add_argument("--brokers", type=int, default=DEFAULT_BROKER_COUNT)
    parser.add_argument("--kafka-defaults", action="store_true", help="no fixture settings")
    parser.add_argument("--set", action="append", default=[], type=_setting, metavar="KEY=VALUE")
    parser.add_argument("--dir", type=Path, help="cluster directory (default: a new temp dir)")
    parser.add_argument("--keep-cluster", action="store_true", help="leave the cluster running")
    parser.add_argument(
        "--timeout-s",
        type=int,
        help=f"per test (default {DEFAULT_TEST_TIMEOUT_S}; rdkafka: per test number, "
        f"default {DEFAULT_RDKAFKA_TIMEOUT_S})",
    )
    parser.add_argument(
        "-k",
        "--tests",
        dest="keyword",
        help="pytest -k expression; rdkafka: test numbers, e.g. 0103,0129 (or `all`)",
    )
    parser.add_argument("--quick", action="store_true", help="rdkafka: the runner's quick mode")
    parser.add_argument(
        "--timeout-multiplier",
        type=float,
        default=1.0,
        help="rdkafka: stretches the tests' own time bounds (test.timeout.multiplier)",
    )
    parser.add_argument(
        "--log-dir", type=Path, default=DEFAULT_LOG_DIR, help="rdkafka: where its logs go"
    )
    parser.add_argument(
        "--impl", choices=("ours", "kafka"), default="ours", help="whose brokers (scripts/cluster)"
    )
    return parser.parse_args(argv)


def _setting(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not key or not separator:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _run_kafka_python_suite(options: argparse.Namespace) -> int:
    tree = ensure_sdist(options.cache_dir, installed_version())
    timeout_s = options.timeout_s or DEFAULT_TEST_TIMEOUT_S

    def run(port_base: int, work_dir: Path) -> list[Outcome]:
        modules = [ADMIN_MODULE, *(CLIENT_MODULES if options.with_clients else ())]
        env = {"KAFKA_URI": f"PLAINTEXT://127.0.0.1:{port_base}"}
        return _run_pytest(options, tree, modules, env, work_dir, timeout_s)

    return _run_with_cluster(options, FIXTURE_OVERRIDES, run)


def _run_kafka_python_sasl_suite(options: argparse.Namespace) -> int:
    tree = ensure_sdist(options.cache_dir, installed_version())
    sasl.prepare(tree)
    timeout_s = options.timeout_s or DEFAULT_TEST_TIMEOUT_S
    settings = {**FIXTURE_OVERRIDES, **sasl.broker_settings()}

    def run(port_base: int, work_dir: Path) -> list[Outcome]:
        directory = options.dir or work_dir / "cluster"
        bootstrap = f"127.0.0.1:{port_base}"
        tool = ROOT / ".venv" / "bin" / "kafka-configs"
        sasl.add_scram_user(tool, bootstrap, directory / "client.properties")
        # No KAFKA_URI: the module would skip itself (see client_suites_sasl).
        env = {sasl.BOOTSTRAP_VARIABLE: bootstrap}
        kafka_root = rdkafka.kafka_path_stand_in(ROOT, work_dir)
        return _run_pytest(
            options,
            tree,
            [sasl.SASL_MODULE],
            env,
            work_dir,
            timeout_s,
            kafka_root,
            sasl.PLUGIN_MODULE,
        )

    return _run_with_cluster(options, settings, run, sasl.SECURITY)


def _run_rdkafka_suite(options: argparse.Namespace) -> int:
    tests_dir = rdkafka.ensure_runner(options.cache_dir)
    numbers = rdkafka.select_tests(options.keyword, tests_dir)
    replication = min(RDKAFKA_REPLICATION_FACTOR, options.brokers)
    settings = {**RDKAFKA_SCENARIO, "default.replication.factor": str(replication)}

    def run(port_base: int, work_dir: Path) -> list[Outcome]:
        return _run_rdkafka(options, tests_dir, numbers, port_base, work_dir)

    return _run_with_cluster(options, settings, run)


def _run_with_cluster(
    options: argparse.Namespace,
    suite_settings: dict[str, str],
    run: Callable[[int, Path], list[Outcome]],
    security: str = "plaintext",
) -> int:
    work_dir = Path(tempfile.mkdtemp(prefix="client-suites-"))
    directory = options.dir or work_dir / "cluster"
    try:
        # Held until this process exits: a cluster left running (--keep-cluster) keeps them.
        ports = reserve_cluster_ports(options.brokers, 1)
    except NoFreePorts as error:
        raise RunError(str(error)) from None
    port_base, zk_port_base = ports.port_base, ports.zk_port_base
    up = ["up", "--dir", str(directory), "--brokers", str(options.brokers)]
    up += ["--port-base", str(port_base), "--zk-port-base", str(zk_port_base)]
    up += ["--impl", options.impl, "--security", security]
    settings = {} if options.kafka_defaults else dict(suite_settings)
    settings.update(options.set)
    for key, value in settings.items():
        up += ["--set", f"{key}={value}"]
    _launcher(*up)
    try:
        outcomes = run(port_base, work_dir)
    finally:
        if options.keep_cluster:
            print(f"cluster left running: scripts/cluster down --dir {directory} --wipe")
        else:
            _launcher("down", "--dir", str(directory), "--wipe")
            shutil.rmtree(work_dir, ignore_errors=True)
    _print_report(outcomes)
    failed = any(outcome.status in ("FAILED", "ERROR") for outcome in outcomes)
    return EXIT_FAILURES if failed else 0


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
    options: argparse.Namespace,
    tree: Path,
    modules: list[str],
    variables: dict[str, str],
    work_dir: Path,
    timeout_s: int,
    kafka_root: Path | None = None,
    plugin: str | None = None,
) -> list[Outcome]:
    report = work_dir / "junit.xml"
    if kafka_root is None:
        # The fixtures insist that a Kafka installation directory exists, though they never
        # use it against an external broker.
        kafka_root = work_dir / "kafka-root"
        kafka_root.mkdir(exist_ok=True)
    env = dict(os.environ)
    # Not ZOOKEEPER_URI: kafka-python 3.0's KafkaFixture.instance then takes ZooKeeper's host and
    # port as the broker's. Against an external broker its fixtures never need ZooKeeper.
    for name in ("ZOOKEEPER_URI", "KAFKA_URI", sasl.BOOTSTRAP_VARIABLE):
        env.pop(name, None)
    env.update(KAFKA_VERSION=KAFKA_VERSION, KAFKA_ROOT=str(kafka_root), **variables)
    # `addopts=` drops the sdist's --durations; the per-test timeout is ours.
    command = [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider"]
    command += ["-p", plugin] if plugin else []
    command += ["-q", f"--timeout={timeout_s}", "--timeout-method=thread"]
    command += [f"--junitxml={report}", *(["-k", options.keyword] if options.keyword else [])]
    cluster = variables.get("KAFKA_URI") or variables.get(sasl.BOOTSTRAP_VARIABLE)
    print(f"running {' '.join(modules)} against {cluster} ({options.brokers} brokers)")
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


def _run_rdkafka(
    options: argparse.Namespace,
    tests_dir: Path,
    numbers: list[str],
    port_base: int,
    work_dir: Path,
) -> list[Outcome]:
    bootstrap = ",".join(f"127.0.0.1:{port_base + i}" for i in range(options.brokers))
    test_conf = work_dir / "test.conf"
    rdkafka.write_test_conf(test_conf, bootstrap, options.timeout_multiplier)
    kafka_path = rdkafka.kafka_path_stand_in(ROOT, work_dir)
    env = rdkafka.runner_env(tests_dir, test_conf, kafka_path, bootstrap)
    timeout_s = options.timeout_s or DEFAULT_RDKAFKA_TIMEOUT_S
    options.log_dir.mkdir(parents=True, exist_ok=True)
    print(f"running librdkafka tests {','.join(numbers)} against {bootstrap}")
    outcomes: list[Outcome] = []
    for number in numbers:
        log = options.log_dir / f"rdkafka-suite-{number}.log"
        started = time.monotonic()
        result = rdkafka.run_number(
            tests_dir, number, env, log, timeout_s, ("-Q",) if options.quick else ()
        )
        found = _rdkafka_outcomes(result)
        states = ", ".join(f"{outcome.test} {outcome.status}" for outcome in found)
        print(f"  {number}: {states} ({time.monotonic() - started:.0f} s)", flush=True)
        outcomes += found
    return outcomes


def _rdkafka_outcomes(result: rdkafka.NumberRun) -> list[Outcome]:
    outcomes = []
    for row in result.rows:
        details: tuple[str, ...] = ()
        if row.status == "FAILED":
            details = (*result.details.get(row.test, []), f"log: {result.log}")
        outcomes.append(Outcome(row.test, row.status, row.reason, details))
    if result.problem:
        lines = [line for excerpt in result.details.values() for line in excerpt]
        details = (*lines, f"log: {result.log}")
        outcomes.append(Outcome(result.number, "FAILED", result.problem, details))
    return outcomes


def _print_report(outcomes: list[Outcome]) -> None:
    print()
    for outcome in outcomes:
        suffix = f"  ({outcome.reason})" if outcome.reason else ""
        print(f"{outcome.status:<8} {outcome.test}{suffix}")
        for line in outcome.details:
            print(f"           {line}")
    counts = {status: 0 for status in ("PASSED", "FAILED", "ERROR", "SKIPPED")}
    for outcome in outcomes:
        counts[outcome.status] += 1
    print(", ".join(f"{count} {status.lower()}" for status, count in counts.items()))
