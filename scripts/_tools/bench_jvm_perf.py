"""`scripts/bench --compare-jvm-perf`: Kafka's own Java client, through Kafka 3.9's
ProducerPerformance and ConsumerPerformance (`kafka-producer-perf-test` and
`kafka-consumer-perf-test`, run by scripts/kafka-jvm), on our brokers and on Apache Kafka 3.9.

Each implementation gets a fresh 3-broker cluster of its own (bench_compare's
`running_cluster`: free ports, `min.insync.replicas=2`), started only after the previous one is
down. On it, a topic of 6 partitions and replication factor 3 takes `--records` records of
`--record-bytes` bytes from ProducerPerformance (acks=all, unthrottled, the client's default
batching), which ConsumerPerformance (a new consumer group, from the earliest offset) then
reads back. One smaller unmeasured producer run on another topic comes first: the brokers'
JIT compiles its hot paths in the first seconds of load.

The figures are the tools' own final lines: their "MB" is 2^20 bytes, the producer's latency is
from send() to its acknowledgement, and the consumer's rates are its fetch.* figures, which
leave out the group join (its rebalance.time.ms). Prints one JSON object, then one table: each
figure for ours and for Kafka, and ours / Kafka. Exits 1 if a tool failed or a count is short.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from .bench import create_topic
from .bench_compare import running_cluster
from .bench_meter import PhaseMeter

ROOT = Path(__file__).resolve().parents[2]
KAFKA_JVM = ROOT / "scripts" / "kafka-jvm"
PARTITIONS = 6
REPLICATION_FACTOR = 3
WARM_UP_RECORDS = 200_000
# Stalls are bounded by the tools themselves (the producer's delivery.timeout.ms, the
# consumer's --timeout between records); this only catches a tool that never exits, allowing
# for a slow run of 2,000 records/s.
TOOL_TIMEOUT_BASE_S = 180.0
TOOL_TIMEOUT_PER_RECORD_S = 1 / 2_000
STDERR_TAIL_LINES = 20
# ProducerPerformance's last line (its "%d records sent, %f records/sec (%.2f MB/sec), ..."
# summary, printed after close()); the periodic lines have no percentiles.
_PRODUCER_TOTAL = re.compile(
    r"^(?P<records>\d+) records sent, (?P<records_per_s>[\d.]+) records/sec "
    r"\((?P<mb_per_s>[\d.]+) MB/sec\), (?P<avg>[\d.]+) ms avg latency, "
    r"(?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, (?P<p95>\d+) ms 95th, "
    r"(?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99\.9th\.$",
    re.MULTILINE,
)
_CONSUMER_HEADER = "start.time, end.time, data.consumed.in.MB"
_CONSUMER_SHORT = "WARNING: Exiting before consuming the expected number of messages"
# A log4j record of the client's at WARN or above (kafka-jvm logs at WARN to stderr): retries,
# errors from a broker, disconnections. The figures hold only when there are none, or few.
_CLIENT_WARNING = re.compile(r"^\[[\d :,-]+\] (?:WARN|ERROR|FATAL) (.*)$", re.MULTILINE)
CLIENT_WARNING_SAMPLES = 3


@dataclass(frozen=True, slots=True)
class ProducerFigures:
    records: int
    records_per_s: float
    mb_per_s: float
    avg_latency_ms: float
    max_latency_ms: float
    p50_latency_ms: float
    p95_latency_ms: float
    p99_latency_ms: float
    p999_latency_ms: float


@dataclass(frozen=True, slots=True)
class ConsumerFigures:
    records: int
    megabytes: float
    records_per_s: float  # fetch.nMsg.sec: without the group join
    mb_per_s: float  # fetch.MB.sec
    rebalance_ms: float
    fetch_ms: float
    stopped_short: bool  # the tool's own warning: --timeout passed between two records


def parse_producer(stdout: str) -> ProducerFigures | None:
    """ProducerPerformance's summary line, or None if it printed none."""
    matches = list(_PRODUCER_TOTAL.finditer(stdout))
    if not matches:
        return None
    found = matches[-1]
    return ProducerFigures(
        records=int(found["records"]),
        records_per_s=float(found["records_per_s"]),
        mb_per_s=float(found["mb_per_s"]),
        avg_latency_ms=float(found["avg"]),
        max_latency_ms=float(found["max"]),
        p50_latency_ms=float(found["p50"]),
        p95_latency_ms=float(found["p95"]),
        p99_latency_ms=float(found["p99"]),
        p999_latency_ms=float(found["p999"]),
    )


