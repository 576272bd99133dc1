"""`python -m pipeline.example`: generator + streaming jobs for a bounded time, then a summary.

The jobs read and write Kafka through Spark's own connector (format "kafka", the jars of
`make spark-connector`) unless `--connector python` picks this project's Python data source,
which needs no download.

Without `--bootstrap` (or $PIPELINE_BOOTSTRAP) it starts a 3-broker cluster of its own under
the work directory and stops it at the end; with one it reuses that cluster and resumes from
the checkpoints already in the work directory (which is how a restart is shown).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import TextIO

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from pipeline.example.cluster import (
    PORT_BASE,
    ZK_PORT_BASE,
    ensure_topics,
    start_cluster,
    stop_cluster,
)
from pipeline.example.generator import RegistrationGenerator
from pipeline.example.jobs import (
    REGISTRATIONS_TOPIC,
    REPLAY_TABLE,
    TOPIC_PARTITIONS,
    JobPaths,
    start_archive,
    start_replay,
    start_stats,
)
from pipeline.example.report import QueryTally, progress_line, summary_table
from pipeline.example.session import ConnectorJarsMissing, kafka_connector_jars, local_session
from pipeline.spark import register

DEFAULT_DURATION_S = 60.0
DEFAULT_EVENTS_PER_SECOND = 200
PROGRESS_INTERVAL_S = 5.0
QUERY_START_TIMEOUT_S = 180.0
QUERY_POLL_S = 0.2
MAX_QUERY_RESTARTS = 3
PYTHON_WORKER_TIMEOUT = "Python worker failed to connect back"


class Stopped(Exception):
    """SIGTERM: leave through the same clean-up as the end of the run."""


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pipeline.example", description=__doc__)
    parser.add_argument(
        "--bootstrap",
        default=os.environ.get("PIPELINE_BOOTSTRAP"),
        help="bootstrap.servers of a running cluster (default: start one)",
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=Path(".pipeline"),
        help="checkpoints, Parquet output (and the cluster if started here)",
    )
    parser.add_argument(
        "--duration-s",
        type=float,
        default=float(os.environ.get("PIPELINE_DURATION_S", DEFAULT_DURATION_S)),
    )
    parser.add_argument("--events-per-second", type=int, default=DEFAULT_EVENTS_PER_SECOND)
    parser.add_argument(
        "--port-base", type=int, default=PORT_BASE, help="first broker port of its own cluster"
    )
    parser.add_argument(
        "--zk-port-base", type=int, default=ZK_PORT_BASE, help="ZooKeeper port of its own cluster"
    )
    parser.add_argument(
        "--connector",
        choices=("spark", "python"),
        default="spark",
        help="spark: Spark's own Kafka connector (make spark-connector); python: the Python "
        "data source (pipeline.spark, no download)",
    )
    parser.add_argument(
        "--no-drain",
        action="store_true",
        help="stop the jobs at once instead of letting them catch up first",
    )
    return parser.parse_args(argv)


def _on_sigterm(_signal: int, _frame: FrameType | None) -> None:
    raise Stopped()


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        args.jars = kafka_connector_jars() if args.connector == "spark" else []
    except ConnectorJarsMissing as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    cluster_dir = args.work_dir / "cluster"
    own_cluster = args.bootstrap is None
    if own_cluster:
        # Checkpoints point into a cluster's logs; a new cluster starts a new work directory.
        shutil.rmtree(args.work_dir, ignore_errors=True)
        print(f"starting a 3-broker cluster in {cluster_dir} ...", flush=True)
        try:
            args.bootstrap = start_cluster(cluster_dir, args.port_base, args.zk_port_base)
        except RuntimeError as error:
            print(f"Error: {error}", file=sys.stderr)
            return 1
    try:
        print(f"bootstrap.servers={args.bootstrap}", flush=True)
        ensure_topics(args.bootstrap, TOPIC_PARTITIONS)
        _run(args)
    except (KeyboardInterrupt, Stopped):
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if own_cluster:
            stop_cluster(cluster_dir)
    return 0


def restart_or_raise(
    query: StreamingQuery,
    starter: Callable[[], StreamingQuery],
    restarts: int = 0,
    out: TextIO = sys.stdout,
) -> StreamingQuery:
    """Spark gives each Python worker a fixed 10 s to connect back to the JVM; on a loaded
    two-CPU machine that can fail. The query then restarts from its checkpoint, losing and
    repeating nothing; any other failure ends the run."""
    if PYTHON_WORKER_TIMEOUT not in str(query.exception()) or restarts >= MAX_QUERY_RESTARTS:
        raise RuntimeError(f"query {query.name} failed: {query.exception()}")
    print(f"query {query.name}: {PYTHON_WORKER_TIMEOUT}; restarting it", file=out, flush=True)
    return start_supervised(starter, restarts + 1, out)


def start_supervised(
    starter: Callable[[], StreamingQuery], restarts: int = 0, out: TextIO = sys.stdout
) -> StreamingQuery:
    """Starts a query and waits for its first trigger. Queries start one at a time: each
    launches a Python process for its source, and launching them together on a busy machine
    risks Spark's connect-back timeout."""
    query = starter()
    deadline = time.monotonic() + QUERY_START_TIMEOUT_S
    while query.lastProgress is None:
        if query.exception() is not None:
            return restart_or_raise(query, starter, restarts, out)
        if time.monotonic() > deadline:
            raise TimeoutError(f"query {query.name} did not start in {QUERY_START_TIMEOUT_S} s")
        time.sleep(QUERY_POLL_S)
    return query


