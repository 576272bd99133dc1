"""Acceptance: the example pipeline stopped mid-stream and restarted from its checkpoints
leaves a Parquet archive holding every registration in the topic exactly once; on Spark's
Kafka connector (the default) and, side by side on a cluster of its own, on the Python data
source (`--connector python`).

The example runs as `python -m pipeline.example --bootstrap ...` would, but on the session
the Spark tests share (`pipeline.example.__main__.run_with_session`): a Spark JVM of its own
per run cost 10-15 s of CPU each, most of this module's time on a busy machine. The restart is
the example's: its queries stopped, new ones started on the same checkpoints; a driver whose
JVM is killed is test_spark_kafka_connector's.
"""

from __future__ import annotations

import io
import json
import re
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer, KafkaError
from pyspark.sql import SparkSession

from pipeline.example.__main__ import run_with_session
from tests.integration.conftest import ClusterFactory, ClusterHandle
from tests.integration.spark_fixtures import shared_session

# One pytest process of their own runs these (`make test` starts it beside the rest), so that
# one SparkSession serves all three modules. A Python-source query whose worker misses Spark's
# fixed 10 s connect-back to the JVM on a busy machine is started again (the example does).
pytestmark = pytest.mark.spark

RUN_TIMEOUT_S = 240.0
CONSUME_TIMEOUT_S = 60.0
EVENTS_PER_SECOND = "300"


def run_example(spark: SparkSession, cluster: ClusterHandle, work_dir: Path, *extra: str) -> str:
    """The example's output, run to its end on `spark`."""
    out = io.StringIO()
    argv = ["--bootstrap", cluster.bootstrap, "--work-dir", str(work_dir)]
    run_with_session(spark, [*argv, "--events-per-second", EVENTS_PER_SECOND, *extra], out)
    return out.getvalue()


@dataclass(frozen=True)
class PipelineRun:
    cluster: ClusterHandle
    work_dir: Path
    output: Future[str]


@pytest.fixture(scope="module")
def python_source_run(
    pytestconfig: pytest.Config,
    make_cluster_module: ClusterFactory,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PipelineRun]:
    """The example on the Python data source, on a cluster of its own and a session of its
    own (query names are per session) sharing the JVM, started before the restart test so
    that the two pipelines run side by side: each spends most of its time waiting for
    triggers."""
    session = shared_session(pytestconfig, connector=False).newSession()
    cluster = make_cluster_module()
    work_dir = tmp_path_factory.mktemp("pipeline-python")
    with ThreadPoolExecutor(1, thread_name_prefix="pipeline-python") as executor:
        output = executor.submit(
            run_example, session, cluster, work_dir, "--connector", "python", "--duration-s", "3"
        )
        try:
            yield PipelineRun(cluster, work_dir, output)
        finally:
            for query in session.streams.active:  # a run cut short: end its wait
                query.stop()


def committed_parquet_files(archive: Path) -> list[Path]:
    """The files Spark's file-sink log lists as added: files left by a batch that was cut
    off before its commit are on disk but not part of the output."""
    log_dir = archive / "_spark_metadata"
    logs = [p for p in log_dir.iterdir() if re.fullmatch(r"\d+(\.compact)?", p.name)]
    entries = sorted(logs, key=lambda p: int(p.name.split(".")[0]))  # no .crc files
    compacted = [p for p in entries if p.name.endswith(".compact")]
    if compacted:
        last = int(compacted[-1].name.split(".")[0])
        entries = [p for p in entries if int(p.name.split(".")[0]) >= last]
    files: set[str] = set()
    for entry in entries:
        for line in entry.read_text().splitlines()[1:]:  # first line: format version
            record = json.loads(line)
            (files.add if record["action"] == "add" else files.discard)(record["path"])
    return [Path(path.removeprefix("file:")) for path in sorted(files)]


def topic_event_ids(cluster: ClusterHandle) -> list[str]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.subscribe(["registrations"])
    ids: list[str] = []
    finished: set[int] = set()
    deadline = time.monotonic() + CONSUME_TIMEOUT_S
    while len(finished) < 4 and time.monotonic() < deadline:
        for message in consumer.consume(1000, 1.0):
            if message.error() is None:
                ids.append(json.loads(message.value())["event_id"])
            elif message.error().code() == KafkaError._PARTITION_EOF:
                finished.add(message.partition())
    consumer.close()
    assert len(finished) == 4, "did not reach the end of every partition"
    return ids


def assert_archive_is_the_topic(cluster: ClusterHandle, work_dir: Path) -> None:
    files = committed_parquet_files(work_dir / "output" / "registrations")
    archived = [i for f in files for i in pq.read_table(f).column("event_id").to_pylist()]
    produced = topic_event_ids(cluster)
    assert len(archived) == len(set(archived)), "a record was archived twice"
    assert sorted(archived) == sorted(produced), (
        f"archived {len(archived)} records, the topic has {len(produced)}"
    )


@pytest.mark.timeout(2 * RUN_TIMEOUT_S + 60)
@pytest.mark.usefixtures("python_source_run")  # runs beside this test
def test_restarted_pipeline_archives_each_record_exactly_once(
    pytestconfig: pytest.Config, cluster: ClusterHandle, tmp_path: Path
) -> None:
    spark = shared_session(pytestconfig, connector=True)
    work_dir = tmp_path / "pipeline"
    first = run_example(spark, cluster, work_dir, "--duration-s", "8", "--no-drain")
    assert "connector: spark (format 'kafka')" in first, first
    assert "archive" in first and "total" in first
    # The restart resumes from committed batches, not from nothing.
    assert committed_parquet_files(work_dir / "output" / "registrations"), first
    second = run_example(spark, cluster, work_dir, "--duration-s", "4")
    assert "distinct event ids" in second
    assert len(topic_event_ids(cluster)) > 1000  # both runs produced while jobs were running
    assert_archive_is_the_topic(cluster, work_dir)


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_python_data_source_pipeline_archives_the_topic(python_source_run: PipelineRun) -> None:
    """The no-download path: the same jobs on the Python data source archive the whole
    topic of their cluster once."""
    output = python_source_run.output.result(timeout=RUN_TIMEOUT_S)
    assert "connector: python (format 'pykafka')" in output, output
    assert "distinct event ids" in output
    assert_archive_is_the_topic(python_source_run.cluster, python_source_run.work_dir)
