"""Differential: Apache Kafka 3.9's own command-line tools, unmodified, against our cluster and
against a Kafka 3.9 cluster.

One scenario runs on both clusters at once (3 brokers each: reassignment, preferred leader
election and replica placement need more than one broker): topics are created with the JVM
kafka-topics, keyed records are produced with the JVM console producer and read back by a
consumer group with the JVM console consumer, one transaction is committed (librdkafka, for
`kafka-transactions list`), then every tool invocation of STEPS runs in order. The tools' main
classes (those `scripts/kafka-jvm` runs) run one after another in one JVM per cluster
(tests/integration/jvm/ToolRunner.java gives each run its own stdin, stdout, stderr and exit
status): a JVM start-up was most of a run's CPU. Each test checks one invocation: it exits 0
on our cluster, with Kafka's exit code, and its stdout and its own stderr (log4j records
aside) equal Kafka's once normalised (tests/integration/jvm_tools.py lists what the
normaliser rewrites and why; the rewrites specific to a step are below, each checking what it
hides).

Both clusters run with `auto.leader.rebalance.enable=false` (the preferred leader election
step must find the leaders the reassignment left), `group.initial.rebalance.delay.ms=0` and 5
partitions for each internal topic, to keep the run short. JVM_TOOLS_DUMP=FILE writes every
run, raw and normalised, to FILE as JSON.

After the scenario, `test_admin_client_is_kafkas` runs a Java AdminClient program
(tests/integration/jvm/AdminProbe.java, compiled at test time) on both clusters and compares
what each Admin call returned.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.integration.admin_client import ProbeError, compile_probe, run_probe
from tests.integration.admin_client import normalised as probe_normalised
from tests.integration.conftest import ClusterFactory, ClusterHandle
from tests.integration.jvm_tools import (
    TOOL_RUNNER_SOURCE,
    ClusterView,
    Normaliser,
    ToolBatch,
    ToolRun,
    common,
    sort_lines,
    sort_partition_list,
    without_log4j,
)

# The fixture that runs `make reference` (shared with tests/reference/).
from tests.reference.conftest import reference_lib as reference_lib

# The first test's set-up runs the whole scenario (two clusters, about 40 tool runs each):
# 190-240 s beside one CPU hog, 360 s on a more loaded machine.
SCENARIO_TIMEOUT_S = 900
pytestmark = [
    pytest.mark.reference,
    pytest.mark.timeout(SCENARIO_TIMEOUT_S),
]

OVERRIDES = {
    "auto.leader.rebalance.enable": "false",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.num.partitions": "5",
}
POLL_TIMEOUT_S = 30.0
# Set to a file name to get every run, raw and normalised, as JSON.
DUMP_VARIABLE = "JVM_TOOLS_DUMP"
TRANSACTION_TIMEOUT_S = 60.0
AUTO_TOPIC = "jvm-auto"  # created with --partitions/--replication-factor: random placement
AUTO_REPLICATION = 2
MOVE_REPLICATION = 2  # jvm-move's replication factor before the reassignment
KEYED_RECORDS = "alice:1\nbob:2\ncarol:3\ndave:4\neve:5\nfrank:6\n"
MOVE_RECORDS = "k1:v1\nk2:v2\nk3:v3\nk4:v4\n"
TRANSACTIONAL_ID = "jvm-txn"

# Files the tools read, written into each cluster's directory.
FILES = {
    "delete-records.json": {
        "version": 1,
        "partitions": [
            {"topic": "jvm-keyed", "partition": 0, "offset": 1},
            {"topic": "jvm-keyed", "partition": 1, "offset": -1},
        ],
    },
    "topics-to-move.json": {"version": 1, "topics": [{"topic": "jvm-move"}]},
    "reassignment.json": {
        "version": 1,
        "partitions": [
            # The old leader (1, 2) stays a replica but is no longer the preferred one, so
            # the reassignment keeps it and the preferred election then moves leadership.
            {"topic": "jvm-move", "partition": 0, "replicas": [2, 1, 3]},
            {"topic": "jvm-move", "partition": 1, "replicas": [3, 2]},
        ],
    },
}


# Step-specific normalisers. Each rewrites only what Kafka itself draws at random or takes
# from state that differs between two healthy clusters, after checking Kafka's rules for it.


def auto_placement(text: str, view: ClusterView) -> str:
    """jvm-auto's replicas: Kafka's assignment starts at a random broker with a random
    follower shift. Hidden only if every partition has AUTO_REPLICATION distinct live
    brokers, its first replica leads, its ISR is its replicas, and leaders are spread."""
    pattern = re.compile(
        rf"^(\s*Topic: {AUTO_TOPIC} Partition: \d+) Leader: (\S+) Replicas: (\S+) Isr: (\S+)",
        re.MULTILINE,
    )
    matches = list(pattern.finditer(text))
    brokers = {str(broker_id) for broker_id in view.broker_ids}
    leaders = set()
    for match in matches:
        replicas = match.group(3).split(",")
        if (
            len(set(replicas)) != AUTO_REPLICATION
            or len(replicas) != AUTO_REPLICATION
            or not set(replicas) <= brokers
            or match.group(2) != replicas[0]
            or sorted(match.group(4).split(",")) != sorted(replicas)
        ):
            return text
        leaders.add(replicas[0])
    if not matches or len(leaders) != min(len(matches), len(brokers)):
        return text
    canonical = rf"\1 Leader: <preferred> Replicas: <{AUTO_REPLICATION} brokers> Isr: <replicas>"
    return pattern.sub(canonical, text)


def proposed_assignment(text: str, view: ClusterView) -> str:
    """--generate's proposal: ReassignPartitionsCommand places replicas itself, from a random
    start. Hidden only if each partition gets MOVE_REPLICATION distinct brokers of the list
    and the partitions' first replicas differ."""
    head, marker, proposal = text.partition("Proposed partition reassignment configuration\n")
    try:
        data = json.loads(proposal)
        partitions = data["partitions"]
    except (ValueError, KeyError, TypeError):
        return text
    firsts = set()
    for partition in partitions:
        replicas = partition.get("replicas")
        if (
            not isinstance(replicas, list)
            or len(replicas) != MOVE_REPLICATION
            or len(set(replicas)) != len(replicas)
            or not set(replicas) <= set(view.broker_ids)
        ):
            return text
        firsts.add(replicas[0])
        partition["replicas"] = f"<{MOVE_REPLICATION} distinct brokers>"
    if len(firsts) != min(len(partitions), len(view.broker_ids)):
        return text
    return head + marker + json.dumps(data, separators=(",", ":"))


