"""Acceptance: the example pipeline stopped mid-stream and restarted from its checkpoints
leaves a Parquet archive holding every registration in the topic exactly once; on Spark's
Kafka connector (the default) and, side by side on a cluster of its own, on the Python data
source (`--connector python`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer, KafkaError

from tests.integration.conftest import REPO_ROOT, ClusterFactory, ClusterHandle
from tests.integration.spark_fixtures import TEST_JAVA_OPTIONS

# One pytest process of their own runs these (`make test` starts it beside the rest), so that
# one SparkSession serves all three modules. A Python-source query whose worker misses Spark's
# fixed 10 s connect-back to the JVM on a busy machine is started again (see below).
pytestmark = pytest.mark.spark

RUN_TIMEOUT_S = 420.0
CONSUME_TIMEOUT_S = 60.0


def start_example(cluster: ClusterHandle, work_dir: Path, *extra: str) -> subprocess.Popen[str]:
    # Its JVMs (spark-submit's launcher and the driver) with the Spark tests' JIT settings
    # (spark_fixtures says why); every JVM reads JAVA_TOOL_OPTIONS.
    java_options = " ".join((os.environ.get("JAVA_TOOL_OPTIONS", ""), *TEST_JAVA_OPTIONS))
    env = {**os.environ, "JAVA_TOOL_OPTIONS": java_options.strip()}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipeline.example",
            "--bootstrap",
            cluster.bootstrap,
            "--work-dir",
            str(work_dir),
            "--events-per-second",
            "300",
            *extra,
        ],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished_example(process: subprocess.Popen[str]) -> str:
    """The run's output once it has exited 0."""
    stdout, stderr = process.communicate(timeout=RUN_TIMEOUT_S)
    assert process.returncode == 0, f"stdout:\n{stdout}\nstderr:\n{stderr[-5000:]}"
    return stdout


def run_example(cluster: ClusterHandle, work_dir: Path, *extra: str) -> str:
    return finished_example(start_example(cluster, work_dir, *extra))


@dataclass(frozen=True)
class PipelineRun:
    cluster: ClusterHandle
    work_dir: Path
    process: subprocess.Popen[str]


@pytest.fixture(scope="module")
def python_source_run(
    make_cluster_module: ClusterFactory, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PipelineRun]:
    """The example on the Python data source, on a cluster of its own, started before the
    restart test so that the two pipelines run side by side: each spends most of its time
    waiting for triggers, and this one alone took 50-65 s."""
    cluster = make_cluster_module()
    work_dir = tmp_path_factory.mktemp("pipeline-python")
    process = start_example(cluster, work_dir, "--connector", "python", "--duration-s", "3")
    try:
        yield PipelineRun(cluster, work_dir, process)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=RUN_TIMEOUT_S)


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


# Two runs of the example, each bounded by RUN_TIMEOUT_S: pytest's default 300 s bound was
# shorter than the two together (measured 165-285 s beside the rest of make test, most of it two
# Spark JVM start-ups waiting for a CPU).
@pytest.mark.timeout(2 * RUN_TIMEOUT_S + 60)
@pytest.mark.usefixtures("python_source_run")  # runs beside this test
def test_restarted_pipeline_archives_each_record_exactly_once(
    cluster: ClusterHandle, tmp_path: Path
) -> None:
    work_dir = tmp_path / "pipeline"
    first = run_example(cluster, work_dir, "--duration-s", "8", "--no-drain")
    assert "connector: spark (format 'kafka')" in first, first
    assert "archive" in first and "total" in first
    second = run_example(cluster, work_dir, "--duration-s", "4")
    assert "distinct event ids" in second
    assert len(topic_event_ids(cluster)) > 1000  # both runs produced while jobs were running
    assert_archive_is_the_topic(cluster, work_dir)


def test_python_data_source_pipeline_archives_the_topic(python_source_run: PipelineRun) -> None:
    """The no-download path: the same jobs on the Python data source archive the whole
    topic of their cluster once."""
    output = finished_example(python_source_run.process)
    assert "connector: python (format 'pykafka')" in output, output
    assert "distinct event ids" in output
    assert_archive_is_the_topic(python_source_run.cluster, python_source_run.work_dir)
