"""Kafka Streams 3.9, unmodified, against our brokers: a DSL word count
(tests/integration/jvm/WordCount.java, compiled at test time) with a repartition topic and a
persistent RocksDB store backed by a compacted changelog topic.

The input is a fixed text, so every word's final count is known in advance. The application's
record cache is off: every increment of a word's count reaches the output topic, so a word seen
N times has the values 1..N in its output partition, in that order, when nothing was processed
twice. Progress is what the application's consumer group has committed on the input topic (its
records are numbered from 0, so the committed offsets add up to the lines processed).

- `test_word_count_is_exact`: the whole text, no faults: exact counts, each word's outputs
  1..N; the repartition topic has the input's partitions and the changelog is compacted.
- `test_kafka_gives_the_same`: the same on one Kafka 3.9 broker: the same outputs, and the same
  internal topics with the same partitions and configs.
- `test_at_least_once_resumes_after_sigkill`: the first part of the text is processed and
  committed (input and repartition topics), the application is SIGKILLed while it processes
  the second, and restarted with an empty state directory. It restores its store from the
  changelog and resumes from its committed offsets: every final count is at least the text's,
  and above it by no more than the second part's occurrences of the word (all that a replay
  can add); without the store restored, the first part's counts would be missing.
- `test_exactly_once_v2_through_app_and_broker_sigkills`: with processing.guarantee
  exactly_once_v2, the application is SIGKILLed with a transaction open and restarted with an
  empty state directory (so with another transactional id: the coordinator aborts the open
  transaction at its timeout), then the broker that coordinates the new instance's
  transactions is SIGKILLed with another one open: a read_committed reader sees each word's
  outputs exactly 1..N.

Each test has its own topics and application id, on one 3-broker cluster (replication factor
3 for the internal topics); the application's stdout and log4j output, and what the test did
when (`timeline.txt`), are in the test's tmp_path, and their tails in every failure message.
"""

from __future__ import annotations

import random
import re
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from broker.protocol.api_keys import ApiKey
from tests.integration.admin_client import LOG4J_PROPERTIES, java_tool
from tests.integration.conftest import ClusterFactory, ClusterHandle, wait_until
from tests.integration.jvm_tools import FAST_START_JVM_OPTS
from tests.integration.streams_app import (
    CHUNK_LINES,
    PARTITIONS,
    PROGRESS_TIMEOUT_S,
    Feeder,
    StreamsApp,
    Timeline,
    committed_lines,
    committed_offsets,
    committed_reader,
    create_topics,
    end_offsets,
    latest,
    not_one_to_n,
    read_outputs,
)
from tests.integration.wire import WireClient, broker_address

# The fixtures that run `make reference` and share a one-broker Kafka 3.9 cluster with the
# reference modules of this worker (tests/reference/conftest.py, tests/conftest.py).
from tests.reference.conftest import ONE_BROKER_OVERRIDES, OneBroker
from tests.reference.conftest import one_broker as one_broker
from tests.reference.conftest import reference_lib as reference_lib
from tests.reference.conftest import shared_one_broker as shared_one_broker

pytestmark = pytest.mark.reference

SOURCE = Path(__file__).resolve().parent / "jvm" / "WordCount.java"
OVERRIDES = {
    # A SIGKILLed broker's partitions and coordinators move once its session expires.
    "zookeeper.session.timeout.ms": "6000",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.num.partitions": "5",
    # How often the coordinator looks for transactions past their timeout (10 s by default).
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "2000",
}
REPLICATION = 3
# The text: PARTS parts of LINES_PER_PART lines of WORDS_PER_LINE words from VOCABULARY.
WORDS = (
    "apple banana cherry delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
)
VOCABULARY = WORDS.split()
PARTS = 3
LINES_PER_PART = 400
WORDS_PER_LINE = 5
# Before a kill: a few lines per chunk, so that the application always has new input (and,
# with exactly-once, an open transaction) until the kill, however slow the test thread is.
TRICKLE_LINES = 2

COMPILE_TIMEOUT_S = 120.0
START_TIMEOUT_S = 120.0  # a JVM and a first rebalance on two loaded cores
TRANSACTION_KEY_TYPE = 1  # FindCoordinator's key type for a transactional id


def _text_lines() -> list[str]:
    draw = random.Random(21)
    total = PARTS * LINES_PER_PART
    lines = []
    for number in range(total):
        words = [draw.choice(VOCABULARY) for _ in range(WORDS_PER_LINE)]
        # Mixed case and punctuation: the application lower-cases and splits on non-words.
        words[0] = words[0].capitalize()
        lines.append(" ".join(words) + (", and more." if number % 7 == 0 else ""))
    return lines


