"""`--impl kafka`: run Apache Kafka 3.9 brokers (ZooKeeper mode) from `make reference`'s jars.

The broker is started as Kafka's `bin/kafka-server-start.sh` would start it (`java ...
kafka.Kafka server.properties`, with that script's heap and GC flags), but in the foreground
with its console log in DIR/broker-N/broker.log like ours, and Kafka's own log4j layout for
`state-change.log` so that `scripts/cluster events` reads it unchanged.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from .errors import ClusterError

REFERENCE_LIB = Path(__file__).resolve().parents[2] / "reference" / "lib"
MAIN_CLASS = "kafka.Kafka"
# kafka-server-start.sh's KAFKA_HEAP_OPTS default is 1 GiB fixed. The same 1 GiB ceiling (a
# 512 MiB heap thrashes in full GCs with 5,000 partitions), but starting small, so that three
# brokers of a test cluster commit only what they use. KAFKA_HEAP_OPTS overrides it, as in
# Kafka's scripts.
DEFAULT_HEAP_OPTIONS = ("-Xms256m", "-Xmx1g")


def heap_options() -> list[str]:
    configured = os.environ.get("KAFKA_HEAP_OPTS", "").split()
    return configured or list(DEFAULT_HEAP_OPTIONS)


# kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS default; the variable overrides it, as there.
JVM_PERFORMANCE_OPTIONS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)


def jvm_performance_options() -> list[str]:
    configured = shlex.split(os.environ.get("KAFKA_JVM_PERFORMANCE_OPTS", ""))
    return configured or list(JVM_PERFORMANCE_OPTIONS)


# Kafka's config/log4j.properties, reduced to the console (captured as broker.log) and the
# state-change log. The layout is Kafka's: `[time] LEVEL message (logger)`.
LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stateChangeAppender=org.apache.log4j.FileAppender
log4j.appender.stateChangeAppender.File=${kafka.logs.dir}/state-change.log
log4j.appender.stateChangeAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.stateChangeAppender.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=INFO
log4j.logger.kafka=INFO
log4j.logger.org.apache.kafka=INFO
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.controller=TRACE
log4j.logger.kafka.log.LogCleaner=INFO
log4j.logger.state.change.logger=INFO, stateChangeAppender
log4j.additivity.state.change.logger=false
log4j.logger.kafka.authorizer.logger=INFO
"""


def class_sharing_options() -> list[str]:
    """Map `make reference`'s class-data-sharing archive (reference/kafka.classlist's classes),
    when it is there: the JVM then starts without loading them from the jars."""
    archive = REFERENCE_LIB / "kafka.jsa"
    return [f"-XX:SharedArchiveFile={archive}"] if archive.exists() else []


def reference_classpath() -> str:
    """The classpath of the reference jars; a clear error when `make reference` has not run."""
    if not any(REFERENCE_LIB.glob("kafka_2.13-*.jar")):
        raise ClusterError(
            f"Apache Kafka's jars are not in {REFERENCE_LIB}; run `make reference` first"
        )
    return f"{REFERENCE_LIB}/*"


def reference_version() -> str:
    """The Kafka version of the fetched jars, from the core jar's file name."""
    jars = sorted(REFERENCE_LIB.glob("kafka_2.13-*.jar"))
    if not jars:
        raise ClusterError(f"no kafka_2.13 jar in {REFERENCE_LIB}; run `make reference` first")
    return jars[-1].name.removeprefix("kafka_2.13-").removesuffix(".jar")


def kafka_command(
    java: str,
    broker_directory: Path,
    properties_path: Path,
    jvm_options: Sequence[str] = (),
) -> list[str]:
    """Write log4j.properties beside server.properties; return the command that runs Kafka
    (`jvm_options` as KAFKA_OPTS would add them)."""
    log4j_path = broker_directory / "log4j.properties"
    log4j_path.write_text(LOG4J_PROPERTIES)
    return [
        java,
        *heap_options(),
        *jvm_performance_options(),
        *class_sharing_options(),
        f"-Dlog4j.configuration=file:{log4j_path}",
        f"-Dkafka.logs.dir={broker_directory}",
        *jvm_options,
        "-cp",
        reference_classpath(),
        MAIN_CLASS,
        str(properties_path),
    ]
