"""`scripts/bench --compare`: the same workload on our brokers and on Apache Kafka 3.9.

Each implementation gets a fresh 3-broker cluster of its own (`scripts/cluster up --impl ...`
on ports reserved machine-wide, `min.insync.replicas=2`), started only after the previous one
is down, so the two never share the machine's CPUs. Every case runs on a new topic, after one
unmeasured warm-up case (a JVM compiles its hot paths in the first seconds of load; a
long-running broker is past that). Prints one JSON object with every figure, then a table:
each figure for ours and for Kafka, and ours / Kafka.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _cluster.ports import reserve_cluster_ports

from .bench import run_case
from .bench_meter import PhaseMeter

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = ROOT / "scripts" / "cluster"
LAUNCHER_TIMEOUT_S = 300.0
BROKER_COUNT = 3
# (label, acks, replication factor, record bytes)
CASES = (
    ("acks=1 rf=1 100B", "1", 1, 100),
    ("acks=all rf=3 100B", "all", 3, 100),
    ("acks=1 rf=1 1KB", "1", 1, 1000),
    ("acks=all rf=3 1KB", "all", 3, 1000),
)
# Figures where a smaller number is better get their ratio all the same (ours / Kafka).
TABLE_FIGURES = (
    ("produce", "records_per_s"),
    ("produce", "mb_per_s"),
    ("produce", "p99_latency_ms"),
    ("produce", "broker_cpu_s_per_gb"),
    ("consume", "records_per_s"),
    ("consume", "mb_per_s"),
    ("consume", "broker_cpu_s_per_gb"),
    ("consume", "broker_peak_rss_mb"),
)


def launcher(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(CLUSTER_SCRIPT), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=LAUNCHER_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"scripts/bench: scripts/cluster {args[0]} failed: {result.stderr}")
    return result.stdout


def _broker_pids(directory: Path) -> tuple[int, ...]:
    state = json.loads((directory / "cluster.json").read_text())
    processes = state["processes"]
    return tuple(
        int(processes[f"broker-{i}"]["pid"]) for i in range(1, state["spec"]["broker_count"] + 1)
    )


@contextmanager
def running_cluster(
    impl: str, settings: dict[str, str] | None = None, network: str = "loopback"
) -> Iterator[tuple[str, PhaseMeter, Path]]:
    """A fresh cluster of `impl` with `min.insync.replicas=2` and `settings` on `network`
    (`scripts/cluster up --network`); yields its bootstrap servers, a meter of its brokers
    and its directory."""
    work = Path(tempfile.mkdtemp(prefix=f"bench-{impl}-"))
    directory = work / "cluster"
    up = ["up", "--dir", str(directory), "--impl", impl, "--brokers", str(BROKER_COUNT)]
    up += ["--network", network]
    ports = reserve_cluster_ports(BROKER_COUNT, 1)
    up += ["--port-base", str(ports.port_base), "--zk-port-base", str(ports.zk_port_base)]
    for key, value in {"min.insync.replicas": "2", **(settings or {})}.items():
        up += ["--set", f"{key}={value}"]
    try:
        output = launcher(*up)
        bootstrap = output.splitlines()[0].removeprefix("bootstrap.servers=")
        yield bootstrap, PhaseMeter(_broker_pids(directory)), directory
    finally:
        if directory.exists():
            launcher("down", "--dir", str(directory), "--wipe")
        ports.release()
        shutil.rmtree(work, ignore_errors=True)


WARM_UP_CASE = ("warm-up", "all", 3, 1000)


def measure(args: argparse.Namespace, impl: str) -> dict[str, object]:
    results: dict[str, object] = {}
    with running_cluster(impl) as (bootstrap, meter, _directory):
        for label, acks, replication_factor, record_bytes in (WARM_UP_CASE, *CASES):
            case_args = argparse.Namespace(
                **{
                    **vars(args),
                    "bootstrap": bootstrap,
                    "acks": acks,
                    "replication_factor": replication_factor,
                    "record_bytes": record_bytes,
                }
            )
            print(f"scripts/bench: {impl}: {label}", file=sys.stderr, flush=True)
            results[label] = run_case(case_args, meter)
    del results[WARM_UP_CASE[0]]
    return results


def _figure(results: dict[str, object], label: str, phase: str, name: str) -> float | None:
    case = results.get(label)
    if not isinstance(case, dict):
        return None
    figures = case.get(phase)
    return float(figures[name]) if isinstance(figures, dict) and name in figures else None


def table(by_impl: dict[str, dict[str, object]]) -> str:
    ours, kafka = by_impl.get("ours", {}), by_impl.get("kafka", {})
    lines = [f"{'case':<20} {'figure':<28} {'ours':>12} {'kafka':>12} {'ours/kafka':>11}"]
    for label, *_ in CASES:
        for phase, name in TABLE_FIGURES:
            mine, theirs = _figure(ours, label, phase, name), _figure(kafka, label, phase, name)
            ratio = f"{mine / theirs:.2f}" if mine is not None and theirs else "-"
            shown = [f"{v:g}" if v is not None else "-" for v in (mine, theirs)]
            lines.append(
                f"{label:<20} {phase + ' ' + name:<28} {shown[0]:>12} {shown[1]:>12} {ratio:>11}"
            )
    return "\n".join(lines)


def compare_implementations(args: argparse.Namespace) -> int:
    impls = [impl.strip() for impl in args.impls.split(",") if impl.strip()]
    by_impl = {impl: measure(args, impl) for impl in impls}
    print(json.dumps(by_impl, indent=2))
    print(table(by_impl))
    return 0