def transactions_table(text: str, view: ClusterView) -> str:
    """`kafka-transactions list`: the coordinator is the leader of a __transaction_state
    partition (placed at random by Kafka) and producer ids come from per-broker blocks of
    1,000, so both depend on which broker answered. Hidden when they are a broker id and a
    non-negative id."""
    lines = text.splitlines()
    brokers = {str(b) for b in view.broker_ids}
    for index, line in enumerate(lines[1:], start=1):
        cells = line.split(" ")
        if len(cells) == 4 and cells[1] in brokers and cells[2].isdigit():
            lines[index] = " ".join([cells[0], "<coordinator>", "<producer-id>", cells[3]])
    return "\n".join(lines)


def log_dirs_json(text: str, view: ClusterView) -> str:
    """kafka-log-dirs prints Java maps in their hash order: sorted here (brokers by id,
    partitions by name). A partition's size depends on its batches' timestamp deltas (varints),
    that is on the producer's timing: hidden when it is positive and the same on every replica
    (replicas are byte-for-byte copies of the leader's log)."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
            data["brokers"].sort(key=lambda broker: broker["broker"])
            replicas = [
                partition
                for broker in data["brokers"]
                for log_dir in broker["logDirs"]
                for partition in log_dir["partitions"]
            ]
            for broker in data["brokers"]:
                for log_dir in broker["logDirs"]:
                    log_dir["partitions"].sort(key=lambda p: p["partition"])
        except (ValueError, KeyError, TypeError):
            continue
        sizes: dict[str, set[object]] = {}
        for replica in replicas:
            sizes.setdefault(replica["partition"], set()).add(replica.get("size"))
        for replica in replicas:
            seen = sizes[replica["partition"]]
            size = next(iter(seen))
            if len(seen) == 1 and isinstance(size, int) and size > 0:
                replica["size"] = "<same size on every replica>"
        lines[index] = json.dumps(data, separators=(",", ":"))
    return "\n".join(lines)


# APIs Kafka 3.9 serves in ZooKeeper mode that our brokers do not (DEVIATIONS.md, "Wire
# protocol"): none any more (issue 41 served the last ones).
NOT_IMPLEMENTED: frozenset[str] = frozenset()
_API_LINE = re.compile(r"^(\s*)(\w+)\((\d+)\): (.*?)(,?)$")


def unimplemented_apis(text: str, view: ClusterView) -> str:
    """Kafka's version range of each NOT_IMPLEMENTED API, shown as ours: UNSUPPORTED.
    (`test_unimplemented_apis_are_still_unsupported` keeps the list exact.)"""
    lines = []
    for line in text.splitlines():
        match = _API_LINE.match(line)
        if match and match.group(2) in NOT_IMPLEMENTED:
            indent, name, key, _, comma = match.groups()
            line = f"{indent}{name}({key}): UNSUPPORTED{comma}"
        lines.append(line)
    return "\n".join(lines)


def api_version_blocks(text: str, view: ClusterView) -> str:
    """kafka-broker-api-versions prints one block per broker in a map's order: sorted."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if re.match(r"^broker-\d+ \(id: ", line) or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    return "\n".join("\n".join(block) for block in sorted(blocks))