def _run(args: argparse.Namespace) -> None:
    spark = local_session("registration-pipeline", jars=args.jars)
    try:
        run_jobs(spark, args)
    finally:
        spark.stop()


def run_with_session(spark: SparkSession, argv: list[str], out: TextIO) -> None:
    """What `main(argv)` does with `--bootstrap`, on a session that the caller started and
    keeps (Spark's tests run the example on the session they share: a JVM of its own costs
    a busy two-CPU machine tens of seconds); no signal handler, output to `out`."""
    args = _parse(argv)
    if args.bootstrap is None:
        raise ValueError("run_with_session needs --bootstrap")
    ensure_topics(args.bootstrap, TOPIC_PARTITIONS)
    run_jobs(spark, args, out)


def run_jobs(spark: SparkSession, args: argparse.Namespace, out: TextIO = sys.stdout) -> None:
    """The generator and the three jobs on `spark` for `args.duration_s`, then the summary;
    stops the queries it started, not the session."""
    paths = JobPaths(args.work_dir.resolve())
    generator = RegistrationGenerator(args.bootstrap, REGISTRATIONS_TOPIC, args.events_per_second)
    queries: list[StreamingQuery] = []
    try:
        fmt = "kafka" if args.connector == "spark" else register(spark)
        print(f"connector: {args.connector} (format {fmt!r})", file=out, flush=True)
        starters = [
            functools.partial(start, spark, fmt, args.bootstrap, paths, False)
            for start in (start_stats, start_archive, start_replay)
        ]
        for starter in starters:
            queries.append(start_supervised(starter, out=out))
        # Only now: idle queries leave the CPUs to the start-up of the next one.
        generator.start()
        tally = QueryTally()
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < args.duration_s:
            time.sleep(min(PROGRESS_INTERVAL_S, max(0.0, args.duration_s - elapsed)))
            for index, query in enumerate(queries):
                if query.exception() is not None:
                    queries[index] = restart_or_raise(query, starters[index], out=out)
            print(
                progress_line(time.monotonic() - started, generator.total, queries, tally),
                file=out,
                flush=True,
            )
        generator.stop()
        if not args.no_drain:
            print("generator stopped; letting the jobs catch up ...", file=out, flush=True)
            # All at once: each waits for triggers of its own, so one after the other they
            # waited about three times as long.
            with ThreadPoolExecutor(len(queries), thread_name_prefix="drain") as pool:
                for _ in pool.map(StreamingQuery.processAllAvailable, queries):
                    pass
        for query in queries:
            query.stop()
        print(progress_line(time.monotonic() - started, generator.total, queries, tally), file=out)
        print(file=out)
        print(summary_table(spark, str(paths.archive), generator.produced, REPLAY_TABLE), file=out)
        for name in ("archive", "replay_totals"):
            print(f"{name}: {tally.rate(name):.0f} records/s while processing", file=out)
    finally:
        if generator.is_alive():
            generator.stop()
        for query in queries:  # after a failure: the session outlives them
            if query.isActive:
                query.stop()


if __name__ == "__main__":
    sys.exit(main())