LINES = _text_lines()


def counts(lines: list[str]) -> Counter[str]:
    """Word counts as WordCount.java computes them."""
    found: Counter[str] = Counter()
    for line in lines:
        found.update(word for word in re.split(r"\W+", line.lower()) if word)
    return found


def part(first: int, last: int | None = None) -> list[str]:
    """Parts first..last (1-based, inclusive) of the text."""
    last = first if last is None else last
    return LINES[(first - 1) * LINES_PER_PART : last * LINES_PER_PART]


@pytest.fixture(scope="module")
def streams_cluster(make_cluster_module: ClusterFactory) -> ClusterHandle:
    return make_cluster_module(overrides=OVERRIDES)


@pytest.fixture(scope="module")
def word_count_classes(reference_lib: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """WordCount.java compiled against Kafka 3.9's jars, with the tools' log4j config."""
    out_dir = tmp_path_factory.mktemp("wordcount-classes")
    result = subprocess.run(
        [
            java_tool("javac"),
            *(f"-J{option}" for option in FAST_START_JVM_OPTS.split()),
            *("-d", str(out_dir), "-cp", f"{reference_lib}/*", str(SOURCE)),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMPILE_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, f"javac failed:\n{result.stdout}\n{result.stderr}"
    (out_dir / "log4j.properties").write_text(LOG4J_PROPERTIES)
    return out_dir


class WordCountRun:
    """One test's topics, application instances, feeder and timeline."""

    def __init__(
        self,
        cluster: ClusterHandle,
        classes: Path,
        reference_lib: Path,
        tmp_path: Path,
        app_id: str,
        guarantee: str,
        replication: int = REPLICATION,
    ) -> None:
        self.cluster = cluster
        self.classes = classes
        self.reference_lib = reference_lib
        self.tmp_path = tmp_path
        self.app_id = app_id
        self.guarantee = guarantee
        self.replication = replication
        self.input = f"{app_id}-input"
        self.output = f"{app_id}-output"
        self.timeline = Timeline(tmp_path / "timeline.txt")
        self.apps: list[StreamsApp] = []
        create_topics(cluster.bootstrap, [self.input, self.output], replication)
        self.feeder = Feeder(cluster.bootstrap, self.input, LINES)
        self._offsets = committed_reader(cluster.bootstrap, app_id)

    def start_app(self, state_dir: Path) -> StreamsApp:
        name = f"app-{len(self.apps) + 1}"
        self.timeline.note(f"start {name} with state dir {state_dir}")
        app = StreamsApp(
            name,
            self.classes,
            self.reference_lib,
            self.cluster,
            self.app_id,
            state_dir,
            self.guarantee,
            (self.input, self.output),
            self.replication,
            self.tmp_path,
        )
        self.apps.append(app)
        wait_until(
            lambda: _alive_and(app, lambda: app.running),
            START_TIMEOUT_S,
            lambda: f"{name} to reach RUNNING\n{self.describe()}",
        )
        self.timeline.note(f"{name} RUNNING")
        return app

    def committed(self) -> int:
        """Input lines the application has committed as processed."""
        return committed_lines(self._offsets, self.input)

    def wait_committed(self, app: StreamsApp, at_least: int, what: str) -> None:
        def reached() -> bool:
            return _alive_and(app, lambda: self.committed() >= at_least)

        wait_until(
            reached,
            PROGRESS_TIMEOUT_S,
            lambda: (
                f"{what} ({at_least} input lines committed; {self.committed()} are)\n"
                f"{self.describe()}"
            ),
        )
        self.timeline.note(f"{self.committed()} lines committed ({what})")

    def repartition_settled(self) -> bool:
        """The repartition topic's records are all committed as processed (at-least-once
        only: with exactly-once a commit marker follows the last record)."""
        topic = f"{self.app_id}-words-repartition"
        committed = committed_offsets(self._offsets, topic)
        ends = end_offsets(self._offsets, topic)
        return committed is not None and ends is not None and committed == ends

    def wait_counts(
        self, app: StreamsApp, isolation_level: str, done: Callable[[dict[str, int]], bool]
    ) -> None:
        """Until the latest count of each word in the output satisfies `done`."""
        seen: list[dict[str, int]] = [{}]

        def reached() -> bool:
            app.check_alive()
            seen[0] = latest(read_outputs(self.cluster.bootstrap, self.output, isolation_level))
            return done(seen[0])

        wait_until(
            reached,
            PROGRESS_TIMEOUT_S,
            lambda: (
                f"the output's counts to reach the text's; latest {seen[0]}, expected "
                f"{dict(counts(LINES))}\n{self.describe()}"
            ),
        )
        self.timeline.note("output counts reached")

    def feed(self, lines: int, wait: bool = False, trickle: bool = False) -> None:
        """Release the text's first `lines` lines to the feeder (`trickle`: slowly)."""
        self.timeline.note(f"feeder released up to line {lines}{' (trickle)' if trickle else ''}")
        self.feeder.release(lines, TRICKLE_LINES if trickle else CHUNK_LINES)
        if wait:
            wait_until(
                lambda: self.feeder.done(lines) or bool(self.feeder.errors),
                PROGRESS_TIMEOUT_S,
                lambda: f"the feeder to produce {lines} lines\n{self.describe()}",
            )
            assert not self.feeder.errors, self.feeder.errors

    def describe(self) -> str:
        parts = [f"feeder: {self.feeder.produced} produced, errors {self.feeder.errors[:5]}"]
        parts += [app.diagnostics() for app in self.apps]
        parts.append(
            f"timeline:\n{self.timeline.path.read_text() if self.timeline.path.exists() else ''}"
        )
        return "\n".join(parts)

    def close(self) -> None:
        for app in self.apps:
            app.stop()
        self.feeder.close()
        self._offsets.close()


@pytest.fixture
def word_count(
    streams_cluster: ClusterHandle, word_count_classes: Path, reference_lib: Path, tmp_path: Path
) -> Iterator[Callable[[str, str], WordCountRun]]:
    runs: list[WordCountRun] = []

    def make(app_id: str, guarantee: str) -> WordCountRun:
        run = WordCountRun(
            streams_cluster, word_count_classes, reference_lib, tmp_path, app_id, guarantee
        )
        runs.append(run)
        return run

    try:
        yield make
    finally:
        for run in runs:
            run.close()


def _alive_and(app: StreamsApp, condition: Callable[[], bool]) -> bool:
    app.check_alive()
    return condition()


@dataclass(frozen=True)
class ExactRun:
    """What a client sees of a word count of the whole text, without faults."""

    outputs: dict[str, list[int]]
    # Internal topic -> partitions, replication factors of its partitions, and the configs
    # Kafka Streams set on it (describeConfigs' DYNAMIC_TOPIC_CONFIG entries).
    partitions: dict[str, int]
    replication: dict[str, set[int]]
    configs: dict[str, dict[str, str]]
    diagnostics: str


def run_exact(run: WordCountRun, state_dir: Path) -> ExactRun:
    from confluent_kafka.admin import AdminClient, ConfigResource

    run.feed(len(LINES), wait=True)
    app = run.start_app(state_dir)
    expected = counts(LINES)
    run.wait_counts(app, "read_uncommitted", lambda found: found == dict(expected))
    app.stop()
    outputs = read_outputs(run.cluster.bootstrap, run.output, "read_uncommitted")

    admin = AdminClient({"bootstrap.servers": run.cluster.bootstrap})
    topics = admin.list_topics(timeout=30).topics
    internal = sorted(
        name
        for name in topics
        if name.startswith(f"{run.app_id}-") and name not in (run.input, run.output)
    )
    resources = [ConfigResource("topic", name) for name in internal]
    configs = {
        resource.name: {
            name: str(entry.value)
            for name, entry in future.result(timeout=30).items()
            if _is_dynamic_topic_config(entry.source)
        }
        for resource, future in admin.describe_configs(resources).items()
    }
    return ExactRun(
        outputs=outputs,
        partitions={name: len(topics[name].partitions) for name in internal},
        replication={
            name: {len(p.replicas) for p in topics[name].partitions.values()} for name in internal
        },
        configs=configs,
        diagnostics=run.describe(),
    )


def _is_dynamic_topic_config(source: Any) -> bool:
    from confluent_kafka.admin import ConfigSource

    dynamic = ConfigSource.DYNAMIC_TOPIC_CONFIG
    return source in (dynamic, dynamic.value)


EXACT_APP_ID = "wc-exact"
REPARTITION_TOPIC = f"{EXACT_APP_ID}-words-repartition"
CHANGELOG_TOPIC = f"{EXACT_APP_ID}-counts-changelog"


@pytest.fixture(scope="module")
def ours_exact(
    streams_cluster: ClusterHandle,
    word_count_classes: Path,
    reference_lib: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ExactRun]:
    tmp_path = tmp_path_factory.mktemp("ours-exact")
    run = WordCountRun(
        streams_cluster, word_count_classes, reference_lib, tmp_path, EXACT_APP_ID, "at_least_once"
    )
    try:
        yield run_exact(run, tmp_path / "state")
    finally:
        run.close()


def test_word_count_is_exact(ours_exact: ExactRun) -> None:
    expected = counts(LINES)
    assert latest(ours_exact.outputs) == dict(expected), ours_exact.diagnostics
    assert not_one_to_n(ours_exact.outputs, expected) == {}, ours_exact.diagnostics
    internal = sorted([REPARTITION_TOPIC, CHANGELOG_TOPIC])
    assert sorted(ours_exact.partitions) == internal
    assert ours_exact.partitions == dict.fromkeys(internal, PARTITIONS)
    assert ours_exact.replication == {name: {REPLICATION} for name in internal}
    assert ours_exact.configs[CHANGELOG_TOPIC]["cleanup.policy"] == "compact"
    assert ours_exact.configs[REPARTITION_TOPIC]["cleanup.policy"] == "delete"


def test_kafka_gives_the_same(
    ours_exact: ExactRun,
    one_broker: OneBroker,
    word_count_classes: Path,
    reference_lib: Path,
    tmp_path: Path,
) -> None:
    """The same word count on one Kafka 3.9 broker (replication factor 1): the same outputs,
    and the same internal topics with the same partitions and configs."""
    # The first group's rebalance without delay, and 5 offsets partitions, as on ours.
    assert ONE_BROKER_OVERRIDES.items() <= OVERRIDES.items()
    kafka = one_broker("kafka")
    run = WordCountRun(
        kafka, word_count_classes, reference_lib, tmp_path, EXACT_APP_ID, "at_least_once", 1
    )
    try:
        theirs = run_exact(run, tmp_path / "state")
    finally:
        run.close()
    assert not_one_to_n(theirs.outputs, counts(LINES)) == {}, theirs.diagnostics
    assert ours_exact.outputs == theirs.outputs
    assert ours_exact.partitions == theirs.partitions
    assert ours_exact.configs == theirs.configs


def test_at_least_once_resumes_after_sigkill(
    word_count: Callable[[str, str], WordCountRun], tmp_path: Path, streams_cluster: ClusterHandle
) -> None:
    run = word_count("wc-alo", "at_least_once")
    run.feed(LINES_PER_PART, wait=True)
    first = run.start_app(tmp_path / "state-1")
    run.wait_committed(first, LINES_PER_PART, "part 1 processed")
    wait_until(
        lambda: _alive_and(first, run.repartition_settled),
        PROGRESS_TIMEOUT_S,
        lambda: f"part 1's repartitioned words committed\n{run.describe()}",
    )

    run.feed(2 * LINES_PER_PART, trickle=True)
    run.wait_committed(first, LINES_PER_PART + 1, "part 2 under way")
    first.kill()
    run.timeline.note(f"app-1 SIGKILLed, {run.committed()} lines committed")
    run.feed(len(LINES))

    # An empty state directory: the store can only come back from the changelog.
    second = run.start_app(tmp_path / "state-2")
    expected = counts(LINES)
    restored = second.restored_records()
    assert restored >= len(counts(part(1))), f"{restored} records restored\n{run.describe()}"
    run.wait_counts(second, "read_uncommitted", lambda found: _at_least(found, expected))
    second.stop()

    final = latest(read_outputs(streams_cluster.bootstrap, run.output, "read_uncommitted"))
    # Part 1 was committed before the kill; only what part 2 added can have been replayed.
    replayable = counts(part(2))
    wrong = {
        word: f"{final.get(word)}: not in {expected[word]}..{expected[word] + replayable[word]}"
        for word in sorted(set(final) | set(expected))
        if not expected[word] <= final.get(word, 0) <= expected[word] + replayable[word]
    }
    assert wrong == {}, f"final counts out of at-least-once's bounds\n{run.describe()}"


def _at_least(found: dict[str, int], expected: Counter[str]) -> bool:
    return all(found.get(word, 0) >= count for word, count in expected.items())


def test_exactly_once_v2_through_app_and_broker_sigkills(
    word_count: Callable[[str, str], WordCountRun], tmp_path: Path, streams_cluster: ClusterHandle
) -> None:
    run = word_count("wc-eos", "exactly_once_v2")
    per_part = LINES_PER_PART
    run.feed(per_part, wait=True)
    first = run.start_app(tmp_path / "state-1")
    run.wait_committed(first, per_part, "part 1 processed")

    run.feed(2 * per_part, trickle=True)
    first_id = _transactional_id(tmp_path / "state-1", run.app_id)
    _kill_in_transaction(run, first, first_id, per_part + 1, first.kill)
    run.feed(2 * per_part)

    # An empty state directory, so a new transactional id: the first instance's transaction
    # stays open until the coordinator aborts it at its timeout (Kafka Streams sets 10 s), and
    # until then the committed offsets of its partitions are unstable (KIP-447).
    second = run.start_app(tmp_path / "state-2")
    assert second.restored_records() > 0, run.describe()
    run.wait_committed(second, 2 * per_part, "part 2 processed after the restart")
    wait_until(
        lambda: _transaction_state(run.cluster, first_id) == "CompleteAbort",
        PROGRESS_TIMEOUT_S,
        lambda: (
            f"the coordinator to abort {first_id}'s transaction; it is "
            f"{_transaction_state(run.cluster, first_id)}\n{run.describe()}"
        ),
    )
    run.timeline.note(f"{first_id}'s transaction aborted by the coordinator")

    run.feed(len(LINES), trickle=True)
    second_id = _transactional_id(tmp_path / "state-2", run.app_id)
    coordinator = _coordinator_id(streams_cluster, second_id)

    def kill_coordinator() -> None:
        streams_cluster.kill(coordinator, "KILL")

    _kill_in_transaction(run, second, second_id, 2 * per_part + 1, kill_coordinator)
    run.timeline.note(f"broker {coordinator} (transaction coordinator) SIGKILLed")
    run.feed(len(LINES))
    expected = counts(LINES)
    run.wait_counts(second, "read_committed", lambda found: _at_least(found, expected))
    second.stop()
    streams_cluster.start(coordinator)
    run.timeline.note(f"broker {coordinator} started")

    outputs = read_outputs(streams_cluster.bootstrap, run.output, "read_committed")
    assert not_one_to_n(outputs, expected) == {}, run.describe()
    everything = read_outputs(streams_cluster.bootstrap, run.output, "read_uncommitted")
    aborted = sum(map(len, everything.values())) - sum(map(len, outputs.values()))
    run.timeline.note(f"{aborted} output records of aborted transactions")


def _transactional_id(state_dir: Path, app_id: str) -> str:
    """The transactional id of the instance's stream thread: APPLICATION_ID-PROCESS_ID-1, with
    the process id that Kafka Streams keeps in its state directory."""
    import json

    text = (state_dir / app_id / "kafka-streams-process-metadata").read_text()
    return f"{app_id}-{json.loads(text)['processId']}-1"


def _coordinator_id(cluster: ClusterHandle, transactional_id: str) -> int:
    for broker_id in cluster.broker_ids:
        try:
            with WireClient.to(broker_address(cluster, broker_id)) as client:
                found = client.request(
                    ApiKey.FIND_COORDINATOR,
                    3,
                    {"key": transactional_id, "key_type": TRANSACTION_KEY_TYPE},
                )
        except OSError:
            continue
        if int(found.error_code) == 0:
            return int(found.port) - cluster.port_base + 1
    pytest.fail(f"no coordinator found for {transactional_id}")


def _transaction_state(cluster: ClusterHandle, transactional_id: str) -> str:
    try:
        coordinator = _coordinator_id(cluster, transactional_id)
        with WireClient.to(broker_address(cluster, coordinator)) as client:
            request = {"transactional_ids": [transactional_id]}
            (state,) = client.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, request).transaction_states
    except OSError as error:
        return f"unknown ({error})"
    return str(state.transaction_state)


def _kill_in_transaction(
    run: WordCountRun,
    app: StreamsApp,
    transactional_id: str,
    committed_at_least: int,
    kill: Callable[[], None],
) -> None:
    """Once `committed_at_least` lines are committed, `kill` while the application's
    transaction is Ongoing (it has records in it that no reader has seen)."""
    run.wait_committed(app, committed_at_least, "progress before the kill")
    wait_until(
        lambda: _alive_and(
            app, lambda: _transaction_state(run.cluster, transactional_id) == "Ongoing"
        ),
        PROGRESS_TIMEOUT_S,
        lambda: f"an open transaction of {transactional_id}\n{run.describe()}",
    )
    committed = run.committed()  # before the kill: a dead broker may hold the group
    kill()
    run.timeline.note(f"killed with {transactional_id} Ongoing ({committed} lines committed)")