@dataclass(frozen=True)
class Step:
    """One tool invocation (or, with `action`, one set-up action that is not compared)."""

    name: str
    tool: str = ""
    args: tuple[str, ...] = ()
    stdin: str | None = None
    normalise: tuple[Normaliser, ...] = ()
    until: Callable[[ToolRun], bool] | None = None  # repeat until true (at most 30 s)
    action: Callable[[ClusterHandle], None] | None = None


def on_cluster(*args: str) -> tuple[str, ...]:
    """A tool's arguments, after `--bootstrap-server {bootstrap}`."""
    return ("--bootstrap-server", "{bootstrap}", *args)


KEY_PARSING = ("--property", "parse.key=true", "--property", "key.separator=:")


def commit_one_transaction(cluster: ClusterHandle) -> None:
    """One committed transaction (librdkafka), so that `kafka-transactions list` shows one."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "transactional.id": TRANSACTIONAL_ID}
    )
    producer.init_transactions(TRANSACTION_TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(AUTO_TOPIC, key=b"txn", value=b"committed")
    producer.commit_transaction(TRANSACTION_TIMEOUT_S)


def _group_row(line: str) -> bool:
    return line.startswith("jvm-group ")


STEPS: tuple[Step, ...] = (
    Step(
        "topics --create --replica-assignment",
        "kafka-topics",
        on_cluster("--create", "--topic", "jvm-keyed", "--replica-assignment", "1:2:3,2:3:1,3:1:2"),
    ),
    Step(
        "topics --create --partitions --replication-factor --config",
        "kafka-topics",
        on_cluster(
            "--create",
            "--topic",
            AUTO_TOPIC,
            "--partitions",
            "3",
            "--replication-factor",
            str(AUTO_REPLICATION),
            "--config",
            "retention.ms=3600000",
        ),
    ),
    Step(
        "topics --create jvm-grow",
        "kafka-topics",
        on_cluster("--create", "--topic", "jvm-grow", "--replica-assignment", "1:2,2:3"),
    ),
    Step(
        "topics --create jvm-move",
        "kafka-topics",
        on_cluster("--create", "--topic", "jvm-move", "--replica-assignment", "1:2,2:3"),
    ),
    Step(
        "topics --create jvm-gone",
        "kafka-topics",
        on_cluster("--create", "--topic", "jvm-gone", "--replica-assignment", "3"),
    ),
    Step(
        "console-producer jvm-keyed",
        "kafka-console-producer",
        (*on_cluster("--topic", "jvm-keyed"), *KEY_PARSING),
        stdin=KEYED_RECORDS,
    ),
    Step(
        "console-producer jvm-move",
        "kafka-console-producer",
        (*on_cluster("--topic", "jvm-move"), *KEY_PARSING),
        stdin=MOVE_RECORDS,
    ),
    Step(
        "console-consumer --group",
        "kafka-console-consumer",
        on_cluster(
            *("--topic", "jvm-keyed", "--group", "jvm-group", "--from-beginning"),
            *("--max-messages", "6", "--timeout-ms", "30000", "--property", "print.key=true"),
            *("--property", "print.partition=true", "--property", "print.offset=true"),
        ),
        # Records of different partitions arrive in fetch order.
        normalise=(sort_lines(),),
    ),
    Step("commit one transaction (librdkafka)", action=commit_one_transaction),
    Step(
        "topics --describe",
        "kafka-topics",
        on_cluster("--describe", "--topic", "jvm-.*"),
        normalise=(auto_placement,),
    ),
    Step(
        "topics --alter --partitions",
        "kafka-topics",
        on_cluster("--alter", "--topic", "jvm-grow", "--partitions", "4"),
    ),
    Step(
        "topics --describe after --alter --partitions",
        "kafka-topics",
        on_cluster("--describe", "--topic", "jvm-grow"),
        # Kafka's controller answers CreatePartitions once ZooKeeper holds the assignment; a
        # broker's metadata shows the new partitions after its UpdateMetadata, a moment later.
        until=lambda run: run.returncode != 0 or "PartitionCount: 4" in run.stdout,
    ),
    Step(
        "topics --describe --under-replicated-partitions",
        "kafka-topics",
        on_cluster("--describe", "--under-replicated-partitions"),
    ),
    Step("topics --delete", "kafka-topics", on_cluster("--delete", "--topic", "jvm-gone")),
    Step(
        "configs --alter topic",
        "kafka-configs",
        on_cluster(
            "--entity-type",
            "topics",
            "--entity-name",
            AUTO_TOPIC,
            "--alter",
            "--add-config",
            "retention.ms=86400000,max.message.bytes=2000000",
        ),
    ),
    Step(
        "configs --describe topic",
        "kafka-configs",
        on_cluster("--entity-type", "topics", "--entity-name", AUTO_TOPIC, "--describe"),
    ),
    Step("consumer-groups --list", "kafka-consumer-groups", on_cluster("--list")),
    Step(
        "consumer-groups --describe --group",
        "kafka-consumer-groups",
        on_cluster("--describe", "--group", "jvm-group"),
        normalise=(sort_lines(_group_row),),
    ),
    Step(
        "delete-records --offset-json-file",
        "kafka-delete-records",
        on_cluster("--offset-json-file", "{files}/delete-records.json"),
        normalise=(sort_lines(lambda line: line.startswith("partition: ")),),
    ),
    Step(
        "get-offsets",
        "kafka-get-offsets",
        on_cluster("--topic", "jvm-(keyed|auto|grow|move)"),
    ),
    Step(
        "get-offsets --time -2",
        "kafka-get-offsets",
        on_cluster("--topic", "jvm-(keyed|auto|grow|move)", "--time", "-2"),
    ),
    Step(
        "consumer-groups --reset-offsets --to-earliest --execute",
        "kafka-consumer-groups",
        on_cluster(
            "--group",
            "jvm-group",
            "--topic",
            "jvm-keyed",
            "--reset-offsets",
            "--to-earliest",
            "--execute",
        ),
        normalise=(sort_lines(_group_row),),
    ),
    Step(
        "consumer-groups --delete",
        "kafka-consumer-groups",
        on_cluster("--delete", "--group", "jvm-group"),
    ),
    Step(
        "reassign-partitions --generate",
        "kafka-reassign-partitions",
        on_cluster(
            "--generate",
            "--topics-to-move-json-file",
            "{files}/topics-to-move.json",
            "--broker-list",
            "1,2,3",
        ),
        normalise=(proposed_assignment,),
    ),
    Step(
        "reassign-partitions --execute",
        "kafka-reassign-partitions",
        on_cluster("--execute", "--reassignment-json-file", "{files}/reassignment.json"),
    ),
    Step(
        "reassign-partitions --verify",
        "kafka-reassign-partitions",
        on_cluster("--verify", "--reassignment-json-file", "{files}/reassignment.json"),
        until=lambda run: run.returncode != 0 or "still in progress" not in run.stdout,
    ),
    Step(
        "leader-election --election-type preferred --all-topic-partitions",
        "kafka-leader-election",
        on_cluster("--election-type", "preferred", "--all-topic-partitions"),
        normalise=(sort_partition_list,),
    ),
    Step(
        "topics --describe after reassignment and election",
        "kafka-topics",
        on_cluster("--describe", "--topic", "jvm-move"),
    ),
    Step(
        "log-dirs --describe",
        "kafka-log-dirs",
        on_cluster("--describe", "--topic-list", "jvm-keyed,jvm-move"),
        normalise=(log_dirs_json,),
    ),
    Step(
        "broker-api-versions",
        "kafka-broker-api-versions",
        on_cluster(),
        normalise=(unimplemented_apis, api_version_blocks),
    ),
    Step(
        "transactions list",
        "kafka-transactions",
        on_cluster("list"),
        normalise=(transactions_table,),
    ),
    # Long after `--delete`: jvm-gone is gone (ZooKeeper-mode deletion is asynchronous).
    Step("topics --list", "kafka-topics", on_cluster("--list")),
    # Last: a broker's dynamic log.retention.ms also shows in a topic's describe when that
    # broker answers, so it is set only after the topic describes, and removed again.
    Step(
        "configs --alter broker",
        "kafka-configs",
        on_cluster(
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--alter",
            "--add-config",
            "log.retention.ms=604800000",
        ),
    ),
    Step(
        "configs --describe broker",
        "kafka-configs",
        on_cluster("--entity-type", "brokers", "--entity-name", "1", "--describe"),
        # The broker applies the change when ZooKeeper notifies it, a moment later; until then
        # Kafka's describe shows the dynamic synonym but the value as null.
        until=lambda run: run.returncode != 0 or "log.retention.ms=604800000 " in run.stdout,
    ),
    Step(
        "configs --alter --delete-config broker",
        "kafka-configs",
        on_cluster(
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--alter",
            "--delete-config",
            "log.retention.ms",
        ),
    ),
)
COMPARED = [step for step in STEPS if step.action is None]


@dataclass
class ScenarioResult:
    view: ClusterView
    runs: dict[str, ToolRun] = field(default_factory=dict)
    action_errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def run_scenario(cluster: ClusterHandle, classes: Path) -> ScenarioResult:
    files = cluster.dir / "jvm-tool-files"
    files.mkdir(exist_ok=True)
    for name, content in FILES.items():
        (files / name).write_text(json.dumps(content))
    view = ClusterView(cluster.dir, {b: cluster.broker_port(b) for b in cluster.broker_ids})
    result = ScenarioResult(view)
    started = time.monotonic()
    tools = ToolBatch(classes, cluster.dir, "jvm-tools")
    try:
        for step in STEPS:
            if step.action is not None:
                try:
                    step.action(cluster)
                except Exception as error:  # shown by every failing comparison
                    result.action_errors.append(f"{step.name}: {error!r}")
                continue
            args = [arg.format(bootstrap=cluster.bootstrap, files=files) for arg in step.args]
            result.runs[step.name] = _run_step(tools, step, args)
    finally:
        tools.close()
    result.seconds = time.monotonic() - started
    return result


def _run_step(tools: ToolBatch, step: Step, args: list[str]) -> ToolRun:
    deadline = time.monotonic() + POLL_TIMEOUT_S
    attempts = 0
    while True:
        attempts += 1
        run = tools.run(step.tool, *args, stdin=step.stdin)
        if step.until is None or step.until(run) or time.monotonic() >= deadline:
            return ToolRun(
                run.tool, run.args, run.returncode, run.stdout, run.stderr, run.seconds, attempts
            )
        time.sleep(1.0)


@pytest.fixture(scope="module")
def clusters(reference_lib: Path, make_cluster_module: ClusterFactory) -> dict[str, ClusterHandle]:
    """Kafka 3.9 and ours, for the scenario and then for the AdminClient probe."""
    return {
        "kafka": make_cluster_module(impl="kafka", overrides=OVERRIDES),
        "ours": make_cluster_module(overrides=OVERRIDES),
    }


@pytest.fixture(scope="module")
def jvm_classes(reference_lib: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/integration/jvm/ToolRunner.java (the scenario's tools run in it, one JVM per
    cluster) and AdminProbe.java, compiled by one javac into this module's temporary
    directory."""
    try:
        return compile_probe(reference_lib, tmp_path_factory.mktemp("jvm"), TOOL_RUNNER_SOURCE)
    except ProbeError as error:
        pytest.fail(str(error))


