"""A small local SparkSession whose Python workers run this interpreter, optionally with
Spark's own Kafka connector (format "kafka") loaded from `make spark-connector`'s jars."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import py4j
import pyspark
from pyspark import SparkContext
from pyspark.sql import SparkSession

SHUFFLE_PARTITIONS = 2
REPO_ROOT = Path(__file__).resolve().parents[2]
# Where `make spark-connector` copies reference/spark/pom.xml's jars.
CONNECTOR_LIB = REPO_ROOT / "reference" / "spark" / "lib"
CONNECTOR_JAR_PREFIX = "spark-sql-kafka-0-10_2.13-"
GATEWAY_EXIT_TIMEOUT_S = 30.0
# Runs this interpreter for Spark's Python workers, without the zips Spark puts first on their
# PYTHONPATH (the script says why).
WORKER_PYTHON = Path(__file__).with_name("spark_worker_python")
WORKER_PYTHON_ENV = "PIPELINE_SPARK_WORKER_PYTHON"


class ConnectorJarsMissing(RuntimeError):
    """Spark's Kafka connector has not been fetched (or is for another Spark version)."""


def kafka_connector_jars(lib: Path = CONNECTOR_LIB) -> list[Path]:
    """The jars of Spark's Kafka connector for the installed PySpark, as local paths."""
    wanted = lib / f"{CONNECTOR_JAR_PREFIX}{pyspark.__version__}.jar"
    if not wanted.is_file():
        found = sorted(p.name for p in lib.glob(f"{CONNECTOR_JAR_PREFIX}*.jar"))
        seen = f" (found {', '.join(found)})" if found else ""
        raise ConnectorJarsMissing(
            f"Spark's Kafka connector for PySpark {pyspark.__version__} is not in {lib}{seen}: "
            "run `make spark-connector` (or use the Python data source: --connector python)"
        )
    return sorted(lib.glob("*.jar"))


def _drop_idle_gateway() -> None:
    """A JVM is given spark.jars only when it starts. If an earlier session in this process
    was stopped, its JVM is still up (without the jars now asked for): end it, so that the
    next session starts a JVM of its own."""
    gateway = SparkContext._gateway
    if gateway is None or SparkContext._active_spark_context is not None:
        return
    gateway.shutdown()
    process = getattr(gateway, "proc", None)
    if process is not None:
        if process.stdin is not None:
            process.stdin.close()  # the JVM exits when its stdin closes
        process.wait(GATEWAY_EXIT_TIMEOUT_S)
    SparkContext._gateway = None
    SparkContext._jvm = None


def _worker_python() -> str:
    """The workers' interpreter: this one, through WORKER_PYTHON when this interpreter has
    PySpark and py4j installed as packages (then the zips hold nothing it lacks)."""
    installed = all(Path(module.__file__ or "").parent.is_dir() for module in (pyspark, py4j))
    if not installed or not os.access(WORKER_PYTHON, os.X_OK):
        return sys.executable
    os.environ[WORKER_PYTHON_ENV] = sys.executable
    return str(WORKER_PYTHON)


def local_session(
    app_name: str,
    master: str = "local[2]",
    jars: Sequence[Path] = (),
    java_options: Sequence[str] = (),
) -> SparkSession:
    """`java_options`: flags for the driver's JVM, which only a session that starts one
    (the process's first) applies."""
    # Workers must import pipeline and confluent_kafka: run them with this (venv) Python.
    os.environ["PYSPARK_PYTHON"] = _worker_python()
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if java_options:
        builder = builder.config("spark.driver.extraJavaOptions", " ".join(java_options))
    if jars:
        _drop_idle_gateway()
        builder = builder.config("spark.jars", ",".join(str(jar) for jar in jars))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
