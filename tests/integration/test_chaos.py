"""scripts/chaos against a cluster of its own: one fault of each signal and role (leader kill,
follower SIGTERM, leader SIGSTOP, controller kill) while idempotent acks=all producers write to
a topic with replication factor 3 and min.insync.replicas=2; afterwards nothing acknowledged may
be lost, duplicated or reordered, and every partition's replicas must be byte-identical on disk.
With --transactional, the same faults hit transactional writers and a consume-transform-produce
copier: read committed, every committed record once, no aborted one, every record copied once.

The scenario is bounded (4 faults, a fault phase of at most 100 s) so it fits CI; runs of 100+
faults are made by hand (`scripts/chaos --faults 100`). The seed is random per run and printed
in every failure message, with the checker's output, so a failure can be replayed (`--seed`).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import REPO_ROOT, ClusterFactory, ClusterHandle

CHAOS_SCRIPT = REPO_ROOT / "scripts" / "chaos"
KINDS = ("leader-kill", "follower-term", "leader-stop", "controller-kill")
FAULT_PHASE_LIMIT_S = 100
# The fault phase, then up to a 120 s flush, settle and read-back each in the worst case.
CHAOS_TIMEOUT_S = 420
CLIENT_LOG_TAIL_LINES = 80
# Records per second, all producers (scripts/chaos's default is 500): every one of the six
# partitions still gets records every second (measured: 4 s less CPU for the two tests).
RATE = 200
OVERRIDES = {
    "min.insync.replicas": "2",
    # Quick failure detection keeps each fault, and so the whole test, short.
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "5000",
}


def _run_chaos(cluster_dir: Path, report_path: Path, seed: int, *extra: str) -> str:
    args = [sys.executable, str(CHAOS_SCRIPT), "--dir", str(cluster_dir), *extra]
    args += ["--faults", str(len(KINDS)), "--kinds", ",".join(KINDS), "--seed", str(seed)]
    args += ["--seconds", str(FAULT_PHASE_LIMIT_S), "--interval-s", "2", "--rate", str(RATE)]
    args += ["--report-json", str(report_path)]
    result = subprocess.run(
        args,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CHAOS_TIMEOUT_S,
        check=False,
    )
    output = f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr[-4000:]}"
    assert report_path.exists(), f"scripts/chaos wrote no report (seed {seed})\n{output}"
    return output


def _chaos_report(
    cluster_dir: Path, tmp_path: Path, *extra: str
) -> tuple[dict[str, Any], str, str]:
    """(the JSON report, the checker's output, a failure message's context) of one run."""
    seed = random.randrange(2**32)
    report_path = tmp_path / "chaos-report.json"
    output = _run_chaos(cluster_dir, report_path, seed, *extra)
    return json.loads(report_path.read_text()), output, f"seed {seed}\n{output}"


@pytest.mark.timeout(CHAOS_TIMEOUT_S + 180)
def test_acknowledged_records_survive_leader_follower_and_controller_faults(
    make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    cluster = make_cluster(overrides=OVERRIDES)
    report, output, context = _chaos_report(cluster.dir, tmp_path)

    assert report["faults"] == len(KINDS), f"faults cut short\n{context}"
    assert sorted(report["faults_by_kind"]) == sorted(KINDS), context
    assert report["recovered"], f"the cluster did not recover after a fault\n{context}"
    assert report["settled"], f"ISRs not full or replicas not identical at the end\n{context}"
    assert report["acked"] > 0, f"nothing was acknowledged\n{context}"
    assert report["read_complete"], f"the topic could not be read back\n{context}"
    assert report["lost"] == 0, f"acknowledged records lost\n{context}"
    assert report["duplicated"] == 0, f"records duplicated\n{context}"
    assert report["reordered"] == 0, f"records reordered\n{context}"
    assert report["divergent"] == 0, f"replicas differ on disk\n{context}"
    assert output.startswith("exit 0"), context

    status = cluster.status()
    for broker_id, broker in status.brokers.items():
        assert broker.alive and broker.registered, f"broker {broker_id}: {status.text}"


def _kept_logs(cluster: ClusterHandle, tmp_path: Path, client_log: Path) -> str:
    """The brokers' logs copied beside the report (the cluster's directory goes at
    teardown), and the end of the copier's librdkafka log, for a failure's message."""
    for broker_id in cluster.broker_ids:
        if cluster.broker_log(broker_id).exists():
            shutil.copy(cluster.broker_log(broker_id), tmp_path / f"broker-{broker_id}.log")
    lines = client_log.read_text(errors="replace").splitlines() if client_log.exists() else []
    tail = "\n".join(lines[-CLIENT_LOG_TAIL_LINES:])
    return f"\nlogs kept in {tmp_path}; the copier's librdkafka log ends:\n{tail}"


@pytest.mark.timeout(CHAOS_TIMEOUT_S + 180)
def test_transactions_are_exactly_once_through_the_same_faults(
    make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    cluster = make_cluster(overrides=OVERRIDES)
    client_log = tmp_path / "copier-librdkafka.log"
    report, output, context = _chaos_report(
        cluster.dir, tmp_path, "--transactional", "--client-log", str(client_log)
    )
    if not report["ok"]:
        context += _kept_logs(cluster, tmp_path, client_log)

    assert report["faults"] == len(KINDS), f"faults cut short\n{context}"
    assert report["recovered"] and report["settled"], context
    assert report["committed_txns"] > 0 and report["aborted_txns"] > 0, context
    assert report["read_complete"], f"a topic could not be read to its end\n{context}"
    assert report["lost"] == 0, f"committed records lost\n{context}"
    assert report["duplicated"] == 0, f"records duplicated\n{context}"
    assert report["aborted_visible"] == 0, f"aborted records visible\n{context}"
    assert report["partial_txns"] == 0, f"a transaction partly visible\n{context}"
    # Undecided transactions may have committed too: at least every committed record.
    assert report["copied"] >= report["committed_records"], context
    assert report["copy_lost"] == 0 and report["copy_duplicated"] == 0, context
    assert report["divergent"] == 0, f"replicas differ on disk\n{context}"
    assert output.startswith("exit 0"), context