@pytest.fixture(scope="module")
def scenario(clusters: dict[str, ClusterHandle], jvm_classes: Path) -> dict[str, ScenarioResult]:
    with ThreadPoolExecutor(max_workers=len(clusters)) as pool:
        futures = {impl: pool.submit(run_scenario, c, jvm_classes) for impl, c in clusters.items()}
        results = {impl: future.result() for impl, future in futures.items()}
    dump = os.environ.get(DUMP_VARIABLE)
    if dump:
        Path(dump).write_text(json.dumps(_dump(results), indent=1))
    return results


def _dump(results: dict[str, ScenarioResult]) -> dict[str, object]:
    """Every run, raw and normalised, for reading the differences at leisure."""
    dumped: dict[str, object] = {}
    for impl, result in results.items():
        runs: dict[str, object] = {}
        for step in COMPARED:
            run = result.runs[step.name]
            stdout, stderr = normalised(step, run, result.view)
            runs[step.name] = {
                "command": run.command,
                "exit": run.returncode,
                "seconds": round(run.seconds, 2),
                "attempts": run.attempts,
                "stdout": run.stdout,
                "stderr": run.stderr,
                "normalised_stdout": stdout,
                "normalised_stderr": stderr,
            }
        dumped[impl] = {
            "seconds": round(result.seconds, 1),
            "action_errors": result.action_errors,
            "runs": runs,
        }
    return dumped


