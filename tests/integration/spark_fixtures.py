"""One local SparkSession per pytest process, for every Spark test module that runs in it.

A session's JVM takes several seconds of CPU to start (more on a busy machine), and Spark
gives a JVM its jars only when it starts: so the session is started once, with Spark's Kafka
connector when `make spark-connector` has fetched it, and stopped when pytest ends. Modules
that need no connector (the Python data source's tests) run on it all the same, and without
the jars too.
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from pipeline.example.session import ConnectorJarsMissing, kafka_connector_jars, local_session

# The JVMs of the Spark tests (this session's and their drivers') run briefly and compile
# little that pays back C2's compile time: C1 alone halved a session's start-up and first
# queries on the loaded 2-CPU machine (JVM CPU 20-22 s -> 10-11 s; wall 59-65 s -> 25-33 s).
TEST_JAVA_OPTIONS = ("-XX:TieredStopAtLevel=1",)

_session: SparkSession | None = None
_connector_missing: str | None = None


def shared_session(config: pytest.Config, *, connector: bool) -> SparkSession:
    """The process's session; `connector`: the caller needs format "kafka" (Spark's own
    connector) and fails, naming what to run, when its jars are missing."""
    global _session, _connector_missing
    if _session is None:
        try:
            jars = kafka_connector_jars()
        except ConnectorJarsMissing as error:
            jars, _connector_missing = [], str(error)
        _session = local_session("tests-spark", jars=jars, java_options=TEST_JAVA_OPTIONS)
        config.add_cleanup(_stop)
    if connector and _connector_missing is not None:
        pytest.fail(_connector_missing)
    return _session


def _stop() -> None:
    global _session
    if _session is not None:
        _session.stop()
        _session = None
