"""scripts/kafka-jvm: run one of Apache Kafka 3.9's own command-line tools, unmodified.

`scripts/kafka-jvm TOOL ARGS...` does what Kafka's `bin/TOOL.sh ARGS...` does: it runs the
tool's main class (the class that 3.9's bin/TOOL.sh hands to bin/kafka-run-class.sh) with
`java -cp 'reference/lib/*'`, the jars that `make reference` fetches. Like kafka-run-class.sh
it logs through log4j at WARN to stderr (Kafka's config/tools-log4j.properties), so stdout
carries only the tool's own output. Environment, as in kafka-run-class.sh:

- `JAVA_HOME`: use `$JAVA_HOME/bin/java` instead of `java` on PATH.
- `KAFKA_HEAP_OPTS` (default `-Xmx256M`; `-Xmx512M` for the console, verifiable and perf-test
  producers and consumers, as their bin/*.sh scripts set it),
  `KAFKA_JVM_PERFORMANCE_OPTS` (default: kafka-run-class.sh's), `KAFKA_OPTS` (extra flags).
- `KAFKA_LOG4J_OPTS`: replaces the log4j flag altogether.
- `KAFKA_JVM_LOG_LEVEL` (this script's own): the root log4j level instead of WARN, e.g.
  `ERROR` or `OFF` for stderr without client warnings, `INFO` or `DEBUG` to see more.

When `make reference` has dumped reference/lib/kafka.jsa (a class-data-sharing archive of
the classes Kafka loads), the JVM maps it instead of loading those classes from the jars:
a third to a half less start-up CPU, the same tool. The JVM ignores an archive that no longer
matches the jars or the JDK, silently; `-XX:SharedArchiveFile=...` in `KAFKA_OPTS` overrides it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from _cluster.kafka_reference import REFERENCE_LIB, class_sharing_options

# Tool name (bin/NAME.sh without `.sh`) -> the main class that Kafka 3.9's bin/NAME.sh runs.
MAIN_CLASSES: dict[str, str] = {
    "kafka-acls": "kafka.admin.AclCommand",
    "kafka-broker-api-versions": "kafka.admin.BrokerApiVersionsCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-producer": "kafka.tools.ConsoleProducer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    # The clients of Kafka's system tests: one JSON event per line on stdout.
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
}
# These tools' bin/*.sh scripts raise the default heap.
LARGER_HEAP_TOOLS = frozenset(
    {
        "kafka-console-producer",
        "kafka-console-consumer",
        "kafka-consumer-perf-test",
        "kafka-producer-perf-test",
        "kafka-verifiable-consumer",
        "kafka-verifiable-producer",
    }
)
DEFAULT_HEAP_OPTS = "-Xmx256M"
LARGER_HEAP_OPTS = "-Xmx512M"
# kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS default.
DEFAULT_JVM_PERFORMANCE_OPTS = (
    "-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 "
    "-XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true"
)
DEFAULT_LOG_LEVEL = "WARN"
LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")
# Kafka 3.9's config/tools-log4j.properties, with the root level as a parameter.
TOOLS_LOG4J = """\
log4j.rootLogger={level}, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
log4j.logger.org.reflections=ERROR
"""

USAGE = "usage: scripts/kafka-jvm TOOL [ARGS...]\n\nTOOL is one of:\n" + "".join(
    f"  {name:<28} {main_class}\n" for name, main_class in sorted(MAIN_CLASSES.items())
)


class KafkaJvmError(Exception):
    """A problem this script reports in one line before the tool runs."""


def classpath() -> str:
    if not any(REFERENCE_LIB.glob("kafka_2.13-*.jar")) or not any(
        REFERENCE_LIB.glob("kafka-tools-*.jar")
    ):
        raise KafkaJvmError(
            f"Apache Kafka's jars are not in {REFERENCE_LIB}; run `make reference` first"
        )
    return f"{REFERENCE_LIB}/*"


def java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if not os.access(candidate, os.X_OK):
            raise KafkaJvmError(f"JAVA_HOME is {java_home}, but {candidate} is not executable")
        return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise KafkaJvmError("java is not on PATH (Java 17+ is needed); or set JAVA_HOME")
    return found


def log4j_file(level: str) -> Path:
    """The tools log4j config for `level`, written once per user into the temp directory."""
    text = TOOLS_LOG4J.format(level=level)
    directory = Path(tempfile.gettempdir()) / f"kafka-jvm-{os.getuid()}"
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / f"tools-log4j-{level}.properties"
    if not path.exists() or path.read_text() != text:
        fd, partial = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w") as stream:
            stream.write(text)
        os.replace(partial, path)
    return path


def log4j_options() -> list[str]:
    configured = os.environ.get("KAFKA_LOG4J_OPTS", "").split()
    if configured:
        return configured
    level = os.environ.get("KAFKA_JVM_LOG_LEVEL", DEFAULT_LOG_LEVEL).upper()
    if level not in LOG_LEVELS:
        raise KafkaJvmError(f"KAFKA_JVM_LOG_LEVEL={level} is not one of {', '.join(LOG_LEVELS)}")
    return [f"-Dlog4j.configuration=file:{log4j_file(level)}"]


def command(tool: str, args: list[str]) -> list[str]:
    """The java command line that runs `tool` with `args`."""
    main_class = MAIN_CLASSES.get(tool.removesuffix(".sh"))
    if main_class is None:
        raise KafkaJvmError(f"unknown tool {tool!r}; one of: {', '.join(sorted(MAIN_CLASSES))}")
    default_heap = LARGER_HEAP_OPTS if tool.removesuffix(".sh") in LARGER_HEAP_TOOLS else None
    heap = os.environ.get("KAFKA_HEAP_OPTS") or default_heap or DEFAULT_HEAP_OPTS
    performance = os.environ.get("KAFKA_JVM_PERFORMANCE_OPTS") or DEFAULT_JVM_PERFORMANCE_OPTS
    return [
        java_executable(),
        *heap.split(),
        *performance.split(),
        *class_sharing_options(),
        *os.environ.get("KAFKA_OPTS", "").split(),
        *log4j_options(),
        "-cp",
        classpath(),
        main_class,
        *args,
    ]


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if not arguments or arguments[0] in ("-h", "--help"):
        stream = sys.stdout if arguments else sys.stderr
        stream.write(USAGE)
        return 0 if arguments else 2
    try:
        java_command = command(arguments[0], arguments[1:])
    except KafkaJvmError as error:
        print(f"scripts/kafka-jvm: {error}", file=sys.stderr)
        return 1
    os.execv(java_command[0], java_command)