def normalised(step: Step, run: ToolRun, view: ClusterView) -> tuple[str, str]:
    stdout = common(run.stdout, view)
    for normalise in step.normalise:
        stdout = normalise(stdout, view)
    return stdout, common(without_log4j(run.stderr), view)


def _describe(label: str, run: ToolRun) -> str:
    return (
        f"--- {label}: exit {run.returncode} after {run.attempts} attempt(s), "
        f"{run.seconds:.1f} s: {run.command}\n"
        f"stdout:\n{run.stdout}\nstderr:\n{run.stderr[-4000:]}"
    )


@pytest.mark.parametrize("step", COMPARED, ids=[step.name for step in COMPARED])
def test_tool_output_is_kafkas(step: Step, scenario: dict[str, ScenarioResult]) -> None:
    ours, kafka = scenario["ours"], scenario["kafka"]
    our_run, kafka_run = ours.runs[step.name], kafka.runs[step.name]
    our_out, our_err = normalised(step, our_run, ours.view)
    kafka_out, kafka_err = normalised(step, kafka_run, kafka.view)
    details = "\n".join([_describe("ours", our_run), _describe("kafka", kafka_run)])
    for impl, result in scenario.items():
        details += "".join(f"\n{impl}: set-up action failed: {e}" for e in result.action_errors)
    assert kafka_run.returncode == 0, f"Kafka 3.9 itself failed\n{details}"
    diff = "\n".join(
        difflib.unified_diff(
            (kafka_out + "\n---- stderr\n" + kafka_err).splitlines(),
            (our_out + "\n---- stderr\n" + our_err).splitlines(),
            "kafka (normalised)",
            "ours (normalised)",
            lineterm="",
        )
    )
    assert (our_run.returncode, our_out, our_err) == (0, kafka_out, kafka_err), f"{diff}\n{details}"