def parse_consumer(stdout: str) -> ConsumerFigures | None:
    """ConsumerPerformance's result (the first line of ten figures after its header; its
    timeout warning comes between them), or None if it printed none."""
    lines = stdout.splitlines()
    headers = [index for index, line in enumerate(lines) if line.startswith(_CONSUMER_HEADER)]
    for line in lines[headers[0] + 1 :] if headers else []:
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != 10:
            continue
        try:
            return ConsumerFigures(
                records=int(fields[4]),
                megabytes=float(fields[2]),
                records_per_s=float(fields[9]),
                mb_per_s=float(fields[8]),
                rebalance_ms=float(fields[6]),
                fetch_ms=float(fields[7]),
                stopped_short=_CONSUMER_SHORT in stdout,
            )
        except ValueError:
            continue
    return None


@dataclass(frozen=True, slots=True)
class ToolResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def run_tool(tool: str, *args: str, records: int) -> ToolResult:
    """`scripts/kafka-jvm TOOL ARGS` with kafka-run-class.sh's JVM flags and the heap of the
    tool's bin/*.sh, whatever the environment says, so that runs compare."""
    timeout_s = TOOL_TIMEOUT_BASE_S + records * TOOL_TIMEOUT_PER_RECORD_S
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("KAFKA_HEAP_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_OPTS")
    }
    started = time.perf_counter()
    try:
        result = subprocess.run(
            [str(KAFKA_JVM), tool, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        return ToolResult(
            -9,
            _text(expired.stdout),
            _text(expired.stderr) + f"\n(killed after {timeout_s:.0f} s)",
            time.perf_counter() - started,
        )
    return ToolResult(
        result.returncode, result.stdout, result.stderr, time.perf_counter() - started
    )


def _text(output: str | bytes | None) -> str:
    if output is None:
        return ""
    return output.decode(errors="replace") if isinstance(output, bytes) else output


def producer_perf(bootstrap: str, topic: str, records: int, record_bytes: int) -> ToolResult:
    return run_tool(
        "kafka-producer-perf-test",
        *("--topic", topic, "--num-records", str(records)),
        *("--record-size", str(record_bytes), "--throughput", "-1"),
        *("--producer-props", f"bootstrap.servers={bootstrap}", "acks=all"),
        records=records,
    )


def consumer_perf(bootstrap: str, topic: str, records: int) -> ToolResult:
    return run_tool(
        "kafka-consumer-perf-test",
        *("--bootstrap-server", bootstrap, "--topic", topic),
        *("--messages", str(records), "--group", f"perf-{topic}"),
        records=records,
    )


def _new_topic(bootstrap: str) -> str:
    topic = f"jvm-perf-{uuid.uuid4().hex[:8]}"
    layout = argparse.Namespace(
        bootstrap=bootstrap, partitions=PARTITIONS, replication_factor=REPLICATION_FACTOR
    )
    create_topic(layout, topic)
    return topic


def _problem(impl: str, phase: str, result: ToolResult, counted: int | None, wanted: int) -> str:
    """What went wrong in one tool run, with the ends of its output; "" when nothing did."""
    if result.returncode == 0 and counted == wanted:
        return ""
    tail = "\n".join(result.stderr.splitlines()[-STDERR_TAIL_LINES:])
    return (
        f"{impl} {phase}: exit {result.returncode}, {counted} of {wanted} records\n"
        f"stdout (end):\n{result.stdout[-2000:]}\nstderr (end):\n{tail}"
    )


def client_warnings(stderr: str) -> dict[str, object]:
    """How many warnings the client logged, and the first few different ones."""
    found = _CLIENT_WARNING.findall(stderr)
    samples = list(dict.fromkeys(message[:300] for message in found))[:CLIENT_WARNING_SAMPLES]
    return {"client_warnings": len(found), "client_warning_samples": samples}


def _metered(
    meter: PhaseMeter, gigabytes: float, run: Callable[[], ToolResult]
) -> tuple[ToolResult, dict[str, float]]:
    before = meter.sample()
    result = run()
    return result, meter.figures_since(before, gigabytes)


def measure(args: argparse.Namespace, impl: str, problems: list[str]) -> dict[str, object]:
    """Both phases on a fresh cluster of `impl`; what went wrong is added to `problems`."""
    records, record_bytes = args.records, args.record_bytes
    gigabytes = records * record_bytes / 1e9
    results: dict[str, object] = {}
    with running_cluster(impl) as (bootstrap, meter, _directory):
        print(f"scripts/bench: {impl}: warm-up", file=sys.stderr, flush=True)
        warm_up = min(records, WARM_UP_RECORDS)
        warmed = producer_perf(bootstrap, _new_topic(bootstrap), warm_up, record_bytes)
        warm_figures = parse_producer(warmed.stdout)
        warm_sent = warm_figures.records if warm_figures is not None else None
        problems.append(_problem(impl, "warm-up", warmed, warm_sent, warm_up))
        topic = _new_topic(bootstrap)

        print(f"scripts/bench: {impl}: produce", file=sys.stderr, flush=True)
        produced, cost = _metered(
            meter, gigabytes, lambda: producer_perf(bootstrap, topic, records, record_bytes)
        )
        producer = parse_producer(produced.stdout)
        sent = producer.records if producer is not None else None
        problems.append(_problem(impl, "produce", produced, sent, records))
        results["produce"] = {
            **(asdict(producer) if producer is not None else {}),
            "tool_seconds": round(produced.seconds, 1),
            **cost,
            **client_warnings(produced.stderr),
        }

        print(f"scripts/bench: {impl}: consume", file=sys.stderr, flush=True)
        consumed, cost = _metered(
            meter, gigabytes, lambda: consumer_perf(bootstrap, topic, records)
        )
        consumer = parse_consumer(consumed.stdout)
        read = consumer.records if consumer is not None else None
        problems.append(_problem(impl, "consume", consumed, read, records))
        results["consume"] = {
            **(asdict(consumer) if consumer is not None else {}),
            "tool_seconds": round(consumed.seconds, 1),
            **cost,
            **client_warnings(consumed.stderr),
        }
    return results


# (phase, figure, label in the table)
TABLE_FIGURES = (
    ("produce", "records", "produce records sent"),
    ("produce", "records_per_s", "produce records/s"),
    ("produce", "mb_per_s", "produce MB/s"),
    ("produce", "avg_latency_ms", "produce avg latency ms"),
    ("produce", "max_latency_ms", "produce max latency ms"),
    ("produce", "p50_latency_ms", "produce p50 latency ms"),
    ("produce", "p99_latency_ms", "produce p99 latency ms"),
    ("consume", "records", "consume records read"),
    ("consume", "records_per_s", "consume records/s"),
    ("consume", "mb_per_s", "consume MB/s"),
    ("consume", "rebalance_ms", "consume group join ms"),
    ("produce", "client_warnings", "producer warnings"),
    ("consume", "client_warnings", "consumer warnings"),
)


def _figure(results: dict[str, object], phase: str, name: str) -> float | None:
    figures = results.get(phase)
    return float(figures[name]) if isinstance(figures, dict) and name in figures else None


def _shown(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}".rstrip("0").rstrip(".")


def table(by_impl: dict[str, dict[str, object]], workload: str) -> str:
    ours, kafka = by_impl.get("ours", {}), by_impl.get("kafka", {})
    width = max(len("workload"), len(workload))
    lines = [f"{'workload':<{width}} {'figure':<24} {'ours':>12} {'kafka':>12} {'ours/kafka':>11}"]
    for phase, name, label in TABLE_FIGURES:
        mine, theirs = _figure(ours, phase, name), _figure(kafka, phase, name)
        ratio = f"{mine / theirs:.2f}" if mine is not None and theirs else "-"
        lines.append(
            f"{workload:<{width}} {label:<24} {_shown(mine):>12} {_shown(theirs):>12} {ratio:>11}"
        )
    return "\n".join(lines)


def compare_jvm_perf(args: argparse.Namespace) -> int:
    impls = [impl.strip() for impl in args.impls.split(",") if impl.strip()]
    problems: list[str] = []
    by_impl = {impl: measure(args, impl, problems) for impl in impls}
    workload = f"{args.records:,} x {args.record_bytes:,} B"
    print(json.dumps({"workload": workload, **by_impl}, indent=2))
    print(table(by_impl, workload))
    failed = [problem for problem in problems if problem]
    for problem in failed:
        print(f"scripts/bench: {problem}", file=sys.stderr)
    return 1 if failed else 0