def test_unimplemented_apis_are_still_unsupported(scenario: dict[str, ScenarioResult]) -> None:
    """NOT_IMPLEMENTED names exactly the APIs Kafka serves and we do not."""
    unsupported: dict[str, set[str]] = {"ours": set(), "kafka": set()}
    for impl, result in scenario.items():
        for line in result.runs["broker-api-versions"].stdout.splitlines():
            match = _API_LINE.match(line)
            if match and match.group(4).startswith("UNSUPPORTED"):
                unsupported[impl].add(match.group(2))
    assert unsupported["ours"] - unsupported["kafka"] == NOT_IMPLEMENTED


# The AdminClient probe (issue 21): a Java program calling org.apache.kafka.clients.admin.Admin,
# run after the scenario on the same two clusters, saving a second pair of cluster start-ups.
# tests/integration/admin_client.py lists what its normaliser hides and why.


def test_admin_client_is_kafkas(
    scenario: dict[str, ScenarioResult],
    clusters: dict[str, ClusterHandle],
    jvm_classes: Path,
    reference_lib: Path,
) -> None:
    """Each Admin call the probe makes answers on our cluster as on Kafka 3.9: the same result
    or the same exception class, once normalised. (`scenario` first: the probe's topics and
    group must not show in the scenario's listings.)"""
    with ThreadPoolExecutor(max_workers=len(clusters)) as pool:
        futures = {
            impl: pool.submit(run_probe, jvm_classes, reference_lib, cluster.bootstrap)
            for impl, cluster in clusters.items()
        }
        runs = {impl: future.result() for impl, future in futures.items()}
    views = {
        impl: ClusterView(cluster.dir, {b: cluster.broker_port(b) for b in cluster.broker_ids})
        for impl, cluster in clusters.items()
    }
    ours = probe_normalised(runs["ours"], views["ours"])
    kafka = probe_normalised(runs["kafka"], views["kafka"])
    details = "\n".join(
        f"--- {impl}: exit {run.returncode}, {run.seconds:.1f} s\nstdout:\n{run.stdout}\n"
        f"stderr:\n{run.stderr[-4000:]}"
        for impl, run in runs.items()
    )
    assert runs["kafka"].returncode == 0, f"the probe failed on Kafka 3.9 itself\n{details}"
    assert runs["ours"].returncode == 0, f"the probe failed on our cluster\n{details}"
    diff = "\n".join(
        difflib.unified_diff(
            json.dumps(kafka, indent=1).splitlines(),
            json.dumps(ours, indent=1).splitlines(),
            "kafka (normalised)",
            "ours (normalised)",
            lineterm="",
        )
    )
    assert ours == kafka, f"{diff}\n{details}"
